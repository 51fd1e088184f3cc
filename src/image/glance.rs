//! The Glance v2 calls a volume service makes: show an image, read its data as a stream,
//! create an image record, send its data as a stream, delete it. Each call carries the
//! caller's token, as Cinder's glance client does, so Glance applies the caller's rights.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::tls_client::TlsClient;
use crate::upstream::{path_segment, Answer, Failure, Upstream};

/// Where Glance is and how long a call may wait for it.
#[derive(Debug, Clone, Default)]
pub struct GlanceConfig {
    /// `[glance] api_servers`: tried in turn when one does not answer.
    pub api_servers: Vec<String>,
    /// How long one call (or one read of a download) may take (`glance_request_timeout`).
    pub timeout: Option<Duration>,
    pub tls: TlsClient,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlanceError {
    #[error("image {0} could not be found")]
    NotFound(String),
    /// Glance refused the call: its status and what it said.
    #[error("the image service refused the request ({0}): {1}")]
    Refused(u16, String),
    #[error("the image service is unavailable: {0}")]
    Unavailable(String),
}

/// An image as Glance shows it; `properties` are the keys outside Glance's base schema
/// (what Cinder copies into a volume's image metadata besides the core ones).
#[derive(Debug, Clone, PartialEq)]
pub struct ImageInfo {
    pub id: String,
    pub name: Option<String>,
    pub status: String,
    pub size: Option<u64>,
    pub virtual_size: Option<u64>,
    pub min_disk: i64,
    pub min_ram: i64,
    pub disk_format: Option<String>,
    pub container_format: Option<String>,
    pub checksum: Option<String>,
    pub os_hash_algo: Option<String>,
    pub os_hash_value: Option<String>,
    pub properties: BTreeMap<String, String>,
    /// Where the image's data is stored, as Glance tells (its `direct_url`, then each of
    /// `locations`, when its `show_image_direct_url`/`show_multiple_locations` allow).
    pub locations: Vec<String>,
}

/// The keys of Glance's image schema that are not custom properties.
const BASE_KEYS: &[&str] = &[
    "id",
    "name",
    "status",
    "visibility",
    "protected",
    "os_hidden",
    "checksum",
    "os_hash_algo",
    "os_hash_value",
    "owner",
    "size",
    "virtual_size",
    "container_format",
    "disk_format",
    "created_at",
    "updated_at",
    "tags",
    "direct_url",
    "min_ram",
    "min_disk",
    "self",
    "file",
    "schema",
    "locations",
    "stores",
];

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl ImageInfo {
    /// The key of an image uploaded from an encrypted volume (Cinder's
    /// `cinder_encryption_key_id`): its data is that volume's LUKS container.
    pub fn encryption_key_id(&self) -> Option<&str> {
        self.properties
            .get("cinder_encryption_key_id")
            .map(String::as_str)
            .filter(|k| !k.is_empty())
    }

    pub fn from_json(body: &Value) -> Option<ImageInfo> {
        let object = body.as_object()?;
        let string = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        let number = |key: &str| object.get(key).and_then(Value::as_u64);
        Some(ImageInfo {
            id: string("id")?,
            name: string("name"),
            status: string("status").unwrap_or_default(),
            size: number("size"),
            virtual_size: number("virtual_size"),
            min_disk: object.get("min_disk").and_then(Value::as_i64).unwrap_or(0),
            min_ram: object.get("min_ram").and_then(Value::as_i64).unwrap_or(0),
            disk_format: string("disk_format"),
            container_format: string("container_format"),
            checksum: string("checksum"),
            os_hash_algo: string("os_hash_algo"),
            os_hash_value: string("os_hash_value"),
            properties: object
                .iter()
                .filter(|(k, v)| !BASE_KEYS.contains(&k.as_str()) && !v.is_null())
                .map(|(k, v)| (k.clone(), text(v)))
                .collect(),
            locations: stored_at(object),
        })
    }
}

fn stored_at(image: &Map<String, Value>) -> Vec<String> {
    let direct = image.get("direct_url").and_then(Value::as_str);
    let listed = image
        .get("locations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|location| location["url"].as_str());
    let mut urls: Vec<String> = Vec::new();
    for url in direct.into_iter().chain(listed) {
        if !urls.iter().any(|known| known == url) {
            urls.push(url.to_owned());
        }
    }
    urls
}

/// An image's data as Glance sends it, read chunk by chunk.
pub struct Download {
    body: Incoming,
    timeout: Duration,
}

impl Download {
    /// The next chunk; `None` at the end. A chunk that does not come within the timeout,
    /// or a connection that breaks, is an error.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, GlanceError> {
        loop {
            let frame = tokio::time::timeout(self.timeout, self.body.frame())
                .await
                .map_err(|_| GlanceError::Unavailable("the image data stopped coming".into()))?;
            match frame {
                None => return Ok(None),
                Some(Err(e)) => {
                    return Err(GlanceError::Unavailable(format!(
                        "reading the image data failed: {e}"
                    )))
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }
}

/// A request body fed from a channel: the upload streams what the volume read sends.
struct ChannelStream(mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl futures_core::Stream for ChannelStream {
    type Item = Result<Frame<Bytes>, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0
            .poll_recv(cx)
            .map(|item| item.map(|r| r.map(Frame::data)))
    }
}

#[derive(Debug)]
pub struct Glance {
    upstream: Upstream,
}

impl Glance {
    pub fn new(config: &GlanceConfig) -> Result<Glance, String> {
        let upstream = Upstream::new(
            "Glance",
            &config.api_servers,
            "/v2",
            config.timeout,
            &config.tls,
        )?;
        Ok(Glance { upstream })
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        json: Option<&Value>,
    ) -> Result<hyper::Response<Incoming>, GlanceError> {
        self.upstream
            .call(method, path, token, json, None)
            .await
            .map_err(GlanceError::Unavailable)
    }

    async fn read_json(
        &self,
        response: hyper::Response<Incoming>,
        image: &str,
    ) -> Result<Value, GlanceError> {
        let answer = self
            .upstream
            .read(response)
            .await
            .map_err(GlanceError::Unavailable)?;
        check(&answer, image)?;
        Ok(answer.json())
    }

    pub async fn show(&self, token: Option<&str>, image: &str) -> Result<ImageInfo, GlanceError> {
        let path = format!("/v2/images/{}", path_segment(image));
        let response = self.call(Method::GET, &path, token, None).await?;
        let body = self.read_json(response, image).await?;
        ImageInfo::from_json(&body)
            .ok_or_else(|| GlanceError::Unavailable("the image service sent no image".into()))
    }

    /// The ids of the images named `name` the caller can see.
    pub async fn find_by_name(
        &self,
        token: Option<&str>,
        name: &str,
    ) -> Result<Vec<String>, GlanceError> {
        let path = format!("/v2/images?name={}", path_segment(name));
        let response = self.call(Method::GET, &path, token, None).await?;
        let body = self.read_json(response, name).await?;
        Ok(body["images"]
            .as_array()
            .map(|images| {
                images
                    .iter()
                    .filter_map(|i| i["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    pub async fn download(
        &self,
        token: Option<&str>,
        image: &str,
    ) -> Result<Download, GlanceError> {
        let path = format!("/v2/images/{}/file", path_segment(image));
        let response = self.call(Method::GET, &path, token, None).await?;
        let status = response.status();
        if !status.is_success() {
            let answer = self.upstream.read(response).await;
            let answer = answer.map_err(GlanceError::Unavailable)?;
            check(&answer, image)?;
            return Err(GlanceError::Refused(status.as_u16(), String::new()));
        }
        if status == StatusCode::NO_CONTENT {
            return Err(GlanceError::Refused(204, "the image has no data".into()));
        }
        Ok(Download {
            body: response.into_body(),
            timeout: self.upstream.timeout(),
        })
    }

    /// Creates an image record (`queued`, no data yet); returns Glance's answer.
    pub async fn create(
        &self,
        token: Option<&str>,
        fields: &Map<String, Value>,
    ) -> Result<Value, GlanceError> {
        let body = Value::Object(fields.clone());
        let response = self
            .call(Method::POST, "/v2/images", token, Some(&body))
            .await?;
        self.read_json(response, "").await
    }

    /// Sends an image's data, taking each chunk from `data` as it comes; the image becomes
    /// `active` when Glance has it all.
    pub async fn upload(
        &self,
        token: Option<&str>,
        image: &str,
        data: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    ) -> Result<(), GlanceError> {
        let request = Request::builder()
            .method(Method::PUT)
            .header(header::CONTENT_TYPE, "application/octet-stream");
        let path = format!("/v2/images/{}/file", path_segment(image));
        let body = StreamBody::new(ChannelStream(data)).boxed();
        let response = self
            .upstream
            .send_stream(request, &path, token, body)
            .await
            .map_err(GlanceError::Unavailable)?;
        self.read_json(response, image).await.map(|_| ())
    }

    pub async fn delete(&self, token: Option<&str>, image: &str) -> Result<(), GlanceError> {
        let path = format!("/v2/images/{}", path_segment(image));
        let response = self.call(Method::DELETE, &path, token, None).await?;
        match self.read_json(response, image).await {
            Ok(_) | Err(GlanceError::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Glance's status as our error: 404 is "not found", other failures keep Glance's text.
fn check(answer: &Answer, image: &str) -> Result<(), GlanceError> {
    match answer.failure() {
        None => Ok(()),
        Some(Failure::NotFound) => Err(GlanceError::NotFound(image.to_owned())),
        Some(Failure::Unavailable(why)) => Err(GlanceError::Unavailable(why)),
        Some(Failure::Refused(status, said)) => Err(GlanceError::Refused(status, said)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn custom_properties_are_the_keys_outside_the_base_schema() {
        let image = json!({
            "id": "i1", "name": "cirros", "status": "active", "size": 5, "min_disk": 1,
            "disk_format": "qcow2", "hw_disk_bus": "scsi", "os_distro": "cirros",
            "self": "/v2/images/i1", "tags": [], "kernel_id": null, "hw_rng": true
        });
        let info = ImageInfo::from_json(&image).unwrap();
        assert_eq!(info.size, Some(5));
        assert_eq!(info.min_disk, 1);
        let keys: Vec<_> = info.properties.keys().map(String::as_str).collect();
        assert_eq!(keys, ["hw_disk_bus", "hw_rng", "os_distro"]);
        assert_eq!(info.properties["hw_rng"], "true");
    }

    #[test]
    fn locations_are_the_direct_url_then_the_listed_ones() {
        let image = json!({
            "id": "i1", "status": "active",
            "direct_url": "rbd://fsid/images/i1/snap",
            "locations": [{"url": "rbd://fsid/images/i1/snap", "metadata": {}},
                          {"url": "file:///var/lib/glance/i1", "metadata": {}}]
        });
        let info = ImageInfo::from_json(&image).unwrap();
        assert_eq!(
            info.locations,
            ["rbd://fsid/images/i1/snap", "file:///var/lib/glance/i1"]
        );
        assert!(info.properties.is_empty());
    }

    #[test]
    fn statuses_map_to_errors() {
        let answer = |status, body: &'static [u8]| Answer {
            status,
            body: Bytes::from_static(body),
        };
        assert_eq!(
            check(&answer(StatusCode::NOT_FOUND, b""), "x"),
            Err(GlanceError::NotFound("x".into()))
        );
        assert!(matches!(
            check(&answer(StatusCode::FORBIDDEN, b"no"), "x"),
            Err(GlanceError::Refused(403, _))
        ));
        assert!(matches!(
            check(&answer(StatusCode::BAD_GATEWAY, b""), "x"),
            Err(GlanceError::Unavailable(_))
        ));
    }
}
