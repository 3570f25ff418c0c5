//! Least privilege (docs/safety.md): `[postgres.settings]` takes an allow-list of performance
//! and behaviour settings; the scenario's SQL runs as a run role in the ephemeral cluster; in
//! URL mode the summary and the terminal say when the URL's role is a superuser.

use crate::common::{queuebench, repo};

const BASE: &str = "name = \"p\"\n[jobs]\npreload = 20\n[workers]\ncount = 2\n";

/// One setting of each class refused (program, library, file, include), from the file and by
/// `--set`, by `validate` and `run`, with exit 2, the file and line, the setting, why, and where
/// the allow-list is; nothing started, no folder written.
#[test]
fn settings_that_run_programs_load_code_or_choose_files_are_refused() {
    let marker = tempfile::tempdir().unwrap();
    let wrote = marker.path().join("archive-ran");
    for (name, value, why) in [
        ("archive_command", format!("'id > {}'", wrote.display()), "runs a program"),
        ("shared_preload_libraries", "'pg_stat_statements'".into(), "loads code"),
        ("include", "'/etc/passwd'".into(), "chooses a file"),
        ("log_directory", "'/tmp'".into(), "chooses a file"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, format!("{BASE}[postgres.settings]\n{name} = \"{}\"\n", value.trim_matches('\'')))
            .unwrap();
        for cmd in ["validate", "run"] {
            let r = queuebench(&[cmd, path.to_str().unwrap()]);
            let text = format!("{}{}", r.stdout, r.stderr);
            assert_eq!(r.code, 2, "{cmd} {name}: {text}");
            assert!(text.contains("s.toml:7") && text.contains(&format!("postgres.settings.{name}")), "{text}");
            assert!(text.contains(why) && text.contains("docs/safety.md"), "{text}");
            assert!(!r.out.exists(), "{cmd} {name}: a refusal wrote no run folder");
            r.assert_clean();
            let set = format!("postgres.settings.{name}={value}");
            let r = queuebench(&[cmd, repo("scenarios/skip-locked.toml").to_str().unwrap(), "--set", &set]);
            let text = format!("{}{}", r.stdout, r.stderr);
            assert_eq!(r.code, 2, "{cmd} --set {set}: {text}");
            assert!(text.contains(&format!("postgres.settings.{name}")) && text.contains(why), "{text}");
            r.assert_clean();
        }
    }
    assert!(!wrote.exists(), "archive_command ran");
}

/// URL mode keeps the same rule: the settings would only be reported there, but one list holds.
#[test]
fn the_allow_list_holds_in_url_mode_too() {
    let r = queuebench(&[
        "run",
        repo("scenarios/skip-locked.toml").to_str().unwrap(),
        "--database-url",
        "postgres://postgres@127.0.0.1:5432/test",
        "--set",
        "postgres.settings.restore_command='true'",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("postgres.settings.restore_command") && r.stderr.contains("runs a program"),
        "{}",
        r.stderr
    );
}
