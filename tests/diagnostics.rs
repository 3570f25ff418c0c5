//! Which build made a result, and what the harness says about itself when asked (`RUST_LOG`).

use crate::common;
use common::{bin, repo};

/// `queuebench --version`: the version and the commit of this checkout (the tests run from it).
#[test]
fn version_names_the_commit_it_was_built_from() {
    let o = bin().arg("--version").output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(repo("."))
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap();
    let want = format!("queuebench {} ({}", env!("CARGO_PKG_VERSION"), head.trim());
    assert!(text.starts_with(&want), "{text:?} should start with {want:?}");
    let rest = &text[want.len()..];
    assert!(rest == ")\n" || rest == "-dirty)\n", "{text:?}");
}
