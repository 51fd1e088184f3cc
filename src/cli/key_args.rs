//! The key manager options of `serve`: Cinder's `[key_manager]` and `[barbican]`.

use std::path::PathBuf;
use std::time::Duration;

use crate::auth::catalog::CatalogEntry;

/// Which key manager gives encrypted volumes their keys (`[key_manager] backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyBackend {
    /// Cinder's ConfKeyManager: one fixed key (`--key-manager-fixed-key`).
    Fixed,
    /// Barbican, through castellan's Barbican key manager: a secret per volume.
    Barbican,
}

#[derive(Debug, Clone, clap::Args)]
pub struct KeyArgs {
    /// The key manager (`[key_manager] backend`: `barbican`, or Cinder's ConfKeyManager
    /// as `fixed`). Unset: `fixed` when a fixed key is given, else none, and volumes of
    /// encrypted types cannot be created.
    #[arg(long, env = "CINDER_ATTACH_KEY_MANAGER")]
    pub key_manager: Option<KeyBackend>,

    /// The one key of every encrypted volume, in hex, as Cinder's ConfKeyManager
    /// (`[key_manager] fixed_key`): volumes of encrypted types get its id (all zeros).
    #[arg(long, env = "CINDER_ATTACH_KEY_MANAGER_FIXED_KEY", value_parser = super::hex_key)]
    pub key_manager_fixed_key: Option<String>,

    /// Barbican's endpoint (`[barbican] barbican_endpoint`). Unset: the `key-manager`
    /// entry of Keystone's catalog, read once at start through the service's own login.
    #[arg(long, env = "CINDER_ATTACH_BARBICAN_ENDPOINT")]
    pub barbican_endpoint: Option<String>,

    /// Which catalog interface Barbican is reached on (`[barbican]
    /// barbican_endpoint_type`: public, internal or admin).
    #[arg(
        long,
        env = "CINDER_ATTACH_BARBICAN_ENDPOINT_TYPE",
        default_value = "public"
    )]
    pub barbican_endpoint_type: String,

    /// The catalog region Barbican is looked up in (`[barbican] barbican_region_name`).
    #[arg(long, env = "CINDER_ATTACH_BARBICAN_REGION_NAME")]
    pub barbican_region_name: Option<String>,

    /// PEM file of the CA(s) that sign an https:// Barbican's certificate
    /// (`[barbican] verify_ssl_path`; default: the system's trusted roots).
    #[arg(long, env = "CINDER_ATTACH_BARBICAN_CAFILE")]
    pub barbican_cafile: Option<PathBuf>,

    /// Do not check an https:// Barbican's certificate (`[barbican] verify_ssl = false`;
    /// a test bed only).
    #[arg(long, env = "CINDER_ATTACH_BARBICAN_INSECURE")]
    pub barbican_insecure: bool,
}

/// How long one Barbican call may take.
const BARBICAN_TIMEOUT: Duration = Duration::from_secs(60);

impl KeyArgs {
    /// The key manager asked for, or why the options do not make one.
    pub fn backend(&self) -> Result<Option<KeyBackend>, String> {
        match (self.key_manager, &self.key_manager_fixed_key) {
            (Some(KeyBackend::Fixed), None) => Err(
                "--key-manager fixed needs its key ([key_manager] fixed_key, --key-manager-fixed-key)"
                    .to_owned(),
            ),
            (None, Some(_)) => Ok(Some(KeyBackend::Fixed)),
            (chosen, _) => Ok(chosen),
        }
    }

    /// Where Barbican is in Keystone's catalog (castellan's `key-manager` service type).
    pub fn catalog_entry(&self) -> Result<CatalogEntry, String> {
        let interface = self.barbican_endpoint_type.trim_end_matches("URL");
        CatalogEntry::parse(
            &format!("key-manager::{interface}URL"),
            self.barbican_region_name.clone(),
        )
    }

    /// The Barbican client on `endpoint`.
    pub fn barbican(
        &self,
        endpoint: &str,
        service: Option<std::sync::Arc<crate::auth::keystone::KeystoneAuth>>,
    ) -> Result<crate::keys::Barbican, String> {
        let config = crate::keys::barbican::BarbicanConfig {
            endpoint: endpoint.to_owned(),
            timeout: Some(BARBICAN_TIMEOUT),
            tls: crate::tls_client::TlsClient {
                cafile: self.barbican_cafile.clone(),
                insecure: self.barbican_insecure,
                ..Default::default()
            },
        };
        crate::keys::Barbican::new(&config, service)
    }
}
