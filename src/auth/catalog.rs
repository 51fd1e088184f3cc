//! Finding a service in Keystone's catalog, as Cinder finds Glance when
//! `[glance] api_servers` is unset: `glance_catalog_info` (`type:name:endpoint_type`, by
//! default `image:glance:publicURL`) and `[glance] region_name`.

use serde_json::Value;

/// What to look for: the service's type and name (an empty name matches any), the
/// interface (`public`, `internal`, `admin`), and the region (`None`: any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub service_type: String,
    pub service_name: String,
    pub interface: String,
    pub region: Option<String>,
}

impl CatalogEntry {
    /// Cinder's `type:name:endpoint_type` (`publicURL`, `internalURL`, `adminURL`, or
    /// the v3 names).
    pub fn parse(info: &str, region: Option<String>) -> Result<CatalogEntry, String> {
        let parts: Vec<&str> = info.split(':').collect();
        let [service_type, service_name, endpoint_type] = parts[..] else {
            return Err(format!(
                "'{info}' is not service_type:service_name:endpoint_type"
            ));
        };
        let interface = endpoint_type.trim_end_matches("URL");
        if !matches!(interface, "public" | "internal" | "admin") {
            return Err(format!(
                "the endpoint type {endpoint_type} is not publicURL, internalURL or adminURL"
            ));
        }
        Ok(CatalogEntry {
            service_type: service_type.to_owned(),
            service_name: service_name.to_owned(),
            interface: interface.to_owned(),
            region: region.filter(|r| !r.is_empty()),
        })
    }

    /// The URL of the first endpoint in a token body's catalog that matches.
    pub fn find_in(&self, token_body: &Value) -> Option<String> {
        let catalog = token_body["token"]["catalog"].as_array()?;
        catalog
            .iter()
            .filter(|s| s["type"] == self.service_type.as_str())
            .filter(|s| self.service_name.is_empty() || s["name"] == self.service_name.as_str())
            .flat_map(|s| s["endpoints"].as_array().into_iter().flatten())
            .filter(|e| e["interface"] == self.interface.as_str())
            .find(|e| match &self.region {
                Some(region) => e["region_id"] == region.as_str() || e["region"] == region.as_str(),
                None => true,
            })
            .and_then(|e| e["url"].as_str().map(str::to_owned))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body() -> Value {
        json!({"token": {"catalog": [
            {"type": "volumev3", "name": "cinderv3", "endpoints": [
                {"interface": "public", "region_id": "r1", "url": "http://cinder"}]},
            {"type": "image", "name": "glance", "endpoints": [
                {"interface": "internal", "region_id": "r1", "url": "http://g-internal"},
                {"interface": "public", "region_id": "r1", "url": "http://g1"},
                {"interface": "public", "region_id": "r2", "url": "http://g2"}]}
        ]}})
    }

    #[test]
    fn cinders_default_finds_the_public_image_endpoint() {
        let entry = CatalogEntry::parse("image:glance:publicURL", None).unwrap();
        assert_eq!(entry.find_in(&body()).as_deref(), Some("http://g1"));
        let r2 = CatalogEntry::parse("image:glance:publicURL", Some("r2".into())).unwrap();
        assert_eq!(r2.find_in(&body()).as_deref(), Some("http://g2"));
        let internal = CatalogEntry::parse("image::internalURL", None).unwrap();
        assert_eq!(
            internal.find_in(&body()).as_deref(),
            Some("http://g-internal")
        );
        let other = CatalogEntry::parse("image:glance:publicURL", Some("r9".into())).unwrap();
        assert_eq!(other.find_in(&body()), None);
    }

    #[test]
    fn malformed_info_is_refused() {
        assert!(CatalogEntry::parse("image:glance", None).is_err());
        assert!(CatalogEntry::parse("image:glance:nearURL", None).is_err());
    }
}
