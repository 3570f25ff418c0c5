//! Tells the binary which commit it was built from: `QUEUEBENCH_COMMIT` is the short hash of
//! `HEAD`, with `-dirty` when tracked files differ from it, or `unknown` outside a git checkout
//! of this crate (a crates.io tarball, a source archive, a copy unpacked inside some other
//! repository). `--version` and summary.json's `queuebench_version` carry it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let commit = commit(&manifest).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=QUEUEBENCH_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
}

/// The short hash (and dirty state) of this crate's own checkout, None when there is none.
fn commit(manifest: &Path) -> Option<String> {
    // A checkout whose top level is not this crate is someone else's repository.
    let top = git(manifest, &["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != manifest.canonicalize().ok()? {
        return None;
    }
    watch(manifest);
    let hash = git(manifest, &["rev-parse", "--short", "HEAD"])?;
    // Tracked files that differ from HEAD (untracked files are not counted); `status` compares
    // contents where timestamps alone differ, and writes nothing.
    let out = Command::new("git")
        .args(["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])
        .current_dir(manifest)
        .output()
        .ok()?;
    let clean = out.status.success() && out.stdout.is_empty();
    Some(if clean { hash } else { format!("{hash}-dirty") })
}

/// Runs again when HEAD moves (a checkout, a commit on the branch) or the files change.
/// In a worktree `.git` is a file, so the paths come from git itself.
fn watch(manifest: &Path) {
    let mut paths = vec!["HEAD".to_string(), "packed-refs".to_string(), "index".to_string()];
    if let Some(head_ref) = git(manifest, &["symbolic-ref", "-q", "HEAD"]) {
        paths.push(head_ref);
    }
    for p in paths {
        // A path that does not exist would make cargo run this script on every build.
        if let Some(path) = git(manifest, &["rev-parse", "--git-path", &p]).map(|p| manifest.join(p))
            && path.exists()
        {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    // The dirty flag follows edits that are not staged yet.
    for dir in ["src", "Cargo.toml", "migrations"] {
        println!("cargo:rerun-if-changed={}", manifest.join(dir).display());
    }
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(dir).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}
