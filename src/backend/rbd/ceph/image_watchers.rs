//! Who has an image open, listed without opening it where librados can list an object's
//! watchers (`object_watchers`): the image's id from its `rbd_id.<name>` object, then
//! the watchers of its header, `rbd_header.<id>`. An image keeps its id for as long as
//! it exists, so ids once read are kept (`ImageIds`) and a later listing is one read; a
//! header found gone means the image was removed, or made anew under the same name, and
//! the id is read again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{CephError, Io, WatchListing, Watcher, ENOENT};

/// Who has an image open (`Io::image_watchers`): the watchers of its header object, and
/// that object's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageWatchers {
    pub header: String,
    pub watchers: Vec<Watcher>,
}

/// How many image ids `ImageIds` keeps before it starts again (about 100 bytes each).
const KEPT_IDS: usize = 16_384;

/// The ids of images whose watchers were listed, by image name (one per backend).
#[derive(Debug, Default)]
pub struct ImageIds {
    known: Mutex<HashMap<String, String>>,
}

impl ImageIds {
    fn get(&self, name: &str) -> Option<String> {
        self.lock().get(name).cloned()
    }

    fn keep(&self, name: &str, id: &str) {
        let mut known = self.lock();
        if known.len() >= KEPT_IDS {
            known.clear();
        }
        known.insert(name.to_owned(), id.to_owned());
    }

    fn forget(&self, name: &str) {
        self.lock().remove(name);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A map of plain strings is whole even if a holder panicked.
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The image id a format 2 image's `rbd_id.<name>` object holds: a length (32 bits,
/// little-endian), then that many bytes.
fn stored_image_id(bytes: &[u8]) -> Option<String> {
    let (length, rest) = bytes.split_first_chunk::<4>()?;
    let id = rest.get(..u32::from_le_bytes(*length) as usize)?;
    let id = std::str::from_utf8(id).ok()?;
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric())).then(|| id.to_owned())
}

/// What one look at a header found: its watchers, or that it is gone.
enum Header {
    Watched(ImageWatchers),
    Gone,
}

impl Header {
    /// The header object of the image whose id is `id`.
    fn of_image(id: &str) -> String {
        format!("rbd_header.{id}")
    }

    /// What listing `header`'s watchers (by either listing) found.
    fn seen(header: String, listed: Result<Vec<Watcher>, CephError>) -> Result<Header, CephError> {
        match listed {
            Ok(watchers) => Ok(Header::Watched(ImageWatchers { header, watchers })),
            Err(e) if e.errno == ENOENT => Ok(Header::Gone),
            Err(e) => Err(e),
        }
    }
}

impl Io<'_> {
    /// The clients that have image `name` open for writing (each watches its header);
    /// `None` when there is no such image. One or two reads where librados lists an
    /// object's watchers (with the id kept in `ids`, or read first); else the image is
    /// opened read-only (adding no watcher) and librbd lists them.
    pub fn image_watchers(
        &self,
        name: &str,
        ids: &ImageIds,
    ) -> Result<Option<ImageWatchers>, CephError> {
        if let Some(found) = self.header_watchers(name, ids) {
            return found;
        }
        let image = match self.open(name, None, true) {
            Err(e) if e.errno == ENOENT => return Ok(None),
            other => other?,
        };
        Ok(Some(ImageWatchers {
            header: format!("rbd_header.{}", image.id()?),
            watchers: image.watchers()?,
        }))
    }

    /// `image_watchers` without opening the image; `None` where it needs the open (no
    /// C++ listing here, or no `rbd_id` object: a format 1 image, or none).
    fn header_watchers(
        &self,
        name: &str,
        ids: &ImageIds,
    ) -> Option<Result<Option<ImageWatchers>, CephError>> {
        self.api.cxx_watchers.as_ref()?;
        if let Some(id) = ids.get(name) {
            match self.look_at_header(&id)? {
                Ok(Header::Watched(found)) => return Some(Ok(Some(found))),
                Ok(Header::Gone) => ids.forget(name),
                Err(e) => return Some(Err(e)),
            }
        }
        let id = match self.read_object_start(&format!("rbd_id.{name}"), 128) {
            Ok(bytes) => stored_image_id(&bytes)?,
            Err(e) if e.errno == ENOENT => return None,
            Err(e) => return Some(Err(e)),
        };
        Some(match self.look_at_header(&id)? {
            Ok(Header::Watched(found)) => {
                ids.keep(name, &id);
                Ok(Some(found))
            }
            // Removed since its id was read: nobody has it open.
            Ok(Header::Gone) => Ok(None),
            Err(e) => Err(e),
        })
    }

    fn look_at_header(&self, id: &str) -> Option<Result<Header, CephError>> {
        let header = Header::of_image(id);
        let listed = self.object_watchers(&header)?;
        Some(Header::seen(header, listed))
    }
}

impl WatchListing {
    /// `Io::image_watchers` without a blocking thread, for an image whose id `ids`
    /// keeps: its header's watchers in one asynchronous read. `None` when the id is not
    /// kept or the header is gone (forgotten then): `Io::image_watchers` tells.
    pub async fn kept_image_watchers(
        self: &Arc<Self>,
        name: &str,
        ids: &ImageIds,
    ) -> Option<Result<ImageWatchers, CephError>> {
        let header = Header::of_image(&ids.get(name)?);
        let listed = self.object_watchers(&header).await;
        match Header::seen(header, listed) {
            Ok(Header::Watched(found)) => Some(Ok(found)),
            Ok(Header::Gone) => {
                ids.forget(name);
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_id_is_read_as_librbd_stores_it() {
        let mut stored = 12u32.to_le_bytes().to_vec();
        stored.extend_from_slice(b"10b6f1a5c2d3");
        assert_eq!(stored_image_id(&stored).as_deref(), Some("10b6f1a5c2d3"));
        assert_eq!(
            stored_image_id(&stored[..10]),
            None,
            "a length past the bytes"
        );
        assert_eq!(stored_image_id(&[0, 0, 0, 0]), None, "an empty id");
        assert_eq!(stored_image_id(&[3, 0, 0, 0, b'a', b'/', b'b']), None);
        assert_eq!(stored_image_id(&[1, 0]), None, "no whole length");
    }

    #[test]
    fn kept_ids_are_bounded_and_forgotten() {
        let ids = ImageIds::default();
        ids.keep("volume-a", "1a");
        assert_eq!(ids.get("volume-a").as_deref(), Some("1a"));
        ids.forget("volume-a");
        assert_eq!(ids.get("volume-a"), None);
        for n in 0..=KEPT_IDS {
            ids.keep(&format!("volume-{n}"), "1");
        }
        assert!(ids.lock().len() <= KEPT_IDS);
    }
}
