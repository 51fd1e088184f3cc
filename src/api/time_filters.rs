//! `created_at=gt:2024-01-01T00:00:00,lt:...` (3.60): Cinder's time comparison filters,
//! read with its error texts. One comparison per operator; a later one replaces an
//! earlier one with the same operator, as Cinder's dict does.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use super::error::ApiError;
use crate::domain::volume::{ComparisonOp, TimeComparison};

pub fn parse_time_filter(field: &str, value: &str) -> Result<Vec<TimeComparison>, ApiError> {
    let mut comparisons: Vec<TimeComparison> = Vec::new();
    for unit in value.split(',') {
        // Everything after the first colon is the time, colons included.
        let Some((op, time)) = unit.split_once(':') else {
            return Err(ApiError::BadRequest(format!("Invalid {field} value")));
        };
        let op = ComparisonOp::parse(op)
            .ok_or_else(|| ApiError::BadRequest(format!("Invalid {op} operator")))?;
        let at = parse_isotime(time)
            .ok_or_else(|| ApiError::BadRequest(format!("Invalid {time} value")))?;
        comparisons.retain(|c| c.op != op);
        comparisons.push(TimeComparison { op, at });
    }
    Ok(comparisons)
}

/// ISO 8601 as oslo's `parse_isotime` takes it: with an offset or without (UTC), with
/// or without fractions of a second, or a bare date.
fn parse_isotime(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
            return Some(at.and_utc());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|at| at.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_times_as_cinder_reads_them() {
        let read =
            parse_time_filter("created_at", "gt:2024-01-02T03:04:05,lte:2024-02-01").unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].op, ComparisonOp::Gt);
        assert_eq!(read[0].at.to_rfc3339(), "2024-01-02T03:04:05+00:00");
        assert_eq!(read[1].at.to_rfc3339(), "2024-02-01T00:00:00+00:00");
        let offset = parse_time_filter("created_at", "eq:2024-01-02T03:04:05+02:00").unwrap();
        assert_eq!(offset[0].at.to_rfc3339(), "2024-01-02T01:04:05+00:00");
        let replaced = parse_time_filter("updated_at", "gt:2024-01-01,gt:2025-01-01").unwrap();
        assert_eq!(replaced.len(), 1);
        assert_eq!(replaced[0].at.to_rfc3339(), "2025-01-01T00:00:00+00:00");
    }

    #[test]
    fn bad_filters_get_cinders_words() {
        let text = |r: Result<Vec<TimeComparison>, ApiError>| match r.unwrap_err() {
            ApiError::BadRequest(text) => text,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            text(parse_time_filter("created_at", "2024")),
            "Invalid created_at value"
        );
        assert_eq!(
            text(parse_time_filter("created_at", "gtx:2024-01-01")),
            "Invalid gtx operator"
        );
        assert_eq!(
            text(parse_time_filter("created_at", "gt:yesterday")),
            "Invalid yesterday value"
        );
    }
}
