//! Image properties the service reserves: Glance's own namespaces and the key an
//! encrypted image names. A member may not write them into a volume's image metadata, and
//! an upload never copies them onto a new image (the upload of an encrypted volume sets
//! the key properties itself, for a key of its own).

/// Cinder's `GLANCE_RESERVED_NAMESPACES`, and the encryption key's properties.
pub const RESERVED_PROPERTY_PREFIXES: &[&str] = &[
    "os_glance",
    "img_signature",
    "signature_verified",
    "cinder_encryption_key",
];

/// Whether `key` is a property the service reserves (`extra`: the deployment's
/// `reserved_image_namespaces`).
pub fn is_reserved_property(key: &str, extra: &[String]) -> bool {
    RESERVED_PROPERTY_PREFIXES
        .iter()
        .any(|prefix| key.starts_with(prefix))
        || extra.iter().any(|prefix| key.starts_with(prefix.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_prefixes_and_the_deployments_own() {
        for key in [
            "os_glance_importing_to_stores",
            "img_signature",
            "img_signature_hash_method",
            "signature_verified",
            "cinder_encryption_key_id",
            "cinder_encryption_key_deletion_policy",
        ] {
            assert!(is_reserved_property(key, &[]), "{key}");
        }
        assert!(!is_reserved_property("hw_disk_bus", &[]));
        assert!(is_reserved_property("site_x", &["site_".to_owned()]));
    }
}
