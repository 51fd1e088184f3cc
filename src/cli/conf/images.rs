//! The image service options of cinder.conf: `[glance]`, and those of `[DEFAULT]`.

use super::{not_empty, oslo_bool, ConfError, Translation};

/// `[glance]` and the image options of `[DEFAULT]` (the older `glance_api_servers` in
/// `[DEFAULT]` too; `[glance] api_servers` wins when both are written).
pub(super) fn image_options(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let servers = |v: &str| -> Result<String, String> {
        let list: Vec<&str> = v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if list.is_empty() {
            return Err("no server is named".to_owned());
        }
        Ok(list.join(","))
    };
    t.map(
        "DEFAULT",
        "glance_api_servers",
        "glance_api_servers",
        servers,
    )?;
    t.map("glance", "api_servers", "glance_api_servers", servers)?;
    let seconds = |v: &str| {
        v.parse::<u64>()
            .map(|n| n.to_string())
            .map_err(|_| format!("'{v}' is not a number of seconds"))
    };
    t.map(
        "DEFAULT",
        "glance_request_timeout",
        "glance_request_timeout",
        seconds,
    )?;
    t.map(
        "DEFAULT",
        "glance_catalog_info",
        "glance_catalog_info",
        not_empty,
    )?;
    t.map("glance", "region_name", "glance_region_name", not_empty)?;
    t.map(
        "DEFAULT",
        "glance_ca_certificates_file",
        "glance_cafile",
        not_empty,
    )?;
    t.map(
        "DEFAULT",
        "glance_api_insecure",
        "glance_insecure",
        oslo_bool,
    )?;
    t.map(
        "DEFAULT",
        "image_conversion_dir",
        "image_conversion_dir",
        not_empty,
    )?;
    t.map(
        "DEFAULT",
        "enable_force_upload",
        "enable_force_upload",
        oslo_bool,
    )?;
    t.map(
        "DEFAULT",
        "image_conversion_disable",
        "image_conversion_disable",
        oslo_bool,
    )?;
    // Lists, where an empty value means none (no VMDK at all, for the first).
    let list = |v: &str| Ok(v.split(',').map(str::trim).collect::<Vec<_>>().join(","));
    t.map("DEFAULT", "vmdk_allowed_types", "vmdk_allowed_types", list)?;
    t.map(
        "DEFAULT",
        "reserved_image_namespaces",
        "reserved_image_namespaces",
        list,
    )?;
    Ok(())
}
