//! The message bus's address as operators write it, made the AMQP URL the relay dials.
//! - `rabbit://user:pass@host:port/vhost`, oslo.messaging's transport URL (Cinder's
//!   `transport_url`): its first host of several, its virtual host;
//! - `amqp://` and `amqps://` as they are, except that an empty virtual host (`.../`, a
//!   trailing slash) means RabbitMQ's default `/`, as oslo, pika and kombu read it. To
//!   the AMQP URI rules it would be the virtual host `""`, which no broker has: the relay
//!   would be refused at every attempt while events pile up.

/// The AMQP URL for `url`, or why it cannot be one.
pub fn bus_url(url: &str) -> Result<String, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("'{url}' is not a URL (amqp://, amqps:// or rabbit://)"))?;
    let scheme = match scheme {
        "rabbit" => "amqp",
        "amqp" | "amqps" => scheme,
        other => {
            return Err(format!(
                "'{other}://' is not a message bus this service speaks \
                 (amqp://, amqps:// or rabbit://; only RabbitMQ is supported)"
            ))
        }
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (vhost, query) = match path.split_once('?') {
        Some((vhost, query)) => (vhost, Some(query)),
        None => (path, None),
    };
    // oslo's URL lists hosts with commas, each with its own credentials or the first
    // one's; the relay dials the first.
    let entry = authority.split(',').next().unwrap_or_default();
    let (credentials, first) = match entry.rsplit_once('@') {
        Some((credentials, host)) => (Some(credentials), host),
        None => (None, entry),
    };
    if first.is_empty() {
        return Err(format!("'{url}' names no host"));
    }
    let vhost = if vhost.is_empty() { "%2f" } else { vhost };
    let mut out = format!("{scheme}://");
    if let Some(credentials) = credentials {
        out.push_str(credentials);
        out.push('@');
    }
    out.push_str(first);
    out.push('/');
    out.push_str(vhost);
    // oslo's own query options (`ssl=1`, ...) mean nothing to an AMQP URL.
    if let Some(query) = query.filter(|_| !url.starts_with("rabbit://")) {
        out.push('?');
        out.push_str(query);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::bus_url;

    #[test]
    fn an_empty_virtual_host_is_the_default_one() {
        for url in ["amqp://guest:guest@h:5672/", "amqp://guest:guest@h:5672"] {
            assert_eq!(
                bus_url(url).unwrap(),
                "amqp://guest:guest@h:5672/%2f",
                "{url}"
            );
        }
        assert_eq!(
            bus_url("amqp://u:p@h:5672/cinder").unwrap(),
            "amqp://u:p@h:5672/cinder"
        );
        assert_eq!(
            bus_url("amqps://u:p@h:5671/?heartbeat=10").unwrap(),
            "amqps://u:p@h:5671/%2f?heartbeat=10"
        );
    }

    #[test]
    fn oslo_transport_urls_are_read_as_oslo_reads_them() {
        assert_eq!(
            bus_url("rabbit://u:p@h1:5672,u:p@h2:5672/").unwrap(),
            "amqp://u:p@h1:5672/%2f"
        );
        assert_eq!(
            bus_url("rabbit://u:p@h1:5672,h2:5672/").unwrap(),
            "amqp://u:p@h1:5672/%2f"
        );
        assert_eq!(
            bus_url("rabbit://u:p@h1:5672/openstack?ssl=0").unwrap(),
            "amqp://u:p@h1:5672/openstack"
        );
    }

    #[test]
    fn other_addresses_are_refused_with_the_reason() {
        assert!(bus_url("kafka://h:9092")
            .unwrap_err()
            .contains("only RabbitMQ"));
        assert!(bus_url("h:5672").unwrap_err().contains("not a URL"));
        assert!(bus_url("amqp:///vhost")
            .unwrap_err()
            .contains("names no host"));
    }
}
