//! What a backend that enforces access exports, as the database records it: a volume's
//! pair of targets and its CHAP account (Cinder keeps the same in `provider_location`
//! and `provider_auth`), and who may log in to them now.

use crate::domain::ids::VolumeId;

/// A volume's export on a target-based backend: `number` n gives the read-write target
/// id `2n - 1` and the read-only one `2n`, so one allocation covers both.
#[derive(Clone, PartialEq, Eq)]
pub struct TargetExport {
    pub volume_id: VolumeId,
    pub number: u32,
    pub auth_username: String,
    pub auth_password: String,
}

impl TargetExport {
    pub fn read_write_tid(&self) -> u32 {
        self.number * 2 - 1
    }

    pub fn read_only_tid(&self) -> u32 {
        self.number * 2
    }
}

// The password never reaches a log line, not even a debug one.
impl std::fmt::Debug for TargetExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetExport")
            .field("volume_id", &self.volume_id)
            .field("number", &self.number)
            .field("auth_username", &self.auth_username)
            .finish_non_exhaustive()
    }
}

/// One initiator's right to log in to a volume: held while a live, connected attachment
/// of the volume names that initiator in its connector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AccessGrant {
    pub volume_id: VolumeId,
    pub initiator: String,
    pub read_only: bool,
}

/// A host's right to reach a volume on a backend whose hosts connect with credentials of
/// their own (rbd's per-attachment identities): held while a live, connected attachment
/// of the volume names that host. `keyring` is what that attachment's connection info
/// gave the host, so the same key can be put back.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostGrant {
    pub volume_id: VolumeId,
    pub host: String,
    pub read_only: bool,
    pub keyring: Option<String>,
}

// The key never reaches a log line.
impl std::fmt::Debug for HostGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostGrant")
            .field("volume_id", &self.volume_id)
            .field("host", &self.host)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_ids_pair_up_without_overlap() {
        let export = |number| TargetExport {
            volume_id: VolumeId::generate(),
            number,
            auth_username: "u".into(),
            auth_password: "secret-password".into(),
        };
        let (one, two) = (export(1), export(2));
        assert_eq!((one.read_write_tid(), one.read_only_tid()), (1, 2));
        assert_eq!((two.read_write_tid(), two.read_only_tid()), (3, 4));
        assert!(!format!("{one:?}").contains("secret-password"));
    }
}
