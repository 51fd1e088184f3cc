//! An object's watchers in one read from the OSD that serves it: librados'
//! `IoCtx::list_watchers`, which only its C++ API has (librbd lists watchers only of an
//! image it has opened, and an open costs several round trips and milliseconds of CPU:
//! BENCHMARKS.md, "Fencing with shared credentials").
//!
//! The method is called by its exported name through the Itanium C++ ABI that Debian's
//! librados is built with: a member function takes `this` as its first argument, and
//! its `std::string` and `std::list` are libstdc++'s C++11-ABI types, laid out below.
//! The symbol's mangled name spells both (`__cxx11`) and librados' ABI namespace
//! (`v14_2_0`, Nautilus to Squid), so a librados of another ABI does not resolve it,
//! and the watchers are then listed by opening the image (`Io::image_watchers`).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};

use super::{c_text, check, CephError, Io, Watcher};

/// `librados::v14_2_0::IoCtx::list_watchers(const std::string&, std::list<obj_watch_t>*)`.
pub(super) const LIST_WATCHERS: &[u8] = b"_ZN8librados7v14_2_05IoCtx13list_watchersERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPNS2_4listI11obj_watch_tSaISB_EEE\0";
/// `operator delete(void*)`, which frees what the list's nodes were allocated with.
pub(super) const OPERATOR_DELETE: &[u8] = b"_ZdlPv\0";

/// The two C++ functions, resolved from librados (and the libstdc++ it links) when both
/// are there.
pub(super) struct CxxWatchers {
    pub(super) list: unsafe extern "C" fn(*const CxxIoCtx, *const CxxString, *mut CxxList) -> c_int,
    pub(super) delete: unsafe extern "C" fn(*mut c_void),
}

/// `librados::IoCtx`: its one member, the `IoCtxImpl` a C `rados_ioctx_t` points to.
/// Built here around a borrowed context, without the reference `from_rados_ioctx_t`
/// would take, and never destroyed, so the count stays as the C API left it.
#[repr(C)]
pub(super) struct CxxIoCtx {
    implementation: *mut c_void,
}

/// libstdc++'s `std::__cxx11::string`, as a `const&` argument only: the callee reads
/// the pointer and the length (and copies them); it never frees or grows it.
#[repr(C)]
pub(super) struct CxxString {
    data: *const c_char,
    length: usize,
    local: [u8; 16],
}

/// libstdc++'s `std::__cxx11::list<obj_watch_t>`: its sentinel node (first, last) and
/// its size. Empty, the sentinel points at itself, so it must not move while C++ holds it.
#[repr(C)]
pub(super) struct CxxList {
    next: *mut ListNode,
    prev: *mut ListNode,
    size: usize,
}

/// A node of that list: its links, then librados' `obj_watch_t` (rados_types.h).
#[repr(C)]
struct ListNode {
    next: *mut ListNode,
    prev: *mut ListNode,
    watch: ObjWatch,
}

#[repr(C)]
struct ObjWatch {
    addr: [c_char; 256],
    watcher_id: i64,
    cookie: u64,
    timeout_seconds: u32,
}

impl Io<'_> {
    /// The clients watching object `name` (an image's header: every client that has the
    /// image open for writing), in one request to its OSD; ENOENT when it does not exist.
    /// `None` when librados has no such call here.
    pub fn object_watchers(&self, name: &str) -> Option<Result<Vec<Watcher>, CephError>> {
        let calls = self.api.cxx_watchers.as_ref()?;
        Some(list_object_watchers(calls, self.handle, name))
    }
}

fn list_object_watchers(
    calls: &CxxWatchers,
    io: *mut c_void,
    name: &str,
) -> Result<Vec<Watcher>, CephError> {
    let name_c = c_text(name)?;
    let context = CxxIoCtx::of(io);
    let object = CxxString::borrowing(&name_c);
    let mut list = Box::new(CxxList::UNLINKED);
    CxxList::empty_at(&mut list);
    // SAFETY: `context` wraps a live ioctx, `object` points at a NUL-terminated string
    // of `length` bytes, and `list` is an empty list at a fixed (boxed) address; all
    // three outlive the call, which only appends nodes to the list.
    let r = unsafe { (calls.list)(&context, &object, &mut *list) };
    // SAFETY: the call has returned; the list holds only nodes librados linked in.
    let watchers = unsafe { drain(&mut list, calls.delete) };
    check(r, format!("cannot list the watchers of object {name}"))?;
    Ok(watchers)
}

impl CxxString {
    /// A `const std::string&` argument over `text` (NUL-terminated, `length` bytes).
    pub(super) fn borrowing(text: &std::ffi::CStr) -> CxxString {
        CxxString {
            data: text.as_ptr(),
            length: text.to_bytes().len(),
            local: [0; 16],
        }
    }
}

impl CxxIoCtx {
    /// The C++ view of the C context `io` (see the type).
    pub(super) fn of(io: *mut c_void) -> CxxIoCtx {
        CxxIoCtx { implementation: io }
    }
}

impl CxxList {
    /// An empty list whose sentinel points at itself, where it is to stay.
    pub(super) fn empty_at(list: &mut CxxList) {
        let sentinel: *mut ListNode = std::ptr::addr_of_mut!(*list).cast();
        list.next = sentinel;
        list.prev = sentinel;
        list.size = 0;
    }

    pub(super) const UNLINKED: CxxList = CxxList {
        next: std::ptr::null_mut(),
        prev: std::ptr::null_mut(),
        size: 0,
    };
}

/// The watchers a list librados filled holds, its nodes freed (with `delete`, the
/// operator they were allocated with); the list is left empty.
///
/// # Safety
/// `list` was made empty in place (`CxxList::empty_at`), has not moved since, and
/// librados no longer writes to it.
pub(super) unsafe fn drain(
    list: &mut CxxList,
    delete: unsafe extern "C" fn(*mut c_void),
) -> Vec<Watcher> {
    let sentinel: *mut ListNode = std::ptr::addr_of_mut!(*list).cast();
    let mut watchers = Vec::with_capacity(list.size);
    let mut node = list.next;
    while node != sentinel {
        // SAFETY: a node librados linked into the list; read, then freed once with the
        // operator its allocator used, after its successor was taken.
        unsafe {
            let watch = &(*node).watch;
            watchers.push(Watcher {
                address: CStr::from_ptr(watch.addr.as_ptr())
                    .to_string_lossy()
                    .into_owned(),
                client: watch.watcher_id,
            });
            let next = (*node).next;
            delete(node.cast());
            node = next;
        }
    }
    CxxList::empty_at(list);
    watchers
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layouts libstdc++ and rados_types.h give these types on 64-bit targets.
    #[test]
    fn the_cxx_types_have_libstdcxx_layouts() {
        assert_eq!(std::mem::size_of::<CxxString>(), 32);
        assert_eq!(std::mem::size_of::<CxxList>(), 24);
        assert_eq!(std::mem::size_of::<ObjWatch>(), 280);
        assert_eq!(std::mem::offset_of!(ListNode, watch), 16);
        assert_eq!(std::mem::offset_of!(ObjWatch, watcher_id), 256);
    }
}
