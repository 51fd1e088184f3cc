use super::*;

fn rows(project: &[(&str, i64)], defaults: &[(&str, i64)]) -> QuotaRows {
    let map = |items: &[(&str, i64)]| items.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
    QuotaRows {
        project: map(project),
        defaults: map(defaults),
        configured: QuotaDefaults::default(),
    }
}

fn usage(volumes: i64, gigabytes: i64, by_type: &[(&str, i64, i64)]) -> Usage {
    Usage {
        volumes,
        gigabytes,
        by_type: by_type
            .iter()
            .map(|(t, v, g)| ((*t).to_owned(), (*v, *g)))
            .collect(),
        ..Usage::default()
    }
}

#[test]
fn snapshots_count_as_snapshots_and_gigabytes() {
    let mut used = usage(1, 10, &[("gold", 1, 10)]);
    used.snapshots = 2;
    used.snapshots_by_type.insert("gold".into(), 2);
    assert_eq!(used.in_use("snapshots_gold"), 2);
    let r = rows(&[("snapshots", 2)], &[]);
    assert_eq!(
        check_snapshot_create(&r, &used, 10, "gold"),
        Err(OverQuota::Snapshots { allowed: 2 })
    );
    let r = rows(&[("gigabytes", 15)], &[]);
    assert_eq!(
        check_snapshot_create(&r, &used, 10, "gold"),
        Err(OverQuota::Gigabytes {
            name: "gigabytes".into(),
            requested: 10,
            quota: 15,
            consumed: 10
        })
    );
    assert_eq!(
        check_snapshot_create(&rows(&[], &[]), &used, 10, "gold"),
        Ok(())
    );
}

#[test]
fn limits_come_from_the_project_then_the_default_class_then_built_in() {
    let r = rows(&[("volumes", 3)], &[("volumes", 7), ("gigabytes", 50)]);
    assert_eq!(r.limit("volumes"), 3);
    assert_eq!(r.limit("gigabytes"), 50);
    assert_eq!(r.limit("snapshots"), 10);
    assert_eq!(r.limit("per_volume_gigabytes"), UNLIMITED);
    assert_eq!(r.limit("volumes_gold"), UNLIMITED);
    assert_eq!(r.default_limit("volumes"), 7);
}

#[test]
fn configured_defaults_come_last() {
    let mut r = rows(&[], &[("gigabytes", 50)]);
    r.configured = QuotaDefaults::default()
        .with("volumes", -1)
        .with("gigabytes", 7)
        .with("volumes_gold", 3);
    assert_eq!(r.limit("volumes"), UNLIMITED);
    assert_eq!(
        r.limit("gigabytes"),
        50,
        "the class wins over configuration"
    );
    assert_eq!(r.limit("snapshots"), 10);
    assert_eq!(
        r.limit("volumes_gold"),
        UNLIMITED,
        "per-type names are not configured"
    );
}

#[test]
fn resource_names_list_cinders_globals_then_three_per_type() {
    let names = resource_names(["gold"]);
    assert_eq!(
        names,
        [
            "volumes",
            "per_volume_gigabytes",
            "snapshots",
            "gigabytes",
            "backups",
            "backup_gigabytes",
            "groups",
            "volumes_gold",
            "gigabytes_gold",
            "snapshots_gold"
        ]
    );
}

#[test]
fn a_create_within_every_limit_passes() {
    let r = rows(&[("volumes", 5)], &[]);
    assert_eq!(
        check_volume_create(&r, &usage(4, 4, &[]), 1, "gold"),
        Ok(())
    );
    // Exactly at the limit afterwards is fine; unlimited never refuses.
    let r = rows(&[("volumes", UNLIMITED), ("gigabytes", UNLIMITED)], &[]);
    assert_eq!(
        check_volume_create(&r, &usage(1_000_000, 9_999_999, &[]), 500, "gold"),
        Ok(())
    );
}

#[test]
fn the_volume_count_refuses_with_the_resource_name() {
    let r = rows(&[("volumes", 5)], &[]);
    assert_eq!(
        check_volume_create(&r, &usage(5, 5, &[]), 1, "gold"),
        Err(OverQuota::Volumes {
            name: "volumes".into(),
            allowed: 5
        })
    );
    let r = rows(&[("volumes_gold", 2)], &[]);
    assert_eq!(
        check_volume_create(&r, &usage(2, 2, &[("gold", 2, 2)]), 1, "gold"),
        Err(OverQuota::Volumes {
            name: "volumes_gold".into(),
            allowed: 2
        })
    );
    // Another type's usage does not count against gold.
    assert_eq!(
        check_volume_create(&r, &usage(9, 9, &[("silver", 9, 9)]), 1, "gold"),
        Ok(())
    );
}

#[test]
fn gigabytes_come_first_as_cinder_sorts_the_overs() {
    let r = rows(&[("volumes", 1), ("gigabytes", 10)], &[]);
    assert_eq!(
        check_volume_create(&r, &usage(1, 8, &[]), 3, "gold"),
        Err(OverQuota::Gigabytes {
            name: "gigabytes".into(),
            requested: 3,
            quota: 10,
            consumed: 8
        })
    );
}

#[test]
fn per_volume_gigabytes_is_checked_before_anything_else() {
    let r = rows(&[("per_volume_gigabytes", 5), ("volumes", 0)], &[]);
    assert_eq!(
        check_volume_create(&r, &usage(0, 0, &[]), 6, "gold"),
        Err(OverQuota::SizeExceedsLimit { size: 6, limit: 5 })
    );
}

#[test]
fn extend_counts_only_the_increase() {
    let r = rows(&[("gigabytes", 10)], &[]);
    assert_eq!(check_extend(&r, &usage(1, 8, &[]), 8, 10, "gold"), Ok(()));
    assert_eq!(
        check_extend(&r, &usage(1, 8, &[]), 8, 11, "gold"),
        Err(OverQuota::Gigabytes {
            name: "gigabytes".into(),
            requested: 3,
            quota: 10,
            consumed: 8
        })
    );
    let r = rows(&[("per_volume_gigabytes", 10)], &[]);
    assert_eq!(
        check_extend(&r, &usage(1, 8, &[]), 8, 11, "gold"),
        Err(OverQuota::SizeExceedsLimit {
            size: 11,
            limit: 10
        })
    );
}

#[test]
fn new_limits_may_not_go_below_usage() {
    let used = usage(3, 30, &[("gold", 2, 20)]);
    let limits = |items: &[(&str, i64)]| -> BTreeMap<String, i64> {
        items.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    };
    assert_eq!(
        check_new_limits(&used, &limits(&[("volumes", 3), ("gigabytes", -1)])),
        Ok(())
    );
    assert_eq!(
        check_new_limits(&used, &limits(&[("volumes_gold", 1)])),
        Err(BelowUsage {
            resource: "volumes_gold".into(),
            usage: 2,
            limit: 1
        })
    );
    assert_eq!(
        check_new_limits(&used, &limits(&[("per_volume_gigabytes", 1)])),
        Ok(())
    );
}

#[test]
fn growth_in_flight_counts_as_consumed() {
    let r = rows(&[("gigabytes", 5), ("gigabytes_gold", 4)], &[]);
    // Three 1 GiB volumes; one is growing to 3 GiB: 2 GiB reserved.
    let mut used = usage(3, 3, &[("gold", 3, 3)]);
    used.reserve_growth("gold", 2);
    assert_eq!(used.in_use("gigabytes"), 3);
    assert_eq!(used.reserved("gigabytes"), 2);
    assert_eq!(used.reserved("gigabytes_gold"), 2);
    // A second growth of 2 GiB would reach 7 of 5.
    assert_eq!(
        check_extend(&r, &used, 1, 3, "gold"),
        Err(OverQuota::Gigabytes {
            name: "gigabytes".into(),
            requested: 2,
            quota: 5,
            consumed: 5
        })
    );
    assert_eq!(
        check_volume_create(&r, &used, 1, "silver"),
        Err(OverQuota::Gigabytes {
            name: "gigabytes".into(),
            requested: 1,
            quota: 5,
            consumed: 5
        })
    );
    // A limit may not go below what is in use and reserved.
    let limits: BTreeMap<String, i64> = [("gigabytes".to_owned(), 4)].into();
    assert_eq!(
        check_new_limits(&used, &limits),
        Err(BelowUsage {
            resource: "gigabytes".into(),
            usage: 5,
            limit: 4
        })
    );
}

#[test]
fn retype_moves_the_volume_and_its_snapshots_into_the_new_types_quotas() {
    let r = rows(
        &[
            ("volumes_gold", 2),
            ("gigabytes_gold", 10),
            ("snapshots_gold", 1),
        ],
        &[],
    );
    let used = usage(2, 8, &[("gold", 1, 4), ("__DEFAULT__", 1, 4)]);
    assert_eq!(check_retype(&r, &used, 4, 0, 0, "gold"), Ok(()));
    // With its snapshot the volume brings 4 + 4 GiB: 12 of 10.
    assert_eq!(
        check_retype(&r, &used, 4, 1, 4, "gold"),
        Err(OverQuota::Gigabytes {
            name: "gigabytes_gold".into(),
            requested: 4,
            quota: 10,
            consumed: 4
        })
    );
    let full = usage(3, 8, &[("gold", 2, 4), ("__DEFAULT__", 1, 4)]);
    assert_eq!(
        check_retype(&r, &full, 1, 0, 0, "gold"),
        Err(OverQuota::Volumes {
            name: "volumes_gold".into(),
            allowed: 2
        })
    );
    // A type without limits of its own takes anything.
    assert_eq!(check_retype(&r, &full, 100, 5, 500, "silver"), Ok(()));
}

#[test]
fn backups_count_against_backups_and_backup_gigabytes() {
    let rows = rows(&[("backups", 2), ("backup_gigabytes", 10)], &[]);
    let used = Usage {
        backups: 1,
        backup_gigabytes: 8,
        ..Usage::default()
    };
    assert_eq!(check_backup_create(&rows, &used, 2), Ok(()));
    assert_eq!(
        check_backup_create(&rows, &used, 3),
        Err(OverQuota::BackupGigabytes {
            requested: 3,
            quota: 10,
            consumed: 8
        })
    );
    let full = Usage { backups: 2, ..used };
    assert_eq!(
        check_backup_create(&rows, &full, 1),
        Err(OverQuota::Backups { allowed: 2 })
    );
}
