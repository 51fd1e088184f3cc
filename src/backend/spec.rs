//! The `--backend NAME=DRIVER[,key=value...]` flag (and cinder.conf's backend sections,
//! read into the same form): parsed, checked, and built into a driver.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use super::{
    rbd, tgt, AccessRecords, Backend, FileBackend, IscsiSimBackend, RbdBackend, TgtBackend,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverKind {
    File,
    IscsiSim,
    Tgt,
    Rbd,
}

impl DriverKind {
    pub fn name(self) -> &'static str {
        match self {
            DriverKind::File => "file",
            DriverKind::IscsiSim => "iscsi-sim",
            DriverKind::Tgt => "tgt",
            DriverKind::Rbd => "rbd",
        }
    }
}

/// One `--backend` flag: `NAME=DRIVER[,key=value...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSpec {
    pub name: String,
    pub driver: DriverKind,
    pub options: BTreeMap<String, String>,
}

impl FromStr for BackendSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut parts = text.split(',');
        let head = parts.next().unwrap_or_default();
        let (name, driver) = head
            .split_once('=')
            .ok_or_else(|| format!("backend {text:?} must look like NAME=DRIVER[,key=value...]"))?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "backend name {name:?} may only use letters, digits, '-' and '_'"
            ));
        }
        let driver = match driver.trim() {
            "file" => DriverKind::File,
            "iscsi-sim" => DriverKind::IscsiSim,
            "tgt" => DriverKind::Tgt,
            "rbd" => DriverKind::Rbd,
            other => {
                return Err(format!(
                    "unknown backend driver {other:?} (known: file, iscsi-sim, tgt, rbd)"
                ))
            }
        };
        let mut options = BTreeMap::new();
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("backend option {part:?} must look like key=value"))?;
            options.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        Ok(BackendSpec {
            name: name.to_owned(),
            driver,
            options,
        })
    }
}

/// Options every driver reads.
struct CommonOptions {
    dir: PathBuf,
    pool: String,
    availability_zone: String,
    multiattach: bool,
    shared_targets: Option<bool>,
    capacity_gb: Option<f64>,
}

fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(format!("backend option {key}={value:?} is not a boolean")),
    }
}

/// Options `capabilities.<name>=<value>` add `<name>` to what the backend reports (as
/// Cinder's `extra_capabilities` do), for volume types to ask for.
pub const EXTRA_CAPABILITY_PREFIX: &str = "capabilities.";

/// What a backend reports about itself beyond what its driver knows: the names Cinder's
/// scheduler and admin views show, and the operator's own capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendIdentity {
    pub volume_backend_name: String,
    pub vendor_name: String,
    pub extra: BTreeMap<String, String>,
}

impl BackendSpec {
    /// The names this backend reports (`volume_backend_name` defaults to the backend's
    /// name, `vendor_name` to LVM's "Open Source"), and its extra capabilities.
    pub fn identity(&self) -> BackendIdentity {
        BackendIdentity {
            volume_backend_name: self
                .options
                .get("volume_backend_name")
                .cloned()
                .unwrap_or_else(|| self.name.clone()),
            vendor_name: self
                .options
                .get("vendor_name")
                .cloned()
                .unwrap_or_else(|| "Open Source".to_owned()),
            extra: self
                .options
                .iter()
                .filter_map(|(key, value)| {
                    let name = key.strip_prefix(EXTRA_CAPABILITY_PREFIX)?;
                    Some((name.to_owned(), value.clone()))
                })
                .collect(),
        }
    }

    fn common(
        &self,
        default_shared_targets: Option<bool>,
        known: &[&str],
    ) -> Result<CommonOptions, String> {
        for key in self.options.keys() {
            let shared = [
                "dir",
                "pool",
                "availability_zone",
                "multiattach",
                "shared_targets",
                "volume_backend_name",
                "vendor_name",
                "capacity_gb",
            ];
            let extra_capability = key
                .strip_prefix(EXTRA_CAPABILITY_PREFIX)
                .is_some_and(|name| !name.is_empty());
            if !shared.contains(&key.as_str())
                && !known.contains(&key.as_str())
                && !extra_capability
            {
                return Err(format!("backend {}: unknown option {key:?}", self.name));
            }
        }
        let get = |key: &str| self.options.get(key).map(String::as_str);
        let shared_targets = match get("shared_targets") {
            None => default_shared_targets,
            Some("none" | "null") => None,
            Some(value) => Some(parse_bool("shared_targets", value)?),
        };
        let capacity_gb = match get("capacity_gb") {
            None => None,
            Some(v) => match v.parse::<f64>() {
                Ok(gb) if gb.is_finite() && gb >= 0.0 => Some(gb),
                _ => {
                    return Err(format!(
                        "backend {}: capacity_gb={v:?} is not a size in GiB",
                        self.name
                    ))
                }
            },
        };
        Ok(CommonOptions {
            capacity_gb,
            dir: PathBuf::from(
                get("dir")
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("data/volumes/{}", self.name)),
            ),
            pool: get("pool").unwrap_or(&self.name).to_owned(),
            availability_zone: get("availability_zone").unwrap_or("nova").to_owned(),
            multiattach: get("multiattach")
                .map(|v| parse_bool("multiattach", v))
                .transpose()?
                .unwrap_or(true),
            shared_targets,
        })
    }

    /// Builds the driver this spec describes; `records` is how a driver that enforces
    /// access reads the database (the others ignore it).
    pub fn build(
        &self,
        records: Arc<dyn AccessRecords>,
    ) -> Result<(Arc<dyn Backend>, String), String> {
        match self.driver {
            DriverKind::File => {
                let common = self.common(Some(false), &["nfs_export"])?;
                let zone = common.availability_zone.clone();
                let backend = FileBackend::new(
                    common.dir,
                    common.pool,
                    common.multiattach,
                    common.shared_targets,
                    common.capacity_gb,
                )
                .with_nfs_export(self.options.get("nfs_export").cloned());
                Ok((Arc::new(backend), zone))
            }
            DriverKind::IscsiSim => {
                let common = self.common(Some(true), &["portal", "iqn_prefix"])?;
                let zone = common.availability_zone.clone();
                let backend = IscsiSimBackend::new(
                    FileBackend::new(
                        common.dir,
                        common.pool,
                        common.multiattach,
                        common.shared_targets,
                        common.capacity_gb,
                    ),
                    self.options
                        .get("portal")
                        .cloned()
                        .unwrap_or_else(|| "127.0.0.1:3260".to_owned()),
                    self.options
                        .get("iqn_prefix")
                        .cloned()
                        .unwrap_or_else(|| "iqn.2010-10.org.openstack".to_owned()),
                );
                Ok((Arc::new(backend), zone))
            }
            DriverKind::Tgt => self.build_tgt(records),
            DriverKind::Rbd => self.build_rbd(records),
        }
    }

    /// `rbd`: `conf` (ceph.conf), `pool` (the RADOS pool, `rbd` by default), `user`
    /// (`client.<user>`; none: `client.admin`, auth off for hosts), `keyring`,
    /// `secret_uuid`, `cluster_name`, `flatten_volume_from_snapshot`, `max_clone_depth`
    /// (5), `report_discard_supported`, `credentials` (`shared`), `fence` (`on`: with
    /// shared credentials, a host whose attachment ends is cut off), `fence_seconds`
    /// (3600: how long a fenced client stays blocklisted), and the common options;
    /// Cinder's `rbd_*` names are read from cinder.conf into these.
    fn build_rbd(
        &self,
        records: Arc<dyn AccessRecords>,
    ) -> Result<(Arc<dyn Backend>, String), String> {
        let known = [
            "conf",
            "user",
            "keyring",
            "secret_uuid",
            "cluster_name",
            "flatten_volume_from_snapshot",
            "max_clone_depth",
            "report_discard_supported",
            "credentials",
            "connect_timeout",
            "fence",
            "fence_seconds",
        ];
        let common = self.common(Some(false), &known)?;
        let get = |key: &str| self.options.get(key).map(String::as_str);
        let flag = |key: &str, default: bool| get(key).map_or(Ok(default), |v| parse_bool(key, v));
        let number = |key: &str, default: u32| -> Result<u32, String> {
            get(key).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| format!("backend {}: {key}={v:?} is not a number", self.name))
            })
        };
        let credentials = match get("credentials").unwrap_or("shared") {
            "shared" => rbd::Credentials::Shared,
            "per-attachment" => rbd::Credentials::PerAttachment,
            other => {
                return Err(format!(
                    "backend {}: credentials={other:?} is neither shared nor per-attachment",
                    self.name
                ))
            }
        };
        let pool = get("pool").unwrap_or("rbd").to_owned();
        let user = get("user").filter(|u| !u.is_empty()).map(str::to_owned);
        let timeout = number("connect_timeout", 10)?.max(1).to_string();
        let client = rbd::ceph::ClientConfig {
            conf_file: Some(get("conf").unwrap_or("/etc/ceph/ceph.conf").to_owned()),
            cluster_name: get("cluster_name").unwrap_or("ceph").to_owned(),
            user: user.clone().unwrap_or_else(|| "admin".to_owned()),
            keyring: get("keyring").map(str::to_owned),
            key: None,
            options: vec![
                ("rados_mon_op_timeout".into(), timeout.clone()),
                ("rados_osd_op_timeout".into(), timeout.clone()),
                ("client_mount_timeout".into(), timeout),
            ],
        };
        let options = rbd::RbdOptions {
            // As Cinder's scheduler names a backend that reports no pools: its
            // volume_backend_name (`host@ceph#ceph`), never the RADOS pool.
            pool_name: self.identity().volume_backend_name,
            client,
            pool,
            user,
            secret_uuid: get("secret_uuid").map(str::to_owned),
            flatten_volume_from_snapshot: flag("flatten_volume_from_snapshot", false)?,
            max_clone_depth: number("max_clone_depth", 5)?,
            discard: flag("report_discard_supported", false)?,
            credentials,
            fence: flag("fence", true)?,
            fence_seconds: number("fence_seconds", 3600)?.max(1),
            multiattach: common.multiattach,
            capacity_gb: common.capacity_gb,
        };
        let backend = RbdBackend::new(self.name.clone(), options, records);
        Ok((Arc::new(backend), common.availability_zone))
    }

    fn build_tgt(
        &self,
        records: Arc<dyn AccessRecords>,
    ) -> Result<(Arc<dyn Backend>, String), String> {
        let known = [
            "portal",
            "iqn_prefix",
            "control_port",
            "ipc_socket",
            "reconcile_seconds",
        ];
        let common = self.common(Some(false), &known)?;
        let get = |key: &str| self.options.get(key).map(String::as_str);
        let number = |key: &str, default: u64| -> Result<u64, String> {
            get(key).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| format!("backend {}: {key}={v:?} is not a number", self.name))
            })
        };
        let control_port = u16::try_from(number("control_port", 0)?)
            .map_err(|_| format!("backend {}: control_port is out of range", self.name))?;
        let reconcile_seconds = number("reconcile_seconds", 2)?.max(1);
        let portal = get("portal").unwrap_or("127.0.0.1:3260").to_owned();
        if !portal.contains(':') {
            return Err(format!(
                "backend {}: portal={portal:?} must look like HOST:PORT",
                self.name
            ));
        }
        let options = tgt::TgtOptions {
            portal,
            iqn_prefix: get("iqn_prefix")
                .unwrap_or("iqn.2010-10.org.openstack")
                .to_owned(),
            control: tgt::Control::new(
                get("ipc_socket").unwrap_or("/var/run/tgtd/socket"),
                control_port,
            ),
            reconcile_every: Duration::from_secs(reconcile_seconds),
        };
        let zone = common.availability_zone.clone();
        let storage = FileBackend::new(
            common.dir,
            common.pool,
            common.multiattach,
            common.shared_targets,
            common.capacity_gb,
        );
        let backend = TgtBackend::new(self.name.clone(), storage, options, records);
        Ok((Arc::new(backend), zone))
    }
}

#[cfg(test)]
mod tests {
    use super::super::NoRecords;
    use super::*;

    fn build(spec: &BackendSpec) -> Result<(Arc<dyn Backend>, String), String> {
        spec.build(Arc::new(NoRecords))
    }

    #[test]
    fn tgt_specs() {
        let spec: BackendSpec = "t=tgt,portal=127.0.0.1:3261,control_port=3,dir=/tmp/x"
            .parse()
            .unwrap();
        let (driver, _) = build(&spec).unwrap();
        assert_eq!(driver.capabilities().driver, "tgt");
        assert_eq!(driver.capabilities().shared_targets, Some(false));
        assert_eq!(driver.reconcile_interval(), Some(Duration::from_secs(2)));
        for bad in [
            "t=tgt,control_port=70000",
            "t=tgt,portal=nowhere",
            "t=tgt,reconcile_seconds=soon",
            "t=tgt,chap=off",
        ] {
            assert!(build(&bad.parse().unwrap()).is_err(), "{bad}");
        }
    }

    #[test]
    fn backend_specs() {
        let spec: BackendSpec = "fast=iscsi-sim,portal=10.0.0.1:3260,shared_targets=false"
            .parse()
            .unwrap();
        assert_eq!(spec.name, "fast");
        assert_eq!(spec.driver, DriverKind::IscsiSim);
        assert_eq!(spec.options["portal"], "10.0.0.1:3260");
        assert!("x".parse::<BackendSpec>().is_err());
        assert!("a b=file".parse::<BackendSpec>().is_err());
        assert!("a=nfs".parse::<BackendSpec>().is_err());
        assert!("a=file,oops".parse::<BackendSpec>().is_err());
        let unknown: BackendSpec = "a=file,colour=blue".parse().unwrap();
        assert!(build(&unknown).is_err());
        let bad_bool: BackendSpec = "a=file,multiattach=maybe".parse().unwrap();
        assert!(build(&bad_bool).is_err());
    }
}
