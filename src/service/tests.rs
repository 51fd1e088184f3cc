//! The use cases' side of the backend contract: which exports they end, over the real
//! (in-memory SQLite) store and the real file driver, whose calls are recorded.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::attachments::CreateAttachment;
use super::types::CreateType;
use super::volumes::CreateVolume;
use super::{Service, Settings};
use crate::backend::{
    Backend, BackendError, Backends, Capabilities, ConfiguredBackend, DataSource, DriverConnection,
    FileBackend,
};
use crate::clock::SystemClock;
use crate::domain::attachment::{AttachStatus, Connector};
use crate::domain::ids::{ServiceId, SnapshotId, VolumeId};
use crate::domain::volume::StatusReset;
use crate::domain::RequestContext;
use crate::policy::{Policy, PolicyEngine};
use crate::store::{self, ConnectOptions, SchemaUse};

/// The file driver, with every `terminate_connection` recorded.
struct Recording {
    files: FileBackend,
    terminated: Mutex<Vec<(VolumeId, Option<String>)>>,
    /// The volume files' directory, removed with the driver.
    dir: std::path::PathBuf,
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[async_trait]
impl Backend for Recording {
    fn capabilities(&self) -> Capabilities {
        self.files.capabilities()
    }
    async fn create_volume(&self, id: VolumeId, size: u64) -> Result<(), BackendError> {
        self.files.create_volume(id, size).await
    }
    async fn extend_volume(&self, id: VolumeId, size: u64) -> Result<(), BackendError> {
        self.files.extend_volume(id, size).await
    }
    async fn delete_volume(&self, id: VolumeId) -> Result<(), BackendError> {
        self.files.delete_volume(id).await
    }
    async fn create_snapshot(
        &self,
        id: VolumeId,
        snapshot: SnapshotId,
    ) -> Result<(), BackendError> {
        self.files.create_snapshot(id, snapshot).await
    }
    async fn delete_snapshot(
        &self,
        id: VolumeId,
        snapshot: SnapshotId,
    ) -> Result<(), BackendError> {
        self.files.delete_snapshot(id, snapshot).await
    }
    async fn create_volume_from(
        &self,
        id: VolumeId,
        source: DataSource,
        size: u64,
    ) -> Result<(), BackendError> {
        self.files.create_volume_from(id, source, size).await
    }
    async fn volume_exists(&self, id: VolumeId) -> Result<bool, BackendError> {
        self.files.volume_exists(id).await
    }
    async fn list_volumes(&self) -> Result<Vec<VolumeId>, BackendError> {
        self.files.list_volumes().await
    }
    async fn list_snapshots(&self) -> Result<Vec<SnapshotId>, BackendError> {
        self.files.list_snapshots().await
    }
    fn validate_connector(&self, connector: &Connector) -> Result<(), BackendError> {
        self.files.validate_connector(connector)
    }
    async fn initialize_connection(
        &self,
        id: VolumeId,
        connector: &Connector,
    ) -> Result<DriverConnection, BackendError> {
        self.files.initialize_connection(id, connector).await
    }
    async fn terminate_connection(
        &self,
        id: VolumeId,
        connector: &Connector,
    ) -> Result<(), BackendError> {
        let host = connector.host().map(str::to_owned);
        self.terminated.lock().unwrap().push((id, host));
        self.files.terminate_connection(id, connector).await
    }
}

fn admin() -> RequestContext {
    RequestContext {
        user_id: "u".into(),
        project_id: "p".into(),
        roles: vec!["admin".into()],
        service_roles: vec![],
        is_admin: true,
        auth_token: None,
    }
}

fn connector(host: &str) -> Option<Connector> {
    Connector::from_json(Some(
        serde_json::json!({"host": host, "mountpoint": "/dev/vdb"}),
    ))
}

async fn service() -> (Service, Arc<Recording>) {
    let store = store::connect(&ConnectOptions {
        url: "sqlite::memory:".into(),
        max_connections: 4,
        acquire_timeout: std::time::Duration::from_secs(5),
        schema: SchemaUse::Migrate,
        upkeep: false,
        record_events: true,
        start_wait: crate::store::StartWait::ONCE,
    })
    .await
    .expect("in-memory store");
    let dir = std::env::temp_dir().join(format!("service-tests-{}", uuid::Uuid::new_v4()));
    let driver = Arc::new(Recording {
        files: FileBackend::new(dir.clone(), "file".into(), true, Some(false), None),
        terminated: Mutex::new(Vec::new()),
        dir,
    });
    let backend = ConfiguredBackend {
        name: "file".into(),
        host: "test@file".into(),
        service_uuid: ServiceId::generate(),
        availability_zone: "nova".into(),
        identity: "file=file"
            .parse::<crate::backend::BackendSpec>()
            .unwrap()
            .identity(),
        driver: driver.clone(),
    };
    let service = Service {
        store,
        policy: Arc::new(PolicyEngine::new(Policy::with_defaults())),
        backends: Arc::new(Backends::new(vec![backend])),
        clock: Arc::new(SystemClock),
        settings: Arc::new(Settings::default()),
        gates: Default::default(),
    };
    (service, driver)
}

/// A multiattach volume with two connected attachments (hosts `h1`, `h2`) and one only
/// reserved.
async fn shared_volume(service: &Service) -> VolumeId {
    let caller = admin();
    let specs = [("multiattach".to_owned(), Some("<is> True".to_owned()))].into();
    let new_type = CreateType {
        name: "shared".into(),
        description: None,
        is_public: true,
        extra_specs: specs,
    };
    service.create_volume_type(&caller, new_type).await.unwrap();
    let request = CreateVolume {
        size: Some(1),
        volume_type: Some("shared".into()),
        ..CreateVolume::default()
    };
    let volume = service.create_volume(&caller, request, None).await.unwrap();
    for (instance, host) in [("i1", Some("h1")), ("i2", Some("h2")), ("i3", None)] {
        let request = CreateAttachment {
            volume_id: volume.id,
            instance_uuid: Some(instance.into()),
            connector: host.and_then(connector),
            mode: None,
        };
        let attachment = service.create_attachment(&caller, request).await.unwrap();
        if host.is_some() {
            service
                .complete_attachment(&caller, attachment.id)
                .await
                .unwrap();
        }
    }
    volume.id
}

#[tokio::test]
async fn a_reset_to_detached_ends_every_export_in_one_go() {
    let (service, driver) = service().await;
    let volume = shared_volume(&service).await;
    let reset = StatusReset {
        attach_status: Some(AttachStatus::Detached),
        ..StatusReset::default()
    };
    service.reset_status(&admin(), volume, reset).await.unwrap();
    let mut terminated = driver.terminated.lock().unwrap().clone();
    terminated.sort();
    assert_eq!(
        terminated,
        [(volume, Some("h1".into())), (volume, Some("h2".into()))],
        "each connected attachment's export, not the reservation's"
    );
    let after = service.get_volume(&admin(), volume).await.unwrap();
    assert!(after.attachments.is_empty());
    assert_eq!(after.status.as_str(), "available");
}

#[tokio::test]
async fn a_detach_ends_its_own_export_only() {
    let (service, driver) = service().await;
    let volume = shared_volume(&service).await;
    let attachments = service
        .get_volume(&admin(), volume)
        .await
        .unwrap()
        .attachments;
    let first = attachments
        .iter()
        .find(|a| a.attached_host.as_deref() == Some("h1"))
        .expect("attached to h1");
    let remaining = service.delete_attachment(&admin(), first.id).await.unwrap();
    assert_eq!(remaining.len(), 2);
    assert_eq!(
        *driver.terminated.lock().unwrap(),
        [(volume, Some("h1".into()))]
    );
}
