//! The queuebench binary the tasks drive, and one run of it.

use crate::error::{Error, Result};
use crate::summary;
use queuebench::model::summary::RunSummary;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository's root (xtask/ sits in it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ has a parent").to_path_buf()
}

/// The cargo that runs this task (`cargo xtask` names itself in CARGO), else the one on the PATH.
pub fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Where cargo puts its builds (CARGO_TARGET_DIR, build.target-dir, or target/).
pub fn target_dir() -> Result<PathBuf> {
    let out = Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| Error::Spawn { program: "cargo metadata".into(), source })?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|source| Error::Summary { path: "cargo metadata".into(), source })?;
    v["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| Error::Run("cargo metadata named no target_directory".into()))
}

/// Which build a task runs.
#[derive(Debug, Clone, Copy)]
pub enum Build {
    /// The release build, built (`cargo build --release --bins`) unless QUEUEBENCH names a binary.
    Release,
    /// The debug build as it is (`cargo build` first), unless QUEUEBENCH names a binary.
    Debug,
}

/// A queuebench binary.
#[derive(Debug, Clone)]
pub struct Qb {
    pub bin: PathBuf,
}

/// One finished run: its exit code, folder, what it printed, and its summary when it wrote one.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub out: PathBuf,
    pub output: String,
    pub summary: Option<RunSummary>,
}

impl Run {
    /// The summary, or an error naming the run and what it printed (a table cannot go on).
    pub fn need_summary(&self) -> Result<&RunSummary> {
        self.summary.as_ref().ok_or_else(|| {
            Error::Run(format!(
                "the run into {} exited {} without a summary:\n{}",
                self.out.display(),
                self.code,
                self.output
            ))
        })
    }
}

impl Qb {
    pub fn find(build: Build) -> Result<Qb> {
        if let Some(bin) = std::env::var_os("QUEUEBENCH").filter(|v| !v.is_empty()) {
            return Ok(Qb { bin: bin.into() });
        }
        let target = target_dir()?;
        let bin = match build {
            Build::Release => {
                let status = Command::new(cargo())
                    .args(["build", "--release", "--quiet", "--bins", "-p", "queuebench"])
                    .current_dir(root())
                    .status()
                    .map_err(|source| Error::Spawn { program: "cargo build".into(), source })?;
                if !status.success() {
                    return Err(Error::Run("cargo build --release failed".into()));
                }
                target.join("release/queuebench")
            }
            Build::Debug => target.join("debug/queuebench"),
        };
        if !bin.is_file() {
            return Err(Error::Usage(format!("no binary at {}: run cargo build first", bin.display())));
        }
        Ok(Qb { bin })
    }

    /// A command for this binary.
    pub fn cmd(&self) -> Command {
        Command::new(&self.bin)
    }

    /// `queuebench run SCENARIO --out OUT --quiet ARGS…`, its output captured.
    pub fn run(&self, scenario: &Path, out: &Path, args: &[String]) -> Result<Run> {
        let mut cmd = self.cmd();
        cmd.arg("run").arg(scenario).arg("--out").arg(out).arg("--quiet").args(args);
        self.finish(cmd, out)
    }

    /// Runs `cmd` (a `run` into `out`), its output captured, and reads the summary it left.
    pub fn finish(&self, mut cmd: Command, out: &Path) -> Result<Run> {
        let o = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|source| Error::Spawn { program: self.bin.display().to_string(), source })?;
        let mut output = String::from_utf8_lossy(&o.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&o.stderr));
        let summary = if out.join("summary.json").is_file() { Some(summary::load(out)?) } else { None };
        Ok(Run { code: o.status.code().unwrap_or(-1), out: out.to_path_buf(), output, summary })
    }

    /// `queuebench --version`'s line.
    pub fn version(&self) -> String {
        self.cmd()
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|_| "queuebench (version unknown)".into())
    }
}

/// A scratch folder for run folders, removed at the end unless `keep` names one.
pub fn work_dir(keep: Option<&Path>) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
            Ok((dir.to_path_buf(), None))
        }
        None => {
            let t = tempfile::Builder::new().prefix("qb-xtask.").tempdir().map_err(Error::io("a temporary folder"))?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}
