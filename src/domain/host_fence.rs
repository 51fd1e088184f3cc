//! Fencing a host on a backend whose hosts share one identity (rbd with shared
//! credentials): when an attachment ends, the clients its host has open on the volume are
//! cut off. Which host is known only by the connector's `ip` (what Nova sends as
//! `my_block_storage_ip`), and which clients are its by the address each watcher of the
//! volume connected from. These are the rules; the backend lists and blocklists.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::ids::VolumeId;

/// How one fence went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceOutcome {
    /// The host's clients of the volume were blocklisted.
    Fenced,
    /// The host had no client of the volume open (logged, not recorded).
    NothingOpen,
    /// The host was left alone, on purpose (`reason` says why).
    Kept,
    /// The cluster could not be asked or refused; reconciliation tries again.
    Failed,
}

impl FenceOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            FenceOutcome::Fenced => "fenced",
            FenceOutcome::NothingOpen => "nothing-open",
            FenceOutcome::Kept => "kept",
            FenceOutcome::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<FenceOutcome> {
        [
            FenceOutcome::Fenced,
            FenceOutcome::NothingOpen,
            FenceOutcome::Kept,
            FenceOutcome::Failed,
        ]
        .into_iter()
        .find(|o| o.as_str() == text)
    }
}

/// One fence as it is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFence {
    pub id: Uuid,
    /// The storage the backend knows the volume by (`Volume::storage_id`).
    pub volume_id: VolumeId,
    pub backend_host: String,
    pub host_ip: Option<String>,
    /// The client addresses blocklisted (`ip:port/nonce`).
    pub addresses: Vec<String>,
    pub outcome: FenceOutcome,
    pub reason: String,
    pub created_at: DateTime<Utc>,
}

/// A fence as the backend reports it (the record's id, backend and time are added
/// where it is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceReport {
    pub volume_id: VolumeId,
    pub host_ip: Option<String>,
    pub addresses: Vec<String>,
    pub outcome: FenceOutcome,
    pub reason: String,
}

impl FenceReport {
    /// Whether the fence is kept on record (and sent as an event): it blocklisted, failed,
    /// or left a host alone on purpose. One that found nothing open, or had no address to
    /// look for, changed nothing and is only logged (most detaches are such).
    pub fn is_recorded(&self) -> bool {
        self.host_ip.is_some() && self.outcome != FenceOutcome::NothingOpen
    }
}

/// Why a host is not fenced at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoFence {
    /// The connector named no address: whose clients are whose cannot be told.
    NoAddress,
    /// Another live attachment of the volume connects from the same address: its
    /// clients and the ended one's cannot be told apart.
    StillAttached(String),
}

impl NoFence {
    pub fn reason(&self) -> String {
        match self {
            NoFence::NoAddress => "the connector named no ip".to_owned(),
            NoFence::StillAttached(ip) => {
                format!("another live attachment of the volume connects from {ip}")
            }
        }
    }
}

/// The address whose clients are to be fenced for an ended attachment whose connector
/// named `host_ip`, while the volume's live, connected attachments connect from
/// `live_ips`.
pub fn host_to_fence<'a>(
    host_ip: Option<&'a str>,
    live_ips: &[String],
) -> Result<&'a str, NoFence> {
    let ip = host_ip
        .map(str::trim)
        .filter(|ip| !ip.is_empty())
        .ok_or(NoFence::NoAddress)?;
    if live_ips.iter().any(|live| same_ip(live, ip)) {
        return Err(NoFence::StillAttached(ip.to_owned()));
    }
    Ok(ip)
}

/// Of the volume's watchers (`(address, ip)`), the addresses to blocklist: those
/// connected from `ip`, except this service's own clients (`own`: a service on a host
/// of its own cloud must not cut itself off).
pub fn addresses_to_fence(watchers: &[(String, String)], ip: &str, own: &[String]) -> Vec<String> {
    let mut addresses: Vec<String> = watchers
        .iter()
        .filter(|(address, at)| same_ip(at, ip) && !own.contains(address))
        .map(|(address, _)| address.clone())
        .collect();
    addresses.sort();
    addresses.dedup();
    addresses
}

/// Two IP addresses as text, the same whatever the case (IPv6) and `[]`.
fn same_ip(a: &str, b: &str) -> bool {
    let bare = |s: &str| s.trim().trim_matches(['[', ']']).to_ascii_lowercase();
    match (
        bare(a).parse::<std::net::IpAddr>(),
        bare(b).parse::<std::net::IpAddr>(),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => bare(a) == bare(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watcher(address: &str, ip: &str) -> (String, String) {
        (address.to_owned(), ip.to_owned())
    }

    #[test]
    fn the_host_is_fenced_unless_it_still_attaches_or_names_no_address() {
        assert_eq!(host_to_fence(Some("10.0.0.5"), &[]), Ok("10.0.0.5"));
        assert_eq!(
            host_to_fence(Some("10.0.0.5"), &["10.0.0.6".into()]),
            Ok("10.0.0.5")
        );
        assert_eq!(
            host_to_fence(Some("10.0.0.5"), &["10.0.0.5".into()]),
            Err(NoFence::StillAttached("10.0.0.5".into()))
        );
        assert_eq!(
            host_to_fence(Some("FE80::1"), &["fe80::1".into()]),
            Err(NoFence::StillAttached("FE80::1".into()))
        );
        assert_eq!(host_to_fence(None, &[]), Err(NoFence::NoAddress));
        assert_eq!(host_to_fence(Some(" "), &[]), Err(NoFence::NoAddress));
    }

    #[test]
    fn only_the_hosts_clients_are_fenced_never_the_services_own() {
        let watchers = [
            watcher("10.0.0.5:0/11", "10.0.0.5"),
            watcher("10.0.0.5:0/12", "10.0.0.5"),
            watcher("10.0.0.6:0/13", "10.0.0.6"),
            watcher("10.0.0.5:0/99", "10.0.0.5"),
        ];
        assert_eq!(
            addresses_to_fence(&watchers, "10.0.0.5", &["10.0.0.5:0/99".into()]),
            vec!["10.0.0.5:0/11".to_owned(), "10.0.0.5:0/12".to_owned()]
        );
        assert!(addresses_to_fence(&watchers, "10.0.0.7", &[]).is_empty());
    }

    #[test]
    fn outcomes_read_back() {
        for outcome in [
            FenceOutcome::Fenced,
            FenceOutcome::NothingOpen,
            FenceOutcome::Kept,
            FenceOutcome::Failed,
        ] {
            assert_eq!(FenceOutcome::parse(outcome.as_str()), Some(outcome));
        }
        assert_eq!(FenceOutcome::parse("other"), None);
    }
}
