//! Which migrations a database holds, set against the ones this binary carries, and
//! whether this binary can serve it.
//!
//! The rule of upgrades (docs/operations.md, Upgrading): a version only adds (expand)
//! until the version after it, so a process can serve a database a newer version has
//! already expanded. A newer migration says which kind it is in its file name:
//! `NNNN_expand_*.sql` an older process can live with; any other (`NNNN_contract_*`, or
//! one that names no kind) it cannot, and it refuses to start rather than misread data.

use std::fmt;

use sqlx::migrate::{Migration, Migrator};

use super::connect::{redact_password, ConnectError, SchemaUse};

/// sqlx's bookkeeping rows, read alike from both databases once each knows the table is
/// there (the test for it is each dialect's own).
pub const SELECT_APPLIED: &str =
    "select version, description, checksum, success from _sqlx_migrations order by version";

/// One row of sqlx's `_sqlx_migrations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub version: i64,
    pub description: String,
    pub checksum: Vec<u8>,
    pub success: bool,
}

impl From<(i64, String, Vec<u8>, bool)> for Applied {
    fn from((version, description, checksum, success): (i64, String, Vec<u8>, bool)) -> Self {
        Applied {
            version,
            description,
            checksum,
            success,
        }
    }
}

/// A migration by number and description (`0027 host fences`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub version: i64,
    pub description: String,
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04} {}", self.version, self.description)
    }
}

/// Why this binary cannot serve a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Applied by a newer version and not an expand step: the schema may have lost or
    /// changed what this version reads.
    Newer(Named),
    /// Applied with other SQL than this binary's migration of that number.
    Changed(Named),
    /// Begun and never finished (sqlx marks it dirty).
    Failed(Named),
    /// A newer version's migration applied while one of this version's is missing: the
    /// migrations were not applied in order, and sqlx will not fill the gap.
    OutOfOrder(Named),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Newer(m) => write!(f, "{m} (a newer version's, not an expand step)"),
            Refusal::Changed(m) => write!(f, "{m} (applied with other SQL than this version's)"),
            Refusal::Failed(m) => write!(f, "{m} (begun and never finished)"),
            Refusal::OutOfOrder(m) => {
                write!(
                    f,
                    "{m} (a newer version's, while this version's are not all applied)"
                )
            }
        }
    }
}

/// The database's migrations set against this binary's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaStatus {
    /// How many of this binary's migrations the database has.
    pub applied: usize,
    /// How many this binary carries.
    pub known: usize,
    /// This binary's migrations the database lacks, in order.
    pub pending: Vec<Named>,
    /// A newer version's expand steps, already applied: served as they are.
    pub ahead: Vec<Named>,
    /// What stops this binary from serving (or migrating) the database.
    pub refused: Vec<Refusal>,
}

impl SchemaStatus {
    pub fn is_current(&self) -> bool {
        self.pending.is_empty() && self.refused.is_empty()
    }
}

/// A newer version's migration an older process can live with.
pub fn is_expand_step(description: &str) -> bool {
    description.split_whitespace().next() == Some("expand")
}

/// Sets the applied migrations against this binary's.
pub fn judge(migrator: &Migrator, applied: &[Applied]) -> SchemaStatus {
    let mut status = SchemaStatus {
        known: ups(migrator).count(),
        ..SchemaStatus::default()
    };
    for migration in ups(migrator) {
        let named = Named {
            version: migration.version,
            description: migration.description.to_string(),
        };
        match applied.iter().find(|a| a.version == migration.version) {
            None => status.pending.push(named),
            Some(a) if !a.success => status.refused.push(Refusal::Failed(named)),
            Some(a) if a.checksum != migration.checksum.as_ref() => {
                status.refused.push(Refusal::Changed(named))
            }
            Some(_) => status.applied += 1,
        }
    }
    for a in applied {
        if ups(migrator).any(|m| m.version == a.version) {
            continue;
        }
        let named = Named {
            version: a.version,
            description: a.description.clone(),
        };
        if !a.success {
            status.refused.push(Refusal::Failed(named));
        } else if !is_expand_step(&a.description) {
            status.refused.push(Refusal::Newer(named));
        } else if !status.pending.is_empty() {
            status.refused.push(Refusal::OutOfOrder(named));
        } else {
            status.ahead.push(named);
        }
    }
    status
}

fn ups(migrator: &Migrator) -> impl Iterator<Item = &Migration> {
    migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
}

/// Whether a connecting process goes on, and whether it runs the migrator first.
/// `Inspect` always goes on and never migrates; with a newer version's expand steps
/// applied there is nothing to migrate (sqlx's migrator would stop at the versions it does
/// not know).
pub fn settle(
    status: &SchemaStatus,
    schema_use: SchemaUse,
    url: &str,
) -> Result<bool, ConnectError> {
    if schema_use == SchemaUse::Inspect {
        return Ok(false);
    }
    let migrating = schema_use == SchemaUse::Migrate;
    match refusal_message(status, migrating) {
        Some(message) => Err(ConnectError::Schema {
            url: redact_password(url),
            message,
        }),
        None => {
            if !status.ahead.is_empty() {
                tracing::warn!(ahead = %list(&status.ahead),
                    "the database holds a newer version's expand steps; serving it as it is");
            }
            Ok(migrating && !status.pending.is_empty())
        }
    }
}

/// The message of a start that cannot go on, or `None` when it can.
pub fn refusal_message(status: &SchemaStatus, will_migrate: bool) -> Option<String> {
    if !status.refused.is_empty() {
        return Some(format!(
            "this version ({}) cannot serve this database: {}. Run a version that knows \
             them (docs/operations.md, Upgrading)",
            env!("CARGO_PKG_VERSION"),
            list(&status.refused)
        ));
    }
    if !will_migrate && !status.pending.is_empty() {
        return Some(format!(
            "the database lacks {} of this version's migrations ({}): run `cinder-attach \
             migrate` first, or start with --migrate auto",
            status.pending.len(),
            list_short(&status.pending)
        ));
    }
    None
}

/// The first few, for a one-line message.
fn list_short(items: &[Named]) -> String {
    const SHOWN: usize = 3;
    match items.len() > SHOWN {
        true => format!("{} and {} more", list(&items[..SHOWN]), items.len() - SHOWN),
        false => list(items),
    }
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
