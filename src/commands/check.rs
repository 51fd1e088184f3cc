//! `cinder-attach check`: reads the database (and the configured backends' storage) and
//! reports every broken invariant of the model. It only reads; it never repairs.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Serialize;

use super::{connect_options, StartError};
use crate::backend::{Backend, BackendSpec};
use crate::cli::CheckArgs;
use crate::clock::{Clock, SystemClock};
use crate::domain::consistency::{self, BackendObjects, Finding};
use crate::service::build_backends;
use crate::store::{self, Store};

/// The subcommand: `Ok(true)` when nothing is broken.
pub async fn check(args: &CheckArgs) -> Result<bool, StartError> {
    let store = store::connect(&connect_options(&args.database, false, false)).await?;
    let specs = &args.backends;
    let backends = backends_from_specs(&specs.backends, &specs.host_name(), &store)
        .map_err(StartError::Config)?;
    let report = run(store.as_ref(), &backends).await;
    store.close().await;
    let report = report.map_err(StartError::Config)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", report.render());
    }
    Ok(report.findings.is_empty())
}

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub volumes: usize,
    pub attachments: usize,
    /// The backends whose storage was compared with the database.
    pub backends_checked: Vec<String>,
    pub findings: Vec<Finding>,
}

impl CheckReport {
    pub fn render(&self) -> String {
        let mut out = format!(
            "checked {} volumes, {} live attachments, storage of [{}]: {} findings\n",
            self.volumes,
            self.attachments,
            self.backends_checked.join(", "),
            self.findings.len()
        );
        for finding in &self.findings {
            out.push_str(&format!("- {finding}\n"));
        }
        out
    }
}

/// A backend to compare with the database, by the host its volumes name.
pub struct CheckedBackend {
    pub host: String,
    pub driver: Arc<dyn Backend>,
}

/// Builds the drivers of `specs` without registering anything.
pub fn backends_from_specs(
    specs: &[BackendSpec],
    host_name: &str,
    store: &Arc<dyn Store>,
) -> Result<Vec<CheckedBackend>, String> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let built = build_backends(store, specs, host_name, &clock).map_err(|e| e.to_string())?;
    Ok(built
        .into_iter()
        .map(|b| CheckedBackend {
            host: b.host,
            driver: b.driver,
        })
        .collect())
}

/// One pass: storage listed, then the database read in one snapshot.
async fn pass(
    store: &dyn Store,
    backends: &[CheckedBackend],
) -> Result<(consistency::Snapshot, Vec<Finding>), String> {
    let mut objects = Vec::new();
    for backend in backends {
        let ids = backend
            .driver
            .list_volumes()
            .await
            .map_err(|e| format!("cannot list the storage of {}: {e}", backend.host))?;
        let snapshot_ids = backend
            .driver
            .list_snapshots()
            .await
            .map_err(|e| format!("cannot list the snapshots of {}: {e}", backend.host))?;
        objects.push(BackendObjects {
            host: backend.host.clone(),
            volume_ids: ids.into_iter().collect::<BTreeSet<_>>(),
            snapshot_ids: snapshot_ids.into_iter().collect(),
        });
    }
    let snapshot = store
        .consistency_snapshot()
        .await
        .map_err(|e| format!("cannot read the database: {e}"))?;
    let mut findings = consistency::check(&snapshot, &objects);
    for backend in backends {
        let drift = backend
            .driver
            .reconcile(false)
            .await
            .map_err(|e| format!("cannot compare the exports of {}: {e}", backend.host))?;
        findings.extend(drift.into_iter().map(|detail| Finding::ExportDrift {
            backend_host: backend.host.clone(),
            detail,
        }));
    }
    Ok((snapshot, findings))
}

fn is_storage_finding(finding: &Finding) -> bool {
    matches!(
        finding,
        Finding::BackendObjectMissing { .. }
            | Finding::BackendObjectWithoutVolume { .. }
            | Finding::SnapshotDataWithoutRecord { .. }
            | Finding::ExportDrift { .. }
    )
}

pub async fn run(store: &dyn Store, backends: &[CheckedBackend]) -> Result<CheckReport, String> {
    let (snapshot, mut findings) = pass(store, backends).await?;
    // Storage and database cannot be read atomically together: a volume created or
    // deleted between the two reads looks broken once. Such findings count only if a
    // second pass sees them again.
    if findings.iter().any(is_storage_finding) {
        let (_, again) = pass(store, backends).await?;
        findings.retain(|f| !is_storage_finding(f) || again.contains(f));
    }
    Ok(CheckReport {
        volumes: snapshot.volumes.len(),
        attachments: snapshot.attachments.len(),
        backends_checked: backends.iter().map(|b| b.host.clone()).collect(),
        findings,
    })
}
