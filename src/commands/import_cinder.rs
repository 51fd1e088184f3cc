//! `cinder-attach import-cinder --from URL`: moves a Cinder deployment's records in. The
//! backends are registered as `serve` registers them, Cinder's database is read once,
//! `domain::cinder_import` decides what is taken, and the store writes it in one
//! transaction (none with `--dry-run`). The storage stays where it is: a volume is taken
//! only if its backend here already holds it under its id.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{connect_options, StartError};
use crate::backend::Backends;
use crate::cli::ImportCinderArgs;
use crate::clock::{Clock, SystemClock};
use crate::domain::cinder_import::{self, Destination, Present, Refused, KNOWN_REVISIONS};
use crate::service::{build_backends, register_backends};
use crate::store::{self, cinder_source, redact_password, ImportTally, Store};

/// The subcommand: `Ok(true)` when every row was taken.
pub async fn import_cinder(args: &ImportCinderArgs) -> Result<bool, StartError> {
    let store = store::connect(&connect_options(&args.database, true, false)).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let host_name = args.backends.host_name();
    let specs = &args.backends.backends;
    // A dry run registers no service: it writes no row at all.
    let backends = if args.dry_run {
        build_backends(&store, specs, &host_name, &clock).map(Backends::new)
    } else {
        register_backends(&store, specs, &host_name, &clock).await
    };
    let backends = backends.map_err(|e| e.to_string());
    let report = match backends {
        Ok(backends) => {
            let mapping: BTreeMap<String, String> = args.map_backend.iter().cloned().collect();
            let source = Source {
                url: &args.from,
                mapping: &mapping,
            };
            run(&store, &backends, &source, args.dry_run, clock.now()).await
        }
        Err(e) => Err(e),
    };
    store.close().await;
    let report = report.map_err(StartError::Config)?;
    if args.json {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        println!("{text}");
    } else {
        print!("{}", report.render());
    }
    Ok(report.refused.is_empty())
}

/// Where the rows come from, and where Cinder's backends' volumes go.
pub struct Source<'a> {
    pub url: &'a str,
    /// Cinder backend name → backend name here; unmapped names go to the same name.
    pub mapping: &'a BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
pub struct ImportReport {
    pub source: String,
    pub revision: String,
    pub dry_run: bool,
    #[serde(flatten)]
    pub tally: ImportTally,
    /// Cinder types taken as the type of the same name here: `(name, id here)`.
    pub mapped_types: Vec<(String, String)>,
    pub refused: Vec<Refused>,
}

impl ImportReport {
    pub fn render(&self) -> String {
        let mut out = format!(
            "import from {} (schema {}){}\n",
            self.source,
            self.revision,
            if self.dry_run {
                ": dry run, nothing written"
            } else {
                ""
            }
        );
        let mut kinds: Vec<&str> = self.tally.inserted.keys().copied().collect();
        kinds.extend(self.tally.already_here.keys().copied());
        kinds.sort_unstable();
        kinds.dedup();
        for kind in kinds {
            let new = self.tally.inserted.get(kind).copied().unwrap_or(0);
            let old = self.tally.already_here.get(kind).copied().unwrap_or(0);
            out.push_str(&format!("{kind}: {new} taken, {old} already here\n"));
        }
        for (name, id) in &self.mapped_types {
            out.push_str(&format!(
                "volume type {name}: Cinder's is taken as {id} here\n"
            ));
        }
        for kept in &self.tally.kept_here {
            out.push_str(&format!("quota kept: {kept}\n"));
        }
        out.push_str(&format!("refused: {}\n", self.refused.len()));
        for r in &self.refused {
            let name = r
                .name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            out.push_str(&format!("- {} {}{name}: {}\n", r.kind, r.id, r.reason));
        }
        out
    }
}

/// One import: read, plan, write.
pub async fn run(
    store: &Arc<dyn Store>,
    backends: &Backends,
    source: &Source<'_>,
    dry_run: bool,
    now: DateTime<Utc>,
) -> Result<ImportReport, String> {
    let cinder = cinder_source::read(source.url).await?;
    if !KNOWN_REVISIONS.contains(&cinder.revision.as_str()) {
        return Err(format!(
            "Cinder's schema is at revision {}, not Cinder 29's ({}): bring Cinder to 29 \
             (`cinder-manage db sync`) before the import",
            cinder.revision,
            KNOWN_REVISIONS.join(", ")
        ));
    }
    let mut destinations = BTreeMap::new();
    for backend in backends.iter() {
        let driver = &backend.driver;
        let volumes = driver.list_volumes().await;
        let volumes = volumes.map_err(|e| format!("cannot list {}: {e}", backend.host))?;
        let snapshots = driver.list_snapshots().await;
        let snapshots = snapshots.map_err(|e| format!("cannot list {}: {e}", backend.host))?;
        let destination = Destination {
            volume_host: backend.volume_host(),
            service_uuid: backend.service_uuid,
            availability_zone: backend.availability_zone.clone(),
            takes_live_attachments: driver.takes_live_attachments(),
            shared_targets: driver.capabilities().shared_targets,
            volumes: volumes.into_iter().collect(),
            snapshots: snapshots.into_iter().collect(),
        };
        destinations.insert(backend.name.clone(), destination);
    }
    let types = store
        .list_volume_types()
        .await
        .map_err(|e| format!("cannot read the volume types here: {e}"))?;
    let present = Present {
        types: types
            .into_iter()
            .map(|t| (t.name, (t.id, t.extra_specs)))
            .collect(),
    };
    let destination = |cinder_backend: &str| {
        let here = source
            .mapping
            .get(cinder_backend)
            .map_or(cinder_backend, String::as_str);
        destinations.get(here)
    };
    let plan = cinder_import::plan(&cinder, &present, destination);
    let tally = store
        .import_cinder(&plan, now, dry_run)
        .await
        .map_err(|e| format!("nothing was written: {e}"))?;
    Ok(ImportReport {
        source: redact_password(source.url),
        revision: cinder.revision,
        dry_run,
        tally,
        mapped_types: plan
            .mapped_types
            .iter()
            .map(|(name, id)| (name.clone(), id.to_string()))
            .collect(),
        refused: plan.refused,
    })
}
