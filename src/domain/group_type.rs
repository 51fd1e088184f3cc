//! Group types (Cinder's generic volume groups, 3.11+): what kind of group a group is,
//! told by its specs (such as `consistent_group_snapshot_enabled`), public or not, as
//! volume types are for volumes.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::ids::GroupTypeId;

/// Spec values: text, or null as the schema allows.
pub type GroupSpecs = BTreeMap<String, Option<String>>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupType {
    pub id: GroupTypeId,
    pub name: String,
    pub description: Option<String>,
    pub is_public: bool,
    pub group_specs: GroupSpecs,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct NewGroupType {
    pub id: GroupTypeId,
    pub name: String,
    pub description: Option<String>,
    pub is_public: bool,
    pub group_specs: GroupSpecs,
    pub created_at: DateTime<Utc>,
}

/// A change of a group type: only the fields given change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupTypeUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub is_public: Option<bool>,
}

impl GroupTypeUpdate {
    /// Cinder's checks of an update: a name given is not blank, and something is given.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err("Group type name can not be empty.");
        }
        if self.name.is_none() && self.description.is_none() && self.is_public.is_none() {
            return Err("Specify group type name, description or a combination thereof.");
        }
        Ok(())
    }
}

/// The keys a group type listing sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupTypeSortKey {
    Id,
    Name,
    Description,
    IsPublic,
    CreatedAt,
}

impl GroupTypeSortKey {
    pub fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "id" => GroupTypeSortKey::Id,
            "name" => GroupTypeSortKey::Name,
            "description" => GroupTypeSortKey::Description,
            "is_public" => GroupTypeSortKey::IsPublic,
            "created_at" => GroupTypeSortKey::CreatedAt,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_names_something_and_no_blank_name() {
        let blank = GroupTypeUpdate {
            name: Some("  ".into()),
            ..Default::default()
        };
        assert_eq!(blank.check(), Err("Group type name can not be empty."));
        assert!(GroupTypeUpdate::default().check().is_err());
        let described = GroupTypeUpdate {
            description: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(described.check(), Ok(()));
    }
}
