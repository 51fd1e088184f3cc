//! Where a new volume goes, as Cinder's filter scheduler decides it: the enabled backends
//! in the requested zone whose capabilities satisfy the volume type's extra specs and
//! that have room for the volume, the one with the most free space first.
//!
//! The operators of the extra specs are Cinder's (`cinder/scheduler/filters/
//! extra_specs_ops.py`), with Python's comparison rules: a plain value matches only the
//! same text, numbers compare as floats, `<is>` as booleans.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One backend as placement sees it.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub availability_zone: String,
    /// Disabled through `os-services`: takes no new volumes.
    pub disabled: bool,
    /// What the backend reports (`pool_capabilities`).
    pub capabilities: Map<String, Value>,
}

/// What the new volume needs.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub size_gb: i64,
    pub availability_zone: Option<&'a str>,
    pub extra_specs: &'a BTreeMap<String, String>,
}

/// The candidates (by index) that can take the volume, best first. Empty: no valid
/// backend.
pub fn choose(candidates: &[Candidate], request: &Request<'_>) -> Vec<usize> {
    let mut passing: Vec<(usize, f64)> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.disabled)
        .filter(|(_, c)| {
            request
                .availability_zone
                .is_none_or(|zone| c.availability_zone == zone)
        })
        .filter(|(_, c)| satisfies(&c.capabilities, request.extra_specs))
        .filter(|(_, c)| has_room(&c.capabilities, request.size_gb))
        .map(|(i, c)| (i, capacity_weight(&c.capabilities)))
        .collect();
    // Stable: equal weights keep the configuration order.
    passing.sort_by(|a, b| b.1.total_cmp(&a.1));
    passing.into_iter().map(|(i, _)| i).collect()
}

/// Cinder's capacity filter: an unlimited or unknown pool always has room; otherwise the
/// free space (what is not provisioned: the pools here are not over-subscribed) must
/// hold the volume.
fn has_room(capabilities: &Map<String, Value>, size_gb: i64) -> bool {
    match capabilities.get("free_capacity_gb").and_then(Value::as_f64) {
        Some(free) => free >= size_gb as f64,
        None => true,
    }
}

/// Cinder's capacity weigher (multiplier 1.0): the free space; an unlimited or unknown
/// pool weighs -1, below any pool with a known size.
fn capacity_weight(capabilities: &Map<String, Value>) -> f64 {
    capabilities
        .get("free_capacity_gb")
        .and_then(Value::as_f64)
        .unwrap_or(-1.0)
}

/// Cinder's capabilities filter: every extra spec without a scope, or with the
/// `capabilities:` scope, names a capability (nested with further `:`) that must exist
/// and match; specs of other scopes (`attach:`, `RESKEY:`, `provisioning:`, ...) are not
/// the scheduler's.
pub fn satisfies(
    capabilities: &Map<String, Value>,
    extra_specs: &BTreeMap<String, String>,
) -> bool {
    extra_specs.iter().all(|(key, wanted)| {
        let mut scope: Vec<&str> = key.split(':').collect();
        if scope.len() > 1 && scope[0] != "capabilities" {
            return true;
        }
        if scope[0] == "capabilities" {
            scope.remove(0);
        }
        let mut found = Some(Value::Object(capabilities.clone()));
        for name in scope {
            found = found.and_then(|v| v.get(name).cloned());
        }
        match found {
            None => false,
            Some(Value::Array(values)) => values.iter().any(|v| spec_matches(v, wanted)),
            Some(value) => spec_matches(&value, wanted),
        }
    })
}

/// Whether a reported capability `value` matches the extra spec `wanted`
/// (`extra_specs_ops.match`).
pub fn spec_matches(value: &Value, wanted: &str) -> bool {
    let mut words = wanted.split_whitespace();
    let op = words.next();
    let known = op.is_some_and(|op| op == "<or>" || OPERATORS.contains(&op));
    if !known {
        return value.as_str() == Some(wanted);
    }
    if value.is_null() {
        return false;
    }
    let rest: Vec<&str> = words.collect();
    if op == Some("<or>") {
        // `<or> a <or> b`: every other word is a choice.
        return rest
            .iter()
            .step_by(2)
            .any(|choice| value.as_str() == Some(choice));
    }
    let Some(operand) = rest.first() else {
        return false;
    };
    compare(op.unwrap_or_default(), value, operand)
}

const OPERATORS: &[&str] = &[
    "=", "<in>", "<is>", "==", "!=", ">=", "<=", "s==", "s!=", "s<", "s<=", "s>", "s>=",
];

fn compare(op: &str, value: &Value, operand: &str) -> bool {
    let numbers = || Some((as_float(value)?, operand.trim().parse::<f64>().ok()?));
    let text = value.as_str();
    match op {
        "=" | ">=" => numbers().is_some_and(|(x, y)| x >= y),
        "<=" => numbers().is_some_and(|(x, y)| x <= y),
        "==" => numbers().is_some_and(|(x, y)| x == y),
        "!=" => numbers().is_some_and(|(x, y)| x != y),
        "<in>" => text.is_some_and(|t| t.contains(operand)),
        "<is>" => as_bool(value) == as_bool(&Value::String(operand.to_owned())),
        "s==" => text == Some(operand),
        // Python's `!=` between text and anything else is true.
        "s!=" => text != Some(operand),
        "s<" => text.is_some_and(|t| t < operand),
        "s<=" => text.is_some_and(|t| t <= operand),
        "s>" => text.is_some_and(|t| t > operand),
        "s>=" => text.is_some_and(|t| t >= operand),
        _ => false,
    }
}

/// Python's `float()` of a reported value.
fn as_float(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// oslo's `bool_from_string` (default false).
fn as_bool(value: &Value) -> bool {
    let text = match value {
        Value::Bool(b) => return *b,
        Value::String(s) => s.trim().to_ascii_lowercase(),
        other => other.to_string(),
    };
    matches!(text.as_str(), "1" | "t" | "true" | "on" | "y" | "yes")
}

/// `GET /scheduler-stats/get_pools` filters (3.28+): the pool's name, and any other key a
/// capability that must equal the value given (Cinder's `_equal_after_convert`: a boolean
/// capability compares as a boolean, any other as text; a pool without it is left out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolFilters {
    pub name: Option<String>,
    pub capabilities: BTreeMap<String, String>,
}

/// Whether the pool `name` with `capabilities` passes `filters`.
pub fn pool_matches(name: &str, capabilities: &Map<String, Value>, filters: &PoolFilters) -> bool {
    if filters.name.as_deref().is_some_and(|wanted| wanted != name) {
        return false;
    }
    filters
        .capabilities
        .iter()
        .all(|(key, wanted)| match capabilities.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(have)) => *have == oslo_bool(wanted),
            Some(Value::String(have)) => have == wanted,
            Some(other) => &other.to_string() == wanted,
        })
}

/// oslo's `bool_from_string`: `1`, `t`, `true`, `on`, `y`, `yes` (any case) are true.
fn oslo_bool(text: &str) -> bool {
    matches!(
        text.trim().to_ascii_lowercase().as_str(),
        "1" | "t" | "true" | "on" | "y" | "yes"
    )
}

#[cfg(test)]
mod tests;
