//! Runs the real `queuebench` binary the way a user does, each run with its
//! own TMPDIR so a test can check that no cluster directory or postgres
//! process was left behind.

#![allow(dead_code)]

pub mod pg;
pub mod pooler;
pub mod schema;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub out: PathBuf,
    pub tmp: tempfile::TempDir,
    _outdir: tempfile::TempDir,
}

impl Run {
    pub fn summary(&self) -> Value {
        let path = self.out.join("summary.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), self.stderr));
        serde_json::from_str(&text).unwrap()
    }

    /// A number from summary.json by dotted path.
    pub fn num(&self, path: &str) -> f64 {
        let mut v = self.summary();
        for part in path.split('.') {
            v = v[part].clone();
        }
        v.as_f64().unwrap_or_else(|| panic!("{path} is not a number in summary.json"))
    }

    /// A check's violation count from summary.json's `checks` list.
    pub fn check(&self, name: &str) -> u64 {
        let summary = self.summary();
        let check = summary["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned();
        let check = check.unwrap_or_else(|| panic!("no check {name} in summary.json"));
        check["violations"].as_u64().unwrap()
    }

    /// Nothing left in the run's TMPDIR and no postgres process using it.
    pub fn assert_clean(&self) {
        let left: Vec<_> = std::fs::read_dir(self.tmp.path()).unwrap().flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "left behind in TMPDIR: {left:?}");
        assert!(postgres_processes_under(self.tmp.path()).is_empty(), "postgres still running");
    }
}

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_queuebench"))
}

pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Fails the test unless the reference client's library is installed (`bash clients/install.sh`,
/// which `scripts/test.sh` and `.ci/run` run first): a test that cannot run is not reported as
/// passed.
pub fn require_client(client: &str) {
    let dep = match client {
        "pg-boss" | "graphile-worker" => format!("clients/{client}/node_modules"),
        "procrastinate" | "pgqueuer" => "clients/.venv/bin/python".into(),
        other => panic!("no reference client {other}"),
    };
    assert!(
        repo(&dep).exists(),
        "{client} is not installed ({dep} missing): run `bash clients/install.sh` (npm and pip, pinned), \
         or run the tests with `scripts/test.sh`, which installs what they use"
    );
}

/// `queuebench ARGS --out <tmp>` with a private TMPDIR; DATABASE_URL is removed
/// unless the test passes --database-url itself.
pub fn queuebench(args: &[&str]) -> Run {
    queuebench_env(args, &[])
}

/// A small finished run folder (skip-locked, 200 jobs).
pub fn small_run() -> Run {
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--set", "jobs.preload=200", "--quiet"]);
    assert!(matches!(r.code, 0 | 1), "{}", r.stderr);
    r
}

/// A test that cannot run here for want of `what` (`root`, `iproute2`, `tmpfs`, `git`,
/// `docker`, `netem`, …) says so and goes on to pass with what it could check. Unless
/// `QUEUEBENCH_STRICT=1`: then it fails, naming what is missing, since a machine that should
/// have everything (CI, `.ci/run`) must not count a test as passed that did not run. What
/// `QUEUEBENCH_ALLOW_MISSING` names (comma-separated, e.g. `docker,netem`) may still be missing.
pub fn missing(what: &str, why: &str) {
    let strict = std::env::var("QUEUEBENCH_STRICT").ok();
    let allowed = std::env::var("QUEUEBENCH_ALLOW_MISSING").unwrap_or_default();
    match skip_or_fail(what, why, strict.as_deref(), &allowed) {
        Ok(line) => eprintln!("{line}"),
        Err(failure) => panic!("{failure}"),
    }
}

/// `missing`'s rule, given the two variables: the line a skip prints, or the failure.
pub fn skip_or_fail(what: &str, why: &str, strict: Option<&str>, allowed: &str) -> Result<String, String> {
    let strict = strict == Some("1");
    let allowed = allowed.split(',').any(|a| a.trim() == what);
    if strict && !allowed {
        return Err(format!(
            "QUEUEBENCH_STRICT=1 and this test needs {what}, which is missing here: {why} \
             (QUEUEBENCH_ALLOW_MISSING={what} lets it pass without)"
        ));
    }
    let note = if strict { " (QUEUEBENCH_ALLOW_MISSING names it)" } else { "" };
    Ok(format!("skipped: needs {what}: {why}{note}"))
}

#[test]
fn a_skip_fails_under_strict_unless_allowed() {
    let why = "cannot mount a tmpfs here";
    assert_eq!(skip_or_fail("tmpfs", why, None, ""), Ok(format!("skipped: needs tmpfs: {why}")));
    assert_eq!(skip_or_fail("tmpfs", why, Some("0"), ""), Ok(format!("skipped: needs tmpfs: {why}")));
    let failure = skip_or_fail("tmpfs", why, Some("1"), "docker, netem").unwrap_err();
    assert!(failure.contains("needs tmpfs, which is missing here: cannot mount a tmpfs here"), "{failure}");
    let allowed = skip_or_fail("netem", why, Some("1"), "docker, netem").unwrap();
    assert!(allowed.starts_with("skipped: needs netem: ") && allowed.ends_with("names it)"), "{allowed}");
    // A name is matched whole: `docker` does not allow `no-docker-engine`.
    assert!(skip_or_fail("no-docker-engine", why, Some("1"), "docker").is_err());
}

/// [`queuebench`] with extra environment variables.
pub fn queuebench_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let outdir = tempfile::tempdir().unwrap();
    let out = outdir.path().join("run");
    let mut cmd = bin();
    cmd.args(args).env("TMPDIR", tmp.path()).env_remove("DATABASE_URL").envs(env.iter().copied());
    if args.first() == Some(&"run") {
        cmd.arg("--out").arg(&out);
    }
    let o: Output = cmd.output().unwrap();
    let run = Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
        out,
        tmp,
        _outdir: outdir,
    };
    if env.is_empty() {
        note_smoke_run(args, &run);
    }
    run
}

/// The smoke ledger (`QUEUEBENCH_SMOKE_LEDGER`, set by `.ci/run`; `queuebench::model::smoke`): a
/// run of a shipped scenario exactly as CI's smoke gate runs it (the file with no other flag than
/// `--quiet`, or `--spawn-agents 3` for the agents' scenarios) is written down with its exit code
/// and whether `queuebench check` agrees with it. The smoke gate (`cargo xtask smoke`) then does
/// not run that file a second time: the same run was judged here. Nothing is written without the
/// variable.
fn note_smoke_run(args: &[&str], run: &Run) {
    use queuebench::model::smoke;
    let Some(ledger) = std::env::var_os(smoke::LEDGER_ENV) else { return };
    let [cmd, file, rest @ ..] = args else { return };
    let shipped = Path::new(file).strip_prefix(repo("")).ok().map(|p| p.to_string_lossy().into_owned());
    let Some(rel) = shipped else { return };
    let hidden = Path::new(&rel).file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
    if *cmd != "run" || !rel.starts_with("scenarios/") || !rel.ends_with(".toml") || hidden {
        return;
    }
    let flags: Vec<&str> = rest.iter().copied().filter(|a| *a != "--quiet").collect();
    let agents = rel.starts_with("scenarios/agents/");
    if !(flags.is_empty() || agents && flags == ["--spawn-agents", "3"]) {
        return;
    }
    let agrees = bin()
        .args(["check", run.out.to_str().unwrap(), "--json"])
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
        .is_some_and(|v| v["agrees_with_run"] == true);
    let entry = smoke::SmokeEntry {
        scenario: rel,
        flags: flags.iter().map(|f| f.to_string()).collect(),
        exit: run.code,
        agrees,
    };
    smoke::append(Path::new(&ledger), &entry).expect("the smoke ledger is writable");
}

/// Processes whose command line holds every one of `words`.
pub fn processes_with(words: &[&str]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let line = String::from_utf8_lossy(&c);
                words.iter().all(|w| line.contains(w))
            })
        })
        .collect()
}

/// PIDs of processes named postgres whose command line mentions `dir`.
pub fn postgres_processes_under(dir: &Path) -> Vec<u32> {
    processes_with(&["postgres", &dir.to_string_lossy()])
}

/// The last `lines` lines of a process's log file, for a failure message that says what the
/// process itself saw ("(no log file)" when it has none yet).
pub fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            let tail = all[all.len().saturating_sub(lines)..].join("\n");
            if tail.is_empty() { "(empty)".into() } else { tail }
        }
        Err(e) => format!("(no log file: {e})"),
    }
}

/// `program` as the postgres system user when the tests run as root (initdb, pg_ctl and
/// PgBouncer refuse root), else as it is. As postgres it starts in `/`, a folder it may enter
/// (the checkout may sit in one only root may enter, such as a `mktemp -d` folder or /root):
/// a caller whose program reads relative paths sets its own folder with `current_dir`.
pub fn as_postgres(program: &str) -> Command {
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", program]).current_dir("/");
        c
    } else {
        Command::new(program)
    }
}
