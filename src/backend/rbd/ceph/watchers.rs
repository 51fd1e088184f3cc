//! Who has an image open: the clients watching its header, and their addresses as
//! Ceph prints them (what a blocklist entry names).

use std::ffi::CStr;

use super::symbols::ImageWatcher;
use super::{CephError, Image, ERANGE};

/// A client watching an image (see `Image::watchers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watcher {
    /// `ip:port/nonce` (what a blocklist entry names).
    pub address: String,
    /// The client's global id (`client.<id>`).
    pub client: i64,
}

/// The addresses of an address vector as Ceph prints one (`[v2:a/n,v1:b/n]`, `v1:a/n`
/// or `a/n`), each without its protocol.
pub fn entity_addresses(text: &str) -> Vec<String> {
    text.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|one| {
            let one = one.trim();
            one.strip_prefix("v1:")
                .or_else(|| one.strip_prefix("v2:"))
                .or_else(|| one.strip_prefix("any:"))
                .unwrap_or(one)
                .to_owned()
        })
        .filter(|one| !one.is_empty())
        .collect()
}

/// The IP of an entity address as Ceph prints one: `[v1:]ip:port/nonce`, an IPv6 ip in
/// brackets.
pub fn address_ip(address: &str) -> &str {
    let address = address
        .strip_prefix("v1:")
        .or_else(|| address.strip_prefix("v2:"))
        .unwrap_or(address);
    let socket = address.split('/').next().unwrap_or(address);
    let host = socket.rsplit_once(':').map_or(socket, |(host, _)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

impl Image {
    /// The clients watching the image's header (every client that has it open for
    /// writing does): each one's address (`ip:port/nonce`) and client id.
    pub fn watchers(&self) -> Result<Vec<Watcher>, CephError> {
        let mut max: usize = 8;
        loop {
            let mut entries: Vec<ImageWatcher> = (0..max)
                .map(|_| ImageWatcher {
                    addr: std::ptr::null_mut(),
                    id: 0,
                    cookie: 0,
                })
                .collect();
            // SAFETY: room for `max` entries; librbd says how many it needs (ERANGE).
            let r = unsafe {
                (self.api.rbd_watchers_list)(self.handle, entries.as_mut_ptr(), &mut max)
            };
            if r == -ERANGE {
                continue;
            }
            self.call(r, "list the watchers of")?;
            let watchers = entries[..max]
                .iter()
                .filter(|w| !w.addr.is_null())
                // SAFETY: librbd filled `max` entries with NUL-terminated addresses.
                .map(|w| Watcher {
                    address: unsafe { CStr::from_ptr(w.addr) }
                        .to_string_lossy()
                        .into_owned(),
                    client: w.id,
                })
                .collect();
            // SAFETY: releases what rbd_watchers_list allocated for these entries.
            unsafe { (self.api.rbd_watchers_list_cleanup)(entries.as_mut_ptr(), max) };
            return Ok(watchers);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_as_ceph_prints_them() {
        assert_eq!(
            entity_addresses("[v2:10.0.0.5:0/77,v1:10.0.0.5:0/77]"),
            vec!["10.0.0.5:0/77", "10.0.0.5:0/77"]
        );
        assert_eq!(
            entity_addresses("v1:127.0.0.2:0/1234"),
            vec!["127.0.0.2:0/1234"]
        );
        assert_eq!(
            entity_addresses("127.0.0.2:0/1234"),
            vec!["127.0.0.2:0/1234"]
        );
        assert_eq!(address_ip("127.0.0.2:0/1234"), "127.0.0.2");
        assert_eq!(address_ip("v1:[fe80::1]:0/9"), "fe80::1");
    }
}
