//! URLs the service hands out: version documents, resource links, next-page links.

use axum::http::header::HOST;
use axum::http::HeaderMap;

use crate::api::AppState;

/// The base URL clients should use: the configured public endpoint, else the Host the
/// request came to.
pub fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    if let Some(endpoint) = &state.config.public_endpoint {
        return endpoint.trim_end_matches('/').to_owned();
    }
    let host = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// Cinder's `self` and `bookmark` links of one resource.
pub fn resource_links(
    base: &str,
    project_id: &str,
    collection: &str,
    id: &str,
) -> serde_json::Value {
    serde_json::json!([
        {"rel": "self", "href": format!("{base}/v3/{project_id}/{collection}/{id}")},
        {"rel": "bookmark", "href": format!("{base}/{project_id}/{collection}/{id}")},
    ])
}

/// The `next` link of a full page: the same query with `marker` set to the last id.
pub fn next_link(
    base: &str,
    project_id: &str,
    path: &str,
    query: &[(String, String)],
    last_id: &str,
) -> serde_json::Value {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .filter(|(k, _)| k != "marker")
        .cloned()
        .collect();
    pairs.push(("marker".to_owned(), last_id.to_owned()));
    let encoded: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    serde_json::json!([{"rel": "next", "href": format!("{base}/v3/{project_id}/{path}?{}", encoded.join("&"))}])
}

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_link_replaces_the_marker() {
        let query = vec![
            ("limit".to_owned(), "2".to_owned()),
            ("marker".to_owned(), "old".to_owned()),
            ("name".to_owned(), "a b".to_owned()),
        ];
        let link = next_link("http://h", "p", "volumes/detail", &query, "new");
        assert_eq!(
            link[0]["href"],
            "http://h/v3/p/volumes/detail?limit=2&name=a%20b&marker=new"
        );
    }
}
