//! `qemu-img` for the image formats that are not raw: what a file holds (`info`, run under
//! the same address-space and CPU limits Cinder sets, as the file is untrusted) and the
//! conversion to or from raw (`convert`, bounded in time). qemu-img is always told the
//! format (never left to probe), and only after `inspect` judged the file's bytes.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use crate::domain::encryption::LuksCipher;

/// What `qemu-img info` found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    pub format: String,
    pub virtual_size: u64,
    pub backing_file: Option<String>,
    pub data_file: Option<String>,
    /// A VMDK's create type, and the files its extents are read from.
    pub create_type: Option<String>,
    pub extent_files: Vec<String>,
}

/// Cinder's limits for `qemu-img info` on an untrusted file: 1 GiB of address space and
/// 30 s of CPU (a crafted header cannot make it take the host's memory).
const INFO_ADDRESS_SPACE: u64 = 1 << 30;
const INFO_CPU_SECONDS: u64 = 30;

/// The format qemu-img writes for an upload in Glance's `disk_format`.
pub fn output_format(disk_format: &str) -> &str {
    match disk_format {
        "vhd" => "vpc",
        "ploop" => "parallels",
        other => other,
    }
}

fn program() -> Command {
    let mut command = Command::new("qemu-img");
    command.kill_on_drop(true);
    command
}

async fn run(mut command: Command, what: &str, limit: Duration) -> Result<Vec<u8>, String> {
    let output = tokio::time::timeout(limit, command.output())
        .await
        .map_err(|_| format!("{what} took longer than {} s", limit.as_secs()))?
        .map_err(|e| format!("{what} could not run (is qemu-img installed?): {e}"))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        return Err(format!("{what} failed: {}", said.trim()));
    }
    Ok(output.stdout)
}

/// Reads the header of `path` as `format` (qemu-img's name of it).
pub async fn info(path: &Path, format: &str) -> Result<FileInfo, String> {
    let mut command = if which_prlimit() {
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={INFO_ADDRESS_SPACE}"))
            .arg(format!("--cpu={INFO_CPU_SECONDS}"))
            .arg("--")
            .arg("qemu-img");
        c.kill_on_drop(true);
        c
    } else {
        program()
    };
    command
        .args(["info", "-f", format, "--output=json"])
        .arg(path)
        .env("LC_ALL", "C");
    let out = run(command, "qemu-img info", Duration::from_secs(60)).await?;
    parse_info(&out)
}

fn parse_info(out: &[u8]) -> Result<FileInfo, String> {
    let json: Value =
        serde_json::from_slice(out).map_err(|e| format!("qemu-img info said no JSON: {e}"))?;
    let text = |v: &Value| v.as_str().map(str::to_owned);
    Ok(FileInfo {
        format: text(&json["format"]).ok_or("qemu-img info named no format")?,
        virtual_size: json["virtual-size"]
            .as_u64()
            .ok_or("qemu-img info gave no virtual size")?,
        backing_file: text(&json["backing-filename"]),
        data_file: text(&json["format-specific"]["data"]["data-file"]),
        create_type: text(&json["format-specific"]["data"]["create-type"]),
        extent_files: json["format-specific"]["data"]["extents"]
            .as_array()
            .map(|extents| {
                extents
                    .iter()
                    .map(|e| text(&e["filename"]).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn which_prlimit() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("prlimit").is_file()))
}

/// Converts `from` (format `from_format`) into the new file `to` (format `to_format`);
/// zero runs stay holes.
pub async fn convert(
    from: &Path,
    from_format: &str,
    to: &Path,
    to_format: &str,
    limit: Duration,
) -> Result<(), String> {
    let mut command = program();
    command
        .args(["convert", "-f", from_format, "-O", to_format])
        .arg(from)
        .arg(to);
    run(command, "qemu-img convert", limit).await.map(|_| ())
}

/// Converts `from` into the new LUKS file `to`, encrypted with `cipher` under the
/// passphrase in the file `passphrase` (as Cinder's `convert_image` to `luks` does).
pub async fn convert_to_luks(
    from: &Path,
    from_format: &str,
    to: &Path,
    cipher: &LuksCipher,
    passphrase: &Path,
    limit: Duration,
) -> Result<(), String> {
    let spec = format!(
        "cipher-alg={},cipher-mode={},ivgen-alg={}",
        cipher.alg, cipher.mode, cipher.ivgen
    );
    let secret = format!(
        "secret,id=luks_sec,format=raw,file={}",
        passphrase.display()
    );
    let mut tries = 1;
    loop {
        let mut command = program();
        command
            .args(["convert", "-f", from_format, "-O", "luks", "-o", &spec])
            .args(["--object", &secret, "-o", "key-secret=luks_sec"])
            .arg(from)
            .arg(to);
        match run(command, "qemu-img convert to LUKS", limit).await {
            Err(why) if tries < LUKS_TRIES && why.contains(PBKDF_CLOCK_MISSED) => {
                tracing::info!(tries, error = %why, "qemu-img convert to LUKS again");
                tries += 1;
            }
            done => return done.map(|_| ()),
        }
    }
}

/// What qemu-img says when its timing of PBKDF2 for the LUKS header read no CPU time at
/// all (QEMU's `qcrypto_pbkdf2_count_iters` on tick-granular thread CPU time, a busy
/// host): nothing is wrong with the image or the key, and another run measures anew.
const PBKDF_CLOCK_MISSED: &str = "Unable to get accurate CPU usage";
const LUKS_TRIES: u32 = 5;

/// Converts `from` into the existing raw file `to` (a volume, its size kept: `-n`), then
/// makes it durable (qemu-img leaves its writes in the page cache).
pub async fn convert_into_raw(
    from: &Path,
    from_format: &str,
    to: &Path,
    limit: Duration,
) -> Result<(), String> {
    let mut command = program();
    command
        .args(["convert", "-n", "-f", from_format, "-O", "raw"])
        .arg(from)
        .arg(to);
    run(command, "qemu-img convert", limit).await?;
    let file = tokio::fs::OpenOptions::new()
        .write(true)
        .open(to)
        .await
        .map_err(|e| format!("opening {}: {e}", to.display()))?;
    file.sync_all()
        .await
        .map_err(|e| format!("syncing {}: {e}", to.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_json_is_read() {
        let out = br#"{"virtual-size": 1073741824, "filename": "x", "format": "qcow2",
            "backing-filename": "base.img", "format-specific": {"type": "qcow2", "data": {}}}"#;
        let info = parse_info(out).unwrap();
        assert_eq!(info.format, "qcow2");
        assert_eq!(info.virtual_size, 1 << 30);
        assert_eq!(info.backing_file.as_deref(), Some("base.img"));
        assert_eq!(info.data_file, None);
        assert!(info.extent_files.is_empty());
        assert_eq!(output_format("vhd"), "vpc");
        assert_eq!(output_format("qcow2"), "qcow2");
        assert!(parse_info(b"not json").is_err());
        let vmdk = br#"{"virtual-size": 10485760, "filename": "a.vmdk", "format": "vmdk",
            "format-specific": {"type": "vmdk", "data": {"create-type": "monolithicSparse",
            "extents": [{"virtual-size": 10485760, "filename": "a.vmdk", "format": ""}]}}}"#;
        let info = parse_info(vmdk).unwrap();
        assert_eq!(info.create_type.as_deref(), Some("monolithicSparse"));
        assert_eq!(info.extent_files, ["a.vmdk"]);
    }
}
