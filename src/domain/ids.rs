//! Identifiers: one type per kind of object, so a volume id can never be passed where an
//! attachment id is meant, and the parsing rules Cinder applies to ids on the wire.

use uuid::Uuid;

/// Declares a uuid newtype with parsing, display and the conversions the layers need.
macro_rules! uuid_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A fresh random id.
            pub fn generate() -> Self {
                $name(Uuid::new_v4())
            }

            /// Any spelling `parse_uuid_like` accepts.
            pub fn parse(text: &str) -> Option<Self> {
                parse_uuid_like(text).map($name)
            }

            pub fn uuid(self) -> Uuid {
                self.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = InvalidId;

            fn from_str(text: &str) -> Result<Self, InvalidId> {
                $name::parse(text).ok_or(InvalidId)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                $name(id)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }
    };
}

/// Text that is no uuid in any spelling oslo accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a uuid")]
pub struct InvalidId;

uuid_id!(
    /// `volumes.id`.
    VolumeId
);

uuid_id!(
    /// `qos_specs.id`.
    QosSpecsId
);

uuid_id!(
    /// `snapshots.id`.
    SnapshotId
);
uuid_id!(
    /// `volume_attachment.id`.
    AttachmentId
);
uuid_id!(
    /// `volume_types.id`.
    VolumeTypeId
);
uuid_id!(
    /// `messages.id`.
    MessageId
);
uuid_id!(
    /// `transfers.id`.
    TransferId
);
uuid_id!(
    /// `group_types.id`.
    GroupTypeId
);
uuid_id!(
    /// `groups.id`.
    GroupId
);
uuid_id!(
    /// `group_snapshots.id`.
    GroupSnapshotId
);
uuid_id!(
    /// `backups.id`.
    BackupId
);
uuid_id!(
    /// `compute_calls.id`: a call the service owes Nova.
    ComputeCallId
);
uuid_id!(
    /// `services.uuid`: a configured backend's stable id (`service_uuid` of its volumes).
    ServiceId
);

/// Parses an id the way oslo's `is_uuid_like` accepts it: any spelling Python's `uuid.UUID`
/// takes (upper case, no dashes, braces, `urn:uuid:` prefix), normalised to the hyphenated
/// lower-case form the store keeps.
pub fn parse_uuid_like(text: &str) -> Option<Uuid> {
    let trimmed = text.trim();
    let without_urn = trimmed.strip_prefix("urn:").unwrap_or(trimmed);
    let without_prefix = without_urn.strip_prefix("uuid:").unwrap_or(without_urn);
    let inner = without_prefix
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or(without_prefix);
    let hex: String = inner.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Uuid::parse_str(&hex).ok()
}

/// A project segment in a URL: Cinder's default regex is `[0-9a-f-]+`; we also accept
/// names (gophercloud's noauth puts `admin` there).
pub fn is_valid_project_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment.len() <= 255
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_spellings_that_oslo_accepts() {
        let canonical = "12345678-1234-1234-1234-123456789abc";
        for spelling in [
            canonical,
            "12345678-1234-1234-1234-123456789ABC",
            "123456781234123412341234567890ab",
            "{12345678-1234-1234-1234-123456789abc}",
            "urn:uuid:12345678-1234-1234-1234-123456789abc",
        ] {
            assert!(parse_uuid_like(spelling).is_some(), "{spelling}");
        }
        assert_eq!(
            parse_uuid_like(canonical).map(|u| u.to_string()).as_deref(),
            Some(canonical)
        );
    }

    #[test]
    fn not_uuids() {
        for text in [
            "",
            "invalid-uuid",
            "1234",
            "12345678-1234-1234-1234-123456789abz",
        ] {
            assert!(parse_uuid_like(text).is_none(), "{text}");
        }
    }

    #[test]
    fn typed_ids_print_and_serialize_as_hyphenated_lower_case() {
        let id = VolumeId::parse("12345678123412341234123456789ABC").unwrap();
        assert_eq!(id.to_string(), "12345678-1234-1234-1234-123456789abc");
        assert_eq!(
            serde_json::to_value(id).unwrap(),
            "12345678-1234-1234-1234-123456789abc"
        );
        assert_ne!(AttachmentId::generate(), AttachmentId::generate());
    }

    #[test]
    fn project_segments() {
        assert!(is_valid_project_segment("0123abcd-ef"));
        assert!(is_valid_project_segment("admin"));
        assert!(!is_valid_project_segment(""));
        assert!(!is_valid_project_segment("a.b"));
        assert!(!is_valid_project_segment("a b"));
    }
}
