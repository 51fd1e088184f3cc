//! Listing parameters as Cinder reads them: `limit`, `marker`, `offset`, and either
//! `sort=key:dir,...` or the deprecated `sort_key`/`sort_dir`. Everything else is a filter.

use super::error::ApiError;
use super::microversion::ApiVersion;
use crate::domain::ids::parse_uuid_like;
use crate::domain::paging::{Page, SortDir, MAX_LIMIT};

/// A parsed query string: one page and the remaining (filter) parameters.
#[derive(Debug, Clone)]
pub struct Listing<K> {
    pub page: Page<K>,
    pub filters: Vec<(String, String)>,
}

fn parse_dir(text: &str) -> Result<SortDir, ApiError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "asc" => Ok(SortDir::Asc),
        "desc" => Ok(SortDir::Desc),
        _ => Err(ApiError::BadRequest(
            "Unknown sort direction, must be 'desc' or 'asc'.".to_owned(),
        )),
    }
}

fn integer(name: &str, text: &str) -> Result<i64, ApiError> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| ApiError::BadRequest(format!("{name} param must be an integer")))
}

/// Splits `query` into a page (sort keys mapped by `key`) and filters.
pub fn parse_listing<K: Copy>(
    query: &[(String, String)],
    key: impl Fn(&str) -> Option<K>,
    default_key: K,
    marker_not_found: impl Fn(&str) -> ApiError,
) -> Result<Listing<K>, ApiError> {
    let get = |name: &str| super::query::last(query, name);
    let limit = match get("limit") {
        None => MAX_LIMIT,
        Some(text) => {
            let limit = integer("limit", text)?;
            if limit < 0 {
                return Err(ApiError::BadRequest(
                    "limit param must be positive".to_owned(),
                ));
            }
            limit.min(MAX_LIMIT)
        }
    };
    let offset = match get("offset") {
        None => 0,
        Some(text) => {
            let offset = text
                .trim()
                .parse::<i64>()
                .map_err(|_| ApiError::BadRequest("offset must be an integer.".to_owned()))?;
            if offset < 0 {
                return Err(ApiError::BadRequest("offset must be >= 0".to_owned()));
            }
            offset
        }
    };
    let marker = match get("marker") {
        None => None,
        Some(text) => Some(parse_uuid_like(text).ok_or_else(|| marker_not_found(text))?),
    };
    let has_sort = get("sort").is_some();
    if has_sort && (get("sort_key").is_some() || get("sort_dir").is_some()) {
        return Err(ApiError::BadRequest(
            "The 'sort_key' and 'sort_dir' parameters are deprecated and cannot be used with the 'sort' parameter."
                .to_owned(),
        ));
    }
    let parse_key = |name: &str| {
        key(name.trim()).ok_or_else(|| {
            ApiError::BadRequest("Invalid input received: Invalid sort key".to_owned())
        })
    };
    let mut sort = Vec::new();
    if let Some(text) = get("sort") {
        for item in text.split(',') {
            let (name, dir) = item.split_once(':').unwrap_or((item, "desc"));
            sort.push((parse_key(name)?, parse_dir(dir)?));
        }
    } else {
        let keys: Vec<&str> = get("sort_key")
            .map(|k| k.split(',').collect())
            .unwrap_or_default();
        let dirs: Vec<&str> = get("sort_dir")
            .map(|d| d.split(',').collect())
            .unwrap_or_default();
        for (i, name) in keys.iter().enumerate() {
            let dir = dirs.get(i).or(dirs.last()).copied().unwrap_or("desc");
            sort.push((parse_key(name)?, parse_dir(dir)?));
        }
        if keys.is_empty() {
            let dir = dirs
                .first()
                .map(|d| parse_dir(d))
                .transpose()?
                .unwrap_or(SortDir::Desc);
            sort.push((default_key, dir));
        }
    }
    let paging = ["limit", "offset", "marker", "sort", "sort_key", "sort_dir"];
    let filters = query
        .iter()
        .filter(|(k, _)| !paging.contains(&k.as_str()))
        .cloned()
        .collect();
    Ok(Listing {
        page: Page {
            sort,
            marker,
            limit,
            offset,
        },
        filters,
    })
}

/// Whether a listing asks for its `count` over all pages: `with_count=true`, from 3.45.
pub fn wants_count(version: ApiVersion, query: &[(String, String)]) -> bool {
    version.at_least(3, 45)
        && query
            .iter()
            .any(|(k, v)| k == "with_count" && parse_bool(v) == Some(true))
}

/// Lower-case boolean spellings oslo accepts (`strutils.bool_from_string`, strict).
/// Cinder's `_parse_is_public` for type listings: unset is public only, `none` is every
/// type (for those who may see them), else a boolean.
pub fn is_public_filter(query: &[(String, String)]) -> Result<Option<bool>, ApiError> {
    match super::query::last(query, "is_public") {
        None => Ok(Some(true)),
        Some(v) if v.eq_ignore_ascii_case("none") => Ok(None),
        Some(v) => parse_bool(v)
            .map(Some)
            .ok_or_else(|| ApiError::BadRequest(format!("Invalid is_public filter [{v}]"))),
    }
}

pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "t" | "true" | "on" | "y" | "yes" => Some(true),
        "0" | "f" | "false" | "off" | "n" | "no" => Some(false),
        _ => None,
    }
}

/// Cinder's refusal (3.31+) of listing filters the caller may not use.
pub fn reject_invalid_filters(version: ApiVersion, invalid: &[String]) -> Result<(), ApiError> {
    if !invalid.is_empty() && version.at_least(3, 31) {
        return Err(ApiError::BadRequest(format!(
            "Invalid filters {} are found in query options.",
            invalid.join(",")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn not_found(marker: &str) -> ApiError {
        ApiError::NotFound(format!("Marker {marker} could not be found."))
    }

    fn key(name: &str) -> Option<&'static str> {
        ["id", "created_at", "name"]
            .into_iter()
            .find(|k| *k == name)
    }

    #[test]
    fn defaults_and_errors() {
        let listing =
            parse_listing(&q(&[("status", "available")]), key, "created_at", not_found).unwrap();
        assert_eq!(listing.page.limit, MAX_LIMIT);
        assert_eq!(listing.page.sort, vec![("created_at", SortDir::Desc)]);
        assert_eq!(listing.filters, q(&[("status", "available")]));
        let err = |pairs: &[(&str, &str)]| {
            parse_listing(&q(pairs), key, "created_at", not_found)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err(&[("limit", "abc")]), "limit param must be an integer");
        assert_eq!(err(&[("limit", "-1")]), "limit param must be positive");
        assert_eq!(err(&[("offset", "-1")]), "offset must be >= 0");
        assert_eq!(
            err(&[("sort_dir", "up")]),
            "Unknown sort direction, must be 'desc' or 'asc'."
        );
        assert!(
            err(&[("sort", "id"), ("sort_key", "id")]).contains("deprecated and cannot be used")
        );
        assert_eq!(
            err(&[("sort", "bogus")]),
            "Invalid input received: Invalid sort key"
        );
    }

    #[test]
    fn sort_forms() {
        let listing =
            parse_listing(&q(&[("sort", "name:asc,id")]), key, "created_at", not_found).unwrap();
        assert_eq!(
            listing.page.sort,
            vec![("name", SortDir::Asc), ("id", SortDir::Desc)]
        );
        let listing = parse_listing(
            &q(&[("sort_key", "id"), ("sort_dir", "asc")]),
            key,
            "created_at",
            not_found,
        )
        .unwrap();
        assert_eq!(listing.page.sort, vec![("id", SortDir::Asc)]);
    }
}
