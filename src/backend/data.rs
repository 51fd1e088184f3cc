//! A volume's bytes in and out, for images: a new volume is filled from a stream of chunks
//! (blocks of zeros skipped, as the new volume already reads zeros there), and a volume is
//! read out in order. The stream is bounded, so memory stays a few chunks whatever the size.

use std::path::Path;

use axum::body::Bytes;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

use super::BackendError;

/// Chunks of a raw image, in order from offset 0; the sender closes it at the end.
pub type DataIn = mpsc::Receiver<Bytes>;
/// Where a volume's data is sent, in order; an error ends the stream.
pub type DataOut = mpsc::Sender<Result<Bytes, std::io::Error>>;

/// The size of the blocks a volume is read in, and checked for zeros in.
pub const BLOCK: usize = 1 << 20;

/// Chunks in flight between a reader and a writer.
const IN_FLIGHT: usize = 8;

/// Streams what `read` sends out into what `write` takes in (a volume's data from one
/// place of a backend, or one backend, to another), a few chunks in flight: the bytes
/// written, or the first failure of either side. A read that fails part way ends the
/// write's stream early and is the error.
pub async fn relay<R, W>(
    read: impl FnOnce(DataOut) -> R,
    write: impl FnOnce(DataIn) -> W,
) -> Result<u64, BackendError>
where
    R: std::future::Future<Output = Result<(), BackendError>> + Send + 'static,
    W: std::future::Future<Output = Result<u64, BackendError>> + Send + 'static,
{
    let (out_tx, mut out_rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(IN_FLIGHT);
    let (in_tx, in_rx) = mpsc::channel::<Bytes>(IN_FLIGHT);
    let reader = tokio::spawn(read(out_tx));
    let writer = tokio::spawn(write(in_rx));
    let mut broken = None;
    while let Some(chunk) = out_rx.recv().await {
        match chunk {
            Ok(bytes) => {
                if in_tx.send(bytes).await.is_err() {
                    break; // the writer stopped; its error says why
                }
            }
            Err(err) => {
                broken = Some(err);
                break;
            }
        }
    }
    drop(in_tx);
    drop(out_rx);
    let joined = |e: tokio::task::JoinError| BackendError::Failed(e.to_string());
    let read = reader.await.map_err(joined)?;
    let written = writer.await.map_err(joined)?;
    read?;
    if let Some(err) = broken {
        return Err(BackendError::Failed(format!("reading the data: {err}")));
    }
    written
}

/// Which chunks of a volume differ from an earlier copy of it (what an incremental backup
/// reads, as `rbd export-diff` does): the volume is cut into chunks of `chunk` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedChunks {
    pub chunk: u64,
    pub size_bytes: u64,
    /// The changed chunks' indices, sorted, each once.
    indices: Vec<u64>,
}

impl ChangedChunks {
    /// The chunks that byte extents `(offset, length)` touch, of a volume of `size_bytes`.
    pub fn from_extents(chunk: u64, size_bytes: u64, extents: &[(u64, u64)]) -> ChangedChunks {
        let mut indices = Vec::new();
        for &(offset, length) in extents {
            let end = (offset + length).min(size_bytes);
            if end <= offset {
                continue;
            }
            indices.extend(offset / chunk..end.div_ceil(chunk));
        }
        indices.sort_unstable();
        indices.dedup();
        ChangedChunks {
            chunk,
            size_bytes,
            indices,
        }
    }

    pub fn contains(&self, index: u64) -> bool {
        self.indices.binary_search(&index).is_ok()
    }

    /// How many chunks the volume has.
    pub fn chunk_count(&self) -> u64 {
        self.size_bytes.div_ceil(self.chunk)
    }

    /// The changed bytes as ranges `(offset, length)`, consecutive chunks joined.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for &index in &self.indices {
            let offset = index * self.chunk;
            let length = self.chunk.min(self.size_bytes - offset);
            match ranges.last_mut() {
                Some((start, len)) if *start + *len == offset => *len += length,
                _ => ranges.push((offset, length)),
            }
        }
        ranges
    }
}

/// Gathers chunks into blocks of `BLOCK` bytes (the last may be shorter), so zero checks
/// and writes happen on whole blocks whatever sizes the network delivers.
pub struct Blocks {
    data: DataIn,
    pending: Vec<u8>,
    ended: bool,
}

impl Blocks {
    pub fn new(data: DataIn) -> Blocks {
        Blocks {
            data,
            pending: Vec::with_capacity(BLOCK),
            ended: false,
        }
    }

    /// The next block, or `None` at the end.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        while !self.ended && self.pending.len() < BLOCK {
            match self.data.recv().await {
                Some(chunk) => self.pending.extend_from_slice(&chunk),
                None => self.ended = true,
            }
        }
        self.take()
    }

    /// Like `next`, from a blocking thread (librbd's writes).
    pub fn blocking_next(&mut self) -> Option<Vec<u8>> {
        while !self.ended && self.pending.len() < BLOCK {
            match self.data.blocking_recv() {
                Some(chunk) => self.pending.extend_from_slice(&chunk),
                None => self.ended = true,
            }
        }
        self.take()
    }

    fn take(&mut self) -> Option<Vec<u8>> {
        if self.pending.is_empty() {
            return None;
        }
        let rest = if self.pending.len() > BLOCK {
            self.pending.split_off(BLOCK)
        } else {
            Vec::with_capacity(BLOCK)
        };
        Some(std::mem::replace(&mut self.pending, rest))
    }
}

/// Whether `block` holds only zeros: compared a piece at a time with zeros (`memcmp`),
/// many times faster than a loop over the bytes, unoptimised builds (the tests) above all.
pub fn is_zero(block: &[u8]) -> bool {
    static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
    block
        .chunks(ZEROS.len())
        .all(|piece| piece == &ZEROS[..piece.len()])
}

fn failed(what: &str, err: impl std::fmt::Display) -> BackendError {
    BackendError::Failed(format!("could not {what} the volume's data: {err}"))
}

/// O_DIRECT writes need their buffer, offset and length aligned to the device's block.
const DIRECT_ALIGN: usize = 4096;

/// What a write does with a block of zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroBlocks {
    /// Leaves it: the volume is new and reads zeros there already.
    Skip,
    /// Clears it: the volume may hold older data there. A file is emptied first (its
    /// length kept, so it reads zeros), then blocks of zeros are skipped.
    Clear,
}

/// Fills the volume file at `path` (already created at its full size) from `data`;
/// returns how many bytes came. More bytes than the file holds is an error. Written with
/// O_DIRECT where the filesystem takes it: through the page cache and then `fsync`, a
/// stream of new data costs the kernel about four times as much here (BENCHMARKS.md).
pub async fn write_file(path: &Path, data: DataIn, zeros: ZeroBlocks) -> Result<u64, BackendError> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || write_file_blocking(&path, data, zeros))
        .await
        .map_err(|e| failed("write", e))?
}

fn open_for_writing(path: &Path) -> std::io::Result<(std::fs::File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let direct = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path);
    match direct {
        Ok(file) => Ok((file, true)),
        // tmpfs and some others refuse O_DIRECT: the page cache then.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let file = std::fs::OpenOptions::new().write(true).open(path)?;
            Ok((file, false))
        }
        Err(e) => Err(e),
    }
}

fn write_file_blocking(path: &Path, data: DataIn, zeros: ZeroBlocks) -> Result<u64, BackendError> {
    use std::os::unix::fs::FileExt;
    let (file, direct) = open_for_writing(path).map_err(|e| failed("open", e))?;
    let capacity = file.metadata().map_err(|e| failed("open", e))?.len();
    if zeros == ZeroBlocks::Clear {
        let emptied = file.set_len(0).and_then(|()| file.set_len(capacity));
        emptied.map_err(|e| failed("clear", e))?;
    }
    // An aligned window into a buffer a little larger than a block (no unsafe code).
    let mut buffer = vec![0u8; BLOCK + DIRECT_ALIGN];
    let start = buffer.as_ptr().align_offset(DIRECT_ALIGN);
    let aligned = &mut buffer[start..start + BLOCK];
    let mut blocks = Blocks::new(data);
    let mut offset = 0u64;
    while let Some(block) = blocks.blocking_next() {
        let end = offset + block.len() as u64;
        if end > capacity {
            return Err(BackendError::Failed(format!(
                "the image holds more than the volume's {capacity} bytes"
            )));
        }
        if !is_zero(&block) {
            let written = if direct {
                // A short last block is padded with zeros to the alignment: the volume
                // reads zeros there anyway, and its size is whole GiB.
                let padded = block.len().next_multiple_of(DIRECT_ALIGN);
                aligned[..block.len()].copy_from_slice(&block);
                aligned[block.len()..padded].fill(0);
                file.write_all_at(&aligned[..padded], offset)
            } else {
                file.write_all_at(&block, offset)
            };
            written.map_err(|e| failed("write", e))?;
        }
        offset = end;
    }
    file.sync_all().map_err(|e| failed("write", e))?;
    Ok(offset)
}

/// Sends the whole file at `path` into `sink`, block by block.
pub async fn read_file(path: &Path, sink: DataOut) -> Result<(), BackendError> {
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(|e| failed("open", e))?;
    while let Some(block) = read_block(&mut file).await.map_err(|e| failed("read", e))? {
        if sink.send(Ok(Bytes::from(block))).await.is_err() {
            return Err(BackendError::Failed(
                "the reader of the volume's data went away".to_owned(),
            ));
        }
    }
    Ok(())
}

/// The next `BLOCK` bytes of `file` (fewer at its end), or `None` past it.
pub async fn read_block(file: &mut tokio::fs::File) -> std::io::Result<Option<Vec<u8>>> {
    let mut block = vec![0u8; BLOCK];
    let mut filled = 0;
    while filled < BLOCK {
        let n = file.read(&mut block[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    block.truncate(filled);
    Ok((filled > 0).then_some(block))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn blocks_are_whole_whatever_the_chunks() {
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            for _ in 0..5 {
                tx.send(Bytes::from(vec![1u8; 300_000])).await.unwrap();
            }
        });
        let mut blocks = Blocks::new(rx);
        assert_eq!(blocks.next().await.unwrap().len(), BLOCK);
        assert_eq!(blocks.next().await.unwrap().len(), 1_500_000 - BLOCK);
        assert!(blocks.next().await.is_none());
    }

    #[tokio::test]
    async fn a_file_is_filled_sparsely_and_read_back() {
        let dir = std::env::temp_dir().join(format!("data-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(4 * BLOCK as u64)
            .unwrap();
        let (tx, rx) = mpsc::channel(4);
        let mut image = vec![0u8; 2 * BLOCK];
        image[BLOCK + 7] = 9;
        let sent = image.clone();
        tokio::spawn(async move {
            for chunk in sent.chunks(65536) {
                tx.send(Bytes::copy_from_slice(chunk)).await.unwrap();
            }
        });
        assert_eq!(
            write_file(&path, rx, ZeroBlocks::Skip).await.unwrap(),
            2 * BLOCK as u64
        );
        let (tx, mut rx) = mpsc::channel(4);
        let reading = tokio::spawn(async move { read_file(&path, tx).await });
        let mut back = Vec::new();
        while let Some(chunk) = rx.recv().await {
            back.extend_from_slice(&chunk.unwrap());
        }
        reading.await.unwrap().unwrap();
        assert_eq!(back.len(), 4 * BLOCK);
        assert_eq!(&back[..2 * BLOCK], &image[..]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn more_than_the_volume_holds_is_refused() {
        let dir = std::env::temp_dir().join(format!("data-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v");
        std::fs::File::create(&path).unwrap().set_len(10).unwrap();
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(async move { tx.send(Bytes::from(vec![1u8; 11])).await });
        let err = write_file(&path, rx, ZeroBlocks::Skip).await.unwrap_err();
        assert!(
            err.to_string().contains("more than the volume's 10 bytes"),
            "{err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[cfg(test)]
mod changed_chunks_tests {
    use super::ChangedChunks;

    #[test]
    fn extents_become_the_chunks_they_touch_and_runs_of_them() {
        // A 10-byte volume in chunks of 4: extents in chunk 0, across 1 and 2, and past
        // the end (clipped).
        let changed = ChangedChunks::from_extents(4, 10, &[(1, 2), (5, 4), (6, 1), (12, 3)]);
        assert_eq!(changed.chunk_count(), 3);
        assert!(changed.contains(0) && changed.contains(1) && changed.contains(2));
        assert_eq!(changed.ranges(), vec![(0, 10)]);
        let apart = ChangedChunks::from_extents(4, 16, &[(0, 1), (8, 8)]);
        assert!(!apart.contains(1));
        assert_eq!(apart.ranges(), vec![(0, 4), (8, 8)]);
        let none = ChangedChunks::from_extents(4, 16, &[]);
        assert!(none.ranges().is_empty() && !none.contains(0));
    }
}
