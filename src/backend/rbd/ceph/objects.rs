//! Plain RADOS objects of a pool (where a backup's manifest is kept beside its image),
//! how much of an image is its own (what an incremental backup stored), and what changed
//! in an image since one of its snapshots (what an incremental backup reads).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};

use super::{c_text, check, CephError, Image, Io};

extern "C" fn push_extent(offset: u64, len: usize, _exists: c_int, list: *mut c_void) -> c_int {
    // SAFETY: `list` is the `&mut Vec` `changed_since` passes, alive for the call.
    unsafe { (*list.cast::<Vec<(u64, u64)>>()).push((offset, len as u64)) };
    0
}

impl Io<'_> {
    /// Writes `data` as the whole of object `name` (made, or replaced).
    pub fn write_object(&self, name: &str, data: &[u8]) -> Result<(), CephError> {
        let name_c = c_text(name)?;
        // SAFETY: a live ioctx, a string and a buffer of `data.len()` bytes, all living
        // across the call.
        let r = unsafe {
            (self.api.rados_write_full)(
                self.handle,
                name_c.as_ptr(),
                data.as_ptr().cast(),
                data.len(),
            )
        };
        check(r, format!("cannot write object {name}")).map(drop)
    }

    /// Whether object `name` exists (a round trip to the OSD that serves it).
    pub fn object_exists(&self, name: &str) -> Result<bool, CephError> {
        let name_c = c_text(name)?;
        let (mut size, mut mtime) = (0u64, 0i64);
        // SAFETY: a live ioctx, a string and out-pointers to locals.
        let r =
            unsafe { (self.api.rados_stat)(self.handle, name_c.as_ptr(), &mut size, &mut mtime) };
        if r == -super::ENOENT {
            return Ok(false);
        }
        check(r, format!("cannot find object {name}")).map(|_| true)
    }

    /// The whole of object `name` (ENOENT when there is none).
    pub fn read_object(&self, name: &str) -> Result<Vec<u8>, CephError> {
        let name_c = c_text(name)?;
        let (mut size, mut mtime) = (0u64, 0i64);
        // SAFETY: a live ioctx, a string and out-pointers to locals.
        let r =
            unsafe { (self.api.rados_stat)(self.handle, name_c.as_ptr(), &mut size, &mut mtime) };
        check(r, format!("cannot find object {name}"))?;
        let mut buffer = vec![0u8; size as usize];
        let mut read = 0usize;
        while read < buffer.len() {
            let rest = &mut buffer[read..];
            // SAFETY: a buffer of `rest.len()` bytes that lives across the call.
            let r = unsafe {
                (self.api.rados_read)(
                    self.handle,
                    name_c.as_ptr(),
                    rest.as_mut_ptr().cast(),
                    rest.len(),
                    read as u64,
                )
            };
            let n = check(r, format!("cannot read object {name}"))?;
            if n == 0 {
                break;
            }
            read += n as usize;
        }
        buffer.truncate(read);
        Ok(buffer)
    }

    /// Up to `len` bytes from the start of object `name`, in one request (ENOENT when
    /// there is none).
    pub fn read_object_start(&self, name: &str, len: usize) -> Result<Vec<u8>, CephError> {
        let name_c = c_text(name)?;
        let mut buffer = vec![0u8; len];
        // SAFETY: a live ioctx, a string and a buffer of `len` bytes, all living across
        // the call; librados writes at most `len` bytes and says how many.
        let r = unsafe {
            (self.api.rados_read)(
                self.handle,
                name_c.as_ptr(),
                buffer.as_mut_ptr().cast(),
                len,
                0,
            )
        };
        let n = check(r, format!("cannot read object {name}"))?;
        buffer.truncate(n as usize);
        Ok(buffer)
    }

    /// Removes object `name` (ENOENT when there is none).
    pub fn remove_object(&self, name: &str) -> Result<(), CephError> {
        let name_c = c_text(name)?;
        // SAFETY: a live ioctx and a string.
        let r = unsafe { (self.api.rados_remove)(self.handle, name_c.as_ptr()) };
        check(r, format!("cannot remove object {name}")).map(drop)
    }
}

extern "C" fn add_extent(_offset: u64, len: usize, exists: c_int, total: *mut c_void) -> c_int {
    if exists != 0 {
        // SAFETY: `total` is the `&mut u64` `allocated_bytes` passes, alive for the call.
        unsafe { *total.cast::<u64>() += len as u64 };
    }
    0
}

impl Image {
    /// Bytes of the image (as it is read now) stored in its own objects, not read
    /// through from a parent: what a clone holds of its own.
    pub fn allocated_bytes(&self) -> Result<u64, CephError> {
        let size = self.size()?;
        let mut total = 0u64;
        // SAFETY: an open image; the callback adds to `total`, which outlives the call
        // (librbd calls it only while rbd_diff_iterate2 runs).
        let r = unsafe {
            (self.api.rbd_diff_iterate2)(
                self.handle,
                std::ptr::null(),
                0,
                size,
                0,
                0,
                add_extent,
                (&mut total as *mut u64).cast(),
            )
        };
        self.call(r, "measure")?;
        Ok(total)
    }

    /// The extents `(offset, length)` of the image (as opened: now, or at a snapshot)
    /// that differ from its snapshot `since`: written, or discarded (they read zeros),
    /// parents' data included (`rbd diff --from-snap`).
    pub fn changed_since(&self, since: &str) -> Result<Vec<(u64, u64)>, CephError> {
        let size = self.size()?;
        let since_c = c_text(since)?;
        let mut extents: Vec<(u64, u64)> = Vec::new();
        // SAFETY: an open image and a string that live across the call; the callback
        // pushes onto `extents`, which outlives it (librbd calls it only during the call).
        let r = unsafe {
            (self.api.rbd_diff_iterate2)(
                self.handle,
                since_c.as_ptr(),
                0,
                size,
                1,
                0,
                push_extent,
                (&mut extents as *mut Vec<(u64, u64)>).cast(),
            )
        };
        self.call(r, "compare with a snapshot")?;
        Ok(extents)
    }
}
