//! `cinder-attach purge --older-than DAYS`: removes soft-deleted rows for good, the user
//! messages past their expiry and the services silent that long with no volume, and
//! prints how many left each table.

use chrono::{Duration, Utc};

use super::{connect_options, StartError};
use crate::cli::PurgeArgs;
use crate::domain::service_record::SERVICE_DOWN_SECONDS;
use crate::store;

pub async fn purge(args: &PurgeArgs) -> Result<(), StartError> {
    let db = &args.database;
    let store = store::connect(&connect_options(db, false, false)).await?;
    let now = Utc::now();
    let before = now - Duration::days(i64::from(args.older_than));
    let purged = store.purge_deleted(before, args.unsent_events).await;
    // A service silent for less than Cinder's `service_down_time` may be restarting.
    let silent_since = before.min(now - Duration::seconds(SERVICE_DOWN_SECONDS));
    let (expired, stale) = match purged {
        Ok(_) => (
            Some(store.purge_expired_messages(now).await),
            Some(store.remove_stale_services(silent_since, now).await),
        ),
        Err(_) => (None, None),
    };
    store.close().await;
    let report = purged.map_err(StartError::Purge)?;
    if let Some(expired) = expired {
        println!(
            "messages: {} expired messages purged",
            expired.map_err(StartError::Purge)?
        );
    }
    if let Some(stale) = stale {
        for (binary, host) in stale.map_err(StartError::Purge)? {
            println!(
                "services: {binary} on {host} removed: silent since before {} and holding no volume",
                silent_since.to_rfc3339()
            );
        }
    }
    for (table, rows) in &report.tables {
        println!("{table}: {rows} rows purged");
    }
    println!(
        "{} rows deleted before {} purged",
        report.total(),
        before.to_rfc3339()
    );
    Ok(())
}
