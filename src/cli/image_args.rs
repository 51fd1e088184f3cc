//! The image service options of `serve`: where Glance is, how long its calls may take,
//! and where images that are not raw are converted.

use std::path::PathBuf;
use std::time::Duration;

/// `[glance]` and the image options of `[DEFAULT]` in cinder.conf.
#[derive(Debug, Clone, clap::Args)]
pub struct ImageArgs {
    /// Glance's API, `host:port` or a URL, comma-separated to try several in turn
    /// (`[glance] api_servers`). Unset: creating volumes from images and uploading
    /// volumes to images are refused.
    #[arg(long, env = "CINDER_ATTACH_GLANCE_API_SERVERS", value_delimiter = ',')]
    pub glance_api_servers: Vec<String>,
    /// Where Glance is in Keystone's catalog when --glance-api-servers is not given
    /// (`glance_catalog_info`, `service_type:service_name:endpoint_type`); read once at
    /// start through the service's own Keystone login (`--auth-strategy keystone`).
    #[arg(
        long,
        env = "CINDER_ATTACH_GLANCE_CATALOG_INFO",
        default_value = "image:glance:publicURL"
    )]
    pub glance_catalog_info: String,
    /// The catalog region Glance is looked up in (`[glance] region_name`; default: any).
    #[arg(long, env = "CINDER_ATTACH_GLANCE_REGION_NAME")]
    pub glance_region_name: Option<String>,
    /// Seconds one Glance call, or one wait for image data, may take
    /// (`glance_request_timeout`).
    #[arg(
        long,
        env = "CINDER_ATTACH_GLANCE_REQUEST_TIMEOUT",
        default_value_t = 60
    )]
    pub glance_request_timeout: u64,
    /// PEM file of the CA(s) that sign an https:// Glance's certificate
    /// (`glance_ca_certificates_file`; default: the system's trusted roots).
    #[arg(long, env = "CINDER_ATTACH_GLANCE_CAFILE")]
    pub glance_cafile: Option<PathBuf>,
    /// Do not check an https:// Glance's certificate (`glance_api_insecure`; a test bed only).
    #[arg(long, env = "CINDER_ATTACH_GLANCE_INSECURE")]
    pub glance_insecure: bool,
    /// Where images that are not raw are converted by qemu-img (`image_conversion_dir`;
    /// default: `cinder-attach-conversion` in the system's temporary directory).
    #[arg(long, env = "CINDER_ATTACH_IMAGE_CONVERSION_DIR")]
    pub image_conversion_dir: Option<PathBuf>,
    /// Seconds one qemu-img conversion may run.
    #[arg(
        long,
        env = "CINDER_ATTACH_IMAGE_CONVERSION_TIMEOUT",
        default_value_t = 3600
    )]
    pub image_conversion_timeout: u64,
    /// Let `force` upload an `in-use` volume to an image (`enable_force_upload`).
    #[arg(long, env = "CINDER_ATTACH_ENABLE_FORCE_UPLOAD")]
    pub enable_force_upload: bool,
    /// VMDK create types taken from images, comma-separated; an empty value takes no
    /// VMDK (`vmdk_allowed_types`). Types whose extents are other files are refused
    /// whatever this says when an extent names a path.
    #[arg(
        long,
        env = "CINDER_ATTACH_VMDK_ALLOWED_TYPES",
        value_delimiter = ',',
        default_value = "streamOptimized,monolithicSparse"
    )]
    pub vmdk_allowed_types: Vec<String>,
    /// Take only raw images and upload only raw ones: no qemu-img conversion
    /// (`image_conversion_disable`).
    #[arg(long, env = "CINDER_ATTACH_IMAGE_CONVERSION_DISABLE")]
    pub image_conversion_disable: bool,
    /// Image property prefixes an upload never copies from a volume's image metadata,
    /// beyond the always-left-out `os_glance`, `img_signature`, `signature_verified`
    /// and `cinder_encryption_key` (`reserved_image_namespaces`).
    #[arg(
        long,
        env = "CINDER_ATTACH_RESERVED_IMAGE_NAMESPACES",
        value_delimiter = ','
    )]
    pub reserved_image_namespaces: Vec<String>,
}

impl ImageArgs {
    /// Where to look for Glance in Keystone's catalog.
    pub fn catalog_entry(&self) -> Result<crate::auth::catalog::CatalogEntry, String> {
        crate::auth::catalog::CatalogEntry::parse(
            &self.glance_catalog_info,
            self.glance_region_name.clone(),
        )
    }

    /// The Glance client on `servers` (the configured ones, else what the catalog named);
    /// `None` without any.
    pub fn glance(&self, servers: &[String]) -> Result<Option<crate::image::Glance>, String> {
        if servers.is_empty() {
            return Ok(None);
        }
        let config = crate::image::GlanceConfig {
            api_servers: servers.to_vec(),
            timeout: Some(Duration::from_secs(self.glance_request_timeout.max(1))),
            tls: crate::tls_client::TlsClient {
                cafile: self.glance_cafile.clone(),
                insecure: self.glance_insecure,
                ..Default::default()
            },
        };
        crate::image::Glance::new(&config).map(Some)
    }

    /// The deployment's image rules.
    pub fn image_rules(&self) -> crate::image::inspect::ImageRules {
        let names = |list: &[String]| -> Vec<String> {
            list.iter()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect()
        };
        crate::image::inspect::ImageRules {
            vmdk_allowed_types: names(&self.vmdk_allowed_types),
            conversion_disabled: self.image_conversion_disable,
            reserved_namespaces: names(&self.reserved_image_namespaces),
        }
    }

    pub fn conversion_dir(&self) -> PathBuf {
        self.image_conversion_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("cinder-attach-conversion"))
    }
}
