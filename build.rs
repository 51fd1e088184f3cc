//! Records the commit the binary is built from, for `cinder-attach --version`: from
//! `CINDER_ATTACH_BUILD_COMMIT` when set (a container build has no `.git`), else from git
//! when the source is a checkout, else `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|text| !text.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=CINDER_ATTACH_BUILD_COMMIT");
    let given = std::env::var("CINDER_ATTACH_BUILD_COMMIT")
        .ok()
        .filter(|commit| !commit.is_empty());
    let commit = given
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // Built again when HEAD moves: HEAD itself, the branch it names, and packed refs.
    for path in ["HEAD", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(file) = git(&["rev-parse", "--git-path", &branch]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    println!("cargo:rustc-env=CINDER_ATTACH_BUILD_COMMIT={commit}");
}
