//! How the Keystone client reaches Keystone: plain `http://`, or `https://` through rustls
//! with the system's trusted roots, a private CA from a PEM file, or (for a test bed
//! only, logged as a warning at start-up) no certificate check at all.

use std::path::PathBuf;
use std::sync::Arc;

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Keystone's `cafile` and `insecure` (`[keystone_authtoken]`).
#[derive(Debug, Clone, Default)]
pub struct KeystoneTls {
    /// PEM certificates of the CAs that sign Keystone's certificate (else the system's).
    pub cafile: Option<PathBuf>,
    /// Do not check Keystone's certificate at all.
    pub insecure: bool,
}

pub type KeystoneConnector = HttpsConnector<HttpConnector>;

/// The connector for `url`; an unknown scheme or an unusable CA file is refused here,
/// at start-up, rather than at the first request.
pub fn connector(url: &str, tls: &KeystoneTls) -> Result<KeystoneConnector, String> {
    let scheme = url.split("://").next().unwrap_or_default();
    if url.split_once("://").is_none() || !matches!(scheme, "http" | "https") {
        return Err(format!(
            "the Keystone URL {url:?} must start with http:// or https://"
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?;
    let config = if tls.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoCertificateCheck(provider)))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(roots(tls)?)
            .with_no_client_auth()
    };
    Ok(HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .build())
}

fn roots(tls: &KeystoneTls) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match &tls.cafile {
        Some(path) => {
            let shown = path.display();
            let certificates = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("Keystone CA file {shown}: {e}"))?;
            for certificate in certificates {
                let certificate =
                    certificate.map_err(|e| format!("Keystone CA file {shown}: {e}"))?;
                roots
                    .add(certificate)
                    .map_err(|e| format!("Keystone CA file {shown}: {e}"))?;
            }
            if roots.is_empty() {
                return Err(format!("Keystone CA file {shown} holds no certificate"));
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
        }
    }
    Ok(roots)
}

/// `insecure = true`: any certificate is taken (signatures are still checked, so the
/// handshake itself is sound).
#[derive(Debug)]
struct NoCertificateCheck(Arc<CryptoProvider>);

impl ServerCertVerifier for NoCertificateCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
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
            insecure: false,
        };
        let err = connector("https://k/v3", &tls).expect_err("refused");
        assert!(err.contains("holds no certificate"), "{err}");
        let missing = KeystoneTls {
            cafile: Some(dir.join("missing.pem")),
            insecure: false,
        };
        assert!(connector("https://k/v3", &missing).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
