//! cinder.conf's `[nova]` (keystoneauth's password options, `region_name`, `interface`,
//! `cafile`, `insecure`, `timeout`) and `[service_user] send_service_user_token`.

use super::{as_is, not_empty, oslo_bool, ConfError, Translation};

pub(super) fn nova_options(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let section = "nova";
    if let Some(auth_type) = t.take(section, "auth_type") {
        if auth_type.value != "password" && auth_type.value != "v3password" {
            return Err(t.error(
                section,
                "auth_type",
                format!(
                    "'{}' is not supported: the [nova] user logs in with a password",
                    auth_type.value
                ),
            ));
        }
    }
    t.map(section, "auth_url", "nova_auth_url", |url| {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("'{url}' is not an http(s) URL"));
        }
        let url = url.trim_end_matches('/');
        Ok(if url.ends_with("/v3") {
            url.to_owned()
        } else {
            format!("{url}/v3")
        })
    })?;
    t.map(section, "username", "nova_username", not_empty)?;
    t.map(section, "password", "nova_password", as_is)?;
    t.map(section, "project_name", "nova_project", not_empty)?;
    t.map(section, "user_domain_name", "nova_user_domain", not_empty)?;
    t.map(
        section,
        "project_domain_name",
        "nova_project_domain",
        not_empty,
    )?;
    t.map(section, "region_name", "nova_region_name", not_empty)?;
    t.map(section, "interface", "nova_interface", |v| match v {
        "public" | "internal" | "admin" => Ok(v.to_owned()),
        other => Err(format!("'{other}' is not one of public, internal, admin")),
    })?;
    t.map(section, "cafile", "nova_cafile", not_empty)?;
    t.map(section, "insecure", "nova_insecure", oslo_bool)?;
    t.map(section, "timeout", "nova_timeout", |v| {
        v.parse::<u64>()
            .map(|n| n.to_string())
            .map_err(|_| format!("'{v}' is not a number of seconds"))
    })?;
    t.map(
        "service_user",
        "send_service_user_token",
        "nova_send_service_token",
        oslo_bool,
    )?;
    Ok(())
}
