//! Response bodies: how domain values look on the wire (never the store's rows).

use serde::Serialize;

use crate::domain::attachment::Attachment;
use crate::domain::time::format_timestamp;

/// `GET /attachments` item.
#[derive(Debug, Serialize)]
pub struct AttachmentSummary {
    pub id: String,
    pub status: &'static str,
    pub instance: Option<String>,
    pub volume_id: String,
}

/// `GET /attachments/detail` item and the body of single-attachment responses.
#[derive(Debug, Serialize)]
pub struct AttachmentDetail {
    #[serde(flatten)]
    pub summary: AttachmentSummary,
    /// Cinder shows an unset time as `""`, not null.
    pub attached_at: String,
    pub detached_at: String,
    pub attach_mode: Option<String>,
    pub connection_info: Option<serde_json::Value>,
}

impl From<&Attachment> for AttachmentSummary {
    fn from(a: &Attachment) -> Self {
        AttachmentSummary {
            id: a.id.to_string(),
            status: a.attach_status.as_str(),
            instance: a.instance_uuid.clone(),
            volume_id: a.volume_id.to_string(),
        }
    }
}

impl From<&Attachment> for AttachmentDetail {
    fn from(a: &Attachment) -> Self {
        let time = |t: &Option<chrono::DateTime<chrono::Utc>>| {
            t.as_ref().map(format_timestamp).unwrap_or_default()
        };
        AttachmentDetail {
            summary: AttachmentSummary::from(a),
            attached_at: time(&a.attach_time),
            detached_at: time(&a.detach_time),
            attach_mode: a.attach_mode.clone(),
            connection_info: a.connection_info.clone(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct AttachmentList<T> {
    pub attachments: Vec<T>,
}
