//! The one integration-test binary. Every case that touches a database runs once per
//! store: `<case>::sqlite` and `<case>::postgres` (the latter needs `TEST_DATABASE_URL`).

#[macro_use]
mod support;
mod api;
mod backend_moves;
mod backup_crash;
mod binary;
mod check;
mod config_file;
mod connections;
mod crash;
mod failover;
mod import_cinder;
mod keystone;
mod multiprocess;
mod outage;
mod qemu_hosts;
mod rbd;
mod rbd_backup_reads;
mod rbd_backups;
mod rbd_groups;
mod rbd_import;
mod rbd_manage;
mod rbd_outages;
mod recovery;
mod schema_versions;
mod shutdown;
mod store;
mod tgt;
