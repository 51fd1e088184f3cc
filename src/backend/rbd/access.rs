//! Per-attachment credentials: each host with a live, connected attachment of a volume
//! has a cephx identity of its own whose caps reach only that volume's image (and, read
//! only, the images it is a clone of), read-write or read-only by the attachment's mode.
//! An identity that no attachment backs any more is fenced: its live clients' addresses
//! are blocklisted on the OSDs, then it is removed, so a detached host's next write
//! fails even with the image open. Caps name the image's RADOS objects by prefix, so the
//! image keeps Cinder's `pool/volume-<id>` name that os-brick and libvirt parse.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::ceph::{CephError, Cluster, Io};
use crate::domain::ids::VolumeId;

/// Identities a backend makes are `client.ca.<backend>.<volume>.<host tag>.<rw|ro>`: its
/// reconciliation touches no other backend's, even in a shared pool (two services that
/// share a pool must name their backends apart).
pub const IDENTITY_PREFIX: &str = "ca.";

/// The identity (without `client.`) of backend `backend` for `host` on `volume`.
pub fn identity(backend: &str, volume: &str, host: &str, read_only: bool) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, host.as_bytes());
    let tag: String = digest.as_ref()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mode = if read_only { "ro" } else { "rw" };
    format!("{IDENTITY_PREFIX}{backend}.{volume}.{tag}.{mode}")
}

/// What every identity of backend `backend` on `volume` starts with.
pub fn volume_prefix(backend: &str, volume: &str) -> String {
    format!("{IDENTITY_PREFIX}{backend}.{volume}.")
}

/// The identities in `set` that start with `prefix` (a sorted set: a range, not a scan).
pub fn with_prefix<'a>(
    set: &'a std::collections::BTreeSet<String>,
    prefix: &'a str,
) -> impl Iterator<Item = &'a String> + 'a {
    set.range(prefix.to_owned()..)
        .take_while(move |id| id.starts_with(prefix))
}

/// The volume an identity of backend `backend` is for, from its name.
pub fn volume_of(backend: &str, identity: &str) -> Option<String> {
    let rest = identity.strip_prefix(&format!("{IDENTITY_PREFIX}{backend}."))?;
    let (volume, _) = rest.split_once('.')?;
    (volume.len() == 36).then(|| volume.to_owned())
}

/// An image as caps name it: its pool, name and id (`rbd_id.<name>`, `rbd_header.<id>`,
/// `rbd_data.<id>.*`, `rbd_object_map.<id>*`). An ancestor may live in another pool (a
/// clone of an image Glance keeps in its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageObjects {
    pub pool: String,
    pub name: String,
    pub id: String,
}

/// The OSD caps of an identity for `image` (read-write unless `read_only`) whose clone
/// chain is `ancestors` (read only).
pub fn osd_caps(
    pool: &str,
    image: &ImageObjects,
    ancestors: &[ImageObjects],
    read_only: bool,
) -> String {
    let own = if read_only { "r class-read" } else { "rwx" };
    let mut grants = vec![
        format!(
            "allow r class-read pool={pool} object_prefix rbd_id.{}",
            image.name
        ),
        format!(
            "allow {own} pool={pool} object_prefix rbd_header.{}",
            image.id
        ),
        format!(
            "allow {own} pool={pool} object_prefix rbd_data.{}.",
            image.id
        ),
        format!(
            "allow {own} pool={pool} object_prefix rbd_object_map.{}",
            image.id
        ),
    ];
    for ancestor in ancestors {
        let at = &ancestor.pool;
        grants.push(format!(
            "allow r class-read pool={at} object_prefix rbd_id.{}",
            ancestor.name
        ));
        for object in ["rbd_header.", "rbd_object_map."] {
            grants.push(format!(
                "allow r class-read pool={at} object_prefix {object}{}",
                ancestor.id
            ));
        }
        grants.push(format!(
            "allow r class-read pool={at} object_prefix rbd_data.{}.",
            ancestor.id
        ));
    }
    // The pools' own objects, read through their class methods only: a pool's
    // metadata, and the directory a clone's parent is named from (it lists image names,
    // never their data).
    let mut pools = vec![pool];
    for ancestor in ancestors {
        if !pools.contains(&ancestor.pool.as_str()) {
            pools.push(&ancestor.pool);
        }
    }
    for at in pools {
        let mut shared = vec!["rbd_info", "rbd_children", "rbd_mirroring"];
        if !ancestors.is_empty() {
            shared.push("rbd_directory");
        }
        for object in shared {
            grants.push(format!("allow class-read pool={at} object_prefix {object}"));
        }
    }
    grants.join(", ")
}

/// Hosts may read the maps and nothing more of the mons: `profile rbd` would let a key
/// blocklist any address.
pub const MON_CAPS: &str = "allow r";

/// The image's objects (in `pool`, which `io` is on) and those of the images it is a
/// clone of, nearest first, in whichever pool each is.
pub fn image_chain(
    io: &Io<'_>,
    pool: &str,
    name: &str,
) -> Result<(ImageObjects, Vec<ImageObjects>), CephError> {
    let image = io.open(name, None, true)?;
    let own = ImageObjects {
        pool: pool.to_owned(),
        name: name.to_owned(),
        id: image.id()?,
    };
    let mut ancestors = Vec::new();
    let mut parent = image.parent()?;
    while let Some(p) = parent {
        let opened = io.sibling(&p.pool)?.open(&p.image, None, true)?;
        ancestors.push(ImageObjects {
            pool: p.pool.clone(),
            name: p.image.clone(),
            id: opened.id()?,
        });
        parent = opened.parent()?;
    }
    Ok((own, ancestors))
}

/// An image's objects and those of the images it is a clone of, nearest first.
pub(super) type Chain = (ImageObjects, Vec<ImageObjects>);

pub(super) type ChainCache = Arc<std::sync::Mutex<std::collections::HashMap<VolumeId, Arc<Chain>>>>;

/// The objects of `volume`'s image and of the images it is a clone of: read once (an
/// image's id never changes, nor, after it is made, what it is a clone of).
pub(super) fn chain_of(
    chains: &ChainCache,
    io: &Io<'_>,
    pool: &str,
    volume: VolumeId,
) -> Result<Arc<Chain>, CephError> {
    if let Some(known) = chains.lock().ok().and_then(|c| c.get(&volume).cloned()) {
        return Ok(known);
    }
    let chain = Arc::new(image_chain(io, pool, &super::names::image_name(volume))?);
    if let Ok(mut known) = chains.lock() {
        known.insert(volume, chain.clone());
    }
    Ok(chain)
}

/// Gives `identity` exactly these caps, creating it when missing; its keyring (as a
/// keyring file holds it, which os-brick's RBD connector takes as `keyring`).
pub fn ensure(cluster: &Cluster, identity: &str, osd_caps: &str) -> Result<String, CephError> {
    let entity = format!("client.{identity}");
    let created = cluster.mon_command(
        &json!({"prefix": "auth get-or-create", "entity": entity,
                "caps": ["mon", MON_CAPS, "osd", osd_caps], "format": "json"}),
        None,
    );
    let key = match created {
        Ok((out, _)) => key_of(&out),
        // It exists with other caps (the image was flattened since, say): set them.
        Err(e) if e.errno == super::ceph::EINVAL_ERRNO => {
            cluster.mon_command(
                &json!({"prefix": "auth caps", "entity": entity,
                        "caps": ["mon", MON_CAPS, "osd", osd_caps]}),
                None,
            )?;
            let (out, _) = cluster.mon_command(
                &json!({"prefix": "auth get", "entity": entity, "format": "json"}),
                None,
            )?;
            key_of(&out)
        }
        Err(e) => return Err(e),
    };
    let key = key.ok_or_else(|| CephError {
        errno: 5,
        what: format!("no key in the answer for {entity}"),
        status: String::new(),
    })?;
    Ok(keyring(identity, &key))
}

/// Puts `identity` back with the key of `keyring` (what its host was given).
pub fn restore(
    cluster: &Cluster,
    identity: &str,
    keyring_text: &str,
    osd_caps: &str,
) -> Result<(), CephError> {
    let Some(key) = keyring_key(keyring_text) else {
        return ensure(cluster, identity, osd_caps).map(drop);
    };
    let full = format!(
        "[client.{identity}]\n\tkey = {key}\n\tcaps mon = \"{MON_CAPS}\"\n\tcaps osd = \"{osd_caps}\"\n"
    );
    cluster
        .mon_command_with(&json!({"prefix": "auth import"}), None, full.as_bytes())
        .map(drop)
}

/// A keyring file's text for one identity.
pub fn keyring(identity: &str, key: &str) -> String {
    format!("[client.{identity}]\n\tkey = {key}\n")
}

fn key_of(out: &[u8]) -> Option<String> {
    let parsed: Value = serde_json::from_slice(out).ok()?;
    let entry = parsed.as_array().and_then(|a| a.first()).unwrap_or(&parsed);
    entry["key"].as_str().map(str::to_owned)
}

fn keyring_key(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (name, value) = line.trim().split_once('=')?;
        (name.trim() == "key").then(|| value.trim().to_owned())
    })
}

/// Backend `backend`'s identities as the cluster holds them, with their OSD caps.
pub fn identities(cluster: &Cluster, backend: &str) -> Result<BTreeMap<String, String>, CephError> {
    let (out, _) = cluster.mon_command(&json!({"prefix": "auth ls", "format": "json"}), None)?;
    let parsed: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
    let prefix = format!("client.{IDENTITY_PREFIX}{backend}.");
    Ok(parsed["auth_dump"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let entity = entry["entity"].as_str()?;
            entity.starts_with(&prefix).then(|| {
                let caps = entry["caps"]["osd"].as_str().unwrap_or_default().to_owned();
                (entity["client.".len()..].to_owned(), caps)
            })
        })
        .collect())
}

/// Cuts `identity` off: removes it (so its clients cannot authenticate again), then
/// blocklists the address of every client session it has on any monitor (so what is
/// open stops working within a map update). The addresses blocklisted.
pub fn fence(
    cluster: &Cluster,
    monitors: &[String],
    identity: &str,
    seconds: u32,
) -> Result<Vec<String>, CephError> {
    let entity = format!("client.{identity}");
    let addresses = session_addresses(cluster, monitors, &entity)?;
    match cluster.mon_command(&json!({"prefix": "auth rm", "entity": entity}), None) {
        Err(e) if e.errno != super::ceph::ENOENT => return Err(e),
        _ => {}
    }
    for address in &addresses {
        cluster.blocklist(address, seconds)?;
    }
    Ok(addresses)
}

/// The addresses (`ip:port/nonce`) of the sessions `entity` has with the monitors
/// named `monitors`.
fn session_addresses(
    cluster: &Cluster,
    monitors: &[String],
    entity: &str,
) -> Result<Vec<String>, CephError> {
    let mut addresses = Vec::new();
    for name in monitors {
        let sessions = cluster.mon_command(
            &json!({"prefix": "sessions", "format": "json"}),
            Some(name.as_str()),
        );
        // A monitor that is down holds no sessions.
        let Ok((out, _)) = sessions else {
            continue;
        };
        let sessions: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
        for session in sessions.as_array().into_iter().flatten() {
            if session["entity_name"] != entity {
                continue;
            }
            for addr in session["addrs"]["addrvec"].as_array().into_iter().flatten() {
                if let (Some(ip), Some(nonce)) = (addr["addr"].as_str(), addr["nonce"].as_u64()) {
                    let address = format!("{ip}/{nonce}");
                    if !addresses.contains(&address) {
                        addresses.push(address);
                    }
                }
            }
        }
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_name_their_volume_host_and_mode() {
        let volume = "504b7ba5-a561-41dd-b183-b5a9e8770061";
        let rw = identity("volumes", volume, "compute-1", false);
        let ro = identity("volumes", volume, "compute-1", true);
        assert!(
            rw.starts_with("ca.volumes.504b7ba5-a561-41dd-b183-b5a9e8770061."),
            "{rw}"
        );
        assert!(rw.ends_with(".rw") && ro.ends_with(".ro"));
        assert_ne!(rw, identity("volumes", volume, "compute-2", false));
        assert_eq!(volume_of("volumes", &rw).as_deref(), Some(volume));
        assert_eq!(volume_of("other", &rw), None);
        assert_eq!(volume_of("volumes", "ca.volumes.short.x.rw"), None);
    }

    #[test]
    fn caps_reach_the_image_and_read_its_ancestors() {
        let objects = |pool: &str, name: &str, id: &str| ImageObjects {
            pool: pool.into(),
            name: name.into(),
            id: id.into(),
        };
        let image = objects("volumes", "volume-a", "1234");
        let parent = objects("volumes", "volume-p", "99");
        let glance = objects("images", "5d0e8c29", "77");
        let rw = osd_caps("volumes", &image, &[parent, glance], false);
        assert!(rw.contains("allow rwx pool=volumes object_prefix rbd_data.1234."));
        assert!(rw.contains("allow r class-read pool=volumes object_prefix rbd_data.99."));
        assert!(!rw.contains("rwx pool=volumes object_prefix rbd_data.99"));
        assert!(rw.contains("allow r class-read pool=images object_prefix rbd_data.77."));
        assert!(rw.contains("allow class-read pool=images object_prefix rbd_directory"));
        assert!(!rw.contains("rwx pool=images"), "{rw}");
        let ro = osd_caps("volumes", &image, &[], true);
        assert!(!ro.contains("rwx"), "{ro}");
        assert!(ro.contains("allow r class-read pool=volumes object_prefix rbd_header.1234"));
    }

    #[test]
    fn a_keyring_gives_back_its_key() {
        let text = keyring("ca.volumes.x", "AQA69Qdr+12+LBAAMzJD3TioT71gdoea42poKA==");
        assert_eq!(
            keyring_key(&text).as_deref(),
            Some("AQA69Qdr+12+LBAAMzJD3TioT71gdoea42poKA==")
        );
        assert_eq!(
            key_of(br#"[{"entity": "client.x", "key": "K"}]"#).as_deref(),
            Some("K")
        );
        assert_eq!(
            key_of(br#"{"entity": "client.x", "key": "K"}"#).as_deref(),
            Some("K")
        );
    }
}
