//! The C functions of librados and librbd this module calls, resolved once from the
//! libraries loaded at run time.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use libloading::Library;

use super::aio_watchers::{
    CxxAioWatchers, AIO_OPERATE_READ, OPERATION_DROP, OPERATION_LIST_WATCHERS, OPERATION_NEW,
};
use super::object_watchers::{CxxWatchers, LIST_WATCHERS, OPERATOR_DELETE};
use super::CephError;

pub(super) type Handle = *mut c_void;

#[repr(C)]
pub(super) struct SnapInfo {
    pub(super) id: u64,
    pub(super) size: u64,
    pub(super) name: *const c_char,
}

/// librbd's `rbd_image_watcher_t`: a client that watches an image's header.
#[repr(C)]
pub(super) struct ImageWatcher {
    pub(super) addr: *mut c_char,
    pub(super) id: i64,
    pub(super) cookie: u64,
}

/// The functions used, resolved once.
pub(super) struct Api {
    pub(super) rados_create2:
        unsafe extern "C" fn(*mut Handle, *const c_char, *const c_char, u64) -> c_int,
    pub(super) rados_conf_read_file: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rados_conf_set: unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> c_int,
    pub(super) rados_connect: unsafe extern "C" fn(Handle) -> c_int,
    pub(super) rados_shutdown: unsafe extern "C" fn(Handle),
    pub(super) rados_getaddrs: unsafe extern "C" fn(Handle, *mut *mut c_char) -> c_int,
    pub(super) rados_wait_for_latest_osdmap: unsafe extern "C" fn(Handle) -> c_int,
    pub(super) rados_ioctx_create:
        unsafe extern "C" fn(Handle, *const c_char, *mut Handle) -> c_int,
    pub(super) rados_ioctx_destroy: unsafe extern "C" fn(Handle),
    pub(super) rados_ioctx_set_namespace: unsafe extern "C" fn(Handle, *const c_char),
    #[allow(clippy::type_complexity)]
    pub(super) rados_mon_command_target: unsafe extern "C" fn(
        Handle,
        *const c_char,
        *mut *const c_char,
        usize,
        *const c_char,
        usize,
        *mut *mut c_char,
        *mut usize,
        *mut *mut c_char,
        *mut usize,
    ) -> c_int,
    #[allow(clippy::type_complexity)]
    pub(super) rados_mon_command: unsafe extern "C" fn(
        Handle,
        *mut *const c_char,
        usize,
        *const c_char,
        usize,
        *mut *mut c_char,
        *mut usize,
        *mut *mut c_char,
        *mut usize,
    ) -> c_int,
    pub(super) rados_buffer_free: unsafe extern "C" fn(*mut c_char),
    pub(super) rados_write_full:
        unsafe extern "C" fn(Handle, *const c_char, *const c_char, usize) -> c_int,
    pub(super) rados_read:
        unsafe extern "C" fn(Handle, *const c_char, *mut c_char, usize, u64) -> c_int,
    pub(super) rados_stat: unsafe extern "C" fn(Handle, *const c_char, *mut u64, *mut i64) -> c_int,
    pub(super) rados_remove: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rbd_create2:
        unsafe extern "C" fn(Handle, *const c_char, u64, u64, *mut c_int) -> c_int,
    pub(super) rbd_remove: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rbd_rename: unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> c_int,
    pub(super) rbd_list: unsafe extern "C" fn(Handle, *mut c_char, *mut usize) -> c_int,
    pub(super) rbd_open:
        unsafe extern "C" fn(Handle, *const c_char, *mut Handle, *const c_char) -> c_int,
    pub(super) rbd_open_read_only:
        unsafe extern "C" fn(Handle, *const c_char, *mut Handle, *const c_char) -> c_int,
    pub(super) rbd_close: unsafe extern "C" fn(Handle) -> c_int,
    pub(super) rbd_resize: unsafe extern "C" fn(Handle, u64) -> c_int,
    pub(super) rbd_get_size: unsafe extern "C" fn(Handle, *mut u64) -> c_int,
    pub(super) rbd_get_id: unsafe extern "C" fn(Handle, *mut c_char, usize) -> c_int,
    pub(super) rbd_snap_create: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rbd_snap_set_by_id: unsafe extern "C" fn(Handle, u64) -> c_int,
    pub(super) rbd_copy: unsafe extern "C" fn(Handle, Handle, *const c_char) -> c_int,
    pub(super) rbd_group_create: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rbd_group_remove: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rbd_group_image_add:
        unsafe extern "C" fn(Handle, *const c_char, Handle, *const c_char) -> c_int,
    pub(super) rbd_group_image_remove:
        unsafe extern "C" fn(Handle, *const c_char, Handle, *const c_char) -> c_int,
    pub(super) rbd_group_snap_create:
        unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> c_int,
    pub(super) rbd_group_snap_remove:
        unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> c_int,
    pub(super) rbd_snap_remove: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rbd_snap_protect: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rbd_snap_unprotect: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    pub(super) rbd_snap_rename: unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> c_int,
    pub(super) rbd_snap_list: unsafe extern "C" fn(Handle, *mut SnapInfo, *mut c_int) -> c_int,
    pub(super) rbd_snap_list_end: unsafe extern "C" fn(*mut SnapInfo),
    #[allow(clippy::type_complexity)]
    pub(super) rbd_clone2: unsafe extern "C" fn(
        Handle,
        *const c_char,
        *const c_char,
        Handle,
        *const c_char,
        u64,
        *mut c_int,
        u64,
        c_int,
    ) -> c_int,
    pub(super) rbd_flatten: unsafe extern "C" fn(Handle) -> c_int,
    #[allow(clippy::type_complexity)]
    pub(super) rbd_get_parent_info2: unsafe extern "C" fn(
        Handle,
        *mut c_char,
        usize,
        *mut c_char,
        usize,
        *mut c_char,
        usize,
        *mut c_char,
        usize,
    ) -> c_int,
    pub(super) rbd_read: unsafe extern "C" fn(Handle, u64, usize, *mut c_char) -> isize,
    pub(super) rbd_write: unsafe extern "C" fn(Handle, u64, usize, *const c_char) -> isize,
    pub(super) rbd_flush: unsafe extern "C" fn(Handle) -> c_int,
    pub(super) rbd_watchers_list:
        unsafe extern "C" fn(Handle, *mut ImageWatcher, *mut usize) -> c_int,
    pub(super) rbd_watchers_list_cleanup: unsafe extern "C" fn(*mut ImageWatcher, usize),
    #[allow(clippy::type_complexity)]
    pub(super) rbd_diff_iterate2: unsafe extern "C" fn(
        Handle,
        *const c_char,
        u64,
        u64,
        u8,
        u8,
        extern "C" fn(u64, usize, c_int, *mut c_void) -> c_int,
        *mut c_void,
    ) -> c_int,
    /// librados' C++ watcher listing, where this librados exports it.
    pub(super) cxx_watchers: Option<CxxWatchers>,
    /// The same listing sent asynchronously, where this librados exports what it needs.
    pub(super) cxx_aio_watchers: Option<CxxAioWatchers>,
    // Kept loaded for as long as the process runs: the pointers above point into them.
    _libraries: (Library, Library),
}

macro_rules! resolve {
    ($lib:expr, $name:ident) => {{
        // SAFETY: the symbol is declared in librados.h/librbd.h with exactly the type
        // of the field it is stored in.
        let symbol = unsafe { $lib.get(concat!(stringify!($name), "\0").as_bytes()) }
            .map_err(|e| format!("{}: {e}", stringify!($name)))?;
        *symbol
    }};
}

impl Api {
    fn load() -> Result<Api, String> {
        // SAFETY: loading Ceph's client libraries runs their initialisers, which only set
        // up their own state.
        let rados = unsafe { Library::new("librados.so.2") }
            .map_err(|e| format!("cannot load librados (Debian's librados2): {e}"))?;
        // SAFETY: as above.
        let rbd = unsafe { Library::new("librbd.so.1") }
            .map_err(|e| format!("cannot load librbd (Debian's librbd1): {e}"))?;
        Ok(Api {
            rados_create2: resolve!(rados, rados_create2),
            rados_conf_read_file: resolve!(rados, rados_conf_read_file),
            rados_conf_set: resolve!(rados, rados_conf_set),
            rados_connect: resolve!(rados, rados_connect),
            rados_shutdown: resolve!(rados, rados_shutdown),
            rados_getaddrs: resolve!(rados, rados_getaddrs),
            rados_ioctx_create: resolve!(rados, rados_ioctx_create),
            rados_ioctx_destroy: resolve!(rados, rados_ioctx_destroy),
            rados_ioctx_set_namespace: resolve!(rados, rados_ioctx_set_namespace),
            rados_mon_command_target: resolve!(rados, rados_mon_command_target),
            rados_mon_command: resolve!(rados, rados_mon_command),
            rados_buffer_free: resolve!(rados, rados_buffer_free),
            rados_write_full: resolve!(rados, rados_write_full),
            rados_read: resolve!(rados, rados_read),
            rados_stat: resolve!(rados, rados_stat),
            rados_wait_for_latest_osdmap: resolve!(rados, rados_wait_for_latest_osdmap),
            rados_remove: resolve!(rados, rados_remove),
            rbd_create2: resolve!(rbd, rbd_create2),
            rbd_remove: resolve!(rbd, rbd_remove),
            rbd_rename: resolve!(rbd, rbd_rename),
            rbd_list: resolve!(rbd, rbd_list),
            rbd_open: resolve!(rbd, rbd_open),
            rbd_open_read_only: resolve!(rbd, rbd_open_read_only),
            rbd_close: resolve!(rbd, rbd_close),
            rbd_resize: resolve!(rbd, rbd_resize),
            rbd_get_size: resolve!(rbd, rbd_get_size),
            rbd_get_id: resolve!(rbd, rbd_get_id),
            rbd_snap_create: resolve!(rbd, rbd_snap_create),
            rbd_snap_set_by_id: resolve!(rbd, rbd_snap_set_by_id),
            rbd_copy: resolve!(rbd, rbd_copy),
            rbd_group_create: resolve!(rbd, rbd_group_create),
            rbd_group_remove: resolve!(rbd, rbd_group_remove),
            rbd_group_image_add: resolve!(rbd, rbd_group_image_add),
            rbd_group_image_remove: resolve!(rbd, rbd_group_image_remove),
            rbd_group_snap_create: resolve!(rbd, rbd_group_snap_create),
            rbd_group_snap_remove: resolve!(rbd, rbd_group_snap_remove),
            rbd_snap_remove: resolve!(rbd, rbd_snap_remove),
            rbd_snap_protect: resolve!(rbd, rbd_snap_protect),
            rbd_snap_unprotect: resolve!(rbd, rbd_snap_unprotect),
            rbd_snap_rename: resolve!(rbd, rbd_snap_rename),
            rbd_snap_list: resolve!(rbd, rbd_snap_list),
            rbd_snap_list_end: resolve!(rbd, rbd_snap_list_end),
            rbd_clone2: resolve!(rbd, rbd_clone2),
            rbd_flatten: resolve!(rbd, rbd_flatten),
            rbd_get_parent_info2: resolve!(rbd, rbd_get_parent_info2),
            rbd_read: resolve!(rbd, rbd_read),
            rbd_write: resolve!(rbd, rbd_write),
            rbd_flush: resolve!(rbd, rbd_flush),
            rbd_watchers_list: resolve!(rbd, rbd_watchers_list),
            rbd_watchers_list_cleanup: resolve!(rbd, rbd_watchers_list_cleanup),
            rbd_diff_iterate2: resolve!(rbd, rbd_diff_iterate2),
            cxx_watchers: cxx_watchers(&rados),
            cxx_aio_watchers: cxx_aio_watchers(&rados),
            _libraries: (rados, rbd),
        })
    }
}

/// The C++ functions of `object_watchers`, when librados (and the libstdc++ it loaded)
/// has both.
fn cxx_watchers(rados: &Library) -> Option<CxxWatchers> {
    // SAFETY: the symbols' mangled names spell the types of the fields they are stored
    // in (object_watchers.rs); they are only read here.
    unsafe {
        let list = rados.get(LIST_WATCHERS).ok()?;
        let delete = rados.get(OPERATOR_DELETE).ok()?;
        Some(CxxWatchers {
            list: *list,
            delete: *delete,
        })
    }
}

/// The calls of `aio_watchers`, when librados has them all.
fn cxx_aio_watchers(rados: &Library) -> Option<CxxAioWatchers> {
    // SAFETY: as in `cxx_watchers`; the C functions are declared in librados.h with the
    // types of their fields.
    unsafe {
        Some(CxxAioWatchers {
            operation_new: *rados.get(OPERATION_NEW).ok()?,
            operation_drop: *rados.get(OPERATION_DROP).ok()?,
            list_watchers: *rados.get(OPERATION_LIST_WATCHERS).ok()?,
            operate: *rados.get(AIO_OPERATE_READ).ok()?,
            create_completion: *rados.get(b"rados_aio_create_completion2\0").ok()?,
            return_value: *rados.get(b"rados_aio_get_return_value\0").ok()?,
            release: *rados.get(b"rados_aio_release\0").ok()?,
            delete: *rados.get(OPERATOR_DELETE).ok()?,
        })
    }
}

pub(super) fn api() -> Result<&'static Api, CephError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(Api::load)
        .as_ref()
        .map_err(|why| CephError {
            errno: 38,
            what: why.clone(),
            status: String::new(),
        })
}
