//! Quotas, as Cinder keeps them: a limit per project and resource (`-1` for none), taken
//! from the project's own row, else from the `default` quota class, else from the
//! built-in default. Usage is what the project's live volumes and snapshots add up to,
//! counted in the same transaction as the change it guards; growth still in flight (an
//! extend the backend has not finished) is reserved and counts as used until it lands
//! or fails, as Cinder's reservations do.

use std::collections::BTreeMap;

/// The quota class every project falls back to.
pub const DEFAULT_CLASS: &str = "default";

/// No limit.
pub const UNLIMITED: i64 = -1;

/// The largest limit Cinder stores (`constants.DB_MAX_INT`).
pub const MAX_LIMIT: i64 = 0x7FFF_FFFF;

/// Keys a quota-set body may carry that are not resources (Cinder's `NON_QUOTA_KEYS`).
pub const NON_QUOTA_KEYS: &[&str] = &["tenant_id", "id"];

/// The project-wide resources and Cinder's default limits (`quota_volumes`, ...), in the
/// order Cinder lists them.
pub const GLOBAL_RESOURCES: &[(&str, i64)] = &[
    ("volumes", 10),
    ("per_volume_gigabytes", UNLIMITED),
    ("snapshots", 10),
    ("gigabytes", 1000),
    ("backups", 10),
    ("backup_gigabytes", 1000),
    ("groups", 10),
];

/// The parts every volume type adds as `<part>_<type name>` (default: no limit).
pub const PER_TYPE_PARTS: &[&str] = &["volumes", "gigabytes", "snapshots"];

/// The name of a per-type resource.
pub fn per_type(part: &str, type_name: &str) -> String {
    format!("{part}_{type_name}")
}

/// Every resource name, given the names of the live volume types.
pub fn resource_names<'a>(type_names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<String> = GLOBAL_RESOURCES
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .collect();
    for type_name in type_names {
        names.extend(PER_TYPE_PARTS.iter().map(|part| per_type(part, type_name)));
    }
    names
}

/// The defaults the service is configured with (cinder.conf's `quota_volumes`, ...,
/// `per_volume_size_limit`): the last word when neither the project nor the `default`
/// class sets a limit. Per-type resources default to no limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaDefaults(BTreeMap<&'static str, i64>);

impl Default for QuotaDefaults {
    /// Cinder's own defaults.
    fn default() -> Self {
        QuotaDefaults(GLOBAL_RESOURCES.iter().copied().collect())
    }
}

impl QuotaDefaults {
    /// Sets the default of a global resource (names not in `GLOBAL_RESOURCES` are ignored).
    pub fn with(mut self, resource: &str, limit: i64) -> Self {
        if let Some((name, _)) = GLOBAL_RESOURCES.iter().find(|(n, _)| *n == resource) {
            self.0.insert(name, limit);
        }
        self
    }

    /// No configured default at all: only limits stored as rows apply (the consistency
    /// checker, which reads no configuration).
    pub fn unlimited() -> Self {
        QuotaDefaults(BTreeMap::new())
    }

    pub fn get(&self, resource: &str) -> i64 {
        self.0.get(resource).copied().unwrap_or(UNLIMITED)
    }
}

/// Whose quota a volume counts against: its project's, under its type's name, with the
/// service's configured defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaOwner {
    pub project_id: String,
    pub type_name: String,
    pub defaults: QuotaDefaults,
}

/// Limits set explicitly (a project's rows, the `default` class's rows) and the
/// configured defaults under them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaRows {
    pub project: BTreeMap<String, i64>,
    pub defaults: BTreeMap<String, i64>,
    pub configured: QuotaDefaults,
}

impl QuotaRows {
    /// The limit in force: the project's, else the default class's, else configured.
    pub fn limit(&self, resource: &str) -> i64 {
        self.project
            .get(resource)
            .copied()
            .unwrap_or_else(|| self.default_limit(resource))
    }

    /// The default (the class's, else configured), ignoring the project's own rows.
    pub fn default_limit(&self, resource: &str) -> i64 {
        self.defaults
            .get(resource)
            .copied()
            .unwrap_or_else(|| self.configured.get(resource))
    }
}

/// What a project's live volumes and snapshots use: in total and by volume type name.
/// Gigabytes count both, as in Cinder (a snapshot holds its volume's size).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    pub volumes: i64,
    pub gigabytes: i64,
    pub snapshots: i64,
    /// Live groups (counted only where groups are checked or shown).
    pub groups: i64,
    /// Live backups and their GiB (counted only where backups are checked or shown).
    pub backups: i64,
    pub backup_gigabytes: i64,
    /// `(volumes, gigabytes)` by type name.
    pub by_type: BTreeMap<String, (i64, i64)>,
    /// Snapshots by the type name of their volume.
    pub snapshots_by_type: BTreeMap<String, i64>,
    /// Reserved and not yet in use, by resource name (`gigabytes`, `gigabytes_<type>`):
    /// the growth of volumes that are `extending`.
    pub reserved: BTreeMap<String, i64>,
}

impl Usage {
    /// What `resource` is using now (resources not built here use nothing).
    pub fn in_use(&self, resource: &str) -> i64 {
        match resource {
            "volumes" => return self.volumes,
            "gigabytes" => return self.gigabytes,
            "snapshots" => return self.snapshots,
            "groups" => return self.groups,
            "backups" => return self.backups,
            "backup_gigabytes" => return self.backup_gigabytes,
            _ => {}
        }
        for (type_name, snapshots) in &self.snapshots_by_type {
            if resource == per_type("snapshots", type_name) {
                return *snapshots;
            }
        }
        for (type_name, (volumes, gigabytes)) in &self.by_type {
            if resource == per_type("volumes", type_name) {
                return *volumes;
            }
            if resource == per_type("gigabytes", type_name) {
                return *gigabytes;
            }
        }
        0
    }

    /// What `resource` has reserved for changes still under way.
    pub fn reserved(&self, resource: &str) -> i64 {
        self.reserved.get(resource).copied().unwrap_or(0)
    }

    /// What a check counts as taken: in use and reserved.
    pub fn consumed(&self, resource: &str) -> i64 {
        self.in_use(resource) + self.reserved(resource)
    }

    /// Reserves `gigabytes` of growth of a volume of type `type_name`.
    pub fn reserve_growth(&mut self, type_name: &str, gigabytes: i64) {
        for resource in ["gigabytes".to_owned(), per_type("gigabytes", type_name)] {
            *self.reserved.entry(resource).or_default() += gigabytes;
        }
    }
}

/// Why a change would go over quota, with what Cinder's answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverQuota {
    /// One volume larger than `per_volume_gigabytes`.
    SizeExceedsLimit { size: i64, limit: i64 },
    /// `name` (`gigabytes` or `gigabytes_<type>`) would pass its limit.
    Gigabytes {
        name: String,
        requested: i64,
        quota: i64,
        consumed: i64,
    },
    /// `name` (`volumes` or `volumes_<type>`) would pass its limit.
    Volumes { name: String, allowed: i64 },
    /// `snapshots` or `snapshots_<type>` would pass its limit.
    Snapshots { allowed: i64 },
    /// `groups` would pass its limit.
    Groups { allowed: i64 },
    /// `backups` would pass its limit.
    Backups { allowed: i64 },
    /// `backup_gigabytes` would pass its limit.
    BackupGigabytes {
        requested: i64,
        quota: i64,
        consumed: i64,
    },
}

/// A limit lower than what is already used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BelowUsage {
    pub resource: String,
    pub usage: i64,
    pub limit: i64,
}

/// Adds `deltas` to the usage; the first resource (in name order, as Cinder reports
/// them) that would pass its limit.
fn first_over(
    rows: &QuotaRows,
    usage: &Usage,
    deltas: &[(String, i64)],
) -> Option<(String, i64, i64)> {
    let mut overs: Vec<(String, i64, i64)> = deltas
        .iter()
        .filter_map(|(resource, delta)| {
            let limit = rows.limit(resource);
            let used = usage.consumed(resource);
            (limit >= 0 && *delta > 0 && used + delta > limit)
                .then(|| (resource.clone(), limit, used))
        })
        .collect();
    overs.sort();
    overs.into_iter().next()
}

fn check_size(rows: &QuotaRows, size: i64) -> Result<(), OverQuota> {
    let limit = rows.limit("per_volume_gigabytes");
    if limit >= 0 && size > limit {
        return Err(OverQuota::SizeExceedsLimit { size, limit });
    }
    Ok(())
}

fn refusal(name: String, quota: i64, consumed: i64, requested: i64) -> OverQuota {
    if name.starts_with("snapshots") {
        return OverQuota::Snapshots { allowed: quota };
    }
    if name.contains("gigabytes") {
        OverQuota::Gigabytes {
            name,
            requested,
            quota,
            consumed,
        }
    } else {
        OverQuota::Volumes {
            name,
            allowed: quota,
        }
    }
}

/// Whether one more volume of `size` GiB and type `type_name` fits the project's quota.
pub fn check_volume_create(
    rows: &QuotaRows,
    usage: &Usage,
    size: i64,
    type_name: &str,
) -> Result<(), OverQuota> {
    check_size(rows, size)?;
    let deltas = [
        ("volumes".to_owned(), 1),
        ("gigabytes".to_owned(), size),
        (per_type("volumes", type_name), 1),
        (per_type("gigabytes", type_name), size),
    ];
    match first_over(rows, usage, &deltas) {
        Some((name, quota, consumed)) => Err(refusal(name, quota, consumed, size)),
        None => Ok(()),
    }
}

/// Whether one more snapshot of a volume of `size` GiB and type `type_name` fits: it
/// counts as a snapshot and as `size` gigabytes, as in Cinder.
pub fn check_snapshot_create(
    rows: &QuotaRows,
    usage: &Usage,
    size: i64,
    type_name: &str,
) -> Result<(), OverQuota> {
    check_snapshots_create(rows, usage, &[(size, type_name)])
}

/// Whether snapshots of volumes of `(size, type name)` fit together (a group snapshot's).
pub fn check_snapshots_create(
    rows: &QuotaRows,
    usage: &Usage,
    volumes: &[(i64, &str)],
) -> Result<(), OverQuota> {
    let mut deltas: BTreeMap<String, i64> = BTreeMap::new();
    for (size, type_name) in volumes {
        for (resource, delta) in [
            ("snapshots".to_owned(), 1),
            ("gigabytes".to_owned(), *size),
            (per_type("snapshots", type_name), 1),
            (per_type("gigabytes", type_name), *size),
        ] {
            *deltas.entry(resource).or_default() += delta;
        }
    }
    let total: i64 = volumes.iter().map(|(size, _)| size).sum();
    let deltas: Vec<(String, i64)> = deltas.into_iter().collect();
    match first_over(rows, usage, &deltas) {
        Some((name, quota, consumed)) => Err(refusal(name, quota, consumed, total)),
        None => Ok(()),
    }
}

/// Whether one more group fits the project's quota.
pub fn check_group_create(rows: &QuotaRows, usage: &Usage) -> Result<(), OverQuota> {
    match first_over(rows, usage, &[("groups".to_owned(), 1)]) {
        Some((_, quota, _)) => Err(OverQuota::Groups { allowed: quota }),
        None => Ok(()),
    }
}

/// Whether one more backup of a volume of `size` GiB fits (Cinder reports the gigabytes
/// first).
pub fn check_backup_create(rows: &QuotaRows, usage: &Usage, size: i64) -> Result<(), OverQuota> {
    let gigabytes = [("backup_gigabytes".to_owned(), size)];
    if let Some((_, quota, consumed)) = first_over(rows, usage, &gigabytes) {
        return Err(OverQuota::BackupGigabytes {
            requested: size,
            quota,
            consumed,
        });
    }
    match first_over(rows, usage, &[("backups".to_owned(), 1)]) {
        Some((_, quota, _)) => Err(OverQuota::Backups { allowed: quota }),
        None => Ok(()),
    }
}

/// Whether growing a volume of type `type_name` from `size` to `new_size` GiB fits.
pub fn check_extend(
    rows: &QuotaRows,
    usage: &Usage,
    size: i64,
    new_size: i64,
    type_name: &str,
) -> Result<(), OverQuota> {
    check_size(rows, new_size)?;
    let increase = new_size - size;
    let deltas = [
        ("gigabytes".to_owned(), increase),
        (per_type("gigabytes", type_name), increase),
    ];
    match first_over(rows, usage, &deltas) {
        Some((name, quota, consumed)) => Err(refusal(name, quota, consumed, increase)),
        None => Ok(()),
    }
}

/// Whether a transferred volume of `size` GiB (with `snapshots` snapshots holding
/// `snapshot_gb` GiB, when they come along) fits the receiving project's quota, as
/// Cinder's transfer accept reserves them.
pub fn check_transfer_in(
    rows: &QuotaRows,
    usage: &Usage,
    size: i64,
    snapshots: i64,
    snapshot_gb: i64,
    type_name: &str,
) -> Result<(), OverQuota> {
    check_size(rows, size)?;
    let gigabytes = size + snapshot_gb;
    let deltas = [
        ("volumes".to_owned(), 1),
        ("gigabytes".to_owned(), gigabytes),
        ("snapshots".to_owned(), snapshots),
        (per_type("volumes", type_name), 1),
        (per_type("gigabytes", type_name), gigabytes),
        (per_type("snapshots", type_name), snapshots),
    ];
    match first_over(rows, usage, &deltas) {
        Some((name, quota, consumed)) => Err(refusal(name, quota, consumed, gigabytes)),
        None => Ok(()),
    }
}

/// Whether retyping a volume of `size` GiB, with `snapshots` snapshots holding
/// `snapshot_gb` GiB, to type `new_type` fits that type's own quotas: the volume, its
/// gigabytes and its snapshots move there, as Cinder's retype reserves them (the
/// project-wide totals do not change).
pub fn check_retype(
    rows: &QuotaRows,
    usage: &Usage,
    size: i64,
    snapshots: i64,
    snapshot_gb: i64,
    new_type: &str,
) -> Result<(), OverQuota> {
    let deltas = [
        (per_type("volumes", new_type), 1),
        (per_type("gigabytes", new_type), size + snapshot_gb),
        (per_type("snapshots", new_type), snapshots),
    ];
    match first_over(rows, usage, &deltas) {
        Some((name, quota, consumed)) => Err(refusal(name, quota, consumed, size)),
        None => Ok(()),
    }
}

/// Cinder refuses a project limit below what the project uses (`-1` and
/// `per_volume_gigabytes` always pass).
pub fn check_new_limits(usage: &Usage, limits: &BTreeMap<String, i64>) -> Result<(), BelowUsage> {
    for (resource, &limit) in limits {
        if resource == "per_volume_gigabytes" || limit == UNLIMITED {
            continue;
        }
        let used = usage.consumed(resource);
        if limit < used {
            return Err(BelowUsage {
                resource: resource.clone(),
                usage: used,
                limit,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
