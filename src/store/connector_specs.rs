//! How a host connector is kept: one `attachment_specs` row per key, each value as JSON
//! text, so that any connector os-brick sends comes back exactly as it was.

use super::db::error::StoreError;
use crate::domain::attachment::Connector;

/// The rows for a connector: `(key, JSON text of the value)`.
pub fn encode(connector: &Connector) -> Vec<(String, Option<String>)> {
    connector
        .iter()
        .map(|(key, value)| (key.clone(), Some(value.to_string())))
        .collect()
}

/// The connector back from its rows; a value that is not JSON is corruption.
pub fn decode(
    rows: impl IntoIterator<Item = (String, Option<String>)>,
) -> Result<Connector, StoreError> {
    rows.into_iter()
        .map(|(key, text)| {
            let text = text.unwrap_or_else(|| "null".to_owned());
            let value = serde_json::from_str(&text)
                .map_err(|e| StoreError::Corrupt(format!("attachment spec {key}: {e}")))?;
            Ok((key, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connectors_round_trip() {
        let connector = Connector::from_json(Some(serde_json::json!({
            "host": "h", "multipath": false, "wwpns": ["a", "b"], "nested": {"x": null}, "n": 1.5
        })))
        .unwrap();
        assert_eq!(decode(encode(&connector)).unwrap(), connector);
        // Found by the fuzzer: without serde_json's `float_roundtrip`, this number came
        // back one unit in the last place off.
        let float = Connector::from_json(serde_json::from_str(r#"{"st": 22e75}"#).ok()).unwrap();
        assert_eq!(decode(encode(&float)).unwrap(), float);
        assert!(decode([("k".to_owned(), Some("{oops".to_owned()))]).is_err());
    }
}
