//! An image file admitted for conversion: its bytes judged by `inspect` first, then
//! `qemu-img info`, told that format, asked what it would open; only a file that names
//! nothing beyond itself gets past both.

use std::path::Path;

use tokio::io::AsyncReadExt;

use super::inspect::{self, Format, ImageRules, Refusal};
use super::qemu;

/// A file that passed: its format and the size of the disk it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub format: Format,
    pub virtual_size: u64,
}

/// Why a file did not pass: refused by the rules, or the check itself failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageFault {
    Refused(Refusal),
    Failed(String),
}

impl From<String> for ImageFault {
    fn from(why: String) -> Self {
        ImageFault::Failed(why)
    }
}

impl From<&str> for ImageFault {
    fn from(why: &str) -> Self {
        ImageFault::Failed(why.to_owned())
    }
}

impl From<Refusal> for ImageFault {
    fn from(refusal: Refusal) -> Self {
        ImageFault::Refused(refusal)
    }
}

impl std::fmt::Display for ImageFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImageFault::Refused(refusal) => write!(f, "the image is refused: {refusal}"),
            ImageFault::Failed(why) => f.write_str(why),
        }
    }
}

/// Up to `inspect::HEAD_BYTES` of the file's first bytes.
pub async fn read_head(path: &Path) -> Result<Vec<u8>, String> {
    let failed = |e: std::io::Error| format!("reading {}: {e}", path.display());
    let file = tokio::fs::File::open(path).await.map_err(failed)?;
    let mut head = Vec::with_capacity(inspect::HEAD_BYTES);
    file.take(inspect::HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .await
        .map_err(failed)?;
    Ok(head)
}

/// Admits the image file at `path`, whose record says `disk_format`.
pub async fn check_file(
    path: &Path,
    disk_format: &str,
    rules: &ImageRules,
) -> Result<Checked, ImageFault> {
    let head = read_head(path).await?;
    let format = inspect::check(&head, disk_format, rules)?;
    if format == Format::Raw {
        let length = tokio::fs::metadata(path)
            .await
            .map_err(|e| format!("reading {}: {e}", path.display()))?
            .len();
        return Ok(Checked {
            format,
            virtual_size: length,
        });
    }
    let info = qemu::info(path, format.qemu_name()).await?;
    confirm(&info, format, path, rules)?;
    Ok(Checked {
        format,
        virtual_size: info.virtual_size,
    })
}

/// What qemu-img says it would open must agree with the inspector: the same format,
/// no backing or data file, and a VMDK of an allowed type reading only from itself.
fn confirm(
    info: &qemu::FileInfo,
    format: Format,
    path: &Path,
    rules: &ImageRules,
) -> Result<(), Refusal> {
    if info.format != format.qemu_name() {
        return Err(Refusal::QemuDisagrees(format!(
            "qemu-img reads a {} file as {}",
            format, info.format
        )));
    }
    if info.backing_file.is_some() {
        return Err(Refusal::BackingFile(format));
    }
    if info.data_file.is_some() {
        return Err(Refusal::DataFile);
    }
    if format == Format::Vmdk {
        let allowed = info
            .create_type
            .as_ref()
            .is_some_and(|t| rules.vmdk_allowed_types.contains(t));
        if !allowed {
            return Err(Refusal::Vmdk("qemu-img reads another create type".into()));
        }
        let itself = path.to_string_lossy();
        if info.extent_files.iter().any(|file| *file != itself) {
            return Err(Refusal::Vmdk("qemu-img would read another file".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(format: &str) -> qemu::FileInfo {
        qemu::FileInfo {
            format: format.into(),
            virtual_size: 1 << 20,
            backing_file: None,
            data_file: None,
            create_type: Some("monolithicSparse".into()),
            extent_files: vec!["/conv/x.vmdk".into()],
        }
    }

    #[test]
    fn qemu_img_must_open_nothing_else() {
        let rules = ImageRules::default();
        let path = Path::new("/conv/x.vmdk");
        assert_eq!(confirm(&info("vmdk"), Format::Vmdk, path, &rules), Ok(()));
        assert_eq!(confirm(&info("vpc"), Format::Vhd, path, &rules), Ok(()));
        let refused = [
            (info("raw"), Format::Vmdk),
            (
                qemu::FileInfo {
                    backing_file: Some("/etc/passwd".into()),
                    ..info("qcow2")
                },
                Format::Qcow2,
            ),
            (
                qemu::FileInfo {
                    data_file: Some("x".into()),
                    ..info("qcow2")
                },
                Format::Qcow2,
            ),
            (
                qemu::FileInfo {
                    create_type: Some("monolithicFlat".into()),
                    ..info("vmdk")
                },
                Format::Vmdk,
            ),
            (
                qemu::FileInfo {
                    extent_files: vec!["/conv/x.vmdk".into(), "/conv/other.passphrase".into()],
                    ..info("vmdk")
                },
                Format::Vmdk,
            ),
        ];
        for (info, format) in refused {
            assert!(confirm(&info, format, path, &rules).is_err(), "{info:?}");
        }
    }
}
