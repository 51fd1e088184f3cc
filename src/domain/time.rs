//! Cinder's timestamp format: UTC, six fractional digits, no zone suffix.

use chrono::{DateTime, Utc};

pub fn format_timestamp(at: &DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

/// A time given by a client: RFC 3339, or Cinder's own format (taken as UTC).
pub fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M:%S%.f",
    ]
    .iter()
    .find_map(|format| chrono::NaiveDateTime::parse_from_str(text, format).ok())
    .map(|naive| naive.and_utc())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn client_times_in_either_format() {
        let at = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(parse_timestamp("2026-01-02T03:04:05Z"), Some(at));
        assert_eq!(parse_timestamp("2026-01-02T04:04:05+01:00"), Some(at));
        assert_eq!(parse_timestamp("2026-01-02T03:04:05.000000"), Some(at));
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn six_digits_and_no_zone() {
        let at = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(format_timestamp(&at), "2026-01-02T03:04:05.000000");
    }
}
