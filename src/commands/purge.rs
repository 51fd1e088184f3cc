//! `cinder-attach purge --older-than DAYS`: removes soft-deleted rows for good, and the
//! user messages past their expiry, and prints how many left each table.

use chrono::{Duration, Utc};

use super::{connect_options, StartError};
use crate::cli::PurgeArgs;
use crate::store;

pub async fn purge(args: &PurgeArgs) -> Result<(), StartError> {
    let db = &args.database;
    let store = store::connect(&connect_options(db, false, false)).await?;
    let now = Utc::now();
    let before = now - Duration::days(i64::from(args.older_than));
    let purged = store.purge_deleted(before, args.unsent_events).await;
    let expired = match purged {
        Ok(_) => Some(store.purge_expired_messages(now).await),
        Err(_) => None,
    };
    store.close().await;
    let report = purged.map_err(StartError::Purge)?;
    if let Some(expired) = expired {
        println!(
            "messages: {} expired messages purged",
            expired.map_err(StartError::Purge)?
        );
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
