//! What an image's bytes are, judged from its first bytes before any tool opens it: the
//! format its headers show (not the one its record claims), and whether that format
//! could make `qemu-img` open anything besides the image itself. The checks are those
//! of Cinder's format inspector (`cinder/image/format_inspector.py`, `image_utils.py`'s
//! `check_qcow2_image` and `check_vmdk_image`), with two more for VMDK: an extent line
//! may name no path, and a sparse header may not hand its extents to the descriptor
//! (capacity 0), as `qemu-img` then opens every file the descriptor names.

use std::fmt;

/// How many leading bytes `check` reads at most: a VMDK's header and its largest
/// embedded descriptor (qemu reads no more than 1 MiB of it).
pub const HEAD_BYTES: usize = VMDK_DESCRIPTOR_AT + VMDK_DESCRIPTOR_MAX;

const VMDK_DESCRIPTOR_AT: usize = 0x200;
const VMDK_DESCRIPTOR_MAX: usize = (1 << 20) - 1;

/// Cinder's `vmdk_allowed_types` default: the single-file sparse VMDKs.
pub const DEFAULT_VMDK_TYPES: &[&str] = &["streamOptimized", "monolithicSparse"];

/// A disk format the inspector knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Raw,
    Qcow2,
    Qed,
    Vhd,
    Vhdx,
    Vmdk,
    Vdi,
}

impl Format {
    /// The name Glance gives the format (`disk_format`).
    pub fn glance_name(self) -> &'static str {
        match self {
            Format::Raw => "raw",
            Format::Qcow2 => "qcow2",
            Format::Qed => "qed",
            Format::Vhd => "vhd",
            Format::Vhdx => "vhdx",
            Format::Vmdk => "vmdk",
            Format::Vdi => "vdi",
        }
    }

    /// The name `qemu-img -f` takes.
    pub fn qemu_name(self) -> &'static str {
        match self {
            Format::Vhd => "vpc",
            other => other.glance_name(),
        }
    }

    /// The format a Glance `disk_format` must hold; `None` for the formats no
    /// inspector reads (`ami`, `ploop`, ...), which are refused.
    pub fn of_disk_format(disk_format: &str) -> Option<Format> {
        Some(match disk_format {
            // An ISO image is plain bytes, as Cinder hands it to qemu-img.
            "raw" | "iso" => Format::Raw,
            "qcow2" => Format::Qcow2,
            "vhd" => Format::Vhd,
            "vhdx" => Format::Vhdx,
            "vmdk" => Format::Vmdk,
            "vdi" => Format::Vdi,
            _ => return None,
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.glance_name())
    }
}

/// The deployment's choices about images (cinder.conf `[DEFAULT]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRules {
    /// `vmdk_allowed_types`: the VMDK create types taken (empty: no VMDK at all).
    pub vmdk_allowed_types: Vec<String>,
    /// `image_conversion_disable`: only images already in the volume's format (raw).
    pub conversion_disabled: bool,
    /// `reserved_image_namespaces`: image properties, beyond Glance's own, that a
    /// volume's upload never copies.
    pub reserved_namespaces: Vec<String>,
}

impl Default for ImageRules {
    fn default() -> Self {
        ImageRules {
            vmdk_allowed_types: DEFAULT_VMDK_TYPES.iter().map(|t| t.to_string()).collect(),
            conversion_disabled: false,
            reserved_namespaces: Vec::new(),
        }
    }
}

/// Why an image is not used. The text is for the log; the user sees a fixed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The record names a format no inspector reads.
    UnknownFormat(String),
    /// The bytes are another format than the record says.
    Mismatch {
        declared: String,
        found: Format,
    },
    /// The image would have to be converted and the deployment forbids it.
    ConversionDisabled(String),
    /// The headers stop before what must be read.
    Truncated(Format),
    BackingFile(Format),
    DataFile,
    UnknownFeatures,
    /// QED is never taken (Cinder's inspector calls it unsafe).
    Qed,
    Vmdk(String),
    /// qemu-img, told the format, reads the file otherwise than the inspector did.
    QemuDisagrees(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::UnknownFormat(format) => {
                write!(f, "the disk format {format:?} cannot be inspected")
            }
            Refusal::Mismatch { declared, found } => write!(
                f,
                "the image format was claimed to be '{declared}' but the image data appears to be {found}"
            ),
            Refusal::ConversionDisabled(format) => write!(
                f,
                "image conversion is disabled and the image's disk format is '{format}', not raw"
            ),
            Refusal::Truncated(format) => write!(f, "the {format} header is cut short"),
            Refusal::BackingFile(format) => write!(f, "the {format} image names a backing file"),
            Refusal::DataFile => f.write_str("the qcow2 image names an external data file"),
            Refusal::UnknownFeatures => f.write_str("the qcow2 image uses unknown features"),
            Refusal::Qed => f.write_str("QED images are not taken"),
            Refusal::Vmdk(why) => write!(f, "the VMDK image is refused: {why}"),
            Refusal::QemuDisagrees(why) => f.write_str(why),
        }
    }
}

/// The format the first bytes show (the magic numbers qemu probes for); `Raw` when none.
pub fn detect(head: &[u8]) -> Format {
    let at = |offset: usize, magic: &[u8]| head.get(offset..offset + magic.len()) == Some(magic);
    if at(0, b"QFI\xfb") {
        Format::Qcow2
    } else if at(0, b"QED\0") {
        Format::Qed
    } else if at(0, b"conectix") {
        Format::Vhd
    } else if at(0, b"vhdxfile") {
        Format::Vhdx
    } else if at(0, b"KDMV") {
        Format::Vmdk
    } else if at(0x40, &0xbeda_107f_u32.to_le_bytes()) {
        Format::Vdi
    } else {
        Format::Raw
    }
}

/// The format an image whose record says `disk_format` must hold, before any byte is
/// read: one an inspector reads, and raw unless the deployment converts images.
pub fn admissible(disk_format: &str, rules: &ImageRules) -> Result<Format, Refusal> {
    let declared =
        Format::of_disk_format(disk_format).ok_or(Refusal::UnknownFormat(disk_format.into()))?;
    if rules.conversion_disabled && disk_format != "raw" {
        return Err(Refusal::ConversionDisabled(disk_format.to_owned()));
    }
    Ok(declared)
}

/// The format of an image whose record says `disk_format`, judged from its first bytes
/// (`head`: up to `HEAD_BYTES` of them), if it is that format and safe to open.
pub fn check(head: &[u8], disk_format: &str, rules: &ImageRules) -> Result<Format, Refusal> {
    let declared = admissible(disk_format, rules)?;
    let found = detect(head);
    if found != declared {
        return Err(Refusal::Mismatch {
            declared: disk_format.to_owned(),
            found,
        });
    }
    check_found(head, rules)
}

/// The format `head` shows, if that format would open nothing but the image itself.
pub fn check_found(head: &[u8], rules: &ImageRules) -> Result<Format, Refusal> {
    let found = detect(head);
    match found {
        Format::Qcow2 => check_qcow2(head)?,
        Format::Qed => return Err(Refusal::Qed),
        Format::Vmdk => check_vmdk(head, &rules.vmdk_allowed_types)?,
        Format::Raw | Format::Vhd | Format::Vhdx | Format::Vdi => {}
    }
    Ok(found)
}

fn be_u32(head: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(head.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(head: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(head.get(at..at + 8)?.try_into().ok()?))
}

fn le_u64(head: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(head.get(at..at + 8)?.try_into().ok()?))
}

/// qcow2: no backing file, and from version 3 no external data file and no
/// incompatible feature beyond those Cinder knows (dirty, corrupt, data file,
/// compression type: bits 0-3).
fn check_qcow2(head: &[u8]) -> Result<(), Refusal> {
    let short = || Refusal::Truncated(Format::Qcow2);
    let version = be_u32(head, 4).ok_or_else(short)?;
    if be_u64(head, 8).ok_or_else(short)? != 0 {
        return Err(Refusal::BackingFile(Format::Qcow2));
    }
    if version < 3 {
        return Ok(()); // version 2 has no feature bits
    }
    let features = be_u64(head, 72).ok_or_else(short)?;
    if features & (1 << 2) != 0 {
        return Err(Refusal::DataFile);
    }
    if features >> 4 != 0 {
        return Err(Refusal::UnknownFeatures);
    }
    Ok(())
}

/// VMDK (version 1 to 3 sparse header): its descriptor where qemu reads it, every line
/// one that Cinder's inspector understands, an allowed create type, no parent, at least
/// one extent and none naming a path, and a capacity of its own.
fn check_vmdk(head: &[u8], allowed: &[String]) -> Result<(), Refusal> {
    let refuse = |why: &str| Err(Refusal::Vmdk(why.to_owned()));
    let short = || Refusal::Truncated(Format::Vmdk);
    let version = u32::from_le_bytes(head.get(4..8).ok_or_else(short)?.try_into().unwrap());
    if !(1..=3).contains(&version) {
        return refuse("unsupported header version");
    }
    let capacity = le_u64(head, 12).ok_or_else(short)?;
    let descriptor_sector = le_u64(head, 28).ok_or_else(short)?;
    let descriptor_sectors = le_u64(head, 36).ok_or_else(short)?;
    if descriptor_sector.saturating_mul(512) != VMDK_DESCRIPTOR_AT as u64 {
        return refuse("the descriptor is not where it belongs");
    }
    if capacity == 0 {
        // qemu would then take the extents from the descriptor, files and all.
        return refuse("the header gives no capacity");
    }
    let length = (descriptor_sectors.saturating_mul(512)).min(VMDK_DESCRIPTOR_MAX as u64) as usize;
    let descriptor = head
        .get(VMDK_DESCRIPTOR_AT..VMDK_DESCRIPTOR_AT + length)
        .ok_or_else(short)?;
    let end = descriptor
        .iter()
        .rposition(|b| *b != 0)
        .map_or(0, |last| last + 1);
    let Ok(text) = std::str::from_utf8(&descriptor[..end]) else {
        return refuse("the descriptor is not text");
    };
    if !text.is_ascii() {
        return refuse("the descriptor is not ASCII");
    }
    // qemu looks for a parent anywhere in the descriptor text, comments included.
    if text.to_ascii_lowercase().contains("parentfilenamehint") {
        return refuse("the descriptor names a parent image");
    }
    let mut create_type = None;
    let mut extents = 0;
    for line in text.split('\n').map(str::trim) {
        let lower = line.to_ascii_lowercase();
        if line.is_empty() || line.starts_with('#') || lower.starts_with("ddb") {
            continue;
        }
        let first_word = lower.split(' ').next().unwrap_or_default();
        if let Some((key, value)) = line.split_once('=').filter(|(k, _)| !k.contains(' ')) {
            if key.eq_ignore_ascii_case("createType") {
                create_type = Some(value.trim().trim_matches('"').to_owned());
            }
        } else if ["rw", "rdonly", "noaccess"].contains(&first_word) {
            if line.contains('/') {
                return refuse("an extent names a path");
            }
            extents += 1;
        } else {
            return refuse("the descriptor has a line no VMDK descriptor holds");
        }
    }
    if extents == 0 {
        return refuse("the descriptor names no extent");
    }
    match create_type {
        Some(kind) if allowed.contains(&kind) => Ok(()),
        Some(_) => refuse("its create type is not one of vmdk_allowed_types"),
        None => refuse("its create type cannot be determined"),
    }
}

#[cfg(test)]
mod tests;
