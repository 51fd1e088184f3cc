use super::*;
use serde_json::json;

fn caps(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn specs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn operators_follow_extra_specs_ops() {
    let cases: &[(Value, &str, bool)] = &[
        (json!("iSCSI"), "iSCSI", true),
        (json!("iSCSI"), "NFS", false),
        // A plain value is compared as text, as Python's `==` does.
        (json!(true), "True", false),
        (json!(true), "<is> True", true),
        (json!(false), "<is> True", false),
        (json!("true"), "<is> True", true),
        (json!(1), "<is> True", true),
        (json!(100), ">= 50", true),
        (json!(10), ">= 50", false),
        (json!(10), "= 10", true),
        (json!("12.5"), "<= 12.5", true),
        (json!(5), "== 5.0", true),
        (json!(5), "!= 5", false),
        (json!("abc"), ">= 1", false),
        (json!("gold silver"), "<in> silver", true),
        (json!("gold"), "<in> silver", false),
        (json!("b"), "<or> a <or> b <or> c", true),
        (json!("d"), "<or> a <or> b", false),
        (json!("abc"), "s== abc", true),
        (json!("abc"), "s!= abc", false),
        (json!(3), "s!= 3", true),
        (json!("abc"), "s< abd", true),
        (json!("abc"), "s>= abd", false),
        (json!(null), "<is> True", false),
        (json!(10), ">=", false),
    ];
    for (value, wanted, expected) in cases {
        assert_eq!(
            spec_matches(value, wanted),
            *expected,
            "{value} vs {wanted:?}"
        );
    }
}

#[test]
fn scopes_decide_which_specs_are_capabilities() {
    let reported = caps(json!({
        "storage_protocol": "iSCSI",
        "vendor_name": "Open Source",
        "multiattach": true,
        "tier": {"speed": "fast"},
        "protocols": ["FC", "iSCSI"],
    }));
    let ok = |pairs: &[(&str, &str)]| satisfies(&reported, &specs(pairs));
    assert!(ok(&[]));
    assert!(ok(&[
        ("storage_protocol", "iSCSI"),
        ("multiattach", "<is> True")
    ]));
    assert!(ok(&[("capabilities:vendor_name", "Open Source")]));
    assert!(ok(&[("capabilities:tier:speed", "fast")]));
    assert!(ok(&[("protocols", "iSCSI")]), "a list matches any element");
    // Other consumers' keys are not the scheduler's.
    assert!(ok(&[
        ("attach:max_attachments", "2"),
        ("RESKEY:availability_zones", "x")
    ]));
    assert!(!ok(&[("storage_protocol", "NFS")]));
    assert!(!ok(&[("vendor_name", "Acme")]), "a mismatch");
    assert!(
        !ok(&[("replication_enabled", "<is> True")]),
        "a missing capability"
    );
    assert!(!ok(&[("capabilities:tier:colour", "red")]));
}

fn candidate(zone: &str, free: Value, protocol: &str) -> Candidate {
    Candidate {
        availability_zone: zone.to_owned(),
        disabled: false,
        capabilities: caps(json!({"free_capacity_gb": free, "storage_protocol": protocol})),
    }
}

#[test]
fn choose_filters_then_weighs_by_free_space() {
    let none = BTreeMap::new();
    let all = [
        candidate("nova", json!("infinite"), "iSCSI"),
        candidate("nova", json!(5.0), "iSCSI"),
        candidate("nova", json!(50.0), "NFS"),
        candidate("east", json!(80.0), "iSCSI"),
    ];
    let ask = |size, zone, specs| {
        choose(
            &all,
            &Request {
                size_gb: size,
                availability_zone: zone,
                extra_specs: specs,
            },
        )
    };
    assert_eq!(ask(1, None, &none), vec![3, 2, 1, 0]);
    assert_eq!(ask(1, Some("nova"), &none), vec![2, 1, 0]);
    assert_eq!(
        ask(10, Some("nova"), &none),
        vec![2, 0],
        "5 GiB free is too small"
    );
    let iscsi = specs(&[("storage_protocol", "iSCSI")]);
    assert_eq!(ask(10, Some("nova"), &iscsi), vec![0]);
    let nfs = specs(&[("storage_protocol", "NFS")]);
    assert_eq!(ask(60, None, &nfs), Vec::<usize>::new());
    let mut disabled = all.clone();
    disabled[2].disabled = true;
    let got = choose(
        &disabled,
        &Request {
            size_gb: 1,
            availability_zone: Some("nova"),
            extra_specs: &none,
        },
    );
    assert_eq!(got, vec![1, 0], "a disabled backend takes no new volume");
}
