//! librados and librbd, in the process. The libraries are loaded when the first `rbd`
//! backend connects (Debian's `librados2` and `librbd1`), so a build and a service
//! without an `rbd` backend need no Ceph at all. This module (with `symbols.rs`, the
//! functions it calls) is the only one with `unsafe`:
//! each call passes pointers the C API documents, to buffers that outlive the call, and
//! every handle is closed exactly once by its owner's `Drop`.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};

mod aio_watchers;
mod image_watchers;
mod object_watchers;
mod objects;
mod watchers;
pub use aio_watchers::WatchListing;
pub use image_watchers::{ImageIds, ImageWatchers};
pub use watchers::{address_ip, entity_addresses, Watcher};
mod symbols;

use symbols::{api, Api, Handle, SnapInfo};

/// An error of a librados or librbd call: the negative errno it returned, what was being
/// done, and the cluster's own words when it gave some (a mon command's status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {} ({})", errno_text(*.errno), .status)]
pub struct CephError {
    pub errno: i32,
    pub what: String,
    pub status: String,
}

pub const ENOENT: i32 = 2;
pub const EPERM: i32 = 1;
pub const EIO: i32 = 5;
pub const EBUSY: i32 = 16;
pub const ENOTEMPTY: i32 = 39;
pub const ESHUTDOWN: i32 = 108;
pub const ERANGE: i32 = 34;
pub const EFBIG: i32 = 27;
pub const EPIPE: i32 = 32;
pub const EINVAL_ERRNO: i32 = 22;

fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

fn check(r: c_int, what: impl Into<String>) -> Result<c_int, CephError> {
    if r < 0 {
        Err(CephError {
            errno: -r,
            what: what.into(),
            status: String::new(),
        })
    } else {
        Ok(r)
    }
}

fn c_text(text: &str) -> Result<CString, CephError> {
    CString::new(text).map_err(|_| CephError {
        errno: 22,
        what: format!("{text:?} holds a NUL byte"),
        status: String::new(),
    })
}

/// RBD image features (`RBD_FEATURE_*`).
pub mod features {
    pub const LAYERING: u64 = 1;
    pub const EXCLUSIVE_LOCK: u64 = 4;
    pub const OBJECT_MAP: u64 = 8;
    pub const FAST_DIFF: u64 = 16;
    pub const DEEP_FLATTEN: u64 = 32;
    pub const JOURNALING: u64 = 64;
}

/// How to reach a cluster: its ceph.conf, who to be (`client.<user>`), and where that
/// identity's key is (a keyring file, or the key itself).
#[derive(Clone, Default)]
pub struct ClientConfig {
    pub conf_file: Option<String>,
    pub cluster_name: String,
    pub user: String,
    pub keyring: Option<String>,
    pub key: Option<String>,
    /// Further settings (`rados_conf_set`), e.g. timeouts.
    pub options: Vec<(String, String)>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("conf_file", &self.conf_file)
            .field("cluster_name", &self.cluster_name)
            .field("user", &self.user)
            .field("keyring", &self.keyring)
            .finish_non_exhaustive()
    }
}

/// A connected librados client. librados handles are safe to use from many threads.
pub struct Cluster {
    handle: Handle,
    api: &'static Api,
}

// SAFETY: a connected `rados_t` may be used from any thread (librados locks inside).
unsafe impl Send for Cluster {}
// SAFETY: as above.
unsafe impl Sync for Cluster {}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SAFETY: the handle came from rados_create2 and is shut down once, here.
        unsafe { (self.api.rados_shutdown)(self.handle) }
    }
}

impl Cluster {
    /// Connects (blocking: call it off the async threads).
    pub fn connect(config: &ClientConfig) -> Result<Cluster, CephError> {
        let api = api()?;
        let cluster_name = c_text(if config.cluster_name.is_empty() {
            "ceph"
        } else {
            &config.cluster_name
        })?;
        let name = c_text(&format!("client.{}", config.user))?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; both strings live across the call.
        let created =
            unsafe { (api.rados_create2)(&mut handle, cluster_name.as_ptr(), name.as_ptr(), 0) };
        check(created, "cannot create a Ceph client")?;
        let cluster = Cluster { handle, api };
        if let Some(conf) = &config.conf_file {
            let path = c_text(conf)?;
            // SAFETY: a created handle and a string that lives across the call.
            let read = unsafe { (api.rados_conf_read_file)(handle, path.as_ptr()) };
            check(read, format!("cannot read {conf}"))?;
        }
        let mut options = config.options.clone();
        if let Some(keyring) = &config.keyring {
            options.push(("keyring".into(), keyring.clone()));
        }
        if let Some(key) = &config.key {
            options.push(("key".into(), key.clone()));
        }
        for (option, value) in &options {
            cluster.set(option, value)?;
        }
        // SAFETY: a created, configured handle.
        let connected = unsafe { (api.rados_connect)(handle) };
        check(
            connected,
            format!("cannot connect to Ceph as client.{}", config.user),
        )?;
        Ok(cluster)
    }

    fn set(&self, option: &str, value: &str) -> Result<(), CephError> {
        let (o, v) = (c_text(option)?, c_text(value)?);
        // SAFETY: a created handle and two strings that live across the call.
        let r = unsafe { (self.api.rados_conf_set)(self.handle, o.as_ptr(), v.as_ptr()) };
        check(r, format!("cannot set {option}")).map(drop)
    }

    /// This client's address as the cluster sees it (what a blocklist names).
    pub fn address(&self) -> Result<String, CephError> {
        client_address(self.api, self.handle)
    }

    /// Blocklists a client by its address (`ip:port/nonce`) for `seconds`: the OSDs
    /// refuse its every request from the map that holds the entry on.
    pub fn blocklist(&self, address: &str, seconds: u32) -> Result<(), CephError> {
        self.mon_command(
            &serde_json::json!({"prefix": "osd blocklist", "blocklistop": "add",
                                "addr": address, "expire": f64::from(seconds)}),
            None,
        )
        .map(drop)
    }

    /// A mon command (JSON), answered with its output and status text; `target` sends it
    /// to one mon by name (the commands the mon serves itself, such as `sessions`).
    pub fn mon_command(
        &self,
        command: &serde_json::Value,
        target: Option<&str>,
    ) -> Result<(Vec<u8>, String), CephError> {
        self.mon_command_with(command, target, &[])
    }

    /// `mon_command` with an input buffer (`auth import` reads a keyring from it).
    pub fn mon_command_with(
        &self,
        command: &serde_json::Value,
        target: Option<&str>,
        input: &[u8],
    ) -> Result<(Vec<u8>, String), CephError> {
        let text = c_text(&command.to_string())?;
        let mut commands = [text.as_ptr()];
        let mut out: *mut c_char = std::ptr::null_mut();
        let mut out_len = 0usize;
        let mut status: *mut c_char = std::ptr::null_mut();
        let mut status_len = 0usize;
        let target = target.map(c_text).transpose()?;
        let input_ptr = input.as_ptr().cast::<c_char>();
        // SAFETY: one command string and an input buffer that live across the call, and
        // out-pointers to locals; librados allocates the outputs.
        let r = unsafe {
            match &target {
                Some(target) => (self.api.rados_mon_command_target)(
                    self.handle,
                    target.as_ptr(),
                    commands.as_mut_ptr(),
                    1,
                    input_ptr,
                    input.len(),
                    &mut out,
                    &mut out_len,
                    &mut status,
                    &mut status_len,
                ),
                None => (self.api.rados_mon_command)(
                    self.handle,
                    commands.as_mut_ptr(),
                    1,
                    input_ptr,
                    input.len(),
                    &mut out,
                    &mut out_len,
                    &mut status,
                    &mut status_len,
                ),
            }
        };
        let take = |buffer: *mut c_char, len: usize| -> Vec<u8> {
            if buffer.is_null() {
                return Vec::new();
            }
            // SAFETY: librados gave `len` bytes at `buffer`; freed once, with its own call.
            let bytes = unsafe { std::slice::from_raw_parts(buffer as *const u8, len) }.to_vec();
            // SAFETY: as above.
            unsafe { (self.api.rados_buffer_free)(buffer) };
            bytes
        };
        let output = take(out, out_len);
        let status = String::from_utf8_lossy(&take(status, status_len)).into_owned();
        if r < 0 {
            return Err(CephError {
                errno: -r,
                what: format!("mon command {}", command["prefix"]),
                status,
            });
        }
        Ok((output, status))
    }

    /// An I/O context on `pool` (and a RADOS namespace, when given).
    pub fn io(&self, pool: &str, namespace: Option<&str>) -> Result<Io<'_>, CephError> {
        let io = open_io(self.api, self.handle, pool)?;
        let handle = io.handle;
        if let Some(namespace) = namespace {
            let namespace = c_text(namespace)?;
            // SAFETY: a live ioctx and a string librados copies.
            unsafe { (self.api.rados_ioctx_set_namespace)(handle, namespace.as_ptr()) };
        }
        Ok(io)
    }
}

extern "C" {
    #[link_name = "free"]
    fn libc_free(pointer: *mut c_void);
}

/// The address of the client `handle` as the cluster sees it.
fn client_address(api: &'static Api, handle: Handle) -> Result<String, CephError> {
    let mut addrs: *mut c_char = std::ptr::null_mut();
    // SAFETY: out-pointer to a local; librados allocates the string.
    let r = unsafe { (api.rados_getaddrs)(handle, &mut addrs) };
    check(r, "cannot read the client's address")?;
    // SAFETY: librados returned a NUL-terminated string it allocated with malloc.
    let text = unsafe { CStr::from_ptr(addrs) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: the string was malloc'd by librados and is freed once.
    unsafe { libc_free(addrs.cast()) };
    Ok(text)
}

/// An I/O context on `pool` of the connected cluster `cluster`.
fn open_io<'c>(api: &'static Api, cluster: Handle, pool: &str) -> Result<Io<'c>, CephError> {
    let name = c_text(pool)?;
    let mut handle: Handle = std::ptr::null_mut();
    // SAFETY: a connected cluster, a string and an out-pointer to a local.
    let r = unsafe { (api.rados_ioctx_create)(cluster, name.as_ptr(), &mut handle) };
    check(r, format!("cannot open pool {pool}"))?;
    Ok(Io {
        handle,
        api,
        cluster,
        _cluster: std::marker::PhantomData,
    })
}

/// An I/O context, valid while its cluster is.
pub struct Io<'c> {
    handle: Handle,
    api: &'static Api,
    cluster: Handle,
    _cluster: std::marker::PhantomData<&'c Cluster>,
}

impl Drop for Io<'_> {
    fn drop(&mut self) {
        // SAFETY: the handle came from rados_ioctx_create and is destroyed once, here.
        unsafe { (self.api.rados_ioctx_destroy)(self.handle) }
    }
}

impl<'c> Io<'c> {
    /// Returns once the OSD serving `object` has the cluster's latest map: this client
    /// takes that map, then asks the OSD for the object with it, and an OSD catches up to
    /// a request's map before it serves it. After a blocklist entry, that OSD refuses the
    /// blocklisted clients from then on (others follow at their next map).
    pub fn bring_latest_map_to(&self, object: &str) -> Result<(), CephError> {
        // SAFETY: the connected cluster this context was made from.
        let r = unsafe { (self.api.rados_wait_for_latest_osdmap)(self.cluster) };
        check(r, "cannot read the latest OSD map")?;
        self.object_exists(object).map(drop)
    }

    /// An I/O context on another pool of the same cluster (where a clone's parent is).
    pub fn sibling(&self, pool: &str) -> Result<Io<'c>, CephError> {
        open_io(self.api, self.cluster, pool)
    }

    pub fn create_image(&self, name: &str, size: u64, features: u64) -> Result<(), CephError> {
        self.create_image_of_order(name, size, features, 0)
    }

    /// `create_image` with objects of 2^`order` bytes (0: the cluster's default, 4 MiB).
    pub fn create_image_of_order(
        &self,
        name: &str,
        size: u64,
        features: u64,
        order: c_int,
    ) -> Result<(), CephError> {
        let name_c = c_text(name)?;
        let mut order: c_int = order;
        // SAFETY: a live ioctx, a string and an in/out-pointer to a local.
        let r = unsafe {
            (self.api.rbd_create2)(self.handle, name_c.as_ptr(), size, features, &mut order)
        };
        check(r, format!("cannot create image {name}")).map(drop)
    }

    /// Makes an rbd group (a set of images snapshotted together).
    pub fn create_group(&self, group: &str) -> Result<(), CephError> {
        let group_c = c_text(group)?;
        // SAFETY: a live ioctx and a string.
        let r = unsafe { (self.api.rbd_group_create)(self.handle, group_c.as_ptr()) };
        check(r, format!("cannot create group {group}")).map(drop)
    }

    pub fn remove_group(&self, group: &str) -> Result<(), CephError> {
        let group_c = c_text(group)?;
        // SAFETY: a live ioctx and a string.
        let r = unsafe { (self.api.rbd_group_remove)(self.handle, group_c.as_ptr()) };
        check(r, format!("cannot remove group {group}")).map(drop)
    }

    /// Adds (`true`) or removes an image of this pool to or from `group`.
    pub fn group_image(&self, group: &str, image: &str, add: bool) -> Result<(), CephError> {
        let (group_c, image_c) = (c_text(group)?, c_text(image)?);
        let call = if add {
            self.api.rbd_group_image_add
        } else {
            self.api.rbd_group_image_remove
        };
        // SAFETY: live ioctxs (the same one for group and image) and strings.
        let r = unsafe { call(self.handle, group_c.as_ptr(), self.handle, image_c.as_ptr()) };
        check(r, format!("cannot change the images of group {group}")).map(drop)
    }

    /// Takes (`true`) or removes a snapshot of every image of `group` at one point in
    /// time: librbd holds the images' writes while it is taken.
    pub fn group_snapshot(&self, group: &str, snapshot: &str, take: bool) -> Result<(), CephError> {
        let (group_c, snap_c) = (c_text(group)?, c_text(snapshot)?);
        let call = if take {
            self.api.rbd_group_snap_create
        } else {
            self.api.rbd_group_snap_remove
        };
        // SAFETY: a live ioctx and strings.
        let r = unsafe { call(self.handle, group_c.as_ptr(), snap_c.as_ptr()) };
        check(r, format!("cannot snapshot group {group}")).map(drop)
    }

    pub fn remove_image(&self, name: &str) -> Result<(), CephError> {
        let name_c = c_text(name)?;
        // SAFETY: a live ioctx and a string.
        let r = unsafe { (self.api.rbd_remove)(self.handle, name_c.as_ptr()) };
        check(r, format!("cannot remove image {name}")).map(drop)
    }

    /// Renames image `from` to `to` (in this pool and namespace).
    pub fn rename_image(&self, from: &str, to: &str) -> Result<(), CephError> {
        let (from_c, to_c) = (c_text(from)?, c_text(to)?);
        // SAFETY: a live ioctx and two strings.
        let r = unsafe { (self.api.rbd_rename)(self.handle, from_c.as_ptr(), to_c.as_ptr()) };
        check(r, format!("cannot rename image {from} to {to}")).map(drop)
    }

    /// Every image's name.
    pub fn list_images(&self) -> Result<Vec<String>, CephError> {
        let mut size = 4096usize;
        loop {
            let mut buffer = vec![0u8; size];
            // SAFETY: a buffer of `size` bytes; librbd writes at most that many, or says
            // how many it needs (ERANGE).
            let r =
                unsafe { (self.api.rbd_list)(self.handle, buffer.as_mut_ptr().cast(), &mut size) };
            if r == -ERANGE {
                continue;
            }
            check(r, "cannot list images")?;
            buffer.truncate(size);
            return Ok(buffer
                .split(|b| *b == 0)
                .filter(|name| !name.is_empty())
                .map(|name| String::from_utf8_lossy(name).into_owned())
                .collect());
        }
    }

    /// Opens an image (read-only: what a read-only identity can do), or its snapshot.
    pub fn open(
        &self,
        name: &str,
        snapshot: Option<&str>,
        read_only: bool,
    ) -> Result<Image, CephError> {
        let name_c = c_text(name)?;
        let snap = snapshot.map(c_text).transpose()?;
        let snap_ptr = snap.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        let mut handle: Handle = std::ptr::null_mut();
        let open = if read_only {
            self.api.rbd_open_read_only
        } else {
            self.api.rbd_open
        };
        // SAFETY: a live ioctx, strings and an out-pointer to a local.
        let r = unsafe { open(self.handle, name_c.as_ptr(), &mut handle, snap_ptr) };
        check(r, format!("cannot open image {name}"))?;
        Ok(Image {
            handle,
            api: self.api,
            name: name.to_owned(),
        })
    }

    /// A copy-on-write clone `child` (in `child_io`) of `parent@snapshot` (in this io).
    pub fn clone_image(
        &self,
        parent: &str,
        snapshot: &str,
        child_io: &Io<'_>,
        child: &str,
        features: u64,
    ) -> Result<(), CephError> {
        self.clone_image_of_order(parent, snapshot, child_io, child, features, 0)
    }

    /// `clone_image` with objects of 2^`order` bytes (0: the cluster's default, not the
    /// parent's).
    pub fn clone_image_of_order(
        &self,
        parent: &str,
        snapshot: &str,
        child_io: &Io<'_>,
        child: &str,
        features: u64,
        order: c_int,
    ) -> Result<(), CephError> {
        let (p, s, c) = (c_text(parent)?, c_text(snapshot)?, c_text(child)?);
        let mut order: c_int = order;
        // SAFETY: two live ioctxs, strings and an out-pointer to a local (0/0: the
        // parent's striping).
        let r = unsafe {
            (self.api.rbd_clone2)(
                self.handle,
                p.as_ptr(),
                s.as_ptr(),
                child_io.handle,
                c.as_ptr(),
                features,
                &mut order,
                0,
                0,
            )
        };
        check(r, format!("cannot clone {parent}@{snapshot} to {child}")).map(drop)
    }
}

/// Where an image came from: the pool, image and snapshot it is a clone of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    pub pool: String,
    pub image: String,
    pub snapshot: String,
}

/// An open image.
pub struct Image {
    handle: Handle,
    api: &'static Api,
    name: String,
}

// SAFETY: an open `rbd_image_t` may be used from any thread (librbd locks inside).
unsafe impl Send for Image {}

impl Drop for Image {
    fn drop(&mut self) {
        // SAFETY: the handle came from rbd_open and is closed once, here.
        unsafe { (self.api.rbd_close)(self.handle) };
    }
}

impl Image {
    fn call(&self, r: c_int, what: &str) -> Result<(), CephError> {
        check(r, format!("cannot {what} image {}", self.name)).map(drop)
    }

    pub fn resize(&self, size: u64) -> Result<(), CephError> {
        // SAFETY: an open image.
        let r = unsafe { (self.api.rbd_resize)(self.handle, size) };
        self.call(r, "resize")
    }

    pub fn size(&self) -> Result<u64, CephError> {
        let mut size = 0u64;
        // SAFETY: an open image and an out-pointer to a local.
        let r = unsafe { (self.api.rbd_get_size)(self.handle, &mut size) };
        self.call(r, "size").map(|()| size)
    }

    /// The image's id (the name part of its objects: `rbd_data.<id>.*`).
    pub fn id(&self) -> Result<String, CephError> {
        let mut buffer = [0u8; 64];
        // SAFETY: a 64-byte buffer; ids are 12 to 16 characters.
        let r =
            unsafe { (self.api.rbd_get_id)(self.handle, buffer.as_mut_ptr().cast(), buffer.len()) };
        self.call(r, "read the id of")?;
        Ok(nul_terminated(&buffer))
    }

    /// One of librbd's calls on a snapshot of this image, by name.
    fn on_snapshot(
        &self,
        call: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
        snapshot: &str,
        what: &str,
    ) -> Result<(), CephError> {
        let name = c_text(snapshot)?;
        // SAFETY: an open image and a string that lives across the call; `call` is one
        // of librbd's (image, snapshot name) functions.
        let r = unsafe { call(self.handle, name.as_ptr()) };
        self.call(r, what)
    }

    pub fn snap_create(&self, snapshot: &str) -> Result<(), CephError> {
        self.on_snapshot(self.api.rbd_snap_create, snapshot, "snapshot")
    }

    pub fn snap_remove(&self, snapshot: &str) -> Result<(), CephError> {
        self.on_snapshot(self.api.rbd_snap_remove, snapshot, "remove a snapshot of")
    }

    pub fn snap_protect(&self, snapshot: &str) -> Result<(), CephError> {
        self.on_snapshot(self.api.rbd_snap_protect, snapshot, "protect a snapshot of")
    }

    /// EBUSY while clones of the snapshot exist (clone v1).
    pub fn snap_unprotect(&self, snapshot: &str) -> Result<(), CephError> {
        self.on_snapshot(
            self.api.rbd_snap_unprotect,
            snapshot,
            "unprotect a snapshot of",
        )
    }

    /// Reads from snapshot `id` from now on (any namespace, group snapshots too).
    pub fn read_snapshot_id(&self, id: u64) -> Result<(), CephError> {
        // SAFETY: an open image.
        let r = unsafe { (self.api.rbd_snap_set_by_id)(self.handle, id) };
        self.call(r, "open a snapshot of")
    }

    /// Copies the image as it is read now (its head, or the snapshot set) into a new
    /// image `name` of `io`'s pool.
    pub fn copy_to(&self, io: &Io<'_>, name: &str) -> Result<(), CephError> {
        let name_c = c_text(name)?;
        // SAFETY: an open image, a live ioctx and a string.
        let r = unsafe { (self.api.rbd_copy)(self.handle, io.handle, name_c.as_ptr()) };
        self.call(r, "copy")
    }

    /// The ids and names of the image's snapshots (every namespace).
    pub fn snapshot_entries(&self) -> Result<Vec<(u64, String)>, CephError> {
        let listed = self.snapshot_list()?;
        Ok(listed.into_iter().map(|(id, name, _)| (id, name)).collect())
    }

    /// The size of the image when snapshot `name` was taken; `None` without one.
    pub fn snapshot_size(&self, name: &str) -> Result<Option<u64>, CephError> {
        let listed = self.snapshot_list()?;
        Ok(listed.into_iter().find(|s| s.1 == name).map(|s| s.2))
    }

    /// Renames snapshot `from` of this image `to`.
    pub fn snap_rename(&self, from: &str, to: &str) -> Result<(), CephError> {
        let (from_c, to_c) = (c_text(from)?, c_text(to)?);
        // SAFETY: an open image and two strings that live across the call.
        let r = unsafe { (self.api.rbd_snap_rename)(self.handle, from_c.as_ptr(), to_c.as_ptr()) };
        self.call(r, "rename a snapshot of")
    }

    /// `(id, name, size)` of each of the image's snapshots.
    pub fn snapshot_list(&self) -> Result<Vec<(u64, String, u64)>, CephError> {
        let mut max: c_int = 16;
        loop {
            let mut infos: Vec<SnapInfo> = (0..max)
                .map(|_| SnapInfo {
                    id: 0,
                    size: 0,
                    name: std::ptr::null(),
                })
                .collect();
            // SAFETY: room for `max` entries; librbd says how many it needs (ERANGE).
            let r = unsafe { (self.api.rbd_snap_list)(self.handle, infos.as_mut_ptr(), &mut max) };
            if r == -ERANGE {
                continue;
            }
            self.call(r.min(0), "list the snapshots of")?;
            let names = infos[..r as usize]
                .iter()
                // SAFETY: librbd filled `r` entries with NUL-terminated names.
                .map(|info| {
                    let name = unsafe { CStr::from_ptr(info.name) };
                    (info.id, name.to_string_lossy().into_owned(), info.size)
                })
                .collect();
            // SAFETY: releases what rbd_snap_list allocated for these entries.
            unsafe { (self.api.rbd_snap_list_end)(infos.as_mut_ptr()) };
            return Ok(names);
        }
    }

    /// The names of the image's snapshots.
    pub fn snapshots(&self) -> Result<Vec<String>, CephError> {
        let entries = self.snapshot_entries()?;
        Ok(entries.into_iter().map(|(_, name)| name).collect())
    }

    pub fn flatten(&self) -> Result<(), CephError> {
        // SAFETY: an open image.
        let r = unsafe { (self.api.rbd_flatten)(self.handle) };
        self.call(r, "flatten")
    }

    /// The snapshot this image is a clone of; `None` for an image that is no clone.
    pub fn parent(&self) -> Result<Option<Parent>, CephError> {
        let mut pool = [0u8; 256];
        let mut image = [0u8; 256];
        let mut id = [0u8; 64];
        let mut snapshot = [0u8; 256];
        // SAFETY: four buffers of the lengths given.
        let r = unsafe {
            (self.api.rbd_get_parent_info2)(
                self.handle,
                pool.as_mut_ptr().cast(),
                pool.len(),
                image.as_mut_ptr().cast(),
                image.len(),
                id.as_mut_ptr().cast(),
                id.len(),
                snapshot.as_mut_ptr().cast(),
                snapshot.len(),
            )
        };
        if r == -ENOENT {
            return Ok(None);
        }
        self.call(r, "read the parent of")?;
        Ok(Some(Parent {
            pool: nul_terminated(&pool),
            image: nul_terminated(&image),
            snapshot: nul_terminated(&snapshot),
        }))
    }

    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), CephError> {
        // SAFETY: `data` lives across the call; librbd reads `data.len()` bytes of it.
        let r =
            unsafe { (self.api.rbd_write)(self.handle, offset, data.len(), data.as_ptr().cast()) };
        check(
            r.min(0) as c_int,
            format!("cannot write to image {}", self.name),
        )
        .map(drop)
    }

    pub fn read(&self, offset: u64, len: usize) -> Result<Vec<u8>, CephError> {
        let mut buffer = vec![0u8; len];
        // SAFETY: a buffer of `len` bytes that lives across the call.
        let r =
            unsafe { (self.api.rbd_read)(self.handle, offset, len, buffer.as_mut_ptr().cast()) };
        check(
            r.min(0) as c_int,
            format!("cannot read image {}", self.name),
        )?;
        buffer.truncate(r.max(0) as usize);
        Ok(buffer)
    }

    pub fn flush(&self) -> Result<(), CephError> {
        // SAFETY: an open image.
        let r = unsafe { (self.api.rbd_flush)(self.handle) };
        self.call(r, "flush")
    }
}

fn nul_terminated(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}
