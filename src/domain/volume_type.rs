//! Volume types and their extra specs.

use std::collections::BTreeMap;

use super::ids::VolumeTypeId;
use super::refusal::ExtraSpecsRefusal;
use chrono::{DateTime, Utc};

/// The type every deployment starts with, created by the first migration.
pub const DEFAULT_TYPE_NAME: &str = "__DEFAULT__";

/// The only spelling Cinder's attach paths treat as "multiattach on".
pub const SPEC_TRUE: &str = "<is> True";

/// Caps the live attachments of each volume of the type (a positive integer).
pub const MAX_ATTACHMENTS_SPEC: &str = "attach:max_attachments";

/// `<is> True`: any number of `ro` attachments, at most one `rw`.
pub const SINGLE_WRITER_SPEC: &str = "attach:single_writer";

/// Spec keys a non-admin may see (cinder/policies/type_extra_specs.py).
pub const USER_VISIBLE_EXTRA_SPECS: &[&str] = &[
    "RESKEY:availability_zones",
    "multiattach",
    "replication_enabled",
];

pub type ExtraSpecs = BTreeMap<String, Option<String>>;

#[derive(Debug, Clone, PartialEq)]
pub struct VolumeType {
    pub id: VolumeTypeId,
    pub name: String,
    pub description: Option<String>,
    pub is_public: bool,
    pub qos_specs_id: Option<crate::domain::ids::QosSpecsId>,
    pub extra_specs: ExtraSpecs,
    /// Projects given access to a private type.
    pub projects: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// A project's own default volume type (3.62): what its volumes made without a type get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectDefaultType {
    pub project_id: String,
    pub volume_type_id: VolumeTypeId,
}

impl VolumeType {
    pub fn spec(&self, key: &str) -> Option<&str> {
        self.extra_specs.get(key).and_then(|v| v.as_deref())
    }

    /// Volumes of this type are created multiattach (exact `"<is> True"`).
    pub fn is_multiattach(&self) -> bool {
        self.spec("multiattach") == Some(SPEC_TRUE)
    }

    /// Volumes of this type allow one writer at a time.
    pub fn is_single_writer(&self) -> bool {
        self.spec(SINGLE_WRITER_SPEC) == Some(SPEC_TRUE)
    }

    /// Whether `project_id` may use this type (public, or private with access).
    pub fn visible_to(&self, project_id: &str) -> bool {
        self.is_public || self.projects.iter().any(|p| p == project_id)
    }
}

#[derive(Debug, Clone)]
pub struct NewVolumeType {
    pub id: VolumeTypeId,
    pub name: String,
    pub description: Option<String>,
    pub is_public: bool,
    pub extra_specs: ExtraSpecs,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Default)]
pub struct VolumeTypeUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub is_public: Option<bool>,
}

/// `cacheable` and `multiattach` cannot both be on, whether they arrive together or one
/// joins the other already stored.
pub fn check_cacheable(
    existing: &ExtraSpecs,
    incoming: &ExtraSpecs,
) -> Result<(), ExtraSpecsRefusal> {
    let on = |specs: &ExtraSpecs, key: &str| {
        specs.get(key).and_then(|v| v.as_deref()) == Some(SPEC_TRUE)
    };
    let multiattach = on(incoming, "multiattach")
        || (on(existing, "multiattach") && !incoming.contains_key("multiattach"));
    let cacheable = on(incoming, "cacheable")
        || (on(existing, "cacheable") && !incoming.contains_key("cacheable"));
    let touches = incoming.contains_key("multiattach") || incoming.contains_key("cacheable");
    if touches && multiattach && cacheable {
        return Err(ExtraSpecsRefusal::CacheableWithMultiattach);
    }
    Ok(())
}

/// The cap an `attach:max_attachments` value sets: a positive integer, or nothing.
pub fn parse_max_attachments(value: &str) -> Option<u32> {
    value.trim().parse::<u32>().ok().filter(|n| *n > 0)
}

/// A spec value the attach rules could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidSpec {
    pub key: &'static str,
    pub value: Option<String>,
    /// What the key takes, in words.
    pub expected: &'static str,
}

/// The sharing specs of `incoming` are checked when they are set, so the attach rules
/// never meet one they cannot read.
pub fn check_sharing_specs(incoming: &ExtraSpecs) -> Result<(), InvalidSpec> {
    for (key, value) in incoming {
        let text = value.as_deref();
        let (key, valid, expected) = match key.as_str() {
            MAX_ATTACHMENTS_SPEC => (
                MAX_ATTACHMENTS_SPEC,
                text.and_then(parse_max_attachments).is_some(),
                "a positive integer",
            ),
            SINGLE_WRITER_SPEC => (
                SINGLE_WRITER_SPEC,
                matches!(text, Some("<is> True" | "<is> False")),
                "'<is> True' or '<is> False'",
            ),
            _ => continue,
        };
        if !valid {
            return Err(InvalidSpec {
                key,
                value: value.clone(),
                expected,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(pairs: &[(&str, &str)]) -> ExtraSpecs {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect()
    }

    #[test]
    fn multiattach_needs_the_exact_spelling() {
        let mut t = VolumeType {
            id: VolumeTypeId::generate(),
            name: "t".into(),
            description: None,
            is_public: true,
            qos_specs_id: None,
            extra_specs: specs(&[("multiattach", "<is> True")]),
            projects: vec![],
            created_at: Utc::now(),
            updated_at: None,
        };
        assert!(t.is_multiattach());
        for other in ["<is> true", "True", "<is>True", " <is> True"] {
            t.extra_specs = specs(&[("multiattach", other)]);
            assert!(!t.is_multiattach(), "{other}");
        }
    }

    #[test]
    fn sharing_specs_are_checked_when_set() {
        assert_eq!(parse_max_attachments("3"), Some(3));
        for bad in ["0", "-1", "x", "", "1.5", "99999999999"] {
            assert_eq!(parse_max_attachments(bad), None, "{bad}");
        }
        assert!(check_sharing_specs(&specs(&[("attach:max_attachments", "5")])).is_ok());
        let refused = check_sharing_specs(&specs(&[("attach:max_attachments", "many")]));
        assert_eq!(refused.unwrap_err().key, MAX_ATTACHMENTS_SPEC);
        assert!(check_sharing_specs(&specs(&[("attach:single_writer", "<is> True")])).is_ok());
        assert!(check_sharing_specs(&specs(&[("attach:single_writer", "yes")])).is_err());
        let mut null = ExtraSpecs::new();
        null.insert(MAX_ATTACHMENTS_SPEC.into(), None);
        assert!(check_sharing_specs(&null).is_err());
        assert!(check_sharing_specs(&specs(&[("other", "x")])).is_ok());
    }

    #[test]
    fn cacheable_conflicts() {
        let none = ExtraSpecs::new();
        let both = specs(&[("multiattach", SPEC_TRUE), ("cacheable", SPEC_TRUE)]);
        assert!(check_cacheable(&none, &both).is_err());
        let ma = specs(&[("multiattach", SPEC_TRUE)]);
        let cache = specs(&[("cacheable", SPEC_TRUE)]);
        assert!(check_cacheable(&ma, &cache).is_err());
        assert!(check_cacheable(&cache, &ma).is_err());
        assert!(check_cacheable(&ma, &specs(&[("cacheable", "<is> False")])).is_ok());
        assert!(check_cacheable(&both, &specs(&[("multiattach", "<is> False")])).is_ok());
        assert!(check_cacheable(&none, &specs(&[("foo", "bar")])).is_ok());
    }
}
