//! `--config-file`: an operator's `cinder.conf` (oslo.config INI) as a source of settings,
//! below flags and the environment and above the built-in defaults. The options that
//! mean the same here are translated to our flags; every other option is ignored (a
//! Cinder file holds hundreds), and listed once at debug level.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ini::{Ini, ParseOption};

/// A flag's value taken from a file, and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSetting {
    /// The clap id of the flag (its field name).
    pub arg: &'static str,
    pub values: Vec<String>,
    /// `FILE [SECTION] option`.
    pub origin: String,
}

/// What the files set, and what they hold that is not used here.
#[derive(Debug, Clone, Default)]
pub struct FileSettings {
    pub settings: Vec<FileSetting>,
    /// `[section] option` of every option read but not used.
    pub ignored: Vec<String>,
}

impl FileSettings {
    pub fn get(&self, arg: &str) -> Option<&FileSetting> {
        self.settings.iter().find(|s| s.arg == arg)
    }
}

/// A file that cannot be read, or an option we use with a value we cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {place}{reason}")]
pub struct ConfError {
    pub file: String,
    /// `[section] option: `, or `line N: ` for a syntax error, or empty.
    pub place: String,
    pub reason: String,
}

/// One option as written, with the file that wrote it last.
#[derive(Debug, Clone)]
struct Written {
    value: String,
    file: PathBuf,
}

type Options = BTreeMap<(String, String), Written>;

/// Options of our own drivers that a backend section may carry, besides `volume_driver`.
const BACKEND_OPTIONS: &[&str] = &[
    "dir",
    "pool",
    "availability_zone",
    "multiattach",
    "shared_targets",
    "nfs_export",
    "capacity_gb",
    "volume_backend_name",
    "vendor_name",
    "portal",
    "iqn_prefix",
    "control_port",
    "ipc_socket",
    "reconcile_seconds",
];

/// Cinder's RBD driver, read as the `rbd` backend.
const RBD_DRIVER_CLASS: &str = "cinder.volume.drivers.rbd.RBDDriver";

/// Cinder's RBD options and the `--backend` keys they become.
const RBD_OPTIONS: &[(&str, &str)] = &[
    ("rbd_pool", "pool"),
    ("rbd_user", "user"),
    ("rbd_ceph_conf", "conf"),
    ("rbd_keyring_conf", "keyring"),
    ("rbd_secret_uuid", "secret_uuid"),
    ("rbd_cluster_name", "cluster_name"),
    (
        "rbd_flatten_volume_from_snapshot",
        "flatten_volume_from_snapshot",
    ),
    ("rbd_max_clone_depth", "max_clone_depth"),
    ("rados_connect_timeout", "connect_timeout"),
    ("report_discard_supported", "report_discard_supported"),
    ("credentials", "credentials"),
    ("fence", "fence"),
    ("fence_seconds", "fence_seconds"),
];

/// Reads the files in order; a later file's option wins, as with oslo.config.
pub fn load(paths: &[PathBuf]) -> Result<FileSettings, ConfError> {
    let mut options = Options::new();
    for path in paths {
        read_into(path, &mut options)?;
    }
    translate(&options)
}

fn read_into(path: &Path, options: &mut Options) -> Result<(), ConfError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|err| ConfError {
        file: shown.clone(),
        place: String::new(),
        reason: format!("cannot read it: {err}"),
    })?;
    // oslo.config takes values as written: no quotes, no escapes; continuation lines
    // are indented.
    let parse = ParseOption {
        enabled_quote: false,
        enabled_escape: false,
        enabled_indented_mutiline_value: true,
        enabled_preserve_key_leading_whitespace: false,
    };
    let ini = Ini::load_from_str_opt(&text, parse).map_err(|err| ConfError {
        file: shown.clone(),
        place: format!("line {}: ", err.line + 1),
        reason: err.msg.to_string(),
    })?;
    for (section, properties) in ini.iter() {
        let Some(section) = section else {
            if let Some((key, _)) = properties.iter().next() {
                return Err(ConfError {
                    file: shown,
                    place: String::new(),
                    reason: format!("option {key} is outside any [section]"),
                });
            }
            continue;
        };
        for (key, value) in properties.iter() {
            let key = key.trim().replace('-', "_");
            options.insert(
                (section.to_owned(), key),
                Written {
                    value: value.trim().to_owned(),
                    file: path.to_path_buf(),
                },
            );
        }
    }
    Ok(())
}

/// Builds the settings from the options, and checks the value of each one used.
struct Translation<'a> {
    options: &'a Options,
    used: Vec<(String, String)>,
    settings: Vec<FileSetting>,
}

impl<'a> Translation<'a> {
    fn take(&mut self, section: &str, key: &str) -> Option<&'a Written> {
        let found = self.options.get(&(section.to_owned(), key.to_owned()))?;
        self.used.push((section.to_owned(), key.to_owned()));
        Some(found)
    }

    fn error(&self, section: &str, key: &str, reason: String) -> ConfError {
        let file = self
            .options
            .get(&(section.to_owned(), key.to_owned()))
            .map(|w| w.file.display().to_string())
            .unwrap_or_default();
        ConfError {
            file,
            place: format!("[{section}] {key}: "),
            reason,
        }
    }

    fn set(&mut self, arg: &'static str, values: Vec<String>, origin: &Written, place: &str) {
        self.settings.retain(|s| s.arg != arg);
        self.settings.push(FileSetting {
            arg,
            values,
            origin: format!("{} {place}", origin.file.display()),
        });
    }

    /// `[section] key` straight to `arg`, through `check`.
    fn map(
        &mut self,
        section: &str,
        key: &str,
        arg: &'static str,
        check: impl Fn(&str) -> Result<String, String>,
    ) -> Result<(), ConfError> {
        if let Some(written) = self.take(section, key) {
            let value = check(&written.value).map_err(|r| self.error(section, key, r))?;
            self.set(arg, vec![value], written, &format!("[{section}] {key}"));
        }
        Ok(())
    }
}

/// oslo.config's booleans, as the flag takes them.
fn oslo_bool(value: &str) -> Result<String, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok("true".to_owned()),
        "false" | "0" | "no" | "off" => Ok("false".to_owned()),
        _ => Err(format!("'{value}' is not a boolean")),
    }
}

/// cinder.conf's quota defaults and the flags they set.
const QUOTA_OPTIONS: [(&str, &str); 7] = [
    ("quota_volumes", "quota_volumes"),
    ("quota_snapshots", "quota_snapshots"),
    ("quota_gigabytes", "quota_gigabytes"),
    ("quota_backups", "quota_backups"),
    ("quota_backup_gigabytes", "quota_backup_gigabytes"),
    ("quota_groups", "quota_groups"),
    ("per_volume_size_limit", "per_volume_size_limit"),
];

fn quota_limit(value: &str) -> Result<String, String> {
    match value.parse::<i64>() {
        Ok(limit) if limit >= -1 => Ok(limit.to_string()),
        _ => Err(format!("'{value}' is not an integer from -1")),
    }
}

fn as_is(value: &str) -> Result<String, String> {
    Ok(value.to_owned())
}

fn not_empty(value: &str) -> Result<String, String> {
    if value.is_empty() {
        Err("must not be empty".to_owned())
    } else {
        Ok(value.to_owned())
    }
}

fn translate(options: &Options) -> Result<FileSettings, ConfError> {
    let mut t = Translation {
        options,
        used: Vec::new(),
        settings: Vec::new(),
    };
    listen(&mut t)?;
    t.map("DEFAULT", "auth_strategy", "auth_strategy", |v| match v {
        "noauth" | "noauth_include_project_id" => Ok("noauth".to_owned()),
        "keystone" => Ok("keystone".to_owned()),
        other => Err(format!("'{other}' is not one of noauth, keystone")),
    })?;
    t.map("DEFAULT", "host", "host", not_empty)?;
    t.map(
        "DEFAULT",
        "default_volume_type",
        "default_volume_type",
        not_empty,
    )?;
    for (option, flag) in QUOTA_OPTIONS {
        t.map("DEFAULT", option, flag, quota_limit)?;
    }
    backends(&mut t)?;
    keys::key_manager(&mut t)?;
    t.map("database", "connection", "database_url", database_url)?;
    t.map("database", "max_retries", "db_max_retries", quota_limit)?;
    t.map("database", "retry_interval", "db_retry_interval", |v| {
        v.parse::<u64>()
            .map(|n| n.to_string())
            .map_err(|_| format!("'{v}' is not a number of seconds"))
    })?;
    pool_size(&mut t)?;
    keystone(&mut t)?;
    policy_file(&mut t)?;
    notifications(&mut t)?;
    images::image_options(&mut t)?;
    backups::backup_options(&mut t)?;
    nova::nova_options(&mut t)?;
    let ignored = options
        .keys()
        .filter(|k| !t.used.contains(k))
        .map(|(section, key)| format!("[{section}] {key}"))
        .collect();
    Ok(FileSettings {
        settings: t.settings,
        ignored,
    })
}

/// `osapi_volume_listen` and `osapi_volume_listen_port` make one `--listen`.
fn listen(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let host = t.take("DEFAULT", "osapi_volume_listen");
    let port = t.take("DEFAULT", "osapi_volume_listen_port");
    let ip: IpAddr = match host {
        Some(w) => w.value.parse().map_err(|_| {
            t.error(
                "DEFAULT",
                "osapi_volume_listen",
                format!("'{}' is not an IP address", w.value),
            )
        })?,
        None => IpAddr::from([127, 0, 0, 1]),
    };
    let number: u16 = match port {
        Some(w) => w.value.parse().map_err(|_| {
            t.error(
                "DEFAULT",
                "osapi_volume_listen_port",
                format!("'{}' is not a port number (0-65535)", w.value),
            )
        })?,
        None => 8776,
    };
    if let Some(origin) = port.or(host) {
        let place = "[DEFAULT] osapi_volume_listen(_port)";
        let address = std::net::SocketAddr::new(ip, number).to_string();
        t.set("listen", vec![address], origin, place);
    }
    Ok(())
}

/// SQLAlchemy URLs as Cinder writes them, in the form this service takes.
fn database_url(url: &str) -> Result<String, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("'{url}' is not a database URL"))?;
    match scheme.split('+').next().unwrap_or_default() {
        "postgresql" | "postgres" => Ok(format!("postgres://{rest}")),
        // SQLAlchemy: `sqlite:///relative` and `sqlite:////absolute`.
        "sqlite" => match rest.strip_prefix('/') {
            Some(path) if !path.is_empty() => Ok(format!("sqlite://{path}")),
            _ => Err("an in-memory SQLite database would lose everything at exit".to_owned()),
        },
        other => Err(format!(
            "the '{other}' database is not supported (PostgreSQL or SQLite)"
        )),
    }
}

/// oslo.db's pool is `max_pool_size` plus `max_overflow` connections (5 and 50).
fn pool_size(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let mut total = 0u32;
    let mut origin = None;
    for (key, default) in [("max_pool_size", 5u32), ("max_overflow", 50)] {
        let Some(written) = t.take("database", key) else {
            total += default;
            continue;
        };
        let number: u32 = written.value.parse().map_err(|_| {
            t.error(
                "database",
                key,
                format!("'{}' is not a number", written.value),
            )
        })?;
        total += number;
        origin = Some(written);
    }
    if let Some(origin) = origin {
        let place = "[database] max_pool_size + max_overflow";
        t.set(
            "db_max_connections",
            vec![total.max(1).to_string()],
            origin,
            place,
        );
    }
    Ok(())
}

fn keystone(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let section = "keystone_authtoken";
    // The service user logs in at `auth_url`; `www_authenticate_uri` is what clients
    // are told, and the same Keystone.
    let url_key = if t
        .options
        .contains_key(&(section.to_owned(), "auth_url".to_owned()))
    {
        "auth_url"
    } else {
        "www_authenticate_uri"
    };
    t.map(section, url_key, "keystone_url", |url| {
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
    if url_key == "auth_url" {
        // Read, so it is not listed as ignored: it names the same Keystone.
        t.take(section, "www_authenticate_uri");
    }
    t.map(section, "username", "keystone_username", not_empty)?;
    t.map(section, "password", "keystone_password", as_is)?;
    t.map(section, "project_name", "keystone_project", not_empty)?;
    t.map(
        section,
        "user_domain_name",
        "keystone_user_domain",
        not_empty,
    )?;
    t.map(
        section,
        "project_domain_name",
        "keystone_project_domain",
        not_empty,
    )?;
    t.map(section, "cafile", "keystone_cafile", not_empty)?;
    t.map(section, "insecure", "keystone_insecure", oslo_bool)?;
    t.map(section, "certfile", "keystone_certfile", not_empty)?;
    t.map(section, "keyfile", "keystone_keyfile", not_empty)?;
    Ok(())
}

/// `[oslo_messaging_notifications]`: with the `messaging` or `messagingv2` driver,
/// notifications go to its `transport_url` (else `[DEFAULT] transport_url`), on its first
/// topic, through `[DEFAULT] control_exchange`, with `[oslo_messaging_rabbit]
/// amqp_durable_queues`. Without a driver Cinder sends none; events are still recorded.
fn notifications(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let section = "oslo_messaging_notifications";
    let Some(driver) = t.take(section, "driver") else {
        return Ok(());
    };
    let drivers: Vec<&str> = driver.value.split(',').map(str::trim).collect();
    if !drivers
        .iter()
        .any(|d| matches!(*d, "messaging" | "messagingv2"))
    {
        return Ok(());
    }
    let url = match t.take(section, "transport_url") {
        Some(url) => Some((url, section)),
        None => t
            .take("DEFAULT", "transport_url")
            .map(|url| (url, "DEFAULT")),
    };
    let Some((url, from)) = url else {
        return Err(t.error(
            section,
            "driver",
            "sends notifications, but no transport_url says where".to_owned(),
        ));
    };
    let amqp = crate::notify::bus_url(&url.value)
        .map_err(|reason| t.error(from, "transport_url", reason))?;
    t.set(
        "notify_url",
        vec![amqp],
        url,
        &format!("[{from}] transport_url"),
    );
    t.map(section, "topics", "notify_topic", |topics| {
        topics
            .split(',')
            .map(str::trim)
            .find(|t| !t.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| "names no topic".to_owned())
    })?;
    t.map("DEFAULT", "control_exchange", "notify_exchange", not_empty)?;
    t.map(
        "oslo_messaging_rabbit",
        "amqp_durable_queues",
        "notify_durable",
        oslo_bool,
    )?;
    for key in ["ssl", "rabbit_use_ssl"] {
        t.map("oslo_messaging_rabbit", key, "notify_ssl", oslo_bool)?;
    }
    for (keys, flag) in [
        (["ssl_ca_file", "kombu_ssl_ca_certs"], "notify_ssl_ca_file"),
        (
            ["ssl_cert_file", "kombu_ssl_certfile"],
            "notify_ssl_cert_file",
        ),
        (["ssl_key_file", "kombu_ssl_keyfile"], "notify_ssl_key_file"),
    ] {
        for key in keys {
            t.map("oslo_messaging_rabbit", key, flag, not_empty)?;
        }
    }
    Ok(())
}

/// oslo.policy finds a relative `policy_file` next to the configuration file.
fn policy_file(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let Some(written) = t.take("oslo_policy", "policy_file") else {
        return Ok(());
    };
    let given = PathBuf::from(&written.value);
    let beside = written
        .file
        .parent()
        .map(|dir| dir.join(&given))
        .filter(|p| given.is_relative() && p.exists());
    let path = beside.unwrap_or(given);
    let value = path.display().to_string();
    t.set(
        "policy_file",
        vec![value],
        written,
        "[oslo_policy] policy_file",
    );
    Ok(())
}

/// Cinder's `extra_capabilities`: a JSON object of capabilities the backend reports as
/// well. Values become text; none may hold a comma or `=` (the backend spec's separators).
fn extra_capabilities(text: &str) -> Result<Vec<(String, String)>, String> {
    let parsed: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("is not a JSON object ({e})"))?;
    let object = parsed
        .as_object()
        .ok_or_else(|| "is not a JSON object".to_owned())?;
    let mut pairs = Vec::new();
    for (key, value) in object {
        let value = match value {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        if [key, &value]
            .iter()
            .any(|t| t.contains([',', '=']) || t.is_empty())
        {
            return Err(format!(
                "capability {key:?}: names and values must be non-empty and hold no ',' or '='"
            ));
        }
        pairs.push((key.clone(), value));
    }
    Ok(pairs)
}

/// `enabled_backends` names sections; each becomes a `--backend NAME=DRIVER,...`.
fn backends(t: &mut Translation<'_>) -> Result<(), ConfError> {
    let Some(written) = t.take("DEFAULT", "enabled_backends") else {
        return Ok(());
    };
    let names: Vec<String> = written
        .value
        .split(',')
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    let mut specs = Vec::new();
    for name in &names {
        let section_exists = t.options.keys().any(|(section, _)| section == name);
        if !section_exists {
            return Err(t.error(
                "DEFAULT",
                "enabled_backends",
                format!("names the backend '{name}', but the file has no [{name}] section"),
            ));
        }
        let driver = t.take(name, "volume_driver").ok_or_else(|| ConfError {
            file: written.file.display().to_string(),
            place: format!("[{name}] "),
            reason: "volume_driver is missing (file, iscsi-sim, tgt or rbd)".to_owned(),
        })?;
        let driver = match driver.value.as_str() {
            "file" | "iscsi-sim" | "tgt" | "rbd" => driver.value.clone(),
            RBD_DRIVER_CLASS => "rbd".to_owned(),
            // LVM is Cinder's reference driver, so devstack-style files name it: say what
            // serves the same purpose here.
            other if other.starts_with("cinder.volume.drivers.lvm.") => {
                return Err(t.error(
                    name,
                    "volume_driver",
                    format!(
                        "'{other}' (Cinder's LVM driver) has no counterpart here: volumes are \
                         not logical volumes. For volumes served over iSCSI by tgtd, as LVM with \
                         target_helper = tgtadm serves them, use volume_driver = tgt with \
                         dir = <a directory for the volume files>; for local files, file \
                         (docs/backends.md)"
                    ),
                ))
            }
            other => {
                return Err(t.error(
                    name,
                    "volume_driver",
                    format!(
                        "'{other}' is not a driver cinder-attach has (file, iscsi-sim, tgt, \
                         rbd or {RBD_DRIVER_CLASS})"
                    ),
                ))
            }
        };
        let mut spec = format!("{name}={driver}");
        // Cinder's RBD options, under the names `--backend` gives them.
        for (cinder_name, ours) in RBD_OPTIONS {
            if let Some(value) = t.take(name, cinder_name) {
                spec.push_str(&format!(",{ours}={}", value.value));
            }
        }
        // Cinder's name for the zone option, then ours.
        if let Some(zone) = t.take(name, "backend_availability_zone") {
            spec.push_str(&format!(",availability_zone={}", zone.value));
        }
        for key in BACKEND_OPTIONS {
            if let Some(value) = t.take(name, key) {
                spec.push_str(&format!(",{key}={}", value.value));
            }
        }
        if let Some(extra) = t.take(name, "extra_capabilities") {
            for (key, value) in extra_capabilities(&extra.value)
                .map_err(|reason| t.error(name, "extra_capabilities", reason))?
            {
                spec.push_str(&format!(
                    ",{}{key}={value}",
                    crate::backend::EXTRA_CAPABILITY_PREFIX
                ));
            }
        }
        spec.parse::<crate::backend::BackendSpec>()
            .map_err(|reason| t.error("DEFAULT", "enabled_backends", reason))?;
        specs.push(spec);
    }
    if !specs.is_empty() {
        t.set("backends", specs, written, "[DEFAULT] enabled_backends");
    }
    Ok(())
}

mod backups;
mod images;
mod keys;
mod nova;

#[cfg(test)]
mod tests;
