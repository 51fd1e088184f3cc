//! oslo.policy check strings: parsing and evaluation.
//!
//! Grammar: `@` (always), `!` (never), `""` (always), `rule:<name>`, `role:<name>`,
//! `<credential>:<value>` where the value is a literal (`True`, `'text'`, `42`) or a
//! `%(target_key)s` reference, combined with `and`, `or`, `not` and parentheses.
//! `not` binds tighter than `and`, which binds tighter than `or`.

use std::collections::HashMap;
use std::fmt;

/// Deepest nesting of parentheses and `not` a check string may have; deeper ones are
/// refused when the policy is loaded (the parser would otherwise recurse without bound).
pub const MAX_NESTING: usize = 32;

/// Deepest evaluation (nesting plus `rule:` references followed) a policy may need; a
/// policy needing more is refused at load, and an evaluation that gets deeper anyway
/// denies (never allows: a `not` above a cut-off branch must not turn it into a yes).
pub const MAX_EVALUATION_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    Always,
    Never,
    Rule(String),
    Role(String),
    /// `key:value` compared against the caller's credentials.
    Generic {
        key: String,
        value: String,
    },
    And(Vec<Check>),
    Or(Vec<Check>),
    Not(Box<Check>),
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::Always => f.write_str("@"),
            Check::Never => f.write_str("!"),
            Check::Rule(name) => write!(f, "rule:{name}"),
            Check::Role(name) => write!(f, "role:{name}"),
            Check::Generic { key, value } => write!(f, "{key}:{value}"),
            Check::And(parts) => write_joined(f, parts, " and "),
            Check::Or(parts) => write_joined(f, parts, " or "),
            Check::Not(inner) => write!(f, "not {inner}"),
        }
    }
}

fn write_joined(f: &mut fmt::Formatter<'_>, parts: &[Check], joiner: &str) -> fmt::Result {
    f.write_str("(")?;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            f.write_str(joiner)?;
        }
        write!(f, "{part}")?;
    }
    f.write_str(")")
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid check string {text:?}: {reason}")]
pub struct ParseError {
    pub text: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    And,
    Or,
    Not,
    Check(String),
}

fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    for word in text.split_whitespace() {
        let mut word = word;
        while let Some(rest) = word.strip_prefix('(') {
            tokens.push(Token::Open);
            word = rest;
        }
        let mut closes = 0;
        while let Some(rest) = word.strip_suffix(')') {
            closes += 1;
            word = rest;
        }
        if !word.is_empty() {
            tokens.push(match word.to_ascii_lowercase().as_str() {
                "and" => Token::And,
                "or" => Token::Or,
                "not" => Token::Not,
                _ => Token::Check(word.to_owned()),
            });
        }
        tokens.extend(std::iter::repeat_n(Token::Close, closes));
    }
    tokens
}

struct Parser<'a> {
    tokens: Vec<Token>,
    position: usize,
    text: &'a str,
    /// Parentheses and `not`s open around the current token.
    nesting: usize,
}

impl Parser<'_> {
    fn error(&self, reason: impl Into<String>) -> ParseError {
        ParseError {
            text: self.text.to_owned(),
            reason: reason.into(),
        }
    }

    /// One level deeper, refused past `MAX_NESTING`.
    fn enter(&mut self) -> Result<(), ParseError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(self.error(format!(
                "nested deeper than {MAX_NESTING} levels of parentheses and `not`"
            )));
        }
        Ok(())
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.position).cloned();
        self.position += 1;
        token
    }

    fn or_expression(&mut self) -> Result<Check, ParseError> {
        let mut parts = vec![self.and_expression()?];
        while self.peek() == Some(&Token::Or) {
            self.next();
            parts.push(self.and_expression()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Check::Or(parts)
        })
    }

    fn and_expression(&mut self) -> Result<Check, ParseError> {
        let mut parts = vec![self.unary()?];
        while self.peek() == Some(&Token::And) {
            self.next();
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Check::And(parts)
        })
    }

    fn unary(&mut self) -> Result<Check, ParseError> {
        match self.next() {
            Some(Token::Not) => {
                self.enter()?;
                let inner = self.unary()?;
                self.nesting -= 1;
                Ok(Check::Not(Box::new(inner)))
            }
            Some(Token::Open) => {
                self.enter()?;
                let inner = self.or_expression()?;
                self.nesting -= 1;
                match self.next() {
                    Some(Token::Close) => Ok(inner),
                    _ => Err(self.error("missing closing parenthesis")),
                }
            }
            Some(Token::Check(word)) => parse_atom(&word).map_err(|reason| self.error(reason)),
            Some(other) => Err(self.error(format!("unexpected {other:?}"))),
            None => Err(self.error("unexpected end")),
        }
    }
}

fn parse_atom(word: &str) -> Result<Check, String> {
    match word {
        "@" => return Ok(Check::Always),
        "!" => return Ok(Check::Never),
        _ => {}
    }
    let Some((kind, value)) = word.split_once(':') else {
        return Err(format!(
            "{word:?} is not a check (expected kind:value, @ or !)"
        ));
    };
    if value.is_empty() {
        return Err(format!("{word:?} has no value"));
    }
    Ok(match kind {
        "rule" => Check::Rule(value.to_owned()),
        "role" => Check::Role(value.to_owned()),
        _ => Check::Generic {
            key: kind.to_owned(),
            value: value.to_owned(),
        },
    })
}

pub fn parse(text: &str) -> Result<Check, ParseError> {
    if text.trim().is_empty() {
        return Ok(Check::Always);
    }
    let mut parser = Parser {
        tokens: tokenize(text),
        position: 0,
        text,
        nesting: 0,
    };
    let check = parser.or_expression()?;
    if parser.position < parser.tokens.len() {
        return Err(parser.error("unexpected text after the expression"));
    }
    Ok(check)
}

/// What a check is evaluated against.
pub struct Evaluation<'a> {
    pub credentials: &'a HashMap<&'static str, CredentialValue>,
    pub roles: &'a [String],
    pub target: &'a HashMap<&'static str, String>,
    pub rules: &'a HashMap<String, Check>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialValue {
    Text(String),
    Bool(bool),
    Absent,
}

impl Check {
    /// Whether the check allows; an evaluation deeper than `MAX_EVALUATION_DEPTH`
    /// denies.
    pub fn evaluate(&self, eval: &Evaluation<'_>) -> bool {
        self.evaluate_depth(eval, 0).unwrap_or_else(|| {
            tracing::warn!(check = %self, "policy evaluation too deep; denied");
            false
        })
    }

    /// `None` when the evaluation got too deep: the caller denies whatever the branches
    /// above would make of it.
    fn evaluate_depth(&self, eval: &Evaluation<'_>, depth: usize) -> Option<bool> {
        if depth > MAX_EVALUATION_DEPTH {
            return None;
        }
        let next = depth + 1;
        Some(match self {
            Check::Always => true,
            Check::Never => false,
            Check::Rule(name) => match eval.rules.get(name) {
                Some(rule) => rule.evaluate_depth(eval, next)?,
                None => false,
            },
            Check::Role(role) => {
                let wanted = substitute(role, eval.target);
                wanted.is_some_and(|wanted| {
                    eval.roles
                        .iter()
                        .any(|have| have.eq_ignore_ascii_case(&wanted))
                })
            }
            Check::Generic { key, value } => {
                let Some(expected) = substitute(value, eval.target) else {
                    return Some(false);
                };
                let actual = eval
                    .credentials
                    .get(key.as_str())
                    .unwrap_or(&CredentialValue::Absent);
                match actual {
                    CredentialValue::Absent => false,
                    CredentialValue::Bool(b) => match expected.as_str() {
                        "True" | "true" => *b,
                        "False" | "false" => !*b,
                        _ => false,
                    },
                    CredentialValue::Text(text) => *text == unquote(&expected),
                }
            }
            Check::And(parts) => {
                for part in parts {
                    if !part.evaluate_depth(eval, next)? {
                        return Some(false);
                    }
                }
                true
            }
            Check::Or(parts) => {
                for part in parts {
                    if part.evaluate_depth(eval, next)? {
                        return Some(true);
                    }
                }
                false
            }
            Check::Not(inner) => !inner.evaluate_depth(eval, next)?,
        })
    }

    /// How deep evaluating this check can go, following `rule:` references through
    /// `rules` (references must not form cycles); `None` past `MAX_EVALUATION_DEPTH`.
    pub fn evaluation_depth(&self, rules: &HashMap<String, Check>, depth: usize) -> Option<usize> {
        if depth > MAX_EVALUATION_DEPTH {
            return None;
        }
        let next = depth + 1;
        match self {
            Check::Rule(name) => match rules.get(name) {
                Some(rule) => rule.evaluation_depth(rules, next),
                None => Some(depth),
            },
            Check::And(parts) | Check::Or(parts) => {
                let mut deepest = depth;
                for part in parts {
                    deepest = deepest.max(part.evaluation_depth(rules, next)?);
                }
                Some(deepest)
            }
            Check::Not(inner) => inner.evaluation_depth(rules, next),
            _ => Some(depth),
        }
    }

    /// Names of the rules this check refers to.
    pub fn referenced_rules(&self, out: &mut Vec<String>) {
        match self {
            Check::Rule(name) => out.push(name.clone()),
            Check::And(parts) | Check::Or(parts) => {
                parts.iter().for_each(|p| p.referenced_rules(out))
            }
            Check::Not(inner) => inner.referenced_rules(out),
            _ => {}
        }
    }
}

/// Replaces `%(key)s` with the target's value; `None` when the target lacks the key.
fn substitute(template: &str, target: &HashMap<&'static str, String>) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("%(") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find(")s")?;
        out.push_str(target.get(&after[..end])?);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Some(out)
}

fn unquote(text: &str) -> String {
    for quote in ['\'', '"'] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return inner.to_owned();
        }
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cinder_defaults() {
        let check = parse("is_admin:True or (role:admin and is_admin_project:True)").unwrap();
        assert_eq!(
            check,
            Check::Or(vec![
                Check::Generic {
                    key: "is_admin".into(),
                    value: "True".into()
                },
                Check::And(vec![
                    Check::Role("admin".into()),
                    Check::Generic {
                        key: "is_admin_project".into(),
                        value: "True".into()
                    },
                ]),
            ])
        );
        let member = parse("(role:admin) or (role:member and project_id:%(project_id)s)").unwrap();
        assert_eq!(
            member,
            Check::Or(vec![
                Check::Role("admin".into()),
                Check::And(vec![
                    Check::Role("member".into()),
                    Check::Generic {
                        key: "project_id".into(),
                        value: "%(project_id)s".into()
                    },
                ]),
            ])
        );
        assert_eq!(parse("").unwrap(), Check::Always);
        assert_eq!(parse("@").unwrap(), Check::Always);
        assert_eq!(parse("!").unwrap(), Check::Never);
        assert_eq!(
            parse("not role:reader").unwrap(),
            Check::Not(Box::new(Check::Role("reader".into())))
        );
    }

    #[test]
    fn precedence_and_nesting() {
        let check = parse("role:a or role:b and not role:c").unwrap();
        assert_eq!(
            check,
            Check::Or(vec![
                Check::Role("a".into()),
                Check::And(vec![
                    Check::Role("b".into()),
                    Check::Not(Box::new(Check::Role("c".into())))
                ]),
            ])
        );
        assert!(parse("((role:a))").is_ok());
    }

    #[test]
    fn refuses_broken_text() {
        for text in [
            "(role:a",
            "role:a)",
            "role:a and",
            "role",
            "or role:a",
            "role:",
        ] {
            assert!(parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn evaluation() {
        let mut credentials = HashMap::new();
        credentials.insert("project_id", CredentialValue::Text("p1".into()));
        credentials.insert("is_admin", CredentialValue::Bool(false));
        let roles = vec!["Member".to_owned()];
        let mut target = HashMap::new();
        target.insert("project_id", "p1".to_owned());
        let rules = HashMap::new();
        let eval = Evaluation {
            credentials: &credentials,
            roles: &roles,
            target: &target,
            rules: &rules,
        };
        let member = parse("(role:admin) or (role:member and project_id:%(project_id)s)").unwrap();
        assert!(member.evaluate(&eval), "roles compare without case");
        assert!(!parse("is_admin:True").unwrap().evaluate(&eval));
        assert!(parse("is_admin:False").unwrap().evaluate(&eval));
        assert!(
            !parse("user_id:%(user_id)s").unwrap().evaluate(&eval),
            "missing target key"
        );
        assert!(parse("project_id:'p1'").unwrap().evaluate(&eval));
        assert!(!parse("rule:undefined").unwrap().evaluate(&eval));
    }

    #[test]
    fn self_reference_terminates() {
        let mut rules = HashMap::new();
        rules.insert("loop".to_owned(), parse("rule:loop").unwrap());
        let credentials = HashMap::new();
        let target = HashMap::new();
        let eval = Evaluation {
            credentials: &credentials,
            roles: &[],
            target: &target,
            rules: &rules,
        };
        assert!(!Check::Rule("loop".into()).evaluate(&eval));
    }

    /// Cut off deep, an evaluation denies: 35 `not`s above a `role:admin` the caller
    /// lacks would otherwise flip a cut-off "no" into a "yes".
    #[test]
    fn too_deep_evaluations_deny() {
        let mut rules = HashMap::new();
        let mut check = Check::Role("admin".into());
        for _ in 0..(MAX_EVALUATION_DEPTH + 1) {
            check = Check::Not(Box::new(check));
        }
        rules.insert("deep".to_owned(), check.clone());
        let credentials = HashMap::new();
        let target = HashMap::new();
        let member = ["member".to_owned()];
        let eval = Evaluation {
            credentials: &credentials,
            roles: &member,
            target: &target,
            rules: &rules,
        };
        assert!(!check.evaluate(&eval));
        assert!(!Check::Not(Box::new(check.clone())).evaluate(&eval));
        assert!(!Check::Rule("deep".into()).evaluate(&eval));
        assert_eq!(check.evaluation_depth(&rules, 0), None);
        // Shallow ones still answer both ways.
        let not_admin = Check::Not(Box::new(Check::Role("admin".into())));
        assert!(not_admin.evaluate(&eval));
        assert_eq!(not_admin.evaluation_depth(&rules, 0), Some(1));
    }

    #[test]
    fn nesting_is_limited_when_parsing() {
        let ok = format!(
            "{}role:a{}",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert!(parse(&ok).is_ok());
        for depth in [MAX_NESTING + 1, 100_000] {
            let deep = format!("{}role:a{}", "(".repeat(depth), ")".repeat(depth));
            assert!(parse(&deep).unwrap_err().reason.contains("nested deeper"));
            let nots = format!("{}role:a", "not ".repeat(depth));
            assert!(parse(&nots).is_err());
        }
    }
}
