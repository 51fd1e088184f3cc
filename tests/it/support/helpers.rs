//! Request helpers for common steps, so tests read as the scenario they check.

use axum::http::Method;
use serde_json::{json, Value};

use super::http::{TestApp, TestResponse};

/// A member (with reader) of project `p1`: a non-admin owner.
pub const MEMBER_P1: &str = "bob:p1:member,reader";
/// A member of another project.
pub const MEMBER_P2: &str = "eve:p2:member,reader";
/// A reader of project `p1`.
pub const READER_P1: &str = "rita:p1:reader";

impl TestApp {
    /// Creates a volume type as admin and returns its id.
    pub async fn create_type(&self, name: &str, specs: Value) -> String {
        let response = self
            .request(Method::POST, "/v3/p1/types")
            .json(&json!({"volume_type": {"name": name, "extra_specs": specs}}))
            .send()
            .await;
        assert_eq!(response.status, 200, "{}", response.text);
        response.json["volume_type"]["id"]
            .as_str()
            .expect("type id")
            .to_owned()
    }

    /// `method` on `path` as admin, with `body` as JSON when there is one.
    pub async fn send_json(&self, method: Method, path: &str, body: Option<Value>) -> TestResponse {
        let request = self.request(method, path);
        match body {
            Some(body) => request.json(&body).send().await,
            None => request.send().await,
        }
    }

    /// A multiattach type `ma` and a volume of it; returns the volume id.
    pub async fn multiattach_volume(&self) -> String {
        self.create_multiattach_type("ma").await;
        str_of(
            &self
                .create_volume(json!({"size": 1, "volume_type": "ma"}))
                .await,
            "id",
        )
    }

    /// A multiattach type named `name`.
    pub async fn create_multiattach_type(&self, name: &str) -> String {
        self.create_type(name, json!({"multiattach": "<is> True"}))
            .await
    }

    /// The newest user message of `p1` about `resource`, if any.
    pub async fn find_message(&self, resource: &str) -> Option<Value> {
        let messages = self.get("/v3/p1/messages").version("3.3").send().await;
        messages.json["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("messages: {}", messages.text))
            .iter()
            .find(|m| m["resource_uuid"] == resource)
            .cloned()
    }

    /// The newest user message of `p1` about `resource`; there must be one.
    pub async fn message_about(&self, resource: &str) -> Value {
        self.find_message(resource)
            .await
            .unwrap_or_else(|| panic!("no user message about {resource}"))
    }

    /// Creates a volume as admin of `p1` at 3.71; returns the volume view.
    pub async fn create_volume(&self, fields: Value) -> Value {
        let response = self.post_volume(fields, "3.71").await;
        assert_eq!(response.status, 202, "{}", response.text);
        response.json["volume"].clone()
    }

    pub async fn post_volume(&self, fields: Value, version: &str) -> TestResponse {
        self.request(Method::POST, "/v3/p1/volumes")
            .version(version)
            .json(&json!({"volume": fields}))
            .send()
            .await
    }

    pub async fn show_volume(&self, id: &str, version: &str) -> TestResponse {
        self.get(&format!("/v3/p1/volumes/{id}"))
            .version(version)
            .send()
            .await
    }

    pub async fn volume_action(&self, id: &str, body: Value) -> TestResponse {
        self.request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
            .version("3.71")
            .json(&body)
            .send()
            .await
    }

    /// Puts a volume straight into `in-use` with one attached attachment, as the
    /// attachment API will (the fixture writes the rows directly).
    pub async fn attach_directly(&self, volume_id: &str, attachment_id: &str, instance: &str) {
        self.db
            .execute(&format!(
                "update volumes set status = 'in-use', attach_status = 'attached' where id = '{volume_id}';
                 insert into volume_attachment (id, volume_id, instance_uuid, attached_host, mountpoint,
                                                attach_time, attach_status, attach_mode, created_at, deleted)
                 values ('{attachment_id}', '{volume_id}', '{instance}', 'cmp-1', '/dev/vdb',
                         '2026-01-02T03:04:05+00:00', 'attached', 'rw', '2026-01-02T03:04:05+00:00', false);"
            ))
            .await
            .expect("fixture applies");
    }

    /// The status column as stored.
    pub async fn stored_status(&self, volume_id: &str) -> Vec<String> {
        self.db
            .column(&format!(
                "select status from volumes where id = '{volume_id}'"
            ))
            .await
    }
}

/// The keys of an attachment's detail view, sorted.
pub const ATTACHMENT_DETAIL_KEYS: [&str; 9] = [
    "attach_mode",
    "attached_at",
    "connection_info",
    "detached_at",
    "id",
    "instance",
    "shared_connections",
    "status",
    "volume_id",
];

/// A request not sent yet, to run with others at once.
/// `method` on `path` as `token` at microversion `version`, with `body` as JSON if any.
pub async fn call_as(
    app: &TestApp,
    token: &str,
    version: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> TestResponse {
    let request = app.request(method, path).token(token).version(version);
    match body {
        Some(body) => request.json(&body).send().await,
        None => request.send().await,
    }
}

pub type Pending = std::pin::Pin<Box<dyn std::future::Future<Output = TestResponse> + Send>>;

/// Runs all requests at once on the test runtime's worker threads.
pub async fn all_at_once<F>(requests: Vec<F>) -> Vec<TestResponse>
where
    F: std::future::Future<Output = TestResponse> + Send + 'static,
{
    let handles: Vec<_> = requests.into_iter().map(tokio::spawn).collect();
    let mut responses = Vec::new();
    for handle in handles {
        responses.push(handle.await.expect("request task"));
    }
    responses
}

pub fn successes(responses: &[TestResponse]) -> usize {
    responses.iter().filter(|r| r.status == 200).count()
}

pub fn str_of(value: &Value, key: &str) -> String {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {value}"))
        .to_owned()
}

/// An iSCSI host connector (`cmp-1`), as Nova sends it.
pub fn conn() -> Value {
    json!({"host": "cmp-1", "initiator": "iqn.2004-10.com.ubuntu:01:abc", "ip": "10.0.0.5",
           "platform": "x86_64", "os_type": "linux", "multipath": false, "mountpoint": "/dev/vdb"})
}

pub fn conn_for(host: &str, mountpoint: &str) -> Value {
    let mut c = conn();
    c["host"] = json!(host);
    c["mountpoint"] = json!(mountpoint);
    c
}

pub const I1: &str = "c1111111-1111-4111-8111-111111111111";
pub const I2: &str = "c2222222-2222-4222-8222-222222222222";
pub const I3: &str = "c3333333-3333-4333-8333-333333333333";

impl TestApp {
    pub async fn post_attachment(&self, attachment: Value, version: &str) -> TestResponse {
        self.request(Method::POST, "/v3/p1/attachments")
            .version(version)
            .json(&json!({"attachment": attachment}))
            .send()
            .await
    }

    /// Creates an attachment at 3.44 and returns its id, asserting success.
    pub async fn attach(
        &self,
        volume_id: &str,
        instance: Option<&str>,
        connector: Option<Value>,
    ) -> String {
        let mut body = json!({"volume_uuid": volume_id});
        if let Some(instance) = instance {
            body["instance_uuid"] = json!(instance);
        }
        if let Some(connector) = connector {
            body["connector"] = connector;
        }
        let response = self.post_attachment(body, "3.44").await;
        assert_eq!(response.status, 200, "{}", response.text);
        str_of(&response.json["attachment"], "id")
    }

    pub async fn put_attachment(&self, id: &str, connector: Value) -> TestResponse {
        self.request(Method::PUT, &format!("/v3/p1/attachments/{id}"))
            .version("3.44")
            .json(&json!({"attachment": {"connector": connector}}))
            .send()
            .await
    }

    pub async fn complete(&self, id: &str) -> TestResponse {
        self.request(Method::POST, &format!("/v3/p1/attachments/{id}/action"))
            .version("3.44")
            .json(&json!({"os-complete": null}))
            .send()
            .await
    }

    pub async fn delete_attachment(&self, id: &str) -> TestResponse {
        self.request(Method::DELETE, &format!("/v3/p1/attachments/{id}"))
            .version("3.44")
            .send()
            .await
    }

    pub async fn show_attachment(&self, id: &str) -> TestResponse {
        self.get(&format!("/v3/p1/attachments/{id}"))
            .version("3.44")
            .send()
            .await
    }

    /// Create → update → complete, asserting each step; returns the attachment id.
    pub async fn attach_fully(&self, volume_id: &str, instance: &str, connector: Value) -> String {
        let id = self.attach(volume_id, Some(instance), None).await;
        let updated = self.put_attachment(&id, connector).await;
        assert_eq!(updated.status, 200, "{}", updated.text);
        let completed = self.complete(&id).await;
        assert_eq!(completed.status, 204, "{}", completed.text);
        id
    }

    /// The volume's status as the API shows it.
    pub async fn volume_status(&self, volume_id: &str) -> String {
        let response = self.show_volume(volume_id, "3.71").await;
        assert_eq!(response.status, 200, "{}", response.text);
        str_of(&response.json["volume"], "status")
    }

    /// Waits (a minute at most) until the volume's status is `wanted`.
    pub async fn wait_for_status(&self, volume_id: &str, wanted: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while self.volume_status(volume_id).await != wanted {
            assert!(
                std::time::Instant::now() < deadline,
                "volume {volume_id} never {wanted}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Asserts the stored volume status can stand with its stored live attachments.
    pub async fn assert_consistent(&self, volume_id: &str) {
        use cinder_attach::domain::attach::status_consistent;
        use cinder_attach::domain::attachment::AttachStatus;
        use cinder_attach::domain::volume::VolumeStatus;
        let status = self.stored_status(volume_id).await;
        let attachments = self
            .db
            .column(&format!(
                "select attach_status from volume_attachment where volume_id = '{volume_id}' and deleted = false"
            ))
            .await;
        let status = VolumeStatus::parse(&status[0]).expect("known status");
        let attachments: Vec<AttachStatus> = attachments
            .iter()
            .map(|s| AttachStatus::parse(s).unwrap())
            .collect();
        assert!(
            status_consistent(status, &attachments),
            "volume {status} with attachments {attachments:?}"
        );
    }

    /// Live attachments of a volume, as stored.
    pub async fn live_attachments(&self, volume_id: &str) -> usize {
        self.db
            .column(&format!("select cast(id as text) from volume_attachment where volume_id = '{volume_id}' and deleted = false"))
            .await
            .len()
    }
}

/// A request as Nova makes it, at 3.44 with its service token's role (noauth takes
/// `X-Service-Roles` as a trusted front would set it).
pub async fn as_nova(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> TestResponse {
    let request = app
        .request(method, path)
        .version("3.44")
        .header("x-service-roles", "service");
    match body {
        Some(body) => request.json(&body).send().await,
        None => request.send().await,
    }
}
