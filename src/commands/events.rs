//! `cinder-attach events`: the audit trail, the recorded notification events, one JSON
//! object per line (oldest first), filtered by volume, attachment, project, type, time.

use std::io::Write;

use super::{connect_options, StartError};
use crate::cli::EventsArgs;
use crate::domain::event::EventFilters;
use crate::store;

pub async fn print_events(args: &EventsArgs) -> Result<(), StartError> {
    let store = store::connect(&connect_options(&args.database, false, false)).await?;
    let filters = EventFilters {
        volume_id: args.volume.map(Into::into),
        attachment_id: args.attachment.map(Into::into),
        project_id: args.project.clone(),
        event_type: args.event_type.clone(),
        since: args.since,
        until: args.until,
        after_seq: None,
        limit: args.limit,
    };
    let events = store.list_events(&filters).await;
    store.close().await;
    let events = events.map_err(StartError::Events)?;
    let mut out = std::io::stdout().lock();
    for event in events {
        let line = serde_json::to_string(&event).map_err(|e| StartError::Config(e.to_string()))?;
        writeln!(out, "{line}").map_err(StartError::Serve)?;
    }
    Ok(())
}
