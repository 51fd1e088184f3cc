//! Request helpers for common steps, so tests read as the scenario they check.

use axum::http::Method;
use serde_json::{json, Value};

use super::http::{TestApp, TestResponse};

/// A member (with reader) of project `p1`: a non-admin owner.
pub const MEMBER_P1: &str = "bob:p1:member,reader";
/// A member of another project.
pub const MEMBER_P2: &str = "eve:p2:member,reader";
/// A reader of project `p1`.
pub const READER_P1: &str = "rita:p1:reader";

impl TestApp {
    /// Creates a volume type as admin and returns its id.
    pub async fn create_type(&self, name: &str, specs: Value) -> String {
        let response = self
            .request(Method::POST, "/v3/p1/types")
            .json(&json!({"volume_type": {"name": name, "extra_specs": specs}}))
            .send()
            .await;
        assert_eq!(response.status, 200, "{}", response.text);
        response.json["volume_type"]["id"]
            .as_str()
            .expect("type id")
            .to_owned()
    }

    /// A multiattach type named `name`.
    pub async fn create_multiattach_type(&self, name: &str) -> String {
        self.create_type(name, json!({"multiattach": "<is> True"}))
            .await
    }

    /// Creates a volume as admin of `p1` at 3.71; returns the volume view.
    pub async fn create_volume(&self, fields: Value) -> Value {
        let response = self.post_volume(fields, "3.71").await;
        assert_eq!(response.status, 202, "{}", response.text);
        response.json["volume"].clone()
    }

    pub async fn post_volume(&self, fields: Value, version: &str) -> TestResponse {
        self.request(Method::POST, "/v3/p1/volumes")
            .version(version)
            .json(&json!({"volume": fields}))
            .send()
            .await
    }

    pub async fn show_volume(&self, id: &str, version: &str) -> TestResponse {
        self.get(&format!("/v3/p1/volumes/{id}"))
            .version(version)
            .send()
            .await
    }

    pub async fn volume_action(&self, id: &str, body: Value) -> TestResponse {
        self.request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
            .version("3.71")
            .json(&body)
            .send()
            .await
    }

    /// Puts a volume straight into `in-use` with one attached attachment, as the
    /// attachment API will (the fixture writes the rows directly).
    pub async fn attach_directly(&self, volume_id: &str, attachment_id: &str, instance: &str) {
        self.db
            .execute(&format!(
                "update volumes set status = 'in-use', attach_status = 'attached' where id = '{volume_id}';
                 insert into volume_attachment (id, volume_id, instance_uuid, attached_host, mountpoint,
                                                attach_time, attach_status, attach_mode, created_at, deleted)
                 values ('{attachment_id}', '{volume_id}', '{instance}', 'cmp-1', '/dev/vdb',
                         '2026-01-02T03:04:05+00:00', 'attached', 'rw', '2026-01-02T03:04:05+00:00', false);"
            ))
            .await
            .expect("fixture applies");
    }

    /// The status column as stored.
    pub async fn stored_status(&self, volume_id: &str) -> Vec<String> {
        self.db
            .column(&format!(
                "select status from volumes where id = '{volume_id}'"
            ))
            .await
    }
}

pub fn str_of(value: &Value, key: &str) -> String {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {value}"))
        .to_owned()
}
