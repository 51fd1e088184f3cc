//! How a host connector is kept: one `attachment_specs` row per key, each value as JSON
//! text, so that any connector os-brick sends comes back exactly as it was.

use serde_json::{Map, Value};

use super::StoreError;

/// The rows for a connector: `(key, JSON text of the value)`.
pub fn encode(connector: &Map<String, Value>) -> Vec<(String, Option<String>)> {
    connector
        .iter()
        .map(|(key, value)| (key.clone(), Some(value.to_string())))
        .collect()
}

/// The connector back from its rows; a value that is not JSON is corruption.
pub fn decode(
    rows: impl IntoIterator<Item = (String, Option<String>)>,
) -> Result<Map<String, Value>, StoreError> {
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
        let connector = serde_json::json!({"host": "h", "multipath": false, "wwpns": ["a", "b"],
                                           "nested": {"x": null}, "n": 1.5})
        .as_object()
        .cloned()
        .unwrap();
        assert_eq!(decode(encode(&connector)).unwrap(), connector);
        // Found by the fuzzer: without serde_json's `float_roundtrip`, this number came
        // back one unit in the last place off.
        let float: Map<String, Value> = serde_json::from_str(r#"{"st": 22e75}"#).unwrap();
        assert_eq!(decode(encode(&float)).unwrap(), float);
        assert!(decode([("k".to_owned(), Some("{oops".to_owned()))]).is_err());
    }
}
