//! Turns at changing who may reach a volume, shared by every process on this host: a
//! change is read from the database and applied to tgtd inside one turn, so two
//! processes can never apply what they read in the opposite order. A turn is an
//! exclusive `flock` on one of a fixed set of files beside the volumes.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::PathBuf;

use crate::domain::ids::VolumeId;

/// Volumes share lock files by hash; two volumes sharing one only wait for each other.
const STRIPES: u64 = 64;

#[derive(Debug, Clone)]
pub struct Turns {
    dir: PathBuf,
}

/// A held turn; released when dropped (the file closes, the lock goes with it).
#[derive(Debug)]
pub struct Turn {
    _file: File,
}

impl Turns {
    pub fn new(dir: PathBuf) -> Self {
        Turns { dir }
    }

    fn path(&self, volume_id: VolumeId) -> PathBuf {
        let stripe = volume_id.uuid().as_u128() as u64 % STRIPES;
        self.dir.join(format!("access-{stripe:02}.lock"))
    }

    fn open(&self, volume_id: VolumeId) -> std::io::Result<File> {
        let path = self.path(volume_id);
        let open = || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
        };
        match open() {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&self.dir)?;
                open()
            }
            other => other,
        }
    }

    /// Waits for the volume's turn. Uncontended (the usual case) it is taken right here,
    /// in microseconds; a wait happens on the blocking pool, since `flock` blocks.
    pub async fn take(&self, volume_id: VolumeId) -> std::io::Result<Turn> {
        let file = self.open(volume_id)?;
        match file.try_lock() {
            Ok(()) => return Ok(Turn { _file: file }),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(err)) => return Err(err),
        }
        tokio::task::spawn_blocking(move || {
            file.lock()?;
            Ok(Turn { _file: file })
        })
        .await
        .map_err(std::io::Error::other)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_turn_at_a_time_per_volume() {
        let dir = std::env::temp_dir().join(format!("turns-{}", uuid::Uuid::new_v4()));
        let turns = Turns::new(dir.clone());
        let volume = VolumeId::generate();
        let first = turns.take(volume).await.unwrap();
        let waiting = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take(volume).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !waiting.is_finished(),
            "the second waits while the first holds"
        );
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the second gets its turn")
            .unwrap()
            .unwrap();
        let _ = std::fs::remove_dir_all(dir);
    }
}
