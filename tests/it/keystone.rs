//! The `keystone` strategy against a real Keystone (started by `scripts/test`, address in
//! `KEYSTONE_URL`, admin password in `KEYSTONE_ADMIN_PASSWORD`): real tokens, valid,
//! invalid, revoked, of another project; and Keystone unreachable. The service reaches
//! Keystone over https (`KEYSTONE_TLS_URL`, the same Keystone behind a certificate of a
//! private CA in `KEYSTONE_CAFILE`); the tests set up their users over plain http.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{Method, Request};
use cinder_attach::auth::keystone::{KeystoneAuth, KeystoneConfig};
use cinder_attach::auth::keystone_tls::KeystoneTls;
use cinder_attach::auth::Authenticator;
use cinder_attach::policy::{Policy, PolicyEngine};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::http::AuthMode;
use crate::support::TestApp;

/// Keystone over https and the CA that signs its certificate.
fn keystone_tls_env() -> (String, std::path::PathBuf) {
    match (
        std::env::var("KEYSTONE_TLS_URL"),
        std::env::var("KEYSTONE_CAFILE"),
    ) {
        (Ok(url), Ok(cafile)) if !url.is_empty() => (url, cafile.into()),
        _ => panic!(
            "KEYSTONE_TLS_URL and KEYSTONE_CAFILE come with KEYSTONE_URL (tests/keystone/start.sh)"
        ),
    }
}

fn keystone_env() -> Option<(String, String)> {
    match (
        std::env::var("KEYSTONE_URL"),
        std::env::var("KEYSTONE_ADMIN_PASSWORD"),
    ) {
        (Ok(url), Ok(password)) if !url.is_empty() => Some((url, password)),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI is set but KEYSTONE_URL is not: the Keystone tests must run")
        }
        _ => {
            eprintln!("note: KEYSTONE_URL is not set; skipping the Keystone tests");
            None
        }
    }
}

/// One call to Keystone's API.
async fn call(
    url: &str,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let mut request = Request::builder()
        .method(method)
        .uri(format!("{}/{path}", url.trim_end_matches('/')));
    if let Some(token) = token {
        request = request.header("x-auth-token", token);
    }
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    if !payload.is_empty() {
        request = request.header("content-type", "application/json");
    }
    let response = client
        .request(request.body(Full::new(Bytes::from(payload))).unwrap())
        .await
        .expect("keystone answers");
    let status = response.status().as_u16();
    let subject = response
        .headers()
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        subject,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn token(url: &str, user: &str, password: &str, project: &str) -> String {
    let body = json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}
    }});
    let (status, subject, answer) = call(url, Method::POST, "auth/tokens", None, Some(body)).await;
    assert_eq!(status, 201, "login {user}: {answer}");
    subject.expect("a token")
}

/// Users and projects for one test, named uniquely so tests can run side by side.
struct World {
    /// Plain http, for setting up users and projects.
    url: String,
    /// The same Keystone over https, as the service reaches it.
    tls_url: String,
    cafile: std::path::PathBuf,
    admin: String,
    service_user: String,
    service_project: String,
    demo: String,
    other: String,
    password: String,
}

impl World {
    async fn create(url: String, admin_password: String) -> World {
        let admin = token(&url, "admin", &admin_password, "admin").await;
        let suffix = Uuid::new_v4().simple().to_string()[..8].to_owned();
        let password = "secret-pw".to_owned();
        let make = |kind: &'static str, body: Value| {
            let (url, admin) = (url.clone(), admin.clone());
            async move {
                let (status, _, answer) =
                    call(&url, Method::POST, kind, Some(&admin), Some(body)).await;
                assert!(status == 201 || status == 409, "{kind}: {status} {answer}");
                answer
            }
        };
        make("roles", json!({"role": {"name": "service"}})).await;
        let roles = call(&url, Method::GET, "roles", Some(&admin), None).await.2;
        let role_id = |name: &str| {
            roles["roles"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                .unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let (tls_url, cafile) = keystone_tls_env();
        let world = World {
            url: url.clone(),
            tls_url,
            cafile,
            admin: admin.clone(),
            service_user: format!("cinder-{suffix}"),
            service_project: format!("service-{suffix}"),
            demo: format!("demo-{suffix}"),
            other: format!("other-{suffix}"),
            password: password.clone(),
        };
        let mut project_ids = std::collections::HashMap::new();
        for project in [&world.service_project, &world.demo, &world.other] {
            let answer = make(
                "projects",
                json!({"project": {"name": project, "domain_id": "default"}}),
            )
            .await;
            project_ids.insert(
                project.clone(),
                answer["project"]["id"].as_str().unwrap().to_owned(),
            );
        }
        let grants = [
            (
                world.service_user.clone(),
                world.service_project.clone(),
                "service",
            ),
            (format!("member-{suffix}"), world.demo.clone(), "member"),
            (format!("member-{suffix}"), world.demo.clone(), "reader"),
            (format!("reader-{suffix}"), world.demo.clone(), "reader"),
            (format!("stranger-{suffix}"), world.other.clone(), "member"),
            (format!("stranger-{suffix}"), world.other.clone(), "reader"),
        ];
        let mut user_ids = std::collections::HashMap::new();
        for (user, project, role) in grants {
            if !user_ids.contains_key(&user) {
                let answer = make(
                    "users",
                    json!({"user": {"name": user, "domain_id": "default", "password": password}}),
                )
                .await;
                user_ids.insert(
                    user.clone(),
                    answer["user"]["id"].as_str().unwrap().to_owned(),
                );
            }
            let path = format!(
                "projects/{}/users/{}/roles/{}",
                project_ids[&project],
                user_ids[&user],
                role_id(role)
            );
            let (status, _, answer) = call(&url, Method::PUT, &path, Some(&admin), None).await;
            assert_eq!(status, 204, "grant {role}: {answer}");
        }
        world
    }

    fn auth(&self, cache_seconds: u64, url: Option<&str>, password: Option<&str>) -> Authenticator {
        Authenticator::Keystone(Arc::new(self.keystone(cache_seconds, url, password)))
    }

    fn keystone(
        &self,
        cache_seconds: u64,
        url: Option<&str>,
        password: Option<&str>,
    ) -> KeystoneAuth {
        let tls = KeystoneTls {
            cafile: Some(self.cafile.clone()),
            ..Default::default()
        };
        self.keystone_with(cache_seconds, url, password, tls)
            .expect("a usable Keystone configuration")
    }

    fn keystone_with(
        &self,
        cache_seconds: u64,
        url: Option<&str>,
        password: Option<&str>,
        tls: KeystoneTls,
    ) -> Result<KeystoneAuth, String> {
        let config = KeystoneConfig {
            url: url.unwrap_or(&self.tls_url).to_owned(),
            username: self.service_user.clone(),
            password: password.unwrap_or(&self.password).to_owned(),
            project_name: self.service_project.clone(),
            user_domain: "Default".to_owned(),
            project_domain: "Default".to_owned(),
            cache_seconds,
            cache_size: 100,
            negative_cache_seconds: 60,
            timeout: Duration::from_secs(30),
            tls,
        };
        KeystoneAuth::new(config, Arc::new(PolicyEngine::new(Policy::with_defaults())))
    }

    async fn token_of(&self, who: &str) -> String {
        let suffix = &self.demo["demo-".len()..];
        let (user, project) = match who {
            "member" => (format!("member-{suffix}"), self.demo.clone()),
            "reader" => (format!("reader-{suffix}"), self.demo.clone()),
            _ => (format!("stranger-{suffix}"), self.other.clone()),
        };
        token(&self.url, &user, &self.password, &project).await
    }
}

/// One set of users and projects for all Keystone tests: creating users is slow
/// (password hashing), and the test Keystone serves one request at a time.
static WORLD: tokio::sync::OnceCell<World> = tokio::sync::OnceCell::const_new();

async fn world() -> Option<&'static World> {
    let (url, password) = keystone_env()?;
    Some(WORLD.get_or_init(|| World::create(url, password)).await)
}

async fn real_tokens(app: TestApp) {
    let Some(world) = world().await else { return };
    let app = app.with_auth(AuthMode::Custom(world.auth(0, None, None)));
    let member = world.token_of("member").await;

    let created = app
        .request(Method::POST, "/v3/volumes")
        .token(&member)
        .version("3.71")
        .json(&json!({"volume": {"size": 1}}))
        .send()
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let volume = created.json["volume"]["id"].as_str().unwrap().to_owned();
    let shown = app
        .get(&format!("/v3/volumes/{volume}"))
        .token(&member)
        .send()
        .await;
    let project = shown.json["volume"]["os-vol-tenant-attr:tenant_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        shown.json["volume"].get("os-vol-host-attr:host").is_none(),
        "a member is not admin"
    );

    // A reader of the same project sees it but may not attach it.
    let reader = world.token_of("reader").await;
    assert_eq!(
        app.get(&format!("/v3/{project}/volumes/{volume}"))
            .token(&reader)
            .send()
            .await
            .status,
        200
    );
    let attach = app
        .request(Method::POST, "/v3/attachments")
        .token(&reader)
        .version("3.44")
        .json(&json!({"attachment": {"volume_uuid": volume}}))
        .send()
        .await;
    attach.assert_fault(403, "forbidden", "volume:attachment_create");

    // Another project's member: not found, and its own project in the URL only.
    let stranger = world.token_of("stranger").await;
    app.get(&format!("/v3/volumes/{volume}"))
        .token(&stranger)
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    app.get(&format!("/v3/{project}/volumes"))
        .token(&stranger)
        .send()
        .await
        .assert_fault(400, "badRequest", "Malformed request url");

    // Garbage and revoked tokens are 401.
    app.get("/v3/volumes")
        .token("not-a-token")
        .send()
        .await
        .assert_fault(401, "unauthorized", "requires authentication");
    let (status, _, _) = {
        let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let request = Request::builder()
            .method(Method::DELETE)
            .uri(format!("{}/auth/tokens", world.url.trim_end_matches('/')))
            .header("x-auth-token", &world.admin)
            .header("x-subject-token", &member)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = client.request(request).await.unwrap();
        (response.status().as_u16(), (), ())
    };
    assert_eq!(status, 204, "revoked");
    app.get("/v3/volumes")
        .token(&member)
        .send()
        .await
        .assert_fault(401, "unauthorized", "requires authentication");
}

async fn keystone_trouble_never_lets_a_request_through(app: TestApp) {
    let Some(world) = world().await else { return };
    let member = world.token_of("member").await;
    let unreachable = app.with_auth(AuthMode::Custom(world.auth(
        0,
        Some("http://127.0.0.1:9/v3"),
        None,
    )));
    unreachable
        .get("/v3/volumes")
        .token(&member)
        .send()
        .await
        .assert_fault(503, "serviceUnavailable", "identity service is unavailable");
    let wrong_password =
        unreachable.with_auth(AuthMode::Custom(world.auth(0, None, Some("wrong"))));
    wrong_password
        .get("/v3/volumes")
        .token(&member)
        .send()
        .await
        .assert_fault(503, "serviceUnavailable", "identity service is unavailable");
    // With a cache, a validated token is not re-checked until the cache time is up.
    let cached = wrong_password.with_auth(AuthMode::Custom(world.auth(300, None, None)));
    assert_eq!(
        cached.get("/v3/volumes").token(&member).send().await.status,
        200
    );
    assert_eq!(
        cached.get("/v3/volumes").token(&member).send().await.status,
        200
    );
}

/// A TCP proxy in front of Keystone that counts token validations (requests carrying
/// `x-subject-token`) on their way through. Returns its `/v3` URL and the count.
async fn counting_proxy(upstream: &str) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = upstream
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v3", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = tokio::net::TcpStream::connect(&authority).await.unwrap();
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 16 * 1024];
                while let Ok(n) = client_read.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    let text = String::from_utf8_lossy(&buffer[..n]).to_ascii_lowercase();
                    counted.fetch_add(text.matches("x-subject-token:").count(), Ordering::SeqCst);
                    if server_write.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            });
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
            });
        }
    });
    (url, count)
}

/// A refused token is remembered: the same bad token again costs no Keystone call,
/// while a good token is still validated (and a flood of bad ones cannot evict it).
async fn refused_tokens_are_cached_briefly(app: TestApp) {
    use std::sync::atomic::Ordering;
    let Some(world) = world().await else { return };
    // The proxy counts requests as they pass, so it needs them in plain http.
    let (url, validations) = counting_proxy(&world.url).await;
    let keystone = Arc::new(world.keystone(300, Some(&url), None));
    let app = app.with_auth(AuthMode::Custom(Authenticator::Keystone(keystone.clone())));
    for _ in 0..50 {
        app.get("/v3/volumes")
            .token("not-a-token")
            .send()
            .await
            .assert_fault(401, "unauthorized", "requires authentication");
    }
    assert_eq!(
        validations.load(Ordering::SeqCst),
        1,
        "one validation for 50 tries"
    );
    for i in 0..20 {
        let status = app
            .get("/v3/volumes")
            .token(&format!("bad-{i}"))
            .send()
            .await
            .status;
        assert_eq!(status, 401);
    }
    assert_eq!(validations.load(Ordering::SeqCst), 21);
    let member = world.token_of("member").await;
    assert_eq!(
        app.get("/v3/volumes").token(&member).send().await.status,
        200
    );
    assert_eq!(validations.load(Ordering::SeqCst), 22);
    // 150 bad tokens (over the cache size of 100) do not push the good one out.
    for i in 0..150 {
        app.get("/v3/volumes")
            .token(&format!("flood-{i}"))
            .send()
            .await;
    }
    let before = validations.load(Ordering::SeqCst);
    assert_eq!(
        app.get("/v3/volumes").token(&member).send().await.status,
        200
    );
    assert_eq!(
        validations.load(Ordering::SeqCst),
        before,
        "the good token stayed cached"
    );
}

/// https to Keystone: a certificate the configured CA does not sign is a 503 (never a
/// hang, never a request let through); `insecure` takes any; plain http still works; a
/// URL that is neither is refused when the service starts.
async fn keystones_certificate_is_checked(app: TestApp) {
    let Some(world) = world().await else { return };
    let member = world.token_of("member").await;
    let with =
        |keystone: KeystoneAuth| AuthMode::Custom(Authenticator::Keystone(Arc::new(keystone)));
    let system_roots = KeystoneTls::default();
    let untrusted = world
        .keystone_with(0, None, None, system_roots)
        .expect("configured");
    let app = app.with_auth(with(untrusted));
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        app.get("/v3/volumes").token(&member).send(),
    )
    .await
    .expect("answered, not hung");
    answer.assert_fault(503, "serviceUnavailable", "identity service is unavailable");
    let insecure = KeystoneTls {
        insecure: true,
        ..Default::default()
    };
    let unchecked = world
        .keystone_with(0, None, None, insecure)
        .expect("configured");
    let app = app.with_auth(with(unchecked));
    assert_eq!(
        app.get("/v3/volumes").token(&member).send().await.status,
        200
    );
    let plain = world.keystone(0, Some(&world.url), None);
    let app = app.with_auth(with(plain));
    assert_eq!(
        app.get("/v3/volumes").token(&member).send().await.status,
        200
    );
    let err = world
        .keystone_with(0, Some("ldap://127.0.0.1/v3"), None, KeystoneTls::default())
        .expect_err("refused");
    assert!(err.contains("must start with http:// or https://"), "{err}");
}

/// The console's sign-in: a Keystone user's password and project give a token that the
/// volume API takes; a wrong password is 401 with a message; a noauth token is refused.
async fn console_signs_in_with_keystone(app: TestApp) {
    let Some(world) = world().await else { return };
    let app = app.with_auth(AuthMode::Custom(world.auth(60, None, None)));
    let suffix = &world.demo["demo-".len()..];
    let login = |password: &str| {
        json!({"username": format!("member-{suffix}"), "password": password,
               "project": world.demo, "user_domain": "Default", "project_domain": "Default"})
    };
    let signed_in = app
        .request(Method::POST, "/console/session")
        .json(&login(&world.password))
        .send()
        .await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
    assert_eq!(signed_in.header("cache-control"), Some("no-store"));
    let session = &signed_in.json["session"];
    assert_eq!(session["is_admin"], false);
    assert!(session["roles"]
        .as_array()
        .unwrap()
        .contains(&json!("member")));
    let token = session["token"].as_str().unwrap();
    let project = session["project_id"].as_str().unwrap();
    let listed = app
        .get(&format!("/v3/{project}/volumes"))
        .token(token)
        .send()
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);

    app.request(Method::POST, "/console/session")
        .json(&login("not-the-password"))
        .send()
        .await
        .assert_fault(401, "unauthorized", "password");
    app.request(Method::POST, "/console/session")
        .json(&json!({"token": "admin:p1"}))
        .send()
        .await
        .assert_fault(401, "unauthorized", "uses Keystone");
}

/// Service roles come from a valid `X-Service-Token` only (keystonemiddleware's
/// `X-Service-Roles`): a client's own `X-Service-Roles` header is not believed, and an
/// invalid service token is refused as an invalid user token is.
async fn service_roles_come_from_a_validated_service_token(_app: TestApp) {
    let Some(world) = world().await else { return };
    let keystone = world.keystone(60, None, None);
    let member = world.token_of("member").await;
    let service = token(
        &world.url,
        &world.service_user,
        &world.password,
        &world.service_project,
    )
    .await;
    let headers = |pairs: &[(&'static str, &str)]| {
        let mut map = axum::http::HeaderMap::new();
        map.insert("x-auth-token", member.parse().unwrap());
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    };
    let spoofed = keystone
        .authenticate(&headers(&[("x-service-roles", "service")]))
        .await
        .unwrap();
    assert!(spoofed.service_roles.is_empty(), "{spoofed:?}");
    let served = keystone
        .authenticate(&headers(&[("x-service-token", &service)]))
        .await
        .unwrap();
    assert!(
        served.service_roles.iter().any(|r| r == "service"),
        "{served:?}"
    );
    assert!(
        served.roles.iter().all(|r| r != "service"),
        "the member's own roles stay"
    );
    let bad = keystone
        .authenticate(&headers(&[("x-service-token", "not-a-token")]))
        .await;
    assert!(bad.is_err(), "{bad:?}");
}

backend_tests!(
    service_roles_come_from_a_validated_service_token,
    console_signs_in_with_keystone,
    keystones_certificate_is_checked,
    real_tokens,
    keystone_trouble_never_lets_a_request_through,
    refused_tokens_are_cached_briefly
);
