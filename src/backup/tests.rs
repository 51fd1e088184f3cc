use super::manifest::CHUNK;
use super::*;

fn repository() -> (Repository, PathBuf) {
    let dir = std::env::temp_dir().join(format!("backups-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    (Repository::new(dir.clone()), dir)
}

fn location(backup: &str) -> Location {
    Location {
        container: "ab/cd/volume".into(),
        prefix: format!("backup-{backup}"),
        backup_id: backup.into(),
        volume_id: "volume".into(),
    }
}

/// Pseudo-random bytes that do not compress.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

async fn back_up(
    repository: &Repository,
    at: &Location,
    parent: Option<Location>,
    volume: &[u8],
) -> Written {
    let (tx, rx) = mpsc::channel(4);
    let sent = volume.to_vec();
    tokio::spawn(async move {
        for piece in sent.chunks(100_000) {
            tx.send(Ok(Bytes::copy_from_slice(piece))).await.unwrap();
        }
    });
    let record = VolumeRecord {
        name: Some("db".into()),
        ..VolumeRecord::default()
    };
    let progress = Arc::new(Progress::default());
    repository
        .write(
            at.clone(),
            parent,
            VolumeData {
                data: rx,
                changed: None,
            },
            record,
            progress,
        )
        .await
        .unwrap()
}

async fn restore(repository: &Repository, at: &Location) -> Result<Vec<u8>, String> {
    let manifest = Arc::new(repository.manifest(at.clone()).await?);
    let (tx, mut rx) = mpsc::channel(4);
    let progress = Arc::new(Progress::default());
    let reading = tokio::spawn({
        let repository = repository.clone();
        async move { repository.read(manifest, tx, progress).await }
    });
    let mut back = Vec::new();
    while let Some(bytes) = rx.recv().await {
        back.extend_from_slice(&bytes);
    }
    reading.await.unwrap()?;
    Ok(back)
}

#[tokio::test]
async fn an_incremental_backup_stores_only_the_changed_chunks_and_both_restore_exactly() {
    let (repository, dir) = repository();
    // 8 MiB: 2 MiB of noise, zeros, then a compressible MiB.
    let mut volume = vec![0u8; 8 << 20];
    volume[..2 << 20].copy_from_slice(&noise(2 << 20, 7));
    volume[6 << 20..7 << 20].fill(b'a');
    let full = back_up(&repository, &location("full"), None, &volume).await;
    assert_eq!(full.volume_bytes, 8 << 20);
    assert_eq!(full.new_chunks, 8 + 4, "noise and the compressible MiB");
    assert!(full.stored_bytes < (2 << 20) + 100_000, "{full:?}");

    // One chunk of noise changes.
    let before = volume.clone();
    volume[CHUNK * 3..CHUNK * 4].copy_from_slice(&noise(CHUNK, 99));
    let parent = Some(location("full"));
    let incremental = back_up(&repository, &location("incr"), parent, &volume).await;
    assert_eq!(incremental.new_chunks, 1);
    assert!(
        incremental.stored_bytes <= CHUNK as u64 + 100,
        "{incremental:?}"
    );

    assert_eq!(
        restore(&repository, &location("full")).await.unwrap(),
        before
    );
    assert_eq!(
        restore(&repository, &location("incr")).await.unwrap(),
        volume
    );
    let manifest = repository.manifest(location("incr")).await.unwrap();
    assert_eq!(manifest.volume.name.as_deref(), Some("db"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_damaged_chunk_fails_the_restore_and_a_removed_backup_is_gone() {
    let (repository, dir) = repository();
    let volume = noise(4 * CHUNK, 3);
    back_up(&repository, &location("b"), None, &volume).await;
    let data = dir.join(location("b").data_object());
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[CHUNK + 10] ^= 0xff;
    std::fs::write(&data, bytes).unwrap();
    let err = restore(&repository, &location("b")).await.unwrap_err();
    assert!(
        err.contains("chunk 1 of the backup does not match"),
        "{err}"
    );

    repository.remove(location("b")).await.unwrap();
    assert!(!data.exists());
    let err = repository.manifest(location("b")).await.unwrap_err();
    assert!(err.contains("could not read"), "{err}");
    // Removing again is not an error.
    repository.remove(location("b")).await.unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_failed_read_leaves_no_objects() {
    let (repository, dir) = repository();
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        tx.send(Ok(Bytes::from(noise(CHUNK, 5)))).await.unwrap();
        let broken = std::io::Error::other("disk gone");
        tx.send(Err(broken)).await.unwrap();
    });
    let progress = Arc::new(Progress::default());
    let record = VolumeRecord::default();
    let err = repository
        .write(
            location("x"),
            None,
            VolumeData {
                data: rx,
                changed: None,
            },
            record,
            progress,
        )
        .await
        .unwrap_err();
    assert!(err.contains("disk gone"), "{err}");
    let container = dir.join("ab/cd/volume");
    assert_eq!(std::fs::read_dir(container).unwrap().count(), 0);
    std::fs::remove_dir_all(dir).unwrap();
}
