//! `iscsi-sim`: volumes stored like `file`, exported with deterministic iSCSI target
//! data, for clients that expect iSCSI. Connectors must carry an `initiator`.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{
    Backend, BackendError, Capabilities, Connector, DataIn, DataOut, DataSource, DriverConnection,
    FileBackend,
};
use crate::domain::ids::{SnapshotId, VolumeId};

pub struct IscsiSimBackend {
    storage: FileBackend,
    portal: String,
    iqn_prefix: String,
}

impl IscsiSimBackend {
    pub fn new(storage: FileBackend, portal: String, iqn_prefix: String) -> Self {
        IscsiSimBackend {
            storage,
            portal,
            iqn_prefix,
        }
    }

    pub fn target_iqn(&self, volume_id: VolumeId) -> String {
        format!("{}:volume-{volume_id}", self.iqn_prefix)
    }
}

#[async_trait]
impl Backend for IscsiSimBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            driver: "iscsi-sim",
            storage_protocol: "iSCSI",
            ..self.storage.capabilities()
        }
    }

    async fn create_volume(&self, volume_id: VolumeId, size_gib: u64) -> Result<(), BackendError> {
        self.storage.create_volume(volume_id, size_gib).await
    }

    async fn extend_volume(
        &self,
        volume_id: VolumeId,
        new_size_gib: u64,
    ) -> Result<(), BackendError> {
        self.storage.extend_volume(volume_id, new_size_gib).await
    }

    async fn delete_volume(&self, volume_id: VolumeId) -> Result<(), BackendError> {
        self.storage.delete_volume(volume_id).await
    }

    async fn create_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        self.storage.create_snapshot(volume_id, snapshot_id).await
    }

    async fn delete_snapshot(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
    ) -> Result<(), BackendError> {
        self.storage.delete_snapshot(volume_id, snapshot_id).await
    }

    async fn create_volume_from(
        &self,
        volume_id: VolumeId,
        source: DataSource,
        size_gib: u64,
    ) -> Result<(), BackendError> {
        self.storage
            .create_volume_from(volume_id, source, size_gib)
            .await
    }

    async fn write_data(&self, volume_id: VolumeId, data: DataIn) -> Result<u64, BackendError> {
        self.storage.write_data(volume_id, data).await
    }

    fn local_path(&self, volume_id: VolumeId) -> Option<std::path::PathBuf> {
        self.storage.local_path(volume_id)
    }

    async fn read_data(&self, volume_id: VolumeId, sink: DataOut) -> Result<(), BackendError> {
        self.storage.read_data(volume_id, sink).await
    }

    async fn read_snapshot_data(
        &self,
        volume_id: VolumeId,
        snapshot_id: SnapshotId,
        sink: DataOut,
    ) -> Result<(), BackendError> {
        self.storage
            .read_snapshot_data(volume_id, snapshot_id, sink)
            .await
    }

    async fn overwrite_data(&self, volume_id: VolumeId, data: DataIn) -> Result<u64, BackendError> {
        self.storage.overwrite_data(volume_id, data).await
    }

    fn file_storage(&self) -> Option<&dyn Backend> {
        Some(&self.storage)
    }

    async fn volume_exists(&self, volume_id: VolumeId) -> Result<bool, BackendError> {
        self.storage.volume_exists(volume_id).await
    }

    async fn list_volumes(&self) -> Result<Vec<VolumeId>, BackendError> {
        self.storage.list_volumes().await
    }

    async fn list_snapshots(&self) -> Result<Vec<SnapshotId>, BackendError> {
        self.storage.list_snapshots().await
    }

    fn validate_connector(&self, connector: &Connector) -> Result<(), BackendError> {
        match connector.get("initiator") {
            Some(Value::String(initiator)) if !initiator.trim().is_empty() => Ok(()),
            _ => Err(BackendError::InvalidConnector("initiator".to_owned())),
        }
    }

    async fn initialize_connection(
        &self,
        volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<DriverConnection, BackendError> {
        self.validate_connector(connector)?;
        if !self.storage.volume_exists(volume_id).await? {
            return Err(BackendError::Failed(format!(
                "Volume {volume_id} has no data on its backend."
            )));
        }
        let data = json!({
            "target_discovered": false,
            "target_iqn": self.target_iqn(volume_id),
            "target_portal": self.portal,
            "target_lun": 0,
            "volume_id": volume_id.to_string(),
        });
        Ok(DriverConnection {
            driver_volume_type: "iscsi".to_owned(),
            data: data.as_object().cloned().unwrap_or_default(),
        })
    }

    async fn terminate_connection(
        &self,
        _volume_id: VolumeId,
        connector: &Connector,
    ) -> Result<(), BackendError> {
        self.validate_connector(connector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn iscsi_target_data() {
        let dir = std::env::temp_dir().join(format!("iscsi-sim-{}", uuid::Uuid::new_v4()));
        let storage = FileBackend::new(dir.clone(), "p".into(), true, Some(true), None);
        let b = IscsiSimBackend::new(
            storage,
            "10.0.0.1:3260".into(),
            "iqn.2010-10.org.openstack".into(),
        );
        let id = VolumeId::generate();
        b.create_volume(id, 1).await.unwrap();
        let mut connector = Connector::default();
        assert_eq!(
            b.initialize_connection(id, &connector).await.unwrap_err(),
            BackendError::InvalidConnector("initiator".into())
        );
        connector.insert("initiator", json!("iqn.2004-10.com.ubuntu:01:abc"));
        let info = b.initialize_connection(id, &connector).await.unwrap();
        assert_eq!(info.driver_volume_type, "iscsi");
        assert_eq!(
            info.data["target_iqn"],
            format!("iqn.2010-10.org.openstack:volume-{id}")
        );
        assert_eq!(info.data["target_portal"], "10.0.0.1:3260");
        assert_eq!(info.data["target_lun"], 0);
        assert_eq!(b.capabilities().driver, "iscsi-sim");
        assert_eq!(b.capabilities().shared_targets, Some(true));
        let _ = std::fs::remove_dir_all(dir);
    }
}
