//! Per-attachment identities as the database backs them: which identity a grant gets,
//! what the database wants, and the one change that makes the cluster agree (fence what
//! nothing backs, put back what is missing, add the new one), under the volume's turn.

use super::access::{self, chain_of};
use super::ceph::{self, CephError};
use super::RbdBackend;
use crate::backend::{AccessTurn, BackendError, Connector};
use crate::domain::attachment::AttachMode;
use crate::domain::export::HostGrant;
use crate::domain::ids::VolumeId;

/// Which identities of a volume a change looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Scope {
    /// Every identity the cluster holds for the volume, listed now (`auth ls`: what a
    /// repair needs).
    Listed,
    /// Those this process knows of: as the last reconciliation listed them, with its own
    /// changes since (an attach; another process's stray is its own detach's to fence,
    /// or the next pass's).
    Known,
    /// Only this one (a detach: its host's identity).
    Identity(String),
}

impl RbdBackend {
    /// The identity a grant of `volume_id` to the connector's host (in its mode) gets.
    pub(super) fn identity_for(
        &self,
        volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<String, BackendError> {
        let host = host_of(connector)?;
        let read_only = connector.mode() == Some(AttachMode::ReadOnly);
        Ok(access::identity(
            &self.name,
            &volume_id.to_string(),
            host,
            read_only,
        ))
    }

    /// Whether this process knows of an identity of `volume` other than `identity`.
    pub(super) fn knows_others_of(&self, volume: VolumeId, identity: &str) -> bool {
        let prefix = access::volume_prefix(&self.name, &volume.to_string());
        self.known.lock().map_or(true, |known| {
            access::with_prefix(&known, &prefix).any(|id| id != identity)
        })
    }

    /// The identities the database backs for `volume` (every volume of the backend when
    /// `None`), with the keyring each host was given.
    pub(super) async fn wanted(
        &self,
        volume: Option<VolumeId>,
    ) -> Result<Vec<(String, HostGrant)>, BackendError> {
        let grants = self
            .records
            .host_grants(volume)
            .await
            .map_err(|e| self.failed("read who may reach its volumes", e))?;
        let backend = &self.name;
        Ok(grants
            .into_iter()
            .map(|g| {
                let id = access::identity(backend, &g.volume_id.to_string(), &g.host, g.read_only);
                (id, g)
            })
            .collect())
    }

    /// Makes the cluster's identities for `volume` (all of them, or the one `scope`
    /// names) exactly `wanted` plus `adding`: identities no attachment backs are fenced
    /// first, then `adding` is given its caps (its keyring returned); wanted ones that are
    /// missing are put back with the key their hosts hold. What changed, described.
    pub(super) async fn sync_volume(
        &self,
        volume: VolumeId,
        scope: Scope,
        wanted: Vec<(String, HostGrant)>,
        adding: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), BackendError> {
        let cluster = self.cluster().await?;
        let monitors = self.monitors().await?;
        let pool = self.options.pool.clone();
        let name = self.name.clone();
        let chains = self.chains.clone();
        let known = self.known.clone();
        let seconds = self.options.fence_seconds;
        let work = tokio::task::spawn_blocking(move || {
            let prefix = access::volume_prefix(&name, &volume.to_string());
            let present: Vec<String> = match &scope {
                Scope::Listed => access::identities(&cluster, &name)?
                    .into_keys()
                    .filter(|id| id.starts_with(&prefix))
                    .collect(),
                Scope::Known => known
                    .lock()
                    .map(|k| access::with_prefix(&k, &prefix).cloned().collect())
                    .unwrap_or_default(),
                // Only its own host's identity: a detach need not list every identity.
                Scope::Identity(id) => vec![id.clone()],
            };
            let remember = |id: &str, present: bool| {
                if let Ok(mut known) = known.lock() {
                    if present {
                        known.insert(id.to_owned());
                    } else {
                        known.remove(id);
                    }
                }
            };
            let mut changes = Vec::new();
            for id in &present {
                let backed = wanted.iter().any(|(w, _)| w == id) || adding.as_deref() == Some(id);
                if !backed {
                    let fenced = access::fence(&cluster, &monitors.names, id, seconds)?;
                    remember(id, false);
                    changes.push(format!(
                        "volume {volume}: removed identity client.{id}, blocklisted {fenced:?}"
                    ));
                }
            }
            let io = cluster.io(&pool, None)?;
            let chain = match chain_of(&chains, &io, &pool, volume) {
                // A volume whose image is gone needs no identity.
                Err(e) if e.errno == ceph::ENOENT => return Ok((changes, None)),
                other => other?,
            };
            if !changes.is_empty() {
                // The OSD serving the image's header takes the map with the blocklist
                // before this answers.
                io.bring_latest_map_to(&format!("rbd_header.{}", chain.0.id))?;
            }
            if scope == Scope::Listed {
                for (id, grant) in &wanted {
                    if present.contains(id) || adding.as_deref() == Some(id) {
                        continue;
                    }
                    let caps = access::osd_caps(&pool, &chain.0, &chain.1, grant.read_only);
                    match &grant.keyring {
                        Some(keyring) => access::restore(&cluster, id, keyring, &caps)?,
                        None => drop(access::ensure(&cluster, id, &caps)?),
                    }
                    remember(id, true);
                    changes.push(format!("volume {volume}: put back identity client.{id}"));
                }
            }
            let keyring = match &adding {
                Some(id) => {
                    let read_only = id.ends_with(".ro");
                    let caps = access::osd_caps(&pool, &chain.0, &chain.1, read_only);
                    let keyring = access::ensure(&cluster, id, &caps)?;
                    remember(id, true);
                    Some(keyring)
                }
                None => None,
            };
            Ok::<_, CephError>((changes, keyring))
        });
        work.await
            .map_err(|e| self.failed("change who may reach the volume", e))?
            .map_err(|e| self.failed(&format!("change who may reach volume {volume}"), e))
    }

    /// The volume's turn at changing who may reach it, taken in the database (an
    /// advisory lock on PostgreSQL), so that processes on any machine take turns without
    /// writing to the cluster for it.
    pub(super) async fn turn(&self, volume: VolumeId) -> Result<AccessTurn, BackendError> {
        self.records
            .access_turn(volume)
            .await
            .map_err(|e| self.failed("take the volume's turn", e))
    }
}

/// The connector's host, which per-attachment identities are named after.
pub(super) fn host_of(connector: &Connector) -> Result<&str, BackendError> {
    connector
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| BackendError::InvalidConnector("host".to_owned()))
}
