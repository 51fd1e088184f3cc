//! Cinder's timestamp format: UTC, six fractional digits, no zone suffix.

use chrono::{DateTime, Utc};

pub fn format_timestamp(at: &DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn six_digits_and_no_zone() {
        let at = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(format_timestamp(&at), "2026-01-02T03:04:05.000000");
    }
}
