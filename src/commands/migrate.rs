//! `cinder-attach migrate`: applies pending migrations and exits.

use super::{connect_options, StartError};
use crate::cli::DatabaseArgs;
use crate::store;

pub async fn migrate(db: &DatabaseArgs) -> Result<(), StartError> {
    let store = store::connect(&connect_options(db, true, false)).await?;
    store.close().await;
    tracing::info!("migrations applied");
    Ok(())
}
