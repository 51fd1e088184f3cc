//! What a backup's manifest records: where each chunk of the volume's data is stored,
//! with its checksum, and the volume's own details to restore with the data.

use serde::{Deserialize, Serialize};

pub use crate::domain::backup::VolumeRecord;

/// The manifest format this code writes and reads.
pub const FORMAT: &str = "cinder-attach-backup/1";

/// The size of the pieces a volume is cut into: each is checksummed, and stored once
/// (compressed) unless the parent backup holds the same bytes at the same place.
pub const CHUNK: usize = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub backup_id: String,
    pub volume_id: String,
    /// How many bytes the volume had.
    pub size_bytes: u64,
    pub chunk_size: u64,
    /// Paths (under the repository) of every data object a chunk is read from: the
    /// parent's objects first, in the parent's order, then this backup's own.
    pub objects: Vec<String>,
    /// The chunks holding data, by index; the others read as zeros.
    pub chunks: Vec<ChunkRef>,
    pub volume: VolumeRecord,
}

/// Where one chunk is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRef {
    /// The chunk's place in the volume (offset / chunk size).
    pub index: u64,
    /// Its object, in `Manifest::objects`.
    pub object: u32,
    pub offset: u64,
    /// Bytes stored (compressed when `zlib`).
    pub length: u32,
    pub zlib: bool,
    /// SHA-256 of the chunk's bytes as the volume held them, hex.
    pub sha256: String,
}

impl Manifest {
    /// The manifest of the backup at `location`, of a volume of `size_bytes`.
    pub fn new(
        location: &super::Location,
        size_bytes: u64,
        objects: Vec<String>,
        chunks: Vec<ChunkRef>,
        volume: VolumeRecord,
    ) -> Manifest {
        Manifest {
            format: FORMAT.to_owned(),
            backup_id: location.backup_id.clone(),
            volume_id: location.volume_id.clone(),
            size_bytes,
            chunk_size: CHUNK as u64,
            objects,
            chunks,
            volume,
        }
    }

    /// How many chunks the volume is cut into.
    pub fn chunk_count(&self) -> u64 {
        self.size_bytes.div_ceil(self.chunk_size.max(1))
    }

    /// Checks what a reader relies on: the format, the chunk size, and chunk entries in
    /// order, inside the volume, naming listed objects.
    pub fn check(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!("unknown backup format {:?}", self.format));
        }
        if self.chunk_size != CHUNK as u64 {
            return Err(format!("unexpected chunk size {}", self.chunk_size));
        }
        let count = self.chunk_count();
        let mut previous = None;
        for chunk in &self.chunks {
            let in_order = previous.is_none_or(|p| chunk.index > p);
            if !in_order || chunk.index >= count || chunk.object as usize >= self.objects.len() {
                return Err(format!(
                    "chunk {} of the manifest is out of place",
                    chunk.index
                ));
            }
            previous = Some(chunk.index);
        }
        Ok(())
    }
}
