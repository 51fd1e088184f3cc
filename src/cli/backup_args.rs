//! Where backups are kept: the backup options of cinder.conf's `[DEFAULT]`.

use std::path::PathBuf;

use clap::ValueEnum;

use crate::backend::rbd::ceph::ClientConfig;
use crate::backup::Repository;

/// Cinder's `backup_driver`, of the two built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackupDriver {
    /// A directory (`cinder.backup.drivers.posix.PosixBackupDriver`).
    Posix,
    /// A Ceph pool (`cinder.backup.drivers.ceph.CephBackupDriver`).
    Ceph,
}

#[derive(Debug, Clone, clap::Args)]
pub struct BackupArgs {
    /// Where backups are kept (`backup_driver`): `posix`, a directory
    /// (--backup-posix-path), or `ceph`, a Ceph pool (--backup-ceph-*).
    #[arg(long, env = "CINDER_ATTACH_BACKUP_DRIVER", value_enum, default_value_t = BackupDriver::Posix)]
    pub backup_driver: BackupDriver,

    /// The directory backups are kept in (`backup_posix_path`): a disk apart from the
    /// volumes' storage, or a mount every host of the service shares.
    #[arg(
        long,
        env = "CINDER_ATTACH_BACKUP_POSIX_PATH",
        default_value = "data/backups"
    )]
    pub backup_posix_path: PathBuf,

    /// The ceph.conf of the cluster backups are kept on (`backup_ceph_conf`).
    #[arg(
        long,
        env = "CINDER_ATTACH_BACKUP_CEPH_CONF",
        default_value = "/etc/ceph/ceph.conf"
    )]
    pub backup_ceph_conf: String,

    /// The Ceph identity backups are written as, `client.<user>` (`backup_ceph_user`);
    /// its keyring is found as ceph.conf says.
    #[arg(long, env = "CINDER_ATTACH_BACKUP_CEPH_USER", default_value = "cinder")]
    pub backup_ceph_user: String,

    /// The pool backups go to when a request names no container (`backup_ceph_pool`).
    #[arg(
        long,
        env = "CINDER_ATTACH_BACKUP_CEPH_POOL",
        default_value = "backups"
    )]
    pub backup_ceph_pool: String,

    /// Seconds a backup or restore may go untouched before it counts as stopped (its
    /// service died) and is ended; running work touches it several times as often.
    #[arg(long, env = "CINDER_ATTACH_BACKUP_STALE_AFTER", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub backup_stale_after: u64,
    /// Seconds between tries to set a Ceph repository up while it cannot be (Cinder's
    /// `backup_driver_init_check_interval`): the cluster reached and the pool found (a
    /// directory needs no check). Until a try succeeds this host's `cinder-backup` takes
    /// no requests (503, as Cinder's uninitialised one) and reports no heartbeat.
    #[arg(long, env = "CINDER_ATTACH_BACKUP_DRIVER_INIT_CHECK_INTERVAL", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub backup_driver_init_check_interval: u64,
}

impl BackupArgs {
    pub fn repository(&self) -> Repository {
        match self.backup_driver {
            BackupDriver::Posix => Repository::new(self.backup_posix_path.clone()),
            BackupDriver::Ceph => Repository::ceph(
                ClientConfig {
                    conf_file: Some(self.backup_ceph_conf.clone()),
                    user: self.backup_ceph_user.clone(),
                    ..ClientConfig::default()
                },
                self.backup_ceph_pool.clone(),
            ),
        }
    }
}
