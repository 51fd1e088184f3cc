//! Quotas and limits: `os-quota-sets`, `os-quota-class-sets` and `/limits`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Service;
use crate::domain::quota::{self, QuotaRows, Usage, DEFAULT_CLASS, MAX_LIMIT, UNLIMITED};
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};

/// One resource of a project's quota set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaFigure {
    pub limit: i64,
    pub in_use: i64,
    /// Held for changes still under way (growth of a volume being extended).
    pub reserved: i64,
}

/// A project's quotas: every resource in Cinder's order, with its limit and usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectQuotas {
    pub resources: Vec<(String, QuotaFigure)>,
}

impl ProjectQuotas {
    fn new(names: Vec<String>, rows: &QuotaRows, usage: &Usage) -> Self {
        let resources = names
            .into_iter()
            .map(|name| {
                let figure = QuotaFigure {
                    limit: rows.limit(&name),
                    in_use: usage.in_use(&name),
                    reserved: usage.reserved(&name),
                };
                (name, figure)
            })
            .collect();
        ProjectQuotas { resources }
    }

    pub fn limits(&self) -> BTreeMap<String, i64> {
        self.resources
            .iter()
            .map(|(name, figure)| (name.clone(), figure.limit))
            .collect()
    }

    pub fn figure(&self, name: &str) -> Option<QuotaFigure> {
        self.resources
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, figure)| *figure)
    }
}

/// A limit as Cinder reads it (`int(str(value))` between -1 and `MAX_LIMIT`): a JSON
/// integer or a string of one; `digits_only` (quota classes) refuses `"-1"` as text.
fn limit_value(key: &str, value: &Value, digits_only: bool) -> Result<i64, DomainError> {
    let bad = |why: &'static str| DomainError::BadQuotaValue {
        key: key.to_owned(),
        why,
    };
    let parsed = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) if digits_only && !s.chars().all(|c| c.is_ascii_digit()) => None,
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    let limit = parsed.ok_or_else(|| bad("must be an integer"))?;
    if limit < UNLIMITED {
        return Err(bad("must be >= -1"));
    }
    if limit > MAX_LIMIT {
        return Err(bad("must be <= 2147483647"));
    }
    Ok(limit)
}

impl Service {
    /// Every resource name: the global ones and three per live volume type.
    async fn quota_resources(&self) -> Result<Vec<String>, DomainError> {
        let types = self.store.list_volume_types().await?;
        Ok(quota::resource_names(types.iter().map(|t| t.name.as_str())))
    }

    /// A body's limits, checked as Cinder checks them: unknown keys are refused
    /// together, values one by one; `tenant_id` and `id` are ignored in a quota set.
    fn read_limits(
        known: &[String],
        body: &serde_json::Map<String, Value>,
        class: bool,
    ) -> Result<BTreeMap<String, i64>, DomainError> {
        let mut limits = BTreeMap::new();
        let mut bad_keys = Vec::new();
        for (key, value) in body {
            if !class && quota::NON_QUOTA_KEYS.contains(&key.as_str()) {
                continue;
            }
            if !known.iter().any(|k| k == key) {
                bad_keys.push(key.clone());
                continue;
            }
            limits.insert(key.clone(), limit_value(key, value, class)?);
        }
        if !bad_keys.is_empty() {
            return Err(DomainError::BadQuotaKeys {
                keys: bad_keys,
                class,
            });
        }
        Ok(limits)
    }

    /// `GET /os-quota-sets/{project}`: limits in force, with usage.
    pub async fn project_quotas(
        &self,
        caller: &RequestContext,
        project_id: &str,
    ) -> Result<ProjectQuotas, DomainError> {
        self.policy
            .enforce(rules::QUOTAS_SHOW, caller, &Target::project(project_id))?;
        let names = self.quota_resources().await?;
        let (rows, usage) = self
            .store
            .project_quotas(project_id, &self.settings.quota_defaults)
            .await?;
        Ok(ProjectQuotas::new(names, &rows, &usage))
    }

    /// `GET /os-quota-sets/{project}/defaults`: what a project without its own limits has.
    pub async fn default_quotas(
        &self,
        caller: &RequestContext,
        project_id: &str,
    ) -> Result<BTreeMap<String, i64>, DomainError> {
        self.policy
            .enforce(rules::QUOTAS_SHOW, caller, &Target::project(project_id))?;
        let rows = QuotaRows {
            project: BTreeMap::new(),
            defaults: self.store.class_quotas(DEFAULT_CLASS).await?,
            configured: self.settings.quota_defaults.clone(),
        };
        self.limits_of(&rows).await
    }

    /// `PUT /os-quota-sets/{project}`: the project's limits afterwards.
    pub async fn update_project_quotas(
        &self,
        caller: &RequestContext,
        project_id: &str,
        body: &serde_json::Map<String, Value>,
    ) -> Result<ProjectQuotas, DomainError> {
        self.policy
            .enforce(rules::QUOTAS_UPDATE, caller, &Target::project(project_id))?;
        let names = self.quota_resources().await?;
        let limits = Self::read_limits(&names, body, false)?;
        let now = self.clock.now();
        self.store
            .set_project_quotas(project_id, &limits, now)
            .await?
            .map_err(DomainError::QuotaBelowUsage)?;
        let (rows, usage) = self
            .store
            .project_quotas(project_id, &self.settings.quota_defaults)
            .await?;
        Ok(ProjectQuotas::new(names, &rows, &usage))
    }

    /// `DELETE /os-quota-sets/{project}`: back to the defaults.
    pub async fn delete_project_quotas(
        &self,
        caller: &RequestContext,
        project_id: &str,
    ) -> Result<(), DomainError> {
        self.policy
            .enforce(rules::QUOTAS_DELETE, caller, &Target::project(project_id))?;
        self.store
            .delete_project_quotas(project_id, self.clock.now())
            .await?;
        Ok(())
    }

    /// `GET /os-quota-class-sets/{class}`: the class's limits, defaults filling the gaps.
    pub async fn class_quotas(
        &self,
        caller: &RequestContext,
        class_name: &str,
    ) -> Result<BTreeMap<String, i64>, DomainError> {
        self.policy
            .enforce(rules::QUOTA_CLASSES_GET, caller, &Target::caller(caller))?;
        self.class_limits(class_name).await
    }

    async fn class_limits(&self, class_name: &str) -> Result<BTreeMap<String, i64>, DomainError> {
        let rows = QuotaRows {
            project: self.store.class_quotas(class_name).await?,
            defaults: self.store.class_quotas(DEFAULT_CLASS).await?,
            configured: self.settings.quota_defaults.clone(),
        };
        self.limits_of(&rows).await
    }

    /// The limit in force for every resource, given the rows set.
    async fn limits_of(&self, rows: &QuotaRows) -> Result<BTreeMap<String, i64>, DomainError> {
        let names = self.quota_resources().await?;
        Ok(names
            .into_iter()
            .map(|name| {
                let limit = rows.limit(&name);
                (name, limit)
            })
            .collect())
    }

    /// `PUT /os-quota-class-sets/{class}`; the class `default` sets every project's
    /// defaults.
    pub async fn update_class_quotas(
        &self,
        caller: &RequestContext,
        class_name: &str,
        body: &serde_json::Map<String, Value>,
    ) -> Result<BTreeMap<String, i64>, DomainError> {
        self.policy
            .enforce(rules::QUOTA_CLASSES_UPDATE, caller, &Target::caller(caller))?;
        let names = self.quota_resources().await?;
        let limits = Self::read_limits(&names, body, true)?;
        self.store
            .set_class_quotas(class_name, &limits, self.clock.now())
            .await?;
        self.class_limits(class_name).await
    }

    /// `GET /limits`: the project's limits, with its usage when policy shows it.
    /// `project_id` is an admin's choice of another project (3.39+).
    pub async fn limits(
        &self,
        caller: &RequestContext,
        project_id: Option<&str>,
    ) -> Result<(ProjectQuotas, bool), DomainError> {
        let project = match project_id {
            Some(other) if caller.is_admin => other,
            _ => caller.project_id.as_str(),
        };
        let names = self.quota_resources().await?;
        let (rows, usage) = self
            .store
            .project_quotas(project, &self.settings.quota_defaults)
            .await?;
        let with_usage = self
            .policy
            .allows(rules::USED_LIMITS, caller, &Target::caller(caller));
        Ok((ProjectQuotas::new(names, &rows, &usage), with_usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limits_are_read_as_cinder_reads_them() {
        let ok = |v: Value, class| limit_value("volumes", &v, class);
        assert_eq!(ok(json!(5), false).ok(), Some(5));
        assert_eq!(ok(json!("7"), false).ok(), Some(7));
        assert_eq!(ok(json!("-1"), false).ok(), Some(-1));
        assert_eq!(ok(json!(-1), true).ok(), Some(-1));
        let why = |v: Value, class| match limit_value("volumes", &v, class) {
            Err(DomainError::BadQuotaValue { why, .. }) => why,
            other => panic!("{other:?}"),
        };
        assert_eq!(why(json!("-1"), true), "must be an integer");
        assert_eq!(why(json!(true), false), "must be an integer");
        assert_eq!(why(json!(1.5), false), "must be an integer");
        assert_eq!(why(json!(null), false), "must be an integer");
        assert_eq!(why(json!(-2), false), "must be >= -1");
        assert_eq!(
            why(json!(2_147_483_648_i64), false),
            "must be <= 2147483647"
        );
    }

    #[test]
    fn unknown_keys_are_named_together_and_ids_ignored() {
        let known = vec!["volumes".to_owned(), "gigabytes".to_owned()];
        let body = json!({"volumes": 3, "id": "x", "tenant_id": "y", "bogus": 1, "zz": 2});
        let body = body.as_object().expect("object");
        match Service::read_limits(&known, body, false) {
            Err(DomainError::BadQuotaKeys { keys, class }) => {
                assert_eq!(keys, ["bogus", "zz"]);
                assert!(!class);
            }
            other => panic!("{other:?}"),
        }
        let body = json!({"volumes": 3, "id": "x"});
        let read = Service::read_limits(&known, body.as_object().expect("object"), false);
        assert_eq!(read.ok(), Some(BTreeMap::from([("volumes".to_owned(), 3)])));
    }
}
