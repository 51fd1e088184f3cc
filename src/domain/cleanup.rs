//! `workers/cleanup` (3.24): which services an admin's request names, and which of them
//! can be cleaned now. Cinder's scheduler sends a cleanup to the scheduler (any live one
//! will do) and to each volume service that is up; a volume service that is down has
//! nobody to clean for it. Here a process cleans for the services it runs itself: every
//! scheduler row (the work of a scheduler is placing volumes, which any process does)
//! and the volume services of its own backends. Others are `unavailable`: no process
//! here takes another's work over the wire.

use chrono::{DateTime, Utc};

use super::service_record::{host_matches, ServiceRecord, SCHEDULER_BINARY, VOLUME_BINARY};

/// The resources a cleanup may be about (Cinder's cleanable types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanableType {
    Volume,
    Snapshot,
}

impl CleanableType {
    pub const ALL: [CleanableType; 2] = [CleanableType::Volume, CleanableType::Snapshot];

    /// Cinder title-cases what it is given (`volume` → `Volume`).
    pub fn parse(text: &str) -> Option<Self> {
        let titled = title_case(text);
        Self::ALL.into_iter().find(|t| t.name() == titled)
    }

    pub fn name(self) -> &'static str {
        match self {
            CleanableType::Volume => "Volume",
            CleanableType::Snapshot => "Snapshot",
        }
    }
}

/// Python's `str.title()` for one word: the first letter upper case, the rest lower.
pub fn title_case(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

/// The services a cleanup is for: Cinder's `ServiceList.get_all` filters. `is_up` is
/// `false` unless asked (Cinder's `CleanupRequest` default): down services.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceSelection {
    pub host: Option<String>,
    pub binary: Option<String>,
    pub cluster_name: Option<String>,
    pub service_id: Option<String>,
    pub is_up: bool,
    pub disabled: Option<bool>,
}

impl ServiceSelection {
    pub fn selects(&self, service: &ServiceRecord, now: DateTime<Utc>) -> bool {
        // No service here is in a cluster, and none has Cinder's integer id.
        if self.cluster_name.is_some() || self.service_id.is_some() {
            return false;
        }
        self.host
            .as_deref()
            .is_none_or(|h| host_matches(&service.host, h))
            && self.binary.as_deref().is_none_or(|b| service.binary == b)
            && self.disabled.is_none_or(|d| service.disabled == d)
            && service.is_up(now) == self.is_up
    }
}

/// Splits the selected services into those this process cleans for and the rest.
/// `runs_volume_host` says whether a volume service's host is one of this process's
/// backends.
pub fn split_for_cleanup(
    selected: Vec<ServiceRecord>,
    runs_volume_host: impl Fn(&str) -> bool,
) -> (Vec<ServiceRecord>, Vec<ServiceRecord>) {
    selected
        .into_iter()
        .partition(|service| match service.binary.as_str() {
            SCHEDULER_BINARY => true,
            VOLUME_BINARY => runs_volume_host(&service.host),
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::ServiceId;
    use chrono::Duration;

    fn service(host: &str, binary: &str, seen: DateTime<Utc>) -> ServiceRecord {
        ServiceRecord {
            uuid: ServiceId::generate(),
            host: host.to_owned(),
            binary: binary.to_owned(),
            availability_zone: "nova".to_owned(),
            disabled: false,
            disabled_reason: None,
            frozen: false,
            created_at: seen,
            updated_at: Some(seen),
        }
    }

    #[test]
    fn types_are_title_cased_as_cinder_does() {
        assert_eq!(CleanableType::parse("volume"), Some(CleanableType::Volume));
        assert_eq!(
            CleanableType::parse("SNAPSHOT"),
            Some(CleanableType::Snapshot)
        );
        assert_eq!(CleanableType::parse("backup"), None);
        assert_eq!(CleanableType::parse(""), None);
    }

    #[test]
    fn down_services_unless_asked_for_live_ones() {
        let now = Utc::now();
        let live = service("a@file", VOLUME_BINARY, now);
        let dead = service("b@file", VOLUME_BINARY, now - Duration::hours(1));
        let default = ServiceSelection::default();
        assert!(!default.selects(&live, now));
        assert!(default.selects(&dead, now));
        let up = ServiceSelection {
            is_up: true,
            host: Some("a".into()),
            ..Default::default()
        };
        assert!(up.selects(&live, now));
        assert!(!up.selects(&dead, now));
        let clustered = ServiceSelection {
            cluster_name: Some("c".into()),
            ..Default::default()
        };
        assert!(!clustered.selects(&dead, now));
    }

    #[test]
    fn schedulers_and_own_backends_are_cleaned() {
        let now = Utc::now();
        let services = vec![
            service("a", SCHEDULER_BINARY, now),
            service("a@file", VOLUME_BINARY, now),
            service("b@file", VOLUME_BINARY, now),
            service("a", "cinder-backup", now),
        ];
        let (cleaning, unavailable) = split_for_cleanup(services, |h| h == "a@file");
        let hosts = |list: &[ServiceRecord]| {
            list.iter()
                .map(|s| format!("{} {}", s.binary, s.host))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            hosts(&cleaning),
            ["cinder-scheduler a", "cinder-volume a@file"]
        );
        assert_eq!(
            hosts(&unavailable),
            ["cinder-volume b@file", "cinder-backup a"]
        );
    }
}
