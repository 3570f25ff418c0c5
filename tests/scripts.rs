//! The scripts under scripts/ find the binary wherever cargo puts it: none names a fixed
//! target/ folder, and scripts/queuebench-bin.sh (which they all call) honours
//! CARGO_TARGET_DIR, relative or absolute.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn target_dir(env: Option<&str>, cwd: &Path) -> String {
    let mut cmd = Command::new(root().join("scripts/queuebench-bin.sh"));
    cmd.arg("--dir").current_dir(cwd);
    match env {
        Some(v) => cmd.env("CARGO_TARGET_DIR", v),
        None => cmd.env_remove("CARGO_TARGET_DIR"),
    };
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn queuebench_bin_honours_cargo_target_dir() {
    let elsewhere = tempfile::tempdir().unwrap();
    let wanted = elsewhere.path().join("my-target");
    assert_eq!(target_dir(Some(wanted.to_str().unwrap()), elsewhere.path()), wanted.display().to_string());
    // Called from another folder, the default is still this checkout's target/.
    assert_eq!(target_dir(None, elsewhere.path()), root().join("target").display().to_string());
}

#[test]
fn no_script_names_a_fixed_target_folder() {
    let mut offenders = Vec::new();
    for dir in ["scripts"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "sh") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split('#').next().unwrap_or("").to_lowercase();
                let fixed = ["target/release", "target}/release", "target/debug", "target}/debug"];
                let via_helper = path.ends_with("queuebench-bin.sh") || code.contains("queuebench-bin.sh");
                if fixed.iter().any(|f| code.contains(f)) && !via_helper {
                    offenders.push(format!("{}:{}: {line}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "scripts that do not find the binary through scripts/queuebench-bin.sh:\n{}",
        offenders.join("\n")
    );
}
