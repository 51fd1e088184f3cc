//! Microversion negotiation through the `OpenStack-API-Version` header (Cinder's rules:
//! first comma-part containing `volume`, `<service> <major>.<minor>` or `latest`).

use std::fmt;

use axum::extract::Request;
use axum::http::header::{HeaderName, HeaderValue, VARY};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, GENERIC_BAD_REQUEST};

pub const API_VERSION_HEADER: HeaderName = HeaderName::from_static("openstack-api-version");

/// A negotiated `3.N` microversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion {
    pub major: u32,
    pub minor: u32,
}

impl ApiVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }
    pub const MIN: ApiVersion = ApiVersion::new(3, 0);
    pub const MAX: ApiVersion = ApiVersion::new(3, 71);

    pub fn at_least(self, major: u32, minor: u32) -> bool {
        self >= ApiVersion::new(major, minor)
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Why a header was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionError {
    /// 400: the version string does not look like `MajorNum.MinorNum`.
    Malformed(String),
    /// 400: no comma-part names the volume service.
    NoVolumeService,
    /// 406: a well-formed version outside the supported range.
    Unsupported(ApiVersion),
}

impl VersionError {
    pub fn into_api_error(self) -> ApiError {
        match self {
            VersionError::Malformed(message) => ApiError::BadRequest(message),
            VersionError::NoVolumeService => ApiError::BadRequest(GENERIC_BAD_REQUEST.to_owned()),
            VersionError::Unsupported(version) => ApiError::NotAcceptable(format!(
                "Version {version} is not supported by the API. Minimum is {} and maximum is {}.",
                ApiVersion::MIN,
                ApiVersion::MAX
            )),
        }
    }
}

/// Resolves the header value (absent means 3.0).
pub fn negotiate(header: Option<&str>) -> Result<ApiVersion, VersionError> {
    let Some(header) = header else {
        return Ok(ApiVersion::MIN);
    };
    let part = header
        .split(',')
        .find(|part| part.contains("volume"))
        .ok_or(VersionError::NoVolumeService)?;
    let tokens: Vec<&str> = part.split_whitespace().collect();
    let [_service, version] = tokens[..] else {
        return Err(VersionError::Malformed(format!(
            "Invalid OpenStack-API-Version header {:?}: expected \"volume <major>.<minor>\".",
            part.trim()
        )));
    };
    if version == "latest" {
        return Ok(ApiVersion::MAX);
    }
    let parsed = parse_version(version).ok_or_else(|| {
        VersionError::Malformed(format!(
            "API Version String {version} is of invalid format. Must be of format MajorNum.MinorNum."
        ))
    })?;
    if parsed < ApiVersion::MIN || parsed > ApiVersion::MAX {
        return Err(VersionError::Unsupported(parsed));
    }
    Ok(parsed)
}

/// `^([1-9]\d*)\.([1-9]\d*|0)$`
fn parse_version(text: &str) -> Option<ApiVersion> {
    let (major, minor) = text.split_once('.')?;
    let number = |part: &str, zero_allowed: bool| -> Option<u32> {
        let digits_only = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        let leading_zero = part.starts_with('0') && !(zero_allowed && part == "0");
        if !digits_only || leading_zero {
            return None;
        }
        part.parse().ok()
    };
    Some(ApiVersion::new(number(major, false)?, number(minor, true)?))
}

fn version_header_value(version: ApiVersion) -> HeaderValue {
    HeaderValue::try_from(format!("volume {version}")).expect("digits and a dot are valid")
}

/// Middleware for `/v3`: negotiates the version, stores it for handlers and stamps the
/// answer (success or fault) with `OpenStack-API-Version` and `Vary`.
pub async fn negotiate_layer(mut request: Request, next: Next) -> Response {
    if !super::is_v3_path(request.uri().path()) {
        return next.run(request).await;
    }
    let header = request
        .headers()
        .get(&API_VERSION_HEADER)
        .map(|v| v.to_str());
    let outcome = match header {
        None => negotiate(None),
        Some(Ok(text)) => negotiate(Some(text)),
        Some(Err(_)) => Err(VersionError::Malformed(
            "The OpenStack-API-Version header is not valid text.".to_owned(),
        )),
    };
    let (version, mut response) = match outcome {
        Ok(version) => {
            request.extensions_mut().insert(version);
            (version, next.run(request).await)
        }
        Err(VersionError::Unsupported(version)) => (
            version,
            VersionError::Unsupported(version)
                .into_api_error()
                .into_response(),
        ),
        Err(other) => return other.into_api_error().into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(API_VERSION_HEADER, version_header_value(version));
    headers.insert(VARY, HeaderValue::from_static("OpenStack-API-Version"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_headers() {
        let cases = [
            (None, ApiVersion::new(3, 0)),
            (Some("volume 3.27"), ApiVersion::new(3, 27)),
            (Some(" volume 3.27"), ApiVersion::new(3, 27)),
            (Some("volumev3 3.27"), ApiVersion::new(3, 27)),
            (Some("volume 3.0, compute 2.22"), ApiVersion::new(3, 0)),
            (Some("compute 2.22, volume 3.44"), ApiVersion::new(3, 44)),
            (Some("volume latest"), ApiVersion::MAX),
            (Some("volume 3.71"), ApiVersion::new(3, 71)),
        ];
        for (header, expected) in cases {
            assert_eq!(negotiate(header), Ok(expected), "{header:?}");
        }
    }

    #[test]
    fn malformed_versions() {
        for version in [
            "3.x", "3.07", "03.1", "3", "2.0.1", "3.", ".3", "-3.1", "3.1a",
        ] {
            let header = format!("volume {version}");
            match negotiate(Some(&header)) {
                Err(VersionError::Malformed(message)) => assert!(
                    message.starts_with(&format!(
                        "API Version String {version} is of invalid format"
                    )),
                    "{message}"
                ),
                other => panic!("{header}: {other:?}"),
            }
        }
    }

    #[test]
    fn not_exactly_two_tokens_is_a_bad_request() {
        for header in ["volume 3.27 extra", "volume3.27", "volume"] {
            assert!(
                matches!(negotiate(Some(header)), Err(VersionError::Malformed(_))),
                "{header}"
            );
        }
    }

    #[test]
    fn no_volume_part() {
        for header in [
            "compute 2.22, identity 2.3",
            "Volume 3.27",
            "block-storage 3.27",
            "",
        ] {
            assert_eq!(
                negotiate(Some(header)),
                Err(VersionError::NoVolumeService),
                "{header}"
            );
        }
    }

    #[test]
    fn out_of_range() {
        for (header, version) in [
            ("volume 3.72", ApiVersion::new(3, 72)),
            ("volume 4.0", ApiVersion::new(4, 0)),
            ("volume 2.0", ApiVersion::new(2, 0)),
        ] {
            assert_eq!(
                negotiate(Some(header)),
                Err(VersionError::Unsupported(version))
            );
        }
        let message = VersionError::Unsupported(ApiVersion::new(3, 72))
            .into_api_error()
            .to_string();
        assert_eq!(
            message,
            "Version 3.72 is not supported by the API. Minimum is 3.0 and maximum is 3.71."
        );
    }
}
