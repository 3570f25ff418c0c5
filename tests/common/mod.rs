//! Runs the real `queuebench` binary the way a user does, each run with its
//! own TMPDIR so a test can check that no cluster directory or postgres
//! process was left behind.

#![allow(dead_code)]

pub mod pg;
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

/// `queuebench ARGS --out <tmp>` with a private TMPDIR; DATABASE_URL is removed
/// unless the test passes --database-url itself.
pub fn queuebench(args: &[&str]) -> Run {
    queuebench_env(args, &[])
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
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
        out,
        tmp,
        _outdir: outdir,
    }
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
