//! The message bus's address as operators write it, made the AMQP URLs the relay dials.
//! - `rabbit://user:pass@host:port,user:pass@host2:port/vhost`, oslo.messaging's
//!   transport URL (Cinder's `transport_url`): every host, in order, each with its own
//!   credentials or else the first host's, and the virtual host;
//! - `amqp://` and `amqps://` as they are, except that an empty virtual host (`.../`, a
//!   trailing slash) means RabbitMQ's default `/`, as oslo, pika and kombu read it. To
//!   the AMQP URI rules it would be the virtual host `""`, which no broker has: the relay
//!   would be refused at every attempt while events pile up.
//!
//! Several URLs are kept in one string, separated by spaces (which no URL holds
//! unescaped); `bus_hosts` splits it again.

/// Whether oslo's query options ask for TLS (`ssl=1`, `ssl=true`).
fn asks_tls(query: &str) -> bool {
    query.split('&').any(|option| {
        matches!(
            option.split_once('='),
            Some(("ssl", value)) if matches!(value.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
        )
    })
}

/// The AMQP URLs for `url`, space-separated, or why it cannot be one.
pub fn bus_url(url: &str) -> Result<String, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("'{url}' is not a URL (amqp://, amqps:// or rabbit://)"))?;
    let oslo = scheme == "rabbit";
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
    let vhost = if vhost.is_empty() { "%2f" } else { vhost };
    // oslo's `?ssl=1` puts every host behind TLS (on 5671 where no port is given).
    let scheme = if oslo && query.is_some_and(asks_tls) {
        "amqps"
    } else {
        scheme
    };
    // oslo's own query options mean nothing to an AMQP URL.
    let query = query.filter(|_| !oslo);
    // Only oslo's URL lists hosts with commas; in an AMQP URL a comma is just a character.
    let entries: Vec<&str> = if oslo {
        authority.split(',').collect()
    } else {
        vec![authority]
    };
    let mut first_credentials = None;
    let mut urls = Vec::with_capacity(entries.len());
    for entry in entries {
        let (credentials, host) = match entry.rsplit_once('@') {
            Some((credentials, host)) => (Some(credentials), host),
            None => (None, entry),
        };
        if host.is_empty() {
            return Err(format!("'{url}' names no host"));
        }
        let credentials = credentials.or(first_credentials);
        first_credentials = first_credentials.or(credentials);
        let mut out = format!("{scheme}://");
        if let Some(credentials) = credentials {
            out.push_str(credentials);
            out.push('@');
        }
        out.push_str(host);
        if scheme == "amqps" && oslo && !has_port(host) {
            out.push_str(":5671");
        }
        out.push('/');
        out.push_str(vhost);
        if let Some(query) = query {
            out.push('?');
            out.push_str(query);
        }
        urls.push(out);
    }
    Ok(urls.join(" "))
}

/// Whether `host` (`name`, `name:port`, `[v6]`, `[v6]:port`) gives a port.
fn has_port(host: &str) -> bool {
    let after_address = host.rsplit_once(']').map_or(host, |(_, rest)| rest);
    after_address.contains(':')
}

/// The same URLs with TLS to every host (oslo's `[oslo_messaging_rabbit] ssl = true`):
/// `amqp://` becomes `amqps://`, its ports as they were.
pub fn with_tls(urls: &str) -> String {
    bus_hosts(urls)
        .map(|url| match url.strip_prefix("amqp://") {
            Some(rest) => format!("amqps://{rest}"),
            None => url.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The URLs `bus_url` made, in the order to try them.
pub fn bus_hosts(urls: &str) -> impl Iterator<Item = &str> {
    urls.split_whitespace()
}

#[cfg(test)]
mod tests {
    use super::{bus_hosts, bus_url};

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
            bus_url("amqp://u:p@h:5672/?heartbeat=10").unwrap(),
            "amqp://u:p@h:5672/%2f?heartbeat=10"
        );
    }

    #[test]
    fn oslo_transport_urls_are_read_as_oslo_reads_them() {
        assert_eq!(
            bus_url("rabbit://u:p@h1:5672,v:q@h2:5672/").unwrap(),
            "amqp://u:p@h1:5672/%2f amqp://v:q@h2:5672/%2f"
        );
        let both = bus_url("rabbit://u:p@h1:5672,h2:5672/nova").unwrap();
        assert_eq!(
            bus_hosts(&both).collect::<Vec<_>>(),
            ["amqp://u:p@h1:5672/nova", "amqp://u:p@h2:5672/nova"]
        );
        assert!(bus_url("rabbit://u:p@h1:5672,/")
            .unwrap_err()
            .contains("names no host"));
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
        assert_eq!(
            bus_url("amqps://u:p@h:5671/").unwrap(),
            "amqps://u:p@h:5671/%2f"
        );
        assert_eq!(
            bus_url("rabbit://u:p@h1,h2:6000,[::1]/?ssl=1").unwrap(),
            "amqps://u:p@h1:5671/%2f amqps://u:p@h2:6000/%2f amqps://u:p@[::1]:5671/%2f"
        );
        assert_eq!(
            super::with_tls("amqp://u:p@h1:5672/%2f amqps://u:p@h2/%2f"),
            "amqps://u:p@h1:5672/%2f amqps://u:p@h2/%2f"
        );
        assert!(bus_url("rabbit://u:p@h:5672/?ssl=0").is_ok());
        assert!(bus_url("amqp:///vhost")
            .unwrap_err()
            .contains("names no host"));
    }
}
