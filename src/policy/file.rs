//! Operator policy files in oslo.policy's formats: a flat YAML mapping
//! (`"rule": "check string"`, comments with `#`) or a JSON object.
//!
//! Only flat string mappings are policy files, so a small reader that reports the
//! offending line beats a general YAML library here.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}: {reason}")]
pub struct PolicyFileError {
    pub path: String,
    pub line: usize,
    pub reason: String,
}

/// Rules from a policy file, with the line each was defined on.
pub type RuleLines = BTreeMap<String, (String, usize)>;

pub fn parse(path: &str, text: &str) -> Result<RuleLines, PolicyFileError> {
    let error = |line: usize, reason: String| PolicyFileError {
        path: path.to_owned(),
        line,
        reason,
    };
    if text.trim_start().starts_with('{') {
        let map: BTreeMap<String, String> = serde_json::from_str(text)
            .map_err(|e| error(e.line(), format!("not a JSON object of strings: {e}")))?;
        return Ok(map.into_iter().map(|(k, v)| (k, (v, 0))).collect());
    }
    let mut rules = RuleLines::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = strip_comment(raw);
        if line.trim().is_empty() || line.trim() == "---" {
            continue;
        }
        if raw.starts_with(' ') || raw.starts_with('\t') {
            return Err(error(number, "nested or continued values are not supported; write one \"rule\": \"check\" per line".into()));
        }
        let (key, rest) = split_key(line)
            .ok_or_else(|| error(number, "expected \"rule\": \"check string\"".into()))?;
        let value = scalar(rest.trim()).map_err(|reason| error(number, reason))?;
        if rules.insert(key.clone(), (value, number)).is_some() {
            return Err(error(number, format!("rule {key:?} is defined twice")));
        }
    }
    Ok(rules)
}

/// The line without a trailing `# comment` (a `#` inside quotes is kept).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if i == 0 || line[..i].ends_with(char::is_whitespace) => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Splits `key: value`, where the key may be quoted.
fn split_key(line: &str) -> Option<(String, &str)> {
    let line = line.trim_start();
    if let Some(quote) = line.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let end = line[1..].find(quote)? + 1;
        let key = line[1..end].to_owned();
        let rest = line[end + 1..].trim_start().strip_prefix(':')?;
        return Some((key, rest));
    }
    let colon = line
        .find(": ")
        .or_else(|| line.strip_suffix(':').map(|l| l.len()))?;
    Some((line[..colon].trim().to_owned(), &line[colon + 1..]))
}

/// A YAML scalar on one line: quoted (with `''` or `\"` escapes), or plain.
fn scalar(text: &str) -> Result<String, String> {
    match text.chars().next() {
        None => Ok(String::new()),
        Some('"') => {
            let inner = text
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .ok_or("unterminated \"string\"")?;
            Ok(inner.replace("\\\"", "\"").replace("\\\\", "\\"))
        }
        Some('\'') => {
            let inner = text
                .strip_prefix('\'')
                .and_then(|t| t.strip_suffix('\''))
                .ok_or("unterminated 'string'")?;
            Ok(inner.replace("''", "'"))
        }
        Some('|' | '>' | '[' | '{' | '&' | '*') => Err(format!(
            "unsupported YAML value {text:?}; quote the check string"
        )),
        Some(_) => Ok(text.trim_end().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_rules() {
        let text = r#"
# Operators' overrides
"volume:multiattach": "role:admin"   # only admins
volume:create: rule:xena_system_admin_or_project_member
'volume:delete': '!'
"context_is_admin": "role:admin or role:cloud-admin"
empty: ""
"#;
        let rules = parse("policy.yaml", text).unwrap();
        assert_eq!(rules["volume:multiattach"], ("role:admin".to_owned(), 3));
        assert_eq!(
            rules["volume:create"].0,
            "rule:xena_system_admin_or_project_member"
        );
        assert_eq!(rules["volume:delete"].0, "!");
        assert_eq!(rules["empty"].0, "");
    }

    #[test]
    fn json_rules() {
        let rules = parse("p.json", r#"{"volume:multiattach": "role:admin"}"#).unwrap();
        assert_eq!(rules["volume:multiattach"].0, "role:admin");
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse("p.yaml", "\"a\": \"role:x\"\nthis is not a rule\n").unwrap_err();
        assert_eq!((err.line, err.path.as_str()), (2, "p.yaml"));
        let err = parse("p.yaml", "\"a\": \"unterminated\n").unwrap_err();
        assert_eq!(err.line, 1);
        let err = parse("p.yaml", "a: x\na: y\n").unwrap_err();
        assert!(err.reason.contains("twice"));
        assert!(parse("p.yaml", "a:\n  - nested\n").is_err());
        assert!(parse("p.json", "{\"a\": 1}").is_err());
    }
}
