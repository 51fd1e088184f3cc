//! Fencing with shared credentials (`fence=on`, the default): every host reaches the
//! pool with the backend's one identity (Cinder's way, all a stock Nova can use), so a
//! detached host cannot be cut off by removing its key. Its clients can be, one by one:
//! each disk a hypervisor opens is a librados client of its own, and each watches the
//! image's header while it has it open, so the image's watchers name the clients that
//! hold it by the address they connect from. When an attachment ends, the watchers at
//! its connector's `ip` are blocklisted, unless another live attachment of the volume
//! connects from there too (whose client is whose cannot be told then). A fence is
//! recorded; one that failed is tried again by reconciliation.

use std::sync::Arc;

use super::ceph::{self, address_ip};
use super::images::image_name;
use super::RbdBackend;
use crate::backend::{BackendError, Connector};
use crate::domain::host_fence::{addresses_to_fence, host_to_fence, FenceOutcome, FenceReport};
use crate::domain::ids::VolumeId;

/// The clients a host has open on a volume's image, and the image's header object.
struct OpenClients {
    addresses: Vec<String>,
    header: String,
}

impl RbdBackend {
    /// Fences the host of an attachment of `volume` that ended (its record already
    /// gone), recording how it went. An error when the cluster could not do it (the
    /// record says so; reconciliation tries again).
    pub(super) async fn fence_host(
        &self,
        volume: VolumeId,
        connector: &Connector,
    ) -> Result<(), BackendError> {
        let report = self.fence_address(volume, connector.text("ip")).await?;
        let failed = report.outcome == FenceOutcome::Failed;
        let reason = report.reason.clone();
        self.record(report).await;
        if failed {
            return Err(self.failed(&format!("fence the host of volume {volume}"), reason));
        }
        Ok(())
    }

    /// Decides and, where it is to be, does the fence of the clients `host_ip` has open
    /// on `volume`. The clients are listed first and who is attached read after: a host
    /// opens its disk only once its attachment is recorded, so a client listed here whose
    /// attachment is live is seen live below (and kept), and one that opens later is not
    /// listed (and not fenced). No turn is needed, and a detach that finds nothing open
    /// (most do) reads nothing from the database.
    async fn fence_address(
        &self,
        volume: VolumeId,
        host_ip: Option<&str>,
    ) -> Result<FenceReport, BackendError> {
        let mut report = FenceReport {
            volume_id: volume,
            host_ip: host_ip.map(str::to_owned),
            addresses: Vec::new(),
            outcome: FenceOutcome::Kept,
            reason: String::new(),
        };
        let ip = match host_to_fence(host_ip, &[]) {
            Ok(ip) => ip.to_owned(),
            Err(kept) => {
                report.reason = kept.reason();
                return Ok(report);
            }
        };
        let open = match self.clients_at(volume, &ip).await {
            Ok(open) => open,
            Err(err) => {
                report.outcome = FenceOutcome::Failed;
                report.reason = err.to_string();
                return Ok(report);
            }
        };
        if open.addresses.is_empty() {
            report.outcome = FenceOutcome::NothingOpen;
            report.reason = format!("no client at {ip} had the image open");
            return Ok(report);
        }
        let live = self
            .records
            .connected_ips(volume)
            .await
            .map_err(|e| self.failed("read who is attached", e))?;
        if let Err(kept) = host_to_fence(Some(&ip), &live) {
            report.reason = kept.reason();
            return Ok(report);
        }
        match self.blocklist(volume, &open).await {
            Ok(()) => {
                report.outcome = FenceOutcome::Fenced;
                report.reason = format!(
                    "blocklisted for {} s the clients at {ip} that had the image open",
                    self.options.fence_seconds
                );
                report.addresses = open.addresses;
            }
            Err(err) => {
                report.outcome = FenceOutcome::Failed;
                report.reason = err.to_string();
            }
        }
        Ok(report)
    }

    /// The watchers of the volume's image that connect from `ip` (never this process's
    /// own client). An image that is gone has none.
    async fn clients_at(&self, volume: VolumeId, ip: &str) -> Result<OpenClients, BackendError> {
        const WHAT: &str = "list who has the image open";
        let name = image_name(volume);
        // Most detaches: the image's id is kept, and one asynchronous read answers.
        let kept = match self.watch_listing().await {
            Some(listing) => listing.kept_image_watchers(&name, &self.image_ids).await,
            None => None,
        };
        let open = match kept {
            Some(found) => Some(found.map_err(|e| self.failed(WHAT, e))?),
            None => {
                let ids = self.image_ids.clone();
                // Listed without adding a watcher of this process's own.
                self.on_pool(WHAT, move |io| io.image_watchers(&name, &ids))
                    .await?
            }
        };
        let Some(open) = open else {
            return Ok(OpenClients {
                addresses: Vec::new(),
                header: String::new(),
            });
        };
        let watchers: Vec<(String, String)> = open
            .watchers
            .into_iter()
            .flat_map(|w| ceph::entity_addresses(&w.address))
            .map(|address| {
                let ip = address_ip(&address).to_owned();
                (address, ip)
            })
            .collect();
        let mut addresses = addresses_to_fence(&watchers, ip, &[]);
        if !addresses.is_empty() {
            // This service's own clients are never fenced (read only when it matters).
            let own = self
                .cluster()
                .await?
                .address()
                .map_err(|e| self.failed(WHAT, e))?;
            addresses = addresses_to_fence(&watchers, ip, &ceph::entity_addresses(&own));
        }
        Ok(OpenClients {
            addresses,
            header: open.header,
        })
    }

    /// The backend's context for asynchronous listings, opened on first use; `None`
    /// where librados has no such listing or the context could not be opened (logged; the
    /// blocking listing answers then, and the next call tries again).
    async fn watch_listing(&self) -> Option<Arc<ceph::WatchListing>> {
        let opened = self
            .watch_listing
            .get_or_try_init(|| async {
                let cluster = self.cluster().await?;
                let pool = self.options.pool.clone();
                tokio::task::spawn_blocking(move || ceph::WatchListing::open(cluster, &pool))
                    .await
                    .map_err(|e| self.failed("open its pool", e))?
                    .map(|listing| listing.map(Arc::new))
                    .map_err(|e| self.failed("open its pool", e))
            })
            .await;
        match opened {
            Ok(listing) => listing.clone(),
            Err(err) => {
                tracing::debug!(backend = %self.name, error = %err, "no asynchronous listing");
                None
            }
        }
    }

    /// Blocklists `open`'s clients; it returns once the OSD serving the image's header
    /// refuses them (others follow at their next map, well within a second).
    async fn blocklist(&self, volume: VolumeId, open: &OpenClients) -> Result<(), BackendError> {
        let cluster = self.cluster().await?;
        let pool = self.options.pool.clone();
        let seconds = self.options.fence_seconds;
        let (addresses, header) = (open.addresses.clone(), open.header.clone());
        let work = tokio::task::spawn_blocking(move || {
            for address in &addresses {
                cluster.blocklist(address, seconds)?;
            }
            cluster.io(&pool, None)?.bring_latest_map_to(&header)
        });
        work.await
            .map_err(|e| self.failed("fence a host", e))?
            .map_err(|e| self.failed(&format!("fence the host of volume {volume}"), e))
    }

    /// Logs a fence and keeps its record where it is worth one (a record that cannot be
    /// kept is logged too).
    async fn record(&self, report: FenceReport) {
        let (volume, outcome) = (report.volume_id, report.outcome.as_str());
        let ip = report.host_ip.clone().unwrap_or_default();
        match report.outcome {
            FenceOutcome::Failed => tracing::warn!(backend = %self.name, %volume, ip, outcome,
                reason = %report.reason, "a detached host could not be fenced"),
            _ if report.host_ip.is_none() => tracing::warn!(backend = %self.name, %volume,
                reason = %report.reason, "a detached host cannot be fenced"),
            FenceOutcome::NothingOpen => tracing::debug!(backend = %self.name, %volume, ip,
                outcome, "host fence"),
            _ => tracing::info!(backend = %self.name, %volume, ip, outcome,
                addresses = ?report.addresses, reason = %report.reason, "host fence"),
        }
        if !report.is_recorded() {
            return;
        }
        if let Err(err) = self.records.record_fence(report).await {
            tracing::warn!(backend = %self.name, %volume, error = %err, "a fence was not recorded");
        }
    }

    /// Fences that failed and were not tried again: described (`repair` false), or
    /// tried again, with what was done described.
    pub(super) async fn retry_failed_fences(
        &self,
        repair: bool,
    ) -> Result<Vec<String>, BackendError> {
        let failed = self
            .records
            .failed_fences()
            .await
            .map_err(|e| self.failed("read its failed fences", e))?;
        let mut described = Vec::new();
        for fence in failed {
            let volume = fence.volume_id;
            let ip = fence.host_ip.clone().unwrap_or_default();
            if !repair {
                described.push(format!(
                    "volume {volume}: the fence of host {ip} failed at {}: {}",
                    fence.created_at.to_rfc3339(),
                    fence.reason
                ));
                continue;
            }
            let report = self.fence_address(volume, fence.host_ip.as_deref()).await?;
            let outcome = report.outcome;
            let reason = report.reason.clone();
            self.record(report).await;
            if outcome == FenceOutcome::Failed {
                continue;
            }
            self.records
                .settle_fence(fence.id)
                .await
                .map_err(|e| self.failed("record a fence tried again", e))?;
            described.push(format!(
                "volume {volume}: the fence of host {ip} tried again: {}: {reason}",
                outcome.as_str()
            ));
        }
        Ok(described)
    }
}
