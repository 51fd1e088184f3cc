//! An object's watchers listed without a blocking thread: the request `object_watchers`
//! makes, sent through librados' asynchronous C++ call (`IoCtx::aio_operate` of an
//! `ObjectReadOperation` holding `list_watchers`), its completion waking the waiting
//! task. A detach's fence then costs the service no hand-off to the blocking pool and
//! back, only the messenger's (BENCHMARKS.md, "Fencing with shared credentials").
//!
//! Resolved, like `object_watchers`, by the exported names of librados' ABI namespace
//! `v14_2_0` and libstdc++'s C++11 types; where one is missing the blocking listing is
//! used. `ObjectReadOperation` adds no members to `ObjectOperation` (a virtual table
//! and the `impl` pointer), whose exported constructor and destructor make and free it;
//! `AioCompletion` is a wrapper around the C completion (`pc`, its one member).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use tokio::sync::oneshot;

use super::object_watchers::{drain, CxxIoCtx, CxxList, CxxString};
use super::{c_text, check, open_io, CephError, Cluster, Watcher, EIO};

/// `librados::v14_2_0::ObjectOperation::ObjectOperation()`.
pub(super) const OPERATION_NEW: &[u8] = b"_ZN8librados7v14_2_015ObjectOperationC1Ev\0";
/// `librados::v14_2_0::ObjectOperation::~ObjectOperation()` (the complete object's).
pub(super) const OPERATION_DROP: &[u8] = b"_ZN8librados7v14_2_015ObjectOperationD1Ev\0";
/// `librados::v14_2_0::ObjectReadOperation::list_watchers(std::list<obj_watch_t>*, int*)`.
pub(super) const OPERATION_LIST_WATCHERS: &[u8] =
    b"_ZN8librados7v14_2_019ObjectReadOperation13list_watchersEPNSt7__cxx114listI11obj_watch_tSaIS4_EEEPi\0";
/// `librados::v14_2_0::IoCtx::aio_operate(const std::string&, AioCompletion*,
/// ObjectReadOperation*, bufferlist*)`.
pub(super) const AIO_OPERATE_READ: &[u8] = b"_ZN8librados7v14_2_05IoCtx11aio_operateERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPNS0_13AioCompletionEPNS0_19ObjectReadOperationEPN4ceph6buffer7v15_2_04listE\0";

/// A C handle (`rados_completion_t`, `rados_ioctx_t`).
type Handle = *mut c_void;

type Completed = unsafe extern "C" fn(Handle, *mut c_void);

/// What a completed listing sends its waiting task: the watchers, and the context back.
type Answer = (Result<Vec<Watcher>, CephError>, Arc<WatchListing>);

/// The calls, resolved from librados when all are there.
pub(super) struct CxxAioWatchers {
    pub(super) operation_new: unsafe extern "C" fn(*mut CxxOperation),
    pub(super) operation_drop: unsafe extern "C" fn(*mut CxxOperation),
    pub(super) list_watchers: unsafe extern "C" fn(*mut CxxOperation, *mut CxxList, *mut c_int),
    pub(super) operate: unsafe extern "C" fn(
        *const CxxIoCtx,
        *const CxxString,
        *const CxxCompletion,
        *mut CxxOperation,
        *mut c_void,
    ) -> c_int,
    pub(super) create_completion:
        unsafe extern "C" fn(*mut c_void, Option<Completed>, *mut Handle) -> c_int,
    pub(super) return_value: unsafe extern "C" fn(Handle) -> c_int,
    pub(super) release: unsafe extern "C" fn(Handle),
    pub(super) delete: unsafe extern "C" fn(*mut c_void),
}

/// `librados::ObjectOperation` (and so `ObjectReadOperation`): its virtual table and
/// its `impl`, both set by the constructor.
#[repr(C)]
pub(super) struct CxxOperation {
    vtable: *const c_void,
    implementation: *mut c_void,
}

/// `librados::AioCompletion`: the C completion it wraps.
#[repr(C)]
pub(super) struct CxxCompletion {
    pc: Handle,
}

/// An I/O context on a pool kept for listing watchers asynchronously, one per backend.
/// It lives while a listing is in flight: every listing holds it (`Arc`), and hands it
/// back to its waiting task rather than dropping it on librados' thread.
pub struct WatchListing {
    handle: Handle,
    /// `rados_ioctx_destroy`.
    destroy: unsafe extern "C" fn(Handle),
    calls: &'static CxxAioWatchers,
    // Dropped after the context (fields drop in order): the client it belongs to.
    _cluster: Arc<Cluster>,
}

// SAFETY: a librados I/O context may be used from any thread for reads (librados locks
// inside); this one's namespace is never changed.
unsafe impl Send for WatchListing {}
// SAFETY: as above.
unsafe impl Sync for WatchListing {}

impl Drop for WatchListing {
    fn drop(&mut self) {
        // SAFETY: made by rados_ioctx_create and destroyed once, here, when no listing
        // holds it any more.
        unsafe { (self.destroy)(self.handle) }
    }
}

/// What a listing in flight owns until librados completes it: the list and the result
/// its decoder writes, where to send what it found, and the context it runs on.
struct Pending {
    list: CxxList,
    result: c_int,
    calls: &'static CxxAioWatchers,
    object: String,
    reply: oneshot::Sender<Answer>,
    listing: Arc<WatchListing>,
}

impl WatchListing {
    /// A context on `pool` for asynchronous listings; `None` where this librados cannot
    /// list that way. Blocking (it may wait for the OSD map): call it off the async threads.
    pub fn open(cluster: Arc<Cluster>, pool: &str) -> Result<Option<WatchListing>, CephError> {
        let Some(calls) = cluster.api.cxx_aio_watchers.as_ref() else {
            return Ok(None);
        };
        let io = open_io(cluster.api, cluster.handle, pool)?;
        let handle = io.handle;
        // The context now belongs to the listing (destroyed by its Drop).
        std::mem::forget(io);
        Ok(Some(WatchListing {
            handle,
            destroy: cluster.api.rados_ioctx_destroy,
            calls,
            _cluster: cluster,
        }))
    }

    /// The clients watching object `name`, as `Io::object_watchers` lists them; ENOENT
    /// when it does not exist.
    pub async fn object_watchers(self: &Arc<Self>, name: &str) -> Result<Vec<Watcher>, CephError> {
        let answer = self.submit(name)?;
        match answer.await {
            Ok((found, _listing)) => found,
            Err(_) => Err(CephError {
                errno: EIO,
                what: format!("the listing of object {name}'s watchers ended unanswered"),
                status: String::new(),
            }),
        }
    }

    /// Sends the request; its answer comes on the channel returned.
    fn submit(self: &Arc<Self>, name: &str) -> Result<oneshot::Receiver<Answer>, CephError> {
        let calls = self.calls;
        let name_c = c_text(name)?;
        let (reply, answer) = oneshot::channel();
        let mut pending = Box::new(Pending {
            list: CxxList::UNLINKED,
            result: 0,
            calls,
            object: name.to_owned(),
            reply,
            listing: Arc::clone(self),
        });
        CxxList::empty_at(&mut pending.list);
        let mut operation = CxxOperation {
            vtable: std::ptr::null(),
            implementation: std::ptr::null_mut(),
        };
        // SAFETY: constructs the operation in place; it is destroyed once, below.
        unsafe { (calls.operation_new)(&mut operation) };
        // SAFETY: a constructed operation, and a list and result at the boxed (fixed)
        // address the decoder writes to when the reply comes.
        unsafe { (calls.list_watchers)(&mut operation, &mut pending.list, &mut pending.result) };
        let pending = Box::into_raw(pending);
        let mut completion: Handle = std::ptr::null_mut();
        // SAFETY: an out-pointer to a local; `pending` is handed to the callback, which
        // owns it from its one call on.
        let made =
            unsafe { (calls.create_completion)(pending.cast(), Some(completed), &mut completion) };
        let sent = if made < 0 {
            made
        } else {
            let context = CxxIoCtx::of(self.handle);
            let object = CxxString::borrowing(&name_c);
            let wrapper = CxxCompletion { pc: completion };
            // SAFETY: a live context, a string, completion and operation that outlive
            // the call (librados copies the name and moves the operation's steps out); no
            // reply buffer, as the watchers come through the list.
            let sent = unsafe {
                (calls.operate)(
                    &context,
                    &object,
                    &wrapper,
                    &mut operation,
                    std::ptr::null_mut(),
                )
            };
            if sent < 0 {
                // SAFETY: not submitted, so never completed: released once, here.
                unsafe { (calls.release)(completion) };
            }
            sent
        };
        // SAFETY: constructed above; librados took what it needed from it.
        unsafe { (calls.operation_drop)(&mut operation) };
        if sent < 0 {
            // SAFETY: no callback will run: the box (its list never written) is this
            // function's again.
            drop(unsafe { Box::from_raw(pending) });
            check(sent, format!("cannot list the watchers of object {name}"))?;
        }
        Ok(answer)
    }
}

/// librados' completion of a listing: takes what the decoder wrote, frees the list's
/// nodes and the completion, and sends the watchers (and the context) to the waiting
/// task. A task that stopped waiting leaves the context alive for good rather than
/// destroy it on librados' own thread.
unsafe extern "C" fn completed(completion: Handle, arg: *mut c_void) {
    // SAFETY: `arg` is the box `submit` handed over, given to this one call.
    let mut pending = unsafe { Box::from_raw(arg.cast::<Pending>()) };
    let calls = pending.calls;
    // SAFETY: the completion this callback is for; released once, here (librados holds
    // its own reference while the callback runs).
    let returned = unsafe { (calls.return_value)(completion) };
    // SAFETY: the operation is complete, so librados writes to the list no more.
    let watchers = unsafe { drain(&mut pending.list, calls.delete) };
    // SAFETY: as above.
    unsafe { (calls.release)(completion) };
    // The list is empty now and may move.
    let Pending {
        result,
        object,
        reply,
        listing,
        ..
    } = *pending;
    let what = || format!("cannot list the watchers of object {object}");
    let found = check(returned, what())
        .and_then(|_| check(result, what()))
        .map(|_| watchers);
    if let Err((_, listing)) = reply.send((found, listing)) {
        std::mem::forget(listing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layouts of librados' `ObjectOperation` and `AioCompletion` on 64-bit targets.
    #[test]
    fn the_cxx_types_have_librados_layouts() {
        assert_eq!(std::mem::size_of::<CxxOperation>(), 16);
        assert_eq!(std::mem::offset_of!(CxxOperation, implementation), 8);
        assert_eq!(std::mem::size_of::<CxxCompletion>(), 8);
    }
}
