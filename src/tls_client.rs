//! The TLS client settings every outgoing connection of ours takes (to Keystone, to the
//! message bus): whose certificates to trust (a PEM file of CAs, else the system's, or for
//! a test bed nothing at all) and the certificate to show when the server asks for one.
//! One rustls configuration, so no second TLS stack is built in.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsClient {
    /// PEM certificates of the CAs that sign the server's certificate (else the system's).
    pub cafile: Option<PathBuf>,
    /// Do not check the server's certificate at all.
    pub insecure: bool,
    /// The certificate chain (PEM) and its private key shown to a server that asks.
    pub certfile: Option<PathBuf>,
    pub keyfile: Option<PathBuf>,
}

impl TlsClient {
    /// The rustls configuration, or why the files cannot make one (`peer` names the
    /// server in the message: "Keystone", "message bus").
    pub fn config(&self, peer: &str) -> Result<ClientConfig, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS set-up: {e}"))?;
        let builder = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoCertificateCheck(provider)))
        } else {
            builder.with_root_certificates(self.roots(peer)?)
        };
        match (&self.certfile, &self.keyfile) {
            (None, None) => Ok(builder.with_no_client_auth()),
            (Some(certfile), keyfile) => {
                let chain = certificates(certfile, &format!("{peer} client certificate file"))?;
                let keyfile = keyfile.as_deref().unwrap_or(certfile);
                let shown = keyfile.display();
                let key = PrivateKeyDer::from_pem_file(keyfile)
                    .map_err(|e| format!("{peer} client key file {shown}: {e}"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("{peer} client certificate and key: {e}"))
            }
            (None, Some(_)) => Err(format!(
                "a {peer} client key file needs its certificate file too"
            )),
        }
    }

    fn roots(&self, peer: &str) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        match &self.cafile {
            Some(path) => {
                let what = format!("{peer} CA file");
                for certificate in certificates(path, &what)? {
                    roots
                        .add(certificate)
                        .map_err(|e| format!("{what} {}: {e}", path.display()))?;
                }
            }
            None => {
                let native = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(native.certs);
            }
        }
        Ok(roots)
    }
}

/// Every certificate of a PEM file; a file with none is an error.
fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let found = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{what} {shown}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what} {shown}: {e}"))?;
    if found.is_empty() {
        return Err(format!("{what} {shown} holds no certificate"));
    }
    Ok(found)
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
