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

/// An adapter whose setup runs a program through the server (`COPY … TO PROGRAM`), with a marker
/// file the cluster's operating-system user could write.
fn program_adapter(dir: &std::path::Path, marker: &std::path::Path) -> std::path::PathBuf {
    let adapter = dir.join("a.toml");
    let copy = format!(
        "CREATE INDEX q_ready ON q (n) WHERE state = 'ready';\nCOPY (SELECT 1) TO PROGRAM 'touch {}';",
        marker.display()
    );
    let text = crate::adapters::QUEUE
        .replace("CREATE INDEX q_ready ON q (n) WHERE state = 'ready';", &copy)
        .replace("COMPLETE", "complete = \"UPDATE q SET state = 'done' WHERE id = :id AND state = 'taken'\"");
    assert!(text.contains("TO PROGRAM"), "the adapter runs a program");
    std::fs::write(&adapter, text).unwrap();
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"copy-to-program\"\nadapter = \"a.toml\"\n[jobs]\npreload = 20\n[workers]\ncount = 2\n\
         [run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n",
    )
    .unwrap();
    scenario
}

/// A marker path in /tmp (which the cluster's user may write), removed when dropped.
struct Marker(std::path::PathBuf);

impl Marker {
    fn new() -> Marker {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        Marker(std::path::PathBuf::from(format!("/tmp/queuebench-privilege-{}-{nanos}", std::process::id())))
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// In an ephemeral cluster the adapter's SQL runs as the run role: `COPY … TO PROGRAM` is
/// refused by the server (42501) in `run` and in `validate`, and the program never runs.
#[test]
fn an_adapter_cannot_run_a_program_through_the_ephemeral_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let marker = Marker::new();
    let s = program_adapter(dir.path(), &marker.0);
    for (cmd, code) in [("run", 3), ("validate", 2)] {
        let r = queuebench(&[cmd, s.to_str().unwrap()]);
        let text = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code, code, "{cmd}: {text}");
        assert!(text.contains("42501") && text.contains("COPY to or from an external program"), "{cmd}: {text}");
        assert!(text.contains("runs as queuebench_run") && text.contains("superuser_sql = true"), "{cmd}: {text}");
        assert!(!marker.0.exists(), "{cmd}: the program ran");
        r.assert_clean();
    }
}

/// `[postgres] superuser_sql = true` is the named way out: the setup runs as the superuser (the
/// program runs), and the terminal says so.
#[test]
fn superuser_sql_is_the_named_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let marker = Marker::new();
    let s = program_adapter(dir.path(), &marker.0);
    let r = queuebench(&["run", s.to_str().unwrap(), "--set", "postgres.superuser_sql=true"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(marker.0.exists(), "the superuser's COPY TO PROGRAM ran");
    assert!(r.stderr.contains("superuser_sql = true"), "{}", r.stderr);
    let summary = r.summary();
    assert_eq!(summary["database"]["superuser"], true, "{}", summary["database"]);
    assert_eq!(summary["database"]["sql_role"], "postgres");
    assert!(r.stdout.contains("role postgres is a superuser"), "{}", r.stdout);
}

/// In URL mode the URL's role is used as given; the summary and the terminal say it is a
/// superuser. An ephemeral run says its SQL ran as the run role, not a superuser.
#[test]
fn the_summary_says_whether_the_scenarios_role_is_a_superuser() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(&s, format!("{BASE}[run]\ntimeout = \"60s\"\n")).unwrap();
    let small: [&str; 0] = [];
    let url = ["--database-url", "postgres://postgres@127.0.0.1:5432/test"];
    let r = queuebench(&[&["run", s.to_str().unwrap()], &url[..], &small[..]].concat());
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let summary = r.summary();
    assert_eq!(summary["database"]["superuser"], true, "{}", summary["database"]);
    assert_eq!(summary["database"]["sql_role"], "postgres");
    let line = r.stdout.lines().find(|l| l.trim_start().starts_with("database")).unwrap_or_default();
    assert!(
        line.contains("(role postgres is a superuser: the scenario's SQL runs with every privilege)"),
        "{}",
        r.stdout
    );

    let r = queuebench(&[&["run", s.to_str().unwrap()], &small[..]].concat());
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let summary = r.summary();
    assert_eq!(summary["database"]["superuser"], false, "{}", summary["database"]);
    assert_eq!(summary["database"]["sql_role"], "queuebench_run");
    assert!(!r.stdout.contains("is a superuser"), "{}", r.stdout);

    // validate says it too, of the URL's role that ran the adapter's smoke cycle.
    let marker = Marker::new();
    let adapter_scenario = program_adapter(dir.path(), &marker.0);
    let adapter = dir.path().join("a.toml");
    let harmless = std::fs::read_to_string(&adapter).unwrap().replace("COPY (SELECT 1) TO PROGRAM", "SELECT 1,");
    std::fs::write(&adapter, harmless).unwrap();
    let r = queuebench(&[&["validate", adapter_scenario.to_str().unwrap()], &url[..]].concat());
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("role postgres is a superuser: the scenario's SQL ran with every privilege"),
        "{}",
        r.stderr
    );
    assert!(!marker.0.exists());
}
