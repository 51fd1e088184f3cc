use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};

use super::*;

fn migrator(files: &[(i64, &'static str)]) -> Migrator {
    Migrator {
        migrations: Cow::Owned(files.iter().map(|(v, d)| migration(*v, d)).collect()),
        ignore_missing: false,
        locking: true,
        no_tx: false,
    }
}

fn migration(version: i64, description: &'static str) -> Migration {
    let sql = format!("-- {description}");
    Migration::new(
        version,
        Cow::Borrowed(description),
        MigrationType::Simple,
        Cow::Owned(sql),
        false,
    )
}

fn applied(version: i64, description: &'static str) -> Applied {
    Applied {
        version,
        description: description.to_owned(),
        checksum: migration(version, description).checksum.to_vec(),
        success: true,
    }
}

fn named(version: i64, description: &str) -> Named {
    Named {
        version,
        description: description.to_owned(),
    }
}

const OURS: &[(i64, &str)] = &[(1, "initial schema"), (2, "host fences")];

#[test]
fn a_database_with_every_migration_is_current() {
    let status = judge(
        &migrator(OURS),
        &[applied(1, "initial schema"), applied(2, "host fences")],
    );
    assert!(status.is_current());
    assert_eq!((status.applied, status.known), (2, 2));
    assert_eq!(refusal_message(&status, false), None);
}

#[test]
fn missing_migrations_are_pending_and_refused_only_without_migrating() {
    let status = judge(&migrator(OURS), &[applied(1, "initial schema")]);
    assert_eq!(status.pending, vec![named(2, "host fences")]);
    assert!(!status.is_current());
    assert_eq!(refusal_message(&status, true), None);
    let message = refusal_message(&status, false).expect("refused");
    assert!(message.contains("0002 host fences"), "{message}");
    assert!(message.contains("cinder-attach migrate"), "{message}");
}

#[test]
fn an_empty_database_lacks_everything() {
    let status = judge(&migrator(OURS), &[]);
    assert_eq!(status.pending.len(), 2);
    assert!(status.refused.is_empty());
}

#[test]
fn a_newer_versions_expand_steps_are_served() {
    let status = judge(
        &migrator(OURS),
        &[
            applied(1, "initial schema"),
            applied(2, "host fences"),
            applied(3, "expand outbox events"),
        ],
    );
    assert!(status.is_current());
    assert_eq!(status.ahead, vec![named(3, "expand outbox events")]);
    assert_eq!(refusal_message(&status, false), None);
}

#[test]
fn a_newer_versions_contract_step_is_refused() {
    let status = judge(
        &migrator(OURS),
        &[
            applied(1, "initial schema"),
            applied(2, "host fences"),
            applied(3, "expand outbox events"),
            applied(4, "contract drop event rows"),
        ],
    );
    assert_eq!(
        status.refused,
        vec![Refusal::Newer(named(4, "contract drop event rows"))]
    );
    let message = refusal_message(&status, true).expect("refused even when migrating");
    assert!(
        message.contains("0004 contract drop event rows"),
        "{message}"
    );
    assert!(message.contains(env!("CARGO_PKG_VERSION")), "{message}");
}

#[test]
fn a_migration_that_names_no_kind_counts_as_a_contract() {
    let status = judge(
        &migrator(OURS),
        &[
            applied(1, "initial schema"),
            applied(2, "host fences"),
            applied(3, "expanded outbox"),
        ],
    );
    assert_eq!(
        status.refused,
        vec![Refusal::Newer(named(3, "expanded outbox"))]
    );
}

#[test]
fn changed_and_unfinished_migrations_are_refused() {
    let mut changed = applied(1, "initial schema");
    changed.checksum = vec![0; 48];
    let mut unfinished = applied(2, "host fences");
    unfinished.success = false;
    let status = judge(&migrator(OURS), &[changed, unfinished]);
    assert_eq!(
        status.refused,
        vec![
            Refusal::Changed(named(1, "initial schema")),
            Refusal::Failed(named(2, "host fences")),
        ]
    );
}

#[test]
fn a_newer_step_applied_over_a_gap_is_refused() {
    let status = judge(
        &migrator(OURS),
        &[
            applied(1, "initial schema"),
            applied(3, "expand outbox events"),
        ],
    );
    assert_eq!(status.pending, vec![named(2, "host fences")]);
    assert_eq!(
        status.refused,
        vec![Refusal::OutOfOrder(named(3, "expand outbox events"))]
    );
}

/// Migrations 0001 to 0027 came before the rule; every later one names its kind.
const LAST_WITHOUT_KIND: i64 = 27;

/// Every migration after 0027 names its kind (that both folders hold the same files is
/// `store::tests::migration_folders_are_parallel`).
#[test]
fn new_migrations_name_their_kind() {
    let dir = format!("{}/migrations/sqlite", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(dir).expect("migrations folder") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        let (version, rest) = name.split_once('_').expect("NNNN_name.sql");
        let version: i64 = version.parse().expect("a numbered migration");
        let kind = rest.split('_').next().unwrap_or_default();
        assert!(
            version <= LAST_WITHOUT_KIND || kind == "expand" || kind == "contract",
            "{name}: name it NNNN_expand_*.sql or NNNN_contract_*.sql (docs/operations.md, Upgrading)"
        );
    }
}
