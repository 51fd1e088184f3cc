//! `cinder-attach healthcheck`: asks a running service's `/healthcheck` (with `--detailed`,
//! the database and the notification relay too), for a container's HEALTHCHECK or a
//! monitoring script: exit 0 when it answers 200 and, in detail, `"status": "OK"`; 1
//! otherwise.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::cli::HealthcheckArgs;

/// Where to ask: the listen address, with an unspecified IP replaced by loopback.
fn target(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// `Ok(())` when the service answered 200; otherwise what went wrong.
pub async fn healthcheck(args: &HealthcheckArgs) -> Result<(), String> {
    let query = if args.detailed { "?detailed" } else { "" };
    let url = format!("http://{}/healthcheck{query}", target(args.listen));
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let ask = async {
        let response = client.get(uri).await.map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{url}: {e}"))?
            .to_bytes();
        Ok::<_, String>((status, String::from_utf8_lossy(&body).into_owned()))
    };
    let (status, body) = tokio::time::timeout(Duration::from_secs(args.timeout), ask)
        .await
        .map_err(|_| format!("{url}: no answer within {} s", args.timeout))??;
    if status.is_success() && !degraded(&body) {
        println!("{}", body.trim());
        Ok(())
    } else {
        Err(format!("{url}: {status} {}", body.trim()))
    }
}

/// A detailed answer whose status is not `OK`: the API serves, something else (the
/// notification relay) does not.
fn degraded(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|answer| answer.get("status").cloned())
        .is_some_and(|status| status != "OK")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_degraded_detail_is_a_failure_and_plain_ok_is_not() {
        assert!(!degraded("OK"));
        assert!(!degraded(r#"{"status": "OK", "database": "OK"}"#));
        assert!(degraded(
            r#"{"status": "DEGRADED", "notifications": {"relay": "failing"}}"#
        ));
    }

    #[test]
    fn an_unspecified_address_is_asked_on_loopback() {
        assert_eq!(
            target("0.0.0.0:8776".parse().unwrap()),
            "127.0.0.1:8776".parse().unwrap()
        );
        assert_eq!(
            target("[::]:9".parse().unwrap()),
            "[::1]:9".parse().unwrap()
        );
        assert_eq!(
            target("10.0.0.5:8776".parse().unwrap()),
            "10.0.0.5:8776".parse().unwrap()
        );
    }
}
