//! The policy engine: named rules (Cinder's defaults, later overridable by operators)
//! evaluated against the caller and the target of a request.

pub mod check;
pub mod defaults;

use std::collections::HashMap;

use check::{Check, CredentialValue, Evaluation};

use crate::domain::{DomainError, RequestContext};

/// Rule names the service asks about, so a typo is a compile error, not a silent deny.
pub mod rules {
    pub const VOLUME_CREATE: &str = "volume:create";
    pub const VOLUME_GET: &str = "volume:get";
    pub const VOLUME_GET_ALL: &str = "volume:get_all";
    pub const VOLUME_UPDATE: &str = "volume:update";
    pub const VOLUME_DELETE: &str = "volume:delete";
    pub const VOLUME_FORCE_DELETE: &str = "volume:force_delete";
    pub const MULTIATTACH: &str = "volume:multiattach";
    pub const MULTIATTACH_BOOTABLE: &str = "volume:multiattach_bootable_volume";
    pub const ATTACHMENT_CREATE: &str = "volume:attachment_create";
    pub const ATTACHMENT_UPDATE: &str = "volume:attachment_update";
    pub const ATTACHMENT_DELETE: &str = "volume:attachment_delete";
    pub const ATTACHMENT_COMPLETE: &str = "volume:attachment_complete";
    pub const HOST_ATTRIBUTE: &str = "volume_extension:volume_host_attribute";
    pub const TENANT_ATTRIBUTE: &str = "volume_extension:volume_tenant_attribute";
    pub const MIGRATION_ATTRIBUTE: &str = "volume_extension:volume_mig_status_attribute";
    pub const RETYPE: &str = "volume:retype";
    pub const UPDATE_READONLY: &str = "volume:update_readonly_flag";
    pub const RESET_STATUS: &str = "volume_extension:volume_admin_actions:reset_status";
    pub const ADMIN_FORCE_DELETE: &str = "volume_extension:volume_admin_actions:force_delete";
    pub const TYPE_CREATE: &str = "volume_extension:type_create";
    pub const TYPE_UPDATE: &str = "volume_extension:type_update";
    pub const TYPE_DELETE: &str = "volume_extension:type_delete";
    pub const TYPE_GET: &str = "volume_extension:type_get";
    pub const TYPE_GET_ALL: &str = "volume_extension:type_get_all";
    pub const TYPE_ACCESS_EXTRA_SPECS: &str = "volume_extension:access_types_extra_specs";
    pub const TYPE_ACCESS_QOS: &str = "volume_extension:access_types_qos_specs_id";
    pub const EXTRA_SPECS_INDEX: &str = "volume_extension:types_extra_specs:index";
    pub const EXTRA_SPECS_SHOW: &str = "volume_extension:types_extra_specs:show";
    pub const EXTRA_SPECS_CREATE: &str = "volume_extension:types_extra_specs:create";
    pub const EXTRA_SPECS_UPDATE: &str = "volume_extension:types_extra_specs:update";
    pub const EXTRA_SPECS_DELETE: &str = "volume_extension:types_extra_specs:delete";
    pub const EXTRA_SPECS_READ_SENSITIVE: &str =
        "volume_extension:types_extra_specs:read_sensitive";
}

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

    #[test]
    fn overrides_replace_a_rule() {
        let mut policy = Policy::with_defaults();
        let member = context("p1", &["member"]);
        assert!(policy.allows(rules::MULTIATTACH, &member, &Target::project("p1")));
        policy.set_rule(rules::MULTIATTACH, "role:admin").unwrap();
        assert!(!policy.allows(rules::MULTIATTACH, &member, &Target::project("p1")));
        assert_eq!(
            policy
                .enforce(rules::MULTIATTACH, &member, &Target::project("p1"))
                .unwrap_err()
                .to_string(),
            "Policy doesn't allow volume:multiattach to be performed."
        );
    }
}
