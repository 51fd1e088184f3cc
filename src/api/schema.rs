//! Request-body validation with Cinder's JSON-schema messages.
//!
//! Cinder validates bodies with Draft-4 JSON schemas and reports the most relevant error
//! (the shallowest one) as `Invalid input for field/attribute <name>. Value: <v>. <msg>`,
//! or just `<msg>` at the top level, with Python's spelling of values. Our schemas are
//! written as JSON (`serde_json::json!`) in the same shape as Cinder's, and this module
//! interprets the subset of keywords they use.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::domain::ids::parse_uuid_like;

/// One failed keyword.
#[derive(Debug, Clone)]
struct Failure {
    path: Vec<String>,
    instance: Value,
    message: String,
}

/// Validates `instance`; on failure returns Cinder's message for the best error.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
    let mut failures = Vec::new();
    check(schema, instance, &mut Vec::new(), &mut failures);
    // The shallowest failure is the most relevant (jsonschema's `best_match`); the
    // first one wins a tie.
    let Some(best) = failures.into_iter().min_by_key(|f| f.path.len()) else {
        return Ok(());
    };
    Err(match best.path.last() {
        Some(field) => format!(
            "Invalid input for field/attribute {field}. Value: {}. {}",
            py_str(&best.instance),
            best.message
        ),
        None => best.message,
    })
}

fn fail(failures: &mut Vec<Failure>, path: &[String], instance: &Value, message: String) {
    failures.push(Failure {
        path: path.to_vec(),
        instance: instance.clone(),
        message,
    });
}

fn is_valid(schema: &Value, instance: &Value) -> bool {
    let mut failures = Vec::new();
    check(schema, instance, &mut Vec::new(), &mut failures);
    failures.is_empty()
}

fn type_matches(name: &str, instance: &Value) -> bool {
    match name {
        "object" => instance.is_object(),
        "array" => instance.is_array(),
        "string" => instance.is_string(),
        "integer" => instance.as_i64().is_some() || instance.as_u64().is_some(),
        "number" => instance.is_number(),
        "boolean" => instance.is_boolean(),
        "null" => instance.is_null(),
        _ => false,
    }
}

/// Cinder's `minimum`/`maximum` also accept numeric strings such as `"10"`.
fn as_number(instance: &Value) -> Option<f64> {
    match instance {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

fn format_ok(format: &str, text: &str) -> bool {
    match format {
        "uuid" => parse_uuid_like(text).is_some(),
        // A mandatory name: not empty once surrounding white space is removed.
        "name" => !text.trim().is_empty(),
        _ => true,
    }
}

fn check(schema: &Value, instance: &Value, path: &mut Vec<String>, failures: &mut Vec<Failure>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    if let Some(types) = schema.get("type") {
        let names: Vec<&str> = match types {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !names.iter().any(|name| type_matches(name, instance)) {
            let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
            let message = format!("{} is not of type {}", py_repr(instance), quoted.join(", "));
            fail(failures, path, instance, message);
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        if !allowed.contains(instance) {
            let choices = py_repr(&Value::Array(allowed.clone()));
            fail(
                failures,
                path,
                instance,
                format!("{} is not one of {choices}", py_repr(instance)),
            );
        }
    }
    if let Value::String(text) = instance {
        check_string(schema, text, instance, path, failures);
    }
    if let Some(number) = as_number(instance) {
        if let Some(minimum) = schema.get("minimum").and_then(Value::as_f64) {
            if number < minimum {
                let message = format!(
                    "{} is less than the minimum of {}",
                    py_repr(instance),
                    fmt_number(minimum)
                );
                fail(failures, path, instance, message);
            }
        }
        if let Some(maximum) = schema.get("maximum").and_then(Value::as_f64) {
            if number > maximum {
                let message = format!(
                    "{} is greater than the maximum of {}",
                    py_repr(instance),
                    fmt_number(maximum)
                );
                fail(failures, path, instance, message);
            }
        }
    }
    if let Value::Object(object) = instance {
        check_object(schema, object, instance, path, failures);
    }
    if let Value::Array(items) = instance {
        check_array(schema, items, instance, path, failures);
    }
    if let (Value::Array(items), Some(item_schema)) = (instance, schema.get("items")) {
        for (index, item) in items.iter().enumerate() {
            path.push(index.to_string());
            check(item_schema, item, path, failures);
            path.pop();
        }
    }
    if let Some(Value::Array(options)) = schema.get("oneOf") {
        let matching = options
            .iter()
            .filter(|option| is_valid(option, instance))
            .count();
        if matching == 0 {
            let message = format!(
                "{} is not valid under any of the given schemas",
                py_repr(instance)
            );
            fail(failures, path, instance, message);
        } else if matching > 1 {
            let message = format!(
                "{} is valid under each of the given schemas",
                py_repr(instance)
            );
            fail(failures, path, instance, message);
        }
    }
    if let Some(Value::Array(options)) = schema.get("anyOf") {
        if !options.iter().any(|option| is_valid(option, instance)) {
            let message = format!(
                "{} is not valid under any of the given schemas",
                py_repr(instance)
            );
            fail(failures, path, instance, message);
        }
    }
}

/// `minItems` and `uniqueItems`, with jsonschema's messages.
fn check_array(
    schema: &Map<String, Value>,
    items: &[Value],
    instance: &Value,
    path: &[String],
    failures: &mut Vec<Failure>,
) {
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
        if (items.len() as u64) < min {
            let message = format!("{} is too short", py_repr(instance));
            fail(failures, path, instance, message);
        }
    }
    let unique = schema.get("uniqueItems").and_then(Value::as_bool) == Some(true);
    if unique
        && items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].contains(a))
    {
        let message = format!("{} has non-unique elements", py_repr(instance));
        fail(failures, path, instance, message);
    }
}

fn check_string(
    schema: &Map<String, Value>,
    text: &str,
    instance: &Value,
    path: &[String],
    failures: &mut Vec<Failure>,
) {
    let length = text.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
        if length < min {
            let message = if min == 1 {
                format!("{} should be non-empty", py_repr(instance))
            } else {
                format!("{} is too short", py_repr(instance))
            };
            fail(failures, path, instance, message);
        }
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        if length > max {
            fail(
                failures,
                path,
                instance,
                format!("{} is too long", py_repr(instance)),
            );
        }
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        if !pattern_matches(pattern, text) {
            let message = format!(
                "{} does not match {}",
                py_repr(instance),
                py_repr(&Value::String(pattern.into()))
            );
            fail(failures, path, instance, message);
        }
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        if !format_ok(format, text) {
            fail(
                failures,
                path,
                instance,
                format!("{} is not a '{format}'", py_repr(instance)),
            );
        }
    }
}

fn pattern_matches(pattern: &str, text: &str) -> bool {
    thread_local! {
        static COMPILED: std::cell::RefCell<std::collections::HashMap<String, Option<regex_lite::Regex>>> =
            std::cell::RefCell::default();
    }
    COMPILED.with(|cache| {
        let mut cache = cache.borrow_mut();
        // Patterns come from our own schemas; one that does not compile is a bug, which
        // shows up as every value being refused.
        let regex = cache
            .entry(pattern.to_owned())
            .or_insert_with(|| regex_lite::Regex::new(pattern).ok());
        regex.as_ref().is_some_and(|re| re.is_match(text))
    })
}

fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    instance: &Value,
    path: &mut Vec<String>,
    failures: &mut Vec<Failure>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let patterns = schema.get("patternProperties").and_then(Value::as_object);
    for (key, value) in object {
        if let Some(property_schema) = properties.and_then(|p| p.get(key)) {
            path.push(key.clone());
            check(property_schema, value, path, failures);
            path.pop();
        }
        for (pattern, pattern_schema) in patterns.into_iter().flatten() {
            if pattern_matches(pattern, key) {
                path.push(key.clone());
                check(pattern_schema, value, path, failures);
                path.pop();
            }
        }
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                fail(
                    failures,
                    path,
                    instance,
                    format!("'{name}' is a required property"),
                );
            }
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        let extra: Vec<String> = object
            .keys()
            .filter(|key| !properties.is_some_and(|p| p.contains_key(*key)))
            .filter(|key| {
                !patterns
                    .into_iter()
                    .flatten()
                    .any(|(pattern, _)| pattern_matches(pattern, key))
            })
            .map(|key| py_repr(&Value::String(key.clone())))
            .collect();
        if !extra.is_empty() {
            let verb = if extra.len() == 1 { "was" } else { "were" };
            let message = format!(
                "Additional properties are not allowed ({} {verb} unexpected)",
                extra.join(", ")
            );
            fail(failures, path, instance, message);
        }
    }
    if let Some(min) = schema.get("minProperties").and_then(Value::as_u64) {
        if (object.len() as u64) < min {
            let message = if min == 1 {
                format!("{} should be non-empty", py_repr(instance))
            } else {
                format!("{} does not have enough properties", py_repr(instance))
            };
            fail(failures, path, instance, message);
        }
    }
    if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64) {
        if (object.len() as u64) > max {
            fail(
                failures,
                path,
                instance,
                format!("{} has too many properties", py_repr(instance)),
            );
        }
    }
}

fn fmt_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// Cinder's `parameter_types.boolean`: a JSON boolean or one of oslo's spellings.
pub fn boolean() -> Value {
    serde_json::json!({"type": ["boolean", "string"], "enum": [
        true, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes", "y", "t",
        false, "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no", "n", "f"
    ]})
}

/// Cinder's specs without spaces in their keys (`extra_specs_with_no_spaces_key`, and the
/// group specs' twin): keys of `[a-zA-Z0-9-_:.]`, values text or null.
fn spec_items() -> Value {
    serde_json::json!({
        "type": "object",
        "patternProperties": {"^[a-zA-Z0-9-_:.]{1,255}$": {"type": ["string", "null"], "minLength": 0, "maxLength": 255}},
        "additionalProperties": false
    })
}

/// `{field: specs}`, the body that sets specs (`extra_specs`, `group_specs`).
pub fn specs_body(field: &str) -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {field: spec_items()},
        "required": [field],
        "additionalProperties": false
    })
}

/// `{key: value}`, the body that sets one spec.
pub fn one_spec() -> Value {
    let mut schema = spec_items();
    schema["minProperties"] = serde_json::json!(1);
    schema["maxProperties"] = serde_json::json!(1);
    schema
}

/// The truth value of something `boolean()` accepted.
pub fn as_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) => super::paging::parse_bool(s),
        _ => None,
    }
}

/// Python's `repr()` of a JSON value: `'text'`, `None`, `True`, `[1, 'a']`, `{'k': 'v'}`.
pub fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_repr_str(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), py_repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

/// Python's `str()`: strings bare, everything else as `repr()`.
pub fn py_str(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(py_repr(other)),
    }
}

fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn attachment_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "attachment": {
                    "type": "object",
                    "properties": {
                        "volume_uuid": {"type": "string", "format": "uuid"},
                        "instance_uuid": {"type": "string", "format": "uuid"},
                        "connector": {"type": ["object", "null"]},
                        "mode": {"type": "string", "enum": ["rw", "ro"]}
                    },
                    "required": ["volume_uuid"],
                    "additionalProperties": false
                }
            },
            "required": ["attachment"],
            "additionalProperties": false
        })
    }

    fn message(body: Value) -> String {
        validate(&attachment_schema(), &body).expect_err("invalid")
    }

    #[test]
    fn cinder_messages() {
        let v = "12345678-1234-1234-1234-123456789abc";
        assert_eq!(message(json!({})), "'attachment' is a required property");
        assert_eq!(
            message(json!({"attachment": {"instance_uuid": v}})),
            format!("Invalid input for field/attribute attachment. Value: {{'instance_uuid': '{v}'}}. 'volume_uuid' is a required property")
        );
        assert_eq!(
            message(json!({"attachment": {"volume_uuid": "invalid-uuid"}})),
            "Invalid input for field/attribute volume_uuid. Value: invalid-uuid. 'invalid-uuid' is not a 'uuid'"
        );
        assert!(
            message(json!({"attachment": {"volume_uuid": v, "instance_uuid": null}}))
                .ends_with("None is not of type 'string'")
        );
        assert!(message(json!({"attachment": {"volume_uuid": 123}}))
            .ends_with("123 is not of type 'string'"));
        assert!(message(json!({"attachment": {"volume_uuid": v, "foo": 1}}))
            .ends_with("Additional properties are not allowed ('foo' was unexpected)"));
        assert_eq!(
            message(json!({"attachment": {"volume_uuid": v}, "bar": 1, "baz": 2})),
            "Additional properties are not allowed ('bar', 'baz' were unexpected)"
        );
        assert!(
            message(json!({"attachment": {"volume_uuid": v, "connector": []}}))
                .ends_with("[] is not of type 'object', 'null'")
        );
        assert!(
            message(json!({"attachment": {"volume_uuid": v, "mode": "rx"}}))
                .ends_with("'rx' is not one of ['rw', 'ro']")
        );
        assert!(validate(
            &attachment_schema(),
            &json!({"attachment": {"volume_uuid": v, "connector": null}})
        )
        .is_ok());
    }

    #[test]
    fn numbers_patterns_and_sizes() {
        let schema = json!({
            "type": "object",
            "properties": {
                "size": {"type": ["integer", "string", "null"], "pattern": "^[0-9]+$", "minimum": 1},
                "key": {"type": "string", "minLength": 1, "maxLength": 3}
            }
        });
        let err = validate(&schema, &json!({"size": 0})).unwrap_err();
        assert_eq!(
            err,
            "Invalid input for field/attribute size. Value: 0. 0 is less than the minimum of 1"
        );
        let err = validate(&schema, &json!({"size": "1x"})).unwrap_err();
        assert!(err.ends_with("'1x' does not match '^[0-9]+$'"), "{err}");
        assert!(validate(&schema, &json!({"size": "10"})).is_ok());
        assert!(validate(&schema, &json!({"key": ""}))
            .unwrap_err()
            .ends_with("'' should be non-empty"));
        assert!(validate(&schema, &json!({"key": "abcd"}))
            .unwrap_err()
            .ends_with("'abcd' is too long"));
    }

    #[test]
    fn python_spelling() {
        assert_eq!(
            py_repr(&json!({"a": [1, true, null, "it's"]})),
            "{'a': [1, True, None, \"it's\"]}"
        );
        assert_eq!(py_repr(&json!("a\nb")), "'a\\nb'");
        assert_eq!(py_str(&json!("bare")), "bare");
    }

    #[test]
    fn one_of_reports_the_whole_value() {
        let schema = json!({"oneOf": [{"type": "null"}, {"type": "string", "format": "uuid"}]});
        assert!(validate(&schema, &Value::Null).is_ok());
        assert_eq!(
            validate(&schema, &json!("nope")).unwrap_err(),
            "'nope' is not valid under any of the given schemas"
        );
    }
}
