//! The backup options of cinder.conf's `[DEFAULT]`: the driver and where it keeps them.

use super::{not_empty, ConfError, Translation};

/// `backup_driver` (Cinder's class path, or the module path older releases took),
/// `backup_posix_path`, the `backup_ceph_*` options and `backup_driver_init_check_interval`;
/// the other drivers are not built.
pub(super) fn backup_options(t: &mut Translation<'_>) -> Result<(), ConfError> {
    t.map("DEFAULT", "backup_driver", "backup_driver", |v| {
        match v.trim() {
            "cinder.backup.drivers.posix.PosixBackupDriver" | "cinder.backup.drivers.posix" => {
                Ok("posix".to_owned())
            }
            "cinder.backup.drivers.ceph.CephBackupDriver" | "cinder.backup.drivers.ceph" => {
                Ok("ceph".to_owned())
            }
            other => Err(format!(
                "'{other}' is not built here: use cinder.backup.drivers.posix.PosixBackupDriver \
                 or cinder.backup.drivers.ceph.CephBackupDriver"
            )),
        }
    })?;
    for option in [
        "backup_posix_path",
        "backup_ceph_conf",
        "backup_ceph_user",
        "backup_ceph_pool",
    ] {
        t.map("DEFAULT", option, option, not_empty)?;
    }
    t.map(
        "DEFAULT",
        "backup_driver_init_check_interval",
        "backup_driver_init_check_interval",
        |v| match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n.to_string()),
            _ => Err(format!("'{v}' is not a number of seconds above 0")),
        },
    )?;
    Ok(())
}
