//! The image service side of boot from volume: Glance's API (`glance`), what an image's
//! bytes are and whether they are safe to open (`inspect`, then `checked` with qemu-img's
//! word), the formats that are not raw (`qemu`), and reading an image's data while
//! checking it against the hash Glance recorded (`digest`).

pub mod checked;
pub mod digest;
pub mod glance;
pub mod inspect;
pub mod qemu;

pub use glance::{Glance, GlanceConfig, GlanceError, ImageInfo};

/// A file in the conversion directory, removed however the work with it ends.
pub struct Scratch(pub std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
