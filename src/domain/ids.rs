//! Identifiers as they appear on the wire.

use uuid::Uuid;

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
    fn project_segments() {
        assert!(is_valid_project_segment("0123abcd-ef"));
        assert!(is_valid_project_segment("admin"));
        assert!(!is_valid_project_segment(""));
        assert!(!is_valid_project_segment("a.b"));
        assert!(!is_valid_project_segment("a b"));
    }
}
