//! A hostile image service, named as such: Glance's v2 record and data calls (show,
//! download, create, upload), serving whatever bytes the test hands it, with correct
//! checksums, where a real Glance 33 would refuse to store them. It stands for an older
//! Glance, or any image whose data never passed Glance's own inspector.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use md5::{Digest, Md5};
use serde_json::{json, Value};

#[derive(Default)]
struct Images {
    records: HashMap<String, Value>,
    data: HashMap<String, Vec<u8>>,
}

type Shared = Arc<Mutex<Images>>;

pub struct HostileGlance {
    pub url: String,
    images: Shared,
    server: tokio::task::JoinHandle<()>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl HostileGlance {
    pub async fn start() -> HostileGlance {
        let images: Shared = Arc::default();
        let router = Router::new()
            .route("/v2/images", post(create))
            .route("/v2/images/{id}", get(show).delete(remove))
            .route("/v2/images/{id}/file", get(download).put(upload))
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(images.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        HostileGlance {
            url,
            images,
            server,
        }
    }

    /// An active image of `disk_format` holding `data`, with its md5 and sha512; its id.
    pub fn serve(&self, disk_format: &str, data: Vec<u8>) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let sha512 = ring::digest::digest(&ring::digest::SHA512, &data);
        let record = json!({
            "id": id, "name": format!("hostile-{disk_format}"), "status": "active",
            "visibility": "public", "protected": false, "os_hidden": false,
            "disk_format": disk_format, "container_format": "bare",
            "size": data.len(), "virtual_size": null, "min_disk": 0, "min_ram": 0,
            "checksum": hex(&Md5::digest(&data)),
            "os_hash_algo": "sha512", "os_hash_value": hex(sha512.as_ref()),
            "tags": [], "owner": "p1",
        });
        let mut images = self.images.lock().unwrap();
        images.records.insert(id.clone(), record);
        images.data.insert(id.clone(), data);
        id
    }

    /// Changes a byte of the image's data, its checksums left as they were.
    pub fn corrupt(&self, id: &str) {
        let mut images = self.images.lock().unwrap();
        let data = images.data.get_mut(id).expect("the image");
        data[0] ^= 0xff;
    }

    /// The record of an image made through the service (an upload), as it was created.
    pub fn record(&self, id: &str) -> Option<Value> {
        self.images.lock().unwrap().records.get(id).cloned()
    }
}

impl Drop for HostileGlance {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "no such image").into_response()
}

async fn show(State(images): State<Shared>, Path(id): Path<String>) -> Response {
    match images.lock().unwrap().records.get(&id) {
        Some(record) => Json(record.clone()).into_response(),
        None => not_found(),
    }
}

async fn download(State(images): State<Shared>, Path(id): Path<String>) -> Response {
    match images.lock().unwrap().data.get(&id) {
        Some(data) => {
            ([("content-type", "application/octet-stream")], data.clone()).into_response()
        }
        None => not_found(),
    }
}

async fn create(State(images): State<Shared>, Json(mut fields): Json<Value>) -> Response {
    let id = uuid::Uuid::new_v4().to_string();
    fields["id"] = json!(id);
    fields["status"] = json!("queued");
    images.lock().unwrap().records.insert(id, fields.clone());
    (StatusCode::CREATED, Json(fields)).into_response()
}

async fn upload(State(images): State<Shared>, Path(id): Path<String>, body: Bytes) -> Response {
    let mut images = images.lock().unwrap();
    let Some(record) = images.records.get_mut(&id) else {
        return not_found();
    };
    record["status"] = json!("active");
    record["size"] = json!(body.len());
    images.data.insert(id, body.to_vec());
    StatusCode::NO_CONTENT.into_response()
}

async fn remove(State(images): State<Shared>, Path(id): Path<String>) -> Response {
    let mut images = images.lock().unwrap();
    images.data.remove(&id);
    match images.records.remove(&id) {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => not_found(),
    }
}
