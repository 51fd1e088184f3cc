//! The key manager options of cinder.conf: `[key_manager]` and `[barbican]`.

use super::{not_empty, oslo_bool, ConfError, Translation};

/// `[key_manager]`: Cinder's ConfKeyManager with its `fixed_key`, or castellan's Barbican
/// key manager with `[barbican]`. Barbican's `fixed_key`, if any, is not what it uses.
pub(super) fn key_manager(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let section = "key_manager";
    let mut barbican = false;
    if let Some(written) = t.take(section, "backend") {
        let chosen = key_backend(&written.value).map_err(|r| t.error(section, "backend", r))?;
        barbican = chosen == "barbican";
        let value = vec![chosen.to_owned()];
        t.set("key_manager", value, written, "[key_manager] backend");
    }
    if barbican {
        t.map(
            "barbican",
            "barbican_endpoint",
            "barbican_endpoint",
            not_empty,
        )?;
        t.map(
            "barbican",
            "barbican_endpoint_type",
            "barbican_endpoint_type",
            not_empty,
        )?;
        t.map(
            "barbican",
            "barbican_region_name",
            "barbican_region_name",
            not_empty,
        )?;
        t.map("barbican", "verify_ssl_path", "barbican_cafile", not_empty)?;
        t.map("barbican", "verify_ssl", "barbican_insecure", |v| {
            oslo_bool(v).map(|verify| (verify == "false").to_string())
        })?;
    } else {
        t.map(
            section,
            "fixed_key",
            "key_manager_fixed_key",
            crate::cli::hex_key,
        )?;
    }
    Ok(())
}

/// The names castellan and Cinder take for their key managers.
fn key_backend(value: &str) -> Result<&'static str, String> {
    match value {
        "barbican" | "castellan.key_manager.barbican_key_manager.BarbicanKeyManager" => {
            Ok("barbican")
        }
        "cinder.keymgr.conf_key_mgr.ConfKeyManager" | "ConfKeyManager" => Ok("fixed"),
        other => Err(format!(
            "the key manager {other:?} is not supported (barbican, or ConfKeyManager)"
        )),
    }
}
