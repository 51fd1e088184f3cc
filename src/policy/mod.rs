//! The policy engine: named rules (Cinder's defaults, later overridable by operators)
//! evaluated against the caller and the target of a request.

pub mod check;
pub mod defaults;
pub mod file;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use check::{Check, CredentialValue, Evaluation};

use crate::domain::{DomainError, RequestContext};

pub mod rules;

/// What a rule is about: the owner of the object (or the caller's project for creates).
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub project_id: Option<String>,
    pub user_id: Option<String>,
}

impl Target {
    pub fn project(project_id: &str) -> Self {
        Target {
            project_id: Some(project_id.to_owned()),
            user_id: None,
        }
    }

    /// For rules with no object: the caller's own project (Cinder's default target).
    pub fn caller(context: &RequestContext) -> Self {
        Target {
            project_id: Some(context.project_id.clone()),
            user_id: Some(context.user_id.clone()),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Policy {
    rules: HashMap<String, Check>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::with_defaults()
    }
}

impl Policy {
    pub fn with_defaults() -> Self {
        let rules = defaults::DEFAULT_RULES
            .iter()
            .map(|(name, text)| {
                let check = check::parse(text).expect("built-in rules parse");
                ((*name).to_owned(), check)
            })
            .collect();
        Policy { rules }
    }

    /// Replaces (or adds) one rule; used by tests and operator overrides.
    pub fn set_rule(&mut self, name: &str, text: &str) -> Result<(), check::ParseError> {
        self.rules.insert(name.to_owned(), check::parse(text)?);
        Ok(())
    }

    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.rules.keys().map(String::as_str)
    }

    /// Cinder's defaults with the rules of an operator's file laid over them. A rule that
    /// does not parse, or that refers to a rule nobody defines, is an error naming the
    /// file and line.
    pub fn from_file(path: &Path) -> Result<Self, file::PolicyFileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| file::PolicyFileError {
            path: shown.clone(),
            line: 0,
            reason: format!("cannot read: {e}"),
        })?;
        Self::from_text(&shown, &text)
    }

    /// As `from_file`, for a file's text; `shown` names it in errors.
    pub fn from_text(shown: &str, text: &str) -> Result<Self, file::PolicyFileError> {
        let shown = shown.to_owned();
        let overrides = file::parse(&shown, text)?;
        let mut policy = Policy::with_defaults();
        for (name, (text, line)) in &overrides {
            let check = check::parse(text).map_err(|e| file::PolicyFileError {
                path: shown.clone(),
                line: *line,
                reason: e.to_string(),
            })?;
            policy.rules.insert(name.clone(), check);
        }
        for (name, (_, line)) in &overrides {
            let mut referenced = Vec::new();
            policy.rules[name].referenced_rules(&mut referenced);
            if let Some(unknown) = referenced.iter().find(|r| !policy.rules.contains_key(*r)) {
                return Err(file::PolicyFileError {
                    path: shown.clone(),
                    line: *line,
                    reason: format!("rule {name:?} refers to rule:{unknown}, which is not defined"),
                });
            }
            // A rule that reaches itself would be evaluated again and again (with `or`,
            // exponentially often) on every request.
            if let Some(path) = policy.cycle_from(name) {
                return Err(file::PolicyFileError {
                    path: shown.clone(),
                    line: *line,
                    reason: format!("rule {name:?} refers to itself: {}", path.join(" -> ")),
                });
            }
        }
        // With no cycles left, every rule's depth is finite; too deep is refused here
        // rather than denied at every request.
        for (name, (_, line)) in &overrides {
            if policy.rules[name]
                .evaluation_depth(&policy.rules, 0)
                .is_none()
            {
                return Err(file::PolicyFileError {
                    path: shown.clone(),
                    line: *line,
                    reason: format!(
                        "rule {name:?} nests deeper than {} levels, counting the rules it \
                         refers to",
                        check::MAX_EVALUATION_DEPTH
                    ),
                });
            }
        }
        policy.warn_about_unknown_rules(overrides.keys());
        Ok(policy)
    }

    /// Rules of an operator's file that nothing asks about: neither a rule the service
    /// enforces (Cinder's defaults) nor one another rule refers to. Usually a typo
    /// (`volume:attachment_creat`) or a rule of a Cinder feature not served here; the
    /// file still loads, and each is logged as a warning.
    pub fn unknown_rules<'a>(&self, names: impl Iterator<Item = &'a String>) -> Vec<String> {
        let mut referenced = Vec::new();
        for check in self.rules.values() {
            check.referenced_rules(&mut referenced);
        }
        names
            .filter(|name| {
                !defaults::DEFAULT_RULES
                    .iter()
                    .any(|(known, _)| known == name)
                    && !referenced.contains(name)
            })
            .cloned()
            .collect()
    }

    fn warn_about_unknown_rules<'a>(&self, names: impl Iterator<Item = &'a String>) {
        for rule in self.unknown_rules(names) {
            tracing::warn!(
                %rule,
                "the policy file sets a rule cinder-attach never checks (a typo, or a Cinder feature not served here)"
            );
        }
    }

    /// A chain of `rule:` references leading from `start` back to itself, if any.
    fn cycle_from(&self, start: &str) -> Option<Vec<String>> {
        let mut stack = vec![(start.to_owned(), vec![start.to_owned()])];
        let mut seen = std::collections::HashSet::new();
        while let Some((name, path)) = stack.pop() {
            let mut referenced = Vec::new();
            if let Some(check) = self.rules.get(&name) {
                check.referenced_rules(&mut referenced);
            }
            for next in referenced {
                let mut longer = path.clone();
                longer.push(next.clone());
                if next == start {
                    return Some(longer);
                }
                if seen.insert(next.clone()) {
                    stack.push((next, longer));
                }
            }
        }
        None
    }

    /// Every effective rule as `"name": "check"` lines, sorted (the `policy` subcommand).
    pub fn render(&self) -> String {
        let mut names: Vec<&String> = self.rules.keys().collect();
        names.sort();
        names
            .into_iter()
            .map(|name| format!("{:?}: {:?}\n", name, self.rules[name].to_string()))
            .collect()
    }

    pub fn allows(&self, rule: &str, context: &RequestContext, target: &Target) -> bool {
        let Some(check) = self.rules.get(rule) else {
            return false;
        };
        let mut credentials = HashMap::new();
        credentials.insert("user_id", CredentialValue::Text(context.user_id.clone()));
        credentials.insert(
            "project_id",
            CredentialValue::Text(context.project_id.clone()),
        );
        credentials.insert("is_admin", CredentialValue::Bool(context.is_admin));
        // oslo.context's default when no X-Is-Admin-Project header says otherwise.
        credentials.insert("is_admin_project", CredentialValue::Bool(true));
        let mut target_values = HashMap::new();
        if let Some(project) = &target.project_id {
            target_values.insert("project_id", project.clone());
        }
        if let Some(user) = &target.user_id {
            target_values.insert("user_id", user.clone());
        }
        check.evaluate(&Evaluation {
            credentials: &credentials,
            roles: &context.roles,
            target: &target_values,
            rules: &self.rules,
        })
    }

    /// `Ok` when allowed, else the 403 Cinder gives.
    pub fn enforce(
        &self,
        rule: &'static str,
        context: &RequestContext,
        target: &Target,
    ) -> Result<(), DomainError> {
        if self.allows(rule, context, target) {
            Ok(())
        } else {
            Err(DomainError::PolicyDenied(rule))
        }
    }
}

/// The policy in force, replaceable while requests are served (SIGHUP reloads the file).
#[derive(Debug)]
pub struct PolicyEngine {
    path: Option<PathBuf>,
    current: RwLock<Arc<Policy>>,
}

impl PolicyEngine {
    pub fn new(policy: Policy) -> Self {
        PolicyEngine {
            path: None,
            current: RwLock::new(Arc::new(policy)),
        }
    }

    /// Loads `path` over the defaults (or just the defaults without a file).
    pub fn load(path: Option<PathBuf>) -> Result<Self, file::PolicyFileError> {
        let policy = match &path {
            Some(path) => Policy::from_file(path)?,
            None => Policy::with_defaults(),
        };
        Ok(PolicyEngine {
            path,
            current: RwLock::new(Arc::new(policy)),
        })
    }

    /// Re-reads the file; on error the rules in force stay as they are.
    pub fn reload(&self) -> Result<(), file::PolicyFileError> {
        if let Some(path) = &self.path {
            let fresh = Arc::new(Policy::from_file(path)?);
            *self.current.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        }
        Ok(())
    }

    pub fn current(&self) -> Arc<Policy> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn allows(&self, rule: &str, context: &RequestContext, target: &Target) -> bool {
        self.current().allows(rule, context, target)
    }

    pub fn enforce(
        &self,
        rule: &'static str,
        context: &RequestContext,
        target: &Target,
    ) -> Result<(), DomainError> {
        self.current().enforce(rule, context, target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(project: &str, roles: &[&str]) -> RequestContext {
        RequestContext {
            user_id: "u".into(),
            project_id: project.into(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            service_roles: vec![],
            is_admin: roles.contains(&"admin"),
            auth_token: None,
        }
    }

    #[test]
    fn every_default_parses_and_refers_to_known_rules() {
        let policy = Policy::with_defaults();
        for (name, check) in &policy.rules {
            let mut referenced = Vec::new();
            check.referenced_rules(&mut referenced);
            for rule in referenced {
                assert!(
                    policy.rules.contains_key(&rule),
                    "{name} refers to unknown {rule}"
                );
            }
        }
    }

    /// Who may do what under the defaults: admin, member and reader of the owning
    /// project, a member of another project, and a caller with no roles.
    #[test]
    fn default_rules_table() {
        let policy = Policy::with_defaults();
        let target = Target::project("p1");
        let admin = context("p9", &["admin"]);
        let member = context("p1", &["member", "reader"]);
        let reader = context("p1", &["reader"]);
        let stranger = context("p2", &["member", "reader"]);
        let nobody = context("p1", &[]);
        let admin_only = [
            rules::VOLUME_FORCE_DELETE,
            rules::TYPE_CREATE,
            rules::RESET_STATUS,
            rules::HOST_ATTRIBUTE,
        ];
        let member_rules = [
            rules::VOLUME_CREATE,
            rules::VOLUME_DELETE,
            rules::MULTIATTACH,
            rules::RETYPE,
        ];
        let reader_rules = [
            rules::VOLUME_GET,
            rules::VOLUME_GET_ALL,
            rules::TYPE_GET,
            rules::TENANT_ATTRIBUTE,
        ];
        for rule in admin_only {
            assert!(policy.allows(rule, &admin, &target), "{rule}");
            for caller in [&member, &reader, &stranger, &nobody] {
                assert!(!policy.allows(rule, caller, &target), "{rule} {caller:?}");
            }
        }
        for rule in member_rules {
            assert!(policy.allows(rule, &admin, &target), "{rule}");
            assert!(policy.allows(rule, &member, &target), "{rule}");
            for caller in [&reader, &stranger, &nobody] {
                assert!(!policy.allows(rule, caller, &target), "{rule} {caller:?}");
            }
        }
        for rule in reader_rules {
            for caller in [&admin, &member, &reader] {
                assert!(policy.allows(rule, caller, &target), "{rule} {caller:?}");
            }
            for caller in [&stranger, &nobody] {
                assert!(!policy.allows(rule, caller, &target), "{rule} {caller:?}");
            }
        }
    }

    fn write(text: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("policy-{}.yaml", uuid::Uuid::new_v4()));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn files_override_and_reload() {
        let member = context("p1", &["member"]);
        let target = Target::project("p1");
        let path = write("\"volume:multiattach\": \"role:admin\"\n");
        let engine = PolicyEngine::load(Some(path.clone())).unwrap();
        assert!(!engine.allows(rules::MULTIATTACH, &member, &target));
        assert!(
            engine.allows(rules::VOLUME_CREATE, &member, &target),
            "other defaults stay"
        );
        std::fs::write(&path, "\"volume:multiattach\": \"@\"\n").unwrap();
        engine.reload().unwrap();
        assert!(engine.allows(rules::MULTIATTACH, &member, &target));
        std::fs::write(&path, "\"volume:multiattach\": \"role:\"\n").unwrap();
        let err = engine.reload().unwrap_err();
        assert_eq!(err.line, 1);
        assert!(
            engine.allows(rules::MULTIATTACH, &member, &target),
            "a bad file changes nothing"
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn unknown_rule_references_are_refused() {
        let path = write("# comment\n\"volume:create\": \"rule:no_such_rule or role:admin\"\n");
        let err = Policy::from_file(&path).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.reason.contains("no_such_rule"), "{}", err.reason);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn rules_that_reach_themselves_are_refused() {
        // Four-way `or` loops would take 4^16 evaluations per request.
        let looping = "\"a\": \"rule:b or rule:b or rule:b or rule:b\"\n\"b\": \"rule:a\"\n";
        let err = Policy::from_text("p.yaml", looping).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.reason.contains("a -> b -> a"), "{}", err.reason);
        let err = Policy::from_text("p.yaml", "\"x\": \"rule:x\"\n").unwrap_err();
        assert!(err.reason.contains("refers to itself"), "{}", err.reason);
        // Shared sub-rules without a loop are fine.
        let diamond = "\"a\": \"rule:b or rule:c\"\n\"b\": \"rule:d\"\n\"c\": \"rule:d\"\n\"d\": \"role:x\"\n";
        assert!(Policy::from_text("p.yaml", diamond).is_ok());
    }

    #[test]
    fn deep_rules_are_refused_at_load_with_their_line() {
        for depth in [33, 3_000, 30_000] {
            let deep = format!(
                "\"volume:create\": \"role:admin\"\n\"volume:delete\": \"{}role:admin{}\"\n",
                "(".repeat(depth),
                ")".repeat(depth)
            );
            let err = Policy::from_text("p.yaml", &deep).unwrap_err();
            assert_eq!(err.line, 2, "{depth}");
            assert!(
                err.reason.contains("nested deeper than 32"),
                "{}",
                err.reason
            );
            let nots = format!(
                "\"volume:delete\": \"{}role:admin\"\n",
                "not ".repeat(depth)
            );
            assert!(Policy::from_text("p.yaml", &nots).is_err(), "{depth} nots");
        }
        let fine = format!(
            "\"volume:delete\": \"{}role:admin{}\"\n",
            "(".repeat(32),
            ")".repeat(32)
        );
        assert!(Policy::from_text("p.yaml", &fine).is_ok());
        // Each rule shallow, the chain of references deep.
        let mut chain = String::from("\"volume:delete\": \"rule:r0\"\n");
        for i in 0..70 {
            chain.push_str(&format!("\"r{i}\": \"not rule:r{}\"\n", i + 1));
        }
        chain.push_str("\"r70\": \"role:admin\"\n");
        let err = Policy::from_text("p.yaml", &chain).unwrap_err();
        assert!(err.reason.contains("deeper than 64"), "{}", err.reason);
    }

    #[test]
    fn rules_nothing_checks_are_reported() {
        let text = "\"volume:attachment_creat\": \"role:admin\"\n\"volume:create\": \"rule:mine\"\n\"mine\": \"role:x\"\n";
        let policy = Policy::from_text("p.yaml", text).unwrap();
        let names: Vec<String> = ["volume:attachment_creat", "volume:create", "mine"]
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(
            policy.unknown_rules(names.iter()),
            ["volume:attachment_creat"]
        );
    }

    #[test]
    fn rendering_lists_every_rule() {
        let text = Policy::with_defaults().render();
        assert!(
            text.contains("\"volume:multiattach\": \"rule:xena_system_admin_or_project_member\""),
            "{text}"
        );
        assert_eq!(text.lines().count(), defaults::DEFAULT_RULES.len());
    }

    /// Every operation rule of the defaults, judged by the persona its check string
    /// names: who is allowed and who is not, for a target owned by project p1.
    #[test]
    fn every_default_rule_allows_the_right_callers() {
        let policy = Policy::with_defaults();
        let target = Target::project("p1");
        let callers = [
            ("admin", context("p9", &["admin"])),
            ("member", context("p1", &["member", "reader"])),
            ("reader", context("p1", &["reader"])),
            ("stranger", context("p2", &["member", "reader"])),
            ("nobody", context("p1", &[])),
        ];
        let base = [
            "context_is_admin",
            "admin_api",
            "admin_or_owner",
            "xena_system_admin_or_project_reader",
            "xena_system_admin_or_project_member",
        ];
        let mut checked = 0;
        for (rule, check) in defaults::DEFAULT_RULES
            .iter()
            .filter(|(name, _)| !base.contains(name))
        {
            let allowed: &[&str] = match *check {
                defaults::ADMIN_API => &["admin"],
                "rule:xena_system_admin_or_project_member" => &["admin", "member"],
                "rule:xena_system_admin_or_project_reader" => &["admin", "member", "reader"],
                other => panic!("{rule}: no expectation for {other}"),
            };
            for (who, caller) in &callers {
                assert_eq!(
                    policy.allows(rule, caller, &target),
                    allowed.contains(who),
                    "{rule} for {who}"
                );
            }
            checked += 1;
        }
        assert!(checked >= 40, "{checked} rules");
    }

    #[test]
    fn overrides_replace_a_rule() {
        let mut policy = Policy::with_defaults();
        let member = context("p1", &["member"]);
        assert!(policy.allows(rules::MULTIATTACH, &member, &Target::project("p1")));
        policy.set_rule(rules::MULTIATTACH, "role:admin").unwrap();
        assert!(!policy.allows(rules::MULTIATTACH, &member, &Target::project("p1")));
        assert!(matches!(
            policy.enforce(rules::MULTIATTACH, &member, &Target::project("p1")),
            Err(DomainError::PolicyDenied("volume:multiattach"))
        ));
    }
}
