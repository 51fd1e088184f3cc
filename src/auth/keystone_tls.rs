//! How the Keystone client reaches Keystone: plain `http://`, or `https://` through rustls
//! (`crate::tls_client`: the system's trusted roots or a private CA, a client certificate
//! when Keystone asks for one, or for a test bed only no certificate check at all).

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;

/// Keystone's `cafile`, `insecure`, `certfile` and `keyfile` (`[keystone_authtoken]`).
pub type KeystoneTls = crate::tls_client::TlsClient;

pub type KeystoneConnector = HttpsConnector<HttpConnector>;

/// The connector for `url`; an unknown scheme or an unusable CA, certificate or key file
/// is refused here, at start-up, rather than at the first request.
pub fn connector(url: &str, tls: &KeystoneTls) -> Result<KeystoneConnector, String> {
    let scheme = url.split("://").next().unwrap_or_default();
    if url.split_once("://").is_none() || !matches!(scheme, "http" | "https") {
        return Err(format!(
            "the Keystone URL {url:?} must start with http:// or https://"
        ));
    }
    Ok(HttpsConnectorBuilder::new()
        .with_tls_config(tls.config("Keystone")?)
        .https_or_http()
        .enable_http1()
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https() {
        let tls = KeystoneTls::default();
        assert!(connector("http://127.0.0.1:5000/v3", &tls).is_ok());
        assert!(connector("https://keystone.example/v3", &tls).is_ok());
        for bad in ["ftp://keystone/v3", "keystone:5000/v3", "127.0.0.1:5000"] {
            let err = connector(bad, &tls).expect_err(bad);
            assert!(err.contains("must start with http:// or https://"), "{err}");
        }
    }

    #[test]
    fn a_ca_file_must_hold_certificates() {
        let dir = std::env::temp_dir().join(format!("keystone-tls-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let tls = KeystoneTls {
            cafile: Some(empty),
            ..Default::default()
        };
        let err = connector("https://k/v3", &tls).expect_err("refused");
        assert!(err.contains("holds no certificate"), "{err}");
        let missing = KeystoneTls {
            cafile: Some(dir.join("missing.pem")),
            ..Default::default()
        };
        assert!(connector("https://k/v3", &missing).is_err());
        let keyless = KeystoneTls {
            keyfile: Some(dir.join("client.key")),
            ..Default::default()
        };
        let err = connector("https://k/v3", &keyless).expect_err("refused");
        assert!(err.contains("needs its certificate file"), "{err}");
        let missing_certificate = KeystoneTls {
            certfile: Some(dir.join("missing.pem")),
            ..Default::default()
        };
        let err = connector("https://k/v3", &missing_certificate).expect_err("refused");
        assert!(err.contains("Keystone client certificate file"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
