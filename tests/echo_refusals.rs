//! No file content echoed, special files refused (docs/safety.md, "Refusals at the boundary").
//! Each test failed on 0.2.0: a scenario whose `adapter` was `/proc/self/environ` (or which was
//! that file, or a link to it) printed every environment variable, `PGPASSWORD` included, in
//! its TOML error; `report` copied a run folder's `scenario.toml` linked to it into
//! report.html; a FIFO hung; a TOML error quoted its line whole, a secret in it too.

use crate::common;
use common::{bin, small_run};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Markers set in queuebench's environment: neither may appear in anything it prints or writes.
const CANARY: &str = "qb-secret-canary-5d1e9a";
const PG_CANARY: &str = "pg-password-canary-83c4f0";

fn with_canaries(cmd: &mut Command) -> &mut Command {
    cmd.env("QB_SECRET_CANARY", CANARY).env("PGPASSWORD", PG_CANARY).env_remove("DATABASE_URL")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn assert_no_canary(what: &str, t: &str) {
    assert!(!t.contains(CANARY) && !t.contains(PG_CANARY), "{what} shows an environment variable:\n{t}");
    assert!(!t.contains("QB_SECRET_CANARY") && !t.contains("PGPASSWORD="), "{what}:\n{t}");
}

/// `queuebench ARGS` with the canaries set, ended (exit -1) if it has not exited within 10 s.
fn within_10_s(args: &[&str], cwd: &Path) -> (i32, String) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut child = with_canaries(&mut bin())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out.reopen().unwrap())
        .stderr(out.reopen().unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code().unwrap_or(-1);
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            break -1;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (code, std::fs::read_to_string(out.path()).unwrap())
}

#[test]
fn proc_self_environ_as_adapter_scenario_or_link_is_refused_naming_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(&s, "name = \"s\"\nadapter = \"/proc/self/environ\"\n[jobs]\npreload = 1\n").unwrap();
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
    for (cmd, file) in [
        ("validate", s.as_path()),
        ("validate", Path::new("/proc/self/environ")),
        ("run", Path::new("/proc/self/environ")),
        ("validate", link.as_path()),
        ("run", link.as_path()),
    ] {
        let (code, t) = within_10_s(&[cmd, file.to_str().unwrap()], dir.path());
        assert_eq!(code, 2, "{cmd} {}: {t}", file.display());
        assert_no_canary(&format!("{cmd} {}", file.display()), &t);
        assert!(t.contains("is a /proc pseudo-file") && t.contains("not a regular file"), "{t}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "a refusal created nothing");
}

#[test]
fn a_fifo_as_scenario_or_adapter_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path of ours.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let s = dir.path().join("s.toml");
    std::fs::write(&s, "name = \"s\"\nadapter = \"fifo.toml\"\n[jobs]\npreload = 1\n").unwrap();
    for (cmd, file) in [("validate", &fifo), ("run", &fifo), ("validate", &s), ("sql", &s)] {
        let (code, t) = within_10_s(&[cmd, file.to_str().unwrap()], dir.path());
        assert_eq!(code, 2, "{cmd} {}: exited within 10 s? {t}", file.display());
        assert!(t.contains("fifo.toml: is a FIFO (named pipe), not a regular file"), "{t}");
    }
}

#[test]
fn a_toml_error_quotes_at_most_60_characters_around_its_column_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    // A 500-character line whose error (text after the closing quote) stands at the secret.
    let line = format!("description = \"{}\" password=hunter2-canary {}", "a".repeat(200), "b".repeat(259));
    assert_eq!(line.chars().count(), 500);
    std::fs::write(&s, format!("name = \"s\"\n{line}\n[jobs]\npreload = 1\n")).unwrap();
    let (code, t) = within_10_s(&["validate", s.to_str().unwrap()], dir.path());
    assert_eq!(code, 2, "{t}");
    assert!(!t.contains("hunter2"), "the secret is masked: {t}");
    assert!(t.contains("s.toml") && t.contains("line 2, column 218"), "file, line and column: {t}");
    let quoted = t.lines().find_map(|l| l.strip_prefix("2 | ")).unwrap_or_else(|| panic!("no excerpt: {t}"));
    assert!(quoted.chars().count() <= 60 && quoted.contains("password=***"), "{quoted}");
    assert!(!t.contains(&"a".repeat(61)) && !t.contains(&"b".repeat(61)), "{t}");
    // A control character (a terminal escape) in the line is shown escaped.
    std::fs::write(&s, "name = \"s\"\nx = \u{1b}[2J\n").unwrap();
    let (code, t) = within_10_s(&["validate", s.to_str().unwrap()], dir.path());
    assert_eq!(code, 2, "{t}");
    assert!(!t.contains('\u{1b}') && t.contains("\\u{1b}"), "{t}");
}

#[test]
fn a_link_to_a_secret_file_is_not_printed_back() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file of ours standing for /etc/shadow: one long secret line.
    let hash = "Zx3Qv9pLm2Rt7Wk4Ny8Bc1Hd6Fg0Js5Ua3Ie9Op2Ly7Tr4Mw8Xn1Vb6Gq0Kz5Sd3Hf7Jc2Ep9Aw4Lu8Yi1Ot6Rn0";
    let shadow = dir.path().join("shadow");
    std::fs::write(&shadow, format!("root:$6$Qm4Xr8Zt$${hash}:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n"))
        .unwrap();
    let link = dir.path().join("s.toml");
    std::os::unix::fs::symlink(&shadow, &link).unwrap();
    let (code, t) = within_10_s(&["validate", link.to_str().unwrap()], dir.path());
    assert_eq!(code, 2, "{t}");
    assert!(t.contains("s.toml") && t.contains("line 1"), "{t}");
    assert!(!t.contains(&hash[..12]) && !t.contains("Qm4Xr8Zt"), "the line is not printed: {t}");
}

#[test]
fn report_check_and_explain_refuse_a_run_folder_file_that_is_a_link() {
    let r = small_run();
    let dir = &r.out;
    std::fs::remove_file(dir.join("scenario.toml")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", dir.join("scenario.toml")).unwrap();
    for cmd in ["report", "check", "explain"] {
        let o = with_canaries(&mut bin()).arg(cmd).arg(dir).output().unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {t}");
        assert_no_canary(cmd, &t);
        assert!(t.contains("scenario.toml: is a symbolic link"), "{cmd}: {t}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_no_canary("report.html", &html);
    // A link to a regular file is refused the same way: report.html embeds nothing read through one.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.toml"), format!("# {CANARY}\n")).unwrap();
    std::fs::remove_file(dir.join("scenario.toml")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("notes.toml"), dir.join("scenario.toml")).unwrap();
    let o = with_canaries(&mut bin()).arg("report").arg(dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_no_canary("report.html", &std::fs::read_to_string(dir.join("report.html")).unwrap());
}
