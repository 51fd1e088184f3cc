//! QoS specs: named limits with a consumer. Front-end (and `both`) specs are what the
//! hypervisor applies, so they travel in every attachment's `connection_info.qos_specs`;
//! back-end specs are the storage's business.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::ids::{QosSpecsId, VolumeTypeId};

/// Who enforces the specs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consumer {
    FrontEnd,
    BackEnd,
    Both,
}

impl Consumer {
    pub const ALL: [Consumer; 3] = [Consumer::FrontEnd, Consumer::BackEnd, Consumer::Both];

    pub fn as_str(self) -> &'static str {
        match self {
            Consumer::FrontEnd => "front-end",
            Consumer::BackEnd => "back-end",
            Consumer::Both => "both",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Consumer::ALL.into_iter().find(|c| c.as_str() == text)
    }

    /// Whether the hypervisor applies the specs (Cinder passes them to Nova then).
    pub fn reaches_the_host(self) -> bool {
        matches!(self, Consumer::FrontEnd | Consumer::Both)
    }
}

impl std::fmt::Display for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Spec values: Cinder stores them as text; `PUT` may set one to null.
pub type QosItems = BTreeMap<String, Option<String>>;

/// The keys a QoS specs listing sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosSortKey {
    Id,
    Name,
    Consumer,
    CreatedAt,
}

impl QosSortKey {
    pub fn parse(key: &str) -> Option<Self> {
        Some(match key {
            "id" => QosSortKey::Id,
            "name" => QosSortKey::Name,
            "consumer" => QosSortKey::Consumer,
            "created_at" => QosSortKey::CreatedAt,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct QosSpecs {
    pub id: QosSpecsId,
    pub name: String,
    pub consumer: Consumer,
    pub specs: QosItems,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct NewQosSpecs {
    pub id: QosSpecsId,
    pub name: String,
    pub consumer: Consumer,
    /// The caller named the consumer (Cinder's `qos_specs.create` event shows it then).
    pub consumer_given: bool,
    pub specs: QosItems,
    pub created_at: DateTime<Utc>,
}

/// A volume type a QoS specs is associated with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Association {
    pub type_id: VolumeTypeId,
    pub type_name: String,
}

/// The limits a per-GB spec scales with the volume's size (Cinder's `tune_opts`).
const PER_GB_OPTIONS: [&str; 6] = [
    "read_iops_sec",
    "read_bytes_sec",
    "write_iops_sec",
    "write_bytes_sec",
    "total_iops_sec",
    "total_bytes_sec",
];

fn integer(specs: &QosItems, key: &str) -> Option<i64> {
    specs
        .get(key)
        .and_then(|v| v.as_deref())
        .and_then(|v| v.trim().parse().ok())
}

/// `connection_info.qos_specs` for a volume of `size` GiB: the specs when the host
/// consumes them, with `<option>_per_gb` turned into `<option>` = per-GB x size, at least
/// `<option>_per_gb_min` and at most `<option>_max`, as Cinder's volume manager does.
/// `None` (JSON null) when the host has nothing to apply.
pub fn for_the_host(qos: Option<&QosSpecs>, size: i64) -> Value {
    let Some(qos) = qos.filter(|q| q.consumer.reaches_the_host()) else {
        return Value::Null;
    };
    let mut specs: Map<String, Value> = qos
        .specs
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
        .collect();
    for option in PER_GB_OPTIONS {
        let per_gb = format!("{option}_per_gb");
        let Some(rate) = integer(&qos.specs, &per_gb) else {
            continue;
        };
        let minimum = integer(&qos.specs, &format!("{option}_per_gb_min")).unwrap_or(0);
        let scaled = (rate.saturating_mul(size)).max(minimum);
        let maximum = integer(&qos.specs, &format!("{option}_max")).unwrap_or(scaled);
        specs.remove(&format!("{option}_per_gb_min"));
        specs.remove(&format!("{option}_max"));
        specs.remove(&per_gb);
        // Cinder puts the computed limit in as an integer.
        specs.insert(option.to_owned(), Value::from(scaled.min(maximum)));
    }
    let object = specs;
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn qos(consumer: Consumer, items: &[(&str, &str)]) -> QosSpecs {
        QosSpecs {
            id: QosSpecsId::generate(),
            name: "q".into(),
            consumer,
            specs: items
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Some((*v).to_owned())))
                .collect(),
            created_at: Utc::now(),
            updated_at: None,
        }
    }

    #[test]
    fn only_front_end_and_both_reach_the_host() {
        let items = [("read_iops_sec", "2000")];
        assert_eq!(for_the_host(None, 1), Value::Null);
        assert_eq!(
            for_the_host(Some(&qos(Consumer::BackEnd, &items)), 1),
            Value::Null
        );
        for consumer in [Consumer::FrontEnd, Consumer::Both] {
            assert_eq!(
                for_the_host(Some(&qos(consumer, &items)), 1),
                json!({"read_iops_sec": "2000"})
            );
        }
    }

    #[test]
    fn per_gb_specs_scale_with_the_size_within_min_and_max() {
        let items = [
            ("total_iops_sec_per_gb", "10"),
            ("total_iops_sec_per_gb_min", "100"),
            ("total_iops_sec_max", "500"),
            ("read_bytes_sec_per_gb", "1000"),
        ];
        let specs = |size| for_the_host(Some(&qos(Consumer::FrontEnd, &items)), size);
        // Computed limits are integers (as Cinder's), the other specs stay text.
        assert_eq!(
            specs(5),
            json!({"total_iops_sec": 100, "read_bytes_sec": 5000})
        );
        assert_eq!(specs(20)["total_iops_sec"], 200);
        assert_eq!(specs(80)["total_iops_sec"], 500);
    }

    #[test]
    fn consumers_parse_as_cinder_spells_them() {
        for consumer in Consumer::ALL {
            assert_eq!(Consumer::parse(consumer.as_str()), Some(consumer));
        }
        assert_eq!(Consumer::parse("Front-End"), None);
    }
}
