//! A PostgreSQL URL naming several servers, as libpq takes it:
//! `postgres://user:pw@h1:5432,h2,[::1]:5433/db?target_session_attrs=read-write`. The
//! servers are tried in turn and only a primary is kept (every store writes), so a
//! replicated cluster needs no router in front of it. sqlx reads one host per URL: each
//! host gets a URL of its own, with the libpq options sqlx does not know taken out.

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;

/// Where the store's connections may go, in the order to try them.
#[derive(Debug, Clone)]
pub(super) struct PgHosts {
    pub servers: Vec<PgConnectOptions>,
    /// libpq's `connect_timeout`: how long one server may take to answer.
    pub connect_timeout: Option<Duration>,
}

pub(super) fn parse(url: &str) -> Result<PgHosts, sqlx::Error> {
    let bad = |why: String| sqlx::Error::Configuration(why.into());
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("a PostgreSQL URL starts with postgres://".to_owned()))?;
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.find('/') {
        Some(at) => before_query.split_at(at),
        None => (before_query, ""),
    };
    let (userinfo, host_list) = match authority.rsplit_once('@') {
        Some((user, hosts)) => (Some(user), hosts),
        None => (None, authority),
    };

    let mut kept = Vec::new();
    let mut connect_timeout = None;
    for pair in query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            // Every connection must reach the primary; a standby is never wanted.
            "target_session_attrs" => match value {
                "any" | "read-write" | "primary" => {}
                other => {
                    return Err(bad(format!(
                        "target_session_attrs={other}: cinder-attach writes, so it needs \
                         read-write (or primary, or any; a standby is always passed over)"
                    )))
                }
            },
            "connect_timeout" => {
                let seconds: u64 = value.parse().map_err(|_| {
                    bad(format!(
                        "connect_timeout={value:?} is not a number of seconds"
                    ))
                })?;
                // As libpq: 0 waits for ever, and less than 2 seconds means 2.
                connect_timeout = (seconds > 0).then(|| Duration::from_secs(seconds.max(2)));
            }
            "host" | "hostaddr" | "port" if value.contains(',') || value.contains("%2C") => {
                return Err(bad(format!(
                    "{key}={value}: name several servers in the URL itself \
                     (postgres://user@h1:5432,h2:5432/db)"
                )))
            }
            _ => kept.push(pair),
        }
    }
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    let servers = split_hosts(host_list)
        .map_err(bad)?
        .into_iter()
        .map(|host| {
            let user = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
            let options =
                format!("{scheme}://{user}{host}{path}{query}").parse::<PgConnectOptions>()?;
            // sqlx keeps an IPv6 address's brackets, which no resolver takes.
            Ok::<_, sqlx::Error>(match options.get_host().strip_prefix('[') {
                Some(bracketed) => {
                    let address = bracketed.trim_end_matches(']').to_owned();
                    options.host(&address)
                }
                None => options,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PgHosts {
        servers,
        connect_timeout,
    })
}

/// `h1:5432,[::1]:5433,h3` into its hosts; commas inside brackets belong to no list.
fn split_hosts(list: &str) -> Result<Vec<&str>, String> {
    let mut hosts = Vec::new();
    let (mut start, mut depth) = (0, 0);
    for (at, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                hosts.push(&list[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    hosts.push(&list[start..]);
    if hosts.len() > 1 && hosts.iter().any(|h| h.is_empty()) {
        return Err(format!("the host list {list:?} has an empty entry"));
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(url: &str) -> Vec<(String, u16)> {
        parse(url)
            .expect(url)
            .servers
            .iter()
            .map(|o| (o.get_host().to_owned(), o.get_port()))
            .collect()
    }

    #[test]
    fn one_host_is_one_server() {
        assert_eq!(
            hosts("postgres://u:p@db.example:6432/cinder?sslmode=disable"),
            [("db.example".to_owned(), 6432)]
        );
    }

    #[test]
    fn every_listed_host_is_a_server_with_the_same_credentials_and_database() {
        let parsed =
            parse("postgresql://app:s3cret@h1:5432,h2,[::1]:5433/cinder?target_session_attrs=read-write&application_name=x")
                .expect("parses");
        let names: Vec<_> = parsed
            .servers
            .iter()
            .map(|o| {
                (
                    o.get_host().to_owned(),
                    o.get_port(),
                    o.get_username().to_owned(),
                    o.get_database().map(str::to_owned),
                    o.get_application_name().map(str::to_owned),
                )
            })
            .collect();
        let server = |host: &str, port| {
            (
                host.to_owned(),
                port,
                "app".to_owned(),
                Some("cinder".to_owned()),
                Some("x".to_owned()),
            )
        };
        assert_eq!(
            names,
            [server("h1", 5432), server("h2", 5432), server("::1", 5433)]
        );
        assert_eq!(parsed.connect_timeout, None);
    }

    #[test]
    fn libpq_options_sqlx_lacks_are_read_here() {
        let parsed = parse("postgres://u@h1,h2/db?connect_timeout=1&target_session_attrs=primary")
            .expect("parses");
        assert_eq!(parsed.connect_timeout, Some(Duration::from_secs(2)));
        assert_eq!(parsed.servers.len(), 2);
    }

    #[test]
    fn what_cannot_serve_a_writer_is_refused_naming_why() {
        for (url, says) in [
            (
                "postgres://u@h1,h2/db?target_session_attrs=standby",
                "target_session_attrs=standby",
            ),
            (
                "postgres://u@h1,h2/db?target_session_attrs=read-only",
                "needs read-write",
            ),
            ("postgres://u@h1,,h2/db", "empty entry"),
            ("postgres://u@/db?host=h1,h2", "in the URL itself"),
            ("postgres://u@h1/db?connect_timeout=soon", "not a number"),
        ] {
            let err = parse(url).expect_err(url).to_string();
            assert!(err.contains(says), "{url}: {err}");
        }
    }
}
