//! Host connectors as Nova sends them: any JSON body either fails the attachment
//! schema or passes the backends' checks and the mode rules without panicking, and its
//! stored form (one row per key, values as JSON) reads back exactly.
#![no_main]

use std::sync::LazyLock;

use cinder_attach::api::attachments::create_schema;
use cinder_attach::api::schema::validate;
use cinder_attach::backend::{Backend, BackendSpec, NoRecords};
use cinder_attach::domain::attachment::{AttachMode, Connector};
use cinder_attach::store::connector_specs::{decode, encode};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

static SCHEMA: LazyLock<Value> = LazyLock::new(|| create_schema(true));
static BACKENDS: LazyLock<Vec<std::sync::Arc<dyn Backend>>> = LazyLock::new(|| {
    [
        "f=file,dir=/nonexistent/fuzz",
        "i=iscsi-sim,dir=/nonexistent/fuzz",
        "t=tgt,dir=/nonexistent/fuzz",
    ]
    .iter()
    .map(|spec| {
        spec.parse::<BackendSpec>()
            .expect("spec")
            .build(std::sync::Arc::new(NoRecords))
            .expect("builds")
            .0
    })
    .collect()
});

fuzz_target!(|data: &[u8]| {
    let Ok(connector) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let body = serde_json::json!({"attachment": {
        "volume_uuid": "8c4a7f38-0000-4000-8000-000000000000", "connector": connector}});
    if validate(&SCHEMA, &body).is_err() {
        return;
    }
    let Some(connector) = Connector::from_json(Some(connector)) else {
        return;
    };
    for backend in BACKENDS.iter() {
        let _ = backend.validate_connector(&connector);
    }
    let mode = AttachMode::connected(false, None, connector.mode());
    assert!(
        matches!(mode, AttachMode::ReadWrite | AttachMode::ReadOnly),
        "mode {mode:?}"
    );
    assert_eq!(
        AttachMode::connected(true, None, connector.mode()),
        AttachMode::ReadOnly
    );
    assert_eq!(decode(encode(&connector)).expect("decodes"), connector);
});
