//! `cinder-attach migrate`: applies pending migrations and exits; `--check` only says
//! which the database lacks.

use std::process::ExitCode;

use super::{connect_options, StartError};
use crate::cli::{DatabaseArgs, MigrateArgs};
use crate::store::{self, redact_password, SchemaStatus};

pub async fn migrate(db: &DatabaseArgs) -> Result<(), StartError> {
    let store = store::connect(&connect_options(db, true, false)).await?;
    store.close().await;
    tracing::info!("migrations applied");
    Ok(())
}

/// `migrate --check`: the report on stdout, the exit status for scripts (see `MigrateArgs`).
pub async fn check(args: &MigrateArgs) -> ExitCode {
    match store::schema_status(&connect_options(&args.database, false, false)).await {
        Ok(status) => {
            print!("{}", report(&args.database.database_url, &status));
            if !status.refused.is_empty() {
                ExitCode::from(3)
            } else if !status.pending.is_empty() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(err) => {
            eprintln!("cinder-attach: {err}");
            ExitCode::from(2)
        }
    }
}

fn report(url: &str, status: &SchemaStatus) -> String {
    let mut out = format!(
        "{}: {} of this version's {} migrations applied\n",
        redact_password(url),
        status.applied,
        status.known
    );
    for pending in &status.pending {
        out.push_str(&format!("pending: {pending}\n"));
    }
    for ahead in &status.ahead {
        out.push_str(&format!(
            "applied by a newer version (served as it is): {ahead}\n"
        ));
    }
    for refused in &status.refused {
        out.push_str(&format!("refused: {refused}\n"));
    }
    out
}
