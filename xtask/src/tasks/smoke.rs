//! The smoke gate (`cargo xtask smoke OUT_DIR`; .ci/run runs it through scripts/smoke.sh): every
//! shipped scenario must meet its expectations, and `queuebench check` over its run folder must
//! agree with the run.
//!
//! Every scenarios/*.toml, scenarios/adapters/*.toml and scenarios/clients/*.toml runs with
//! `queuebench run … --quiet` (each starts its own cluster; the clients need clients/install.sh),
//! two at a time; the starvation scenarios afterwards, four together and with nothing else (they
//! measure how far strict priority lets a class fall behind under a given load, and a busy run
//! beside them changes that load; their own load is light); then scenarios/agents/kill-agent.toml
//! with --spawn-agents 3 (the partition-fencing pair needs root and network namespaces:
//! tests/netns.rs runs them). The binary is the debug build, or the one QUEUEBENCH names. A file
//! the test suite already ran with the same flags, passing with `check` agreeing, is not run
//! again when the ledger (`QUEUEBENCH_SMOKE_LEDGER`, `queuebench::model::smoke`) says so.

use crate::error::{Error, Result};
use crate::qb::{Build, Qb, root};
use queuebench::model::smoke::{self, SmokeEntry};
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// One scenario of the gate: the file (relative to the repository) and its flags.
struct Item {
    file: String,
    flags: Vec<String>,
}

pub fn smoke(out: &Path) -> Result<()> {
    std::env::set_current_dir(root()).map_err(Error::io(root()))?;
    std::fs::create_dir_all(out).map_err(Error::io(out))?;
    let qb = Qb::find(Build::Debug)?;
    let ledger = match std::env::var_os(smoke::LEDGER_ENV).filter(|v| !v.is_empty()) {
        Some(path) => smoke::read(Path::new(&path)).map_err(Error::io(PathBuf::from(&path)))?,
        None => Vec::new(),
    };
    let mut shipped = Vec::new();
    for dir in ["scenarios", "scenarios/adapters", "scenarios/clients"] {
        shipped.extend(toml_files(Path::new(dir))?);
    }
    let (starvation, rest): (Vec<String>, Vec<String>) =
        shipped.into_iter().partition(|f| file_name(f).starts_with("starvation-"));
    let plain = |files: Vec<String>| files.into_iter().map(|file| Item { file, flags: vec![] }).collect();
    let gate = Gate { qb: &qb, out, ledger: &ledger };
    let mut ok = gate.run_all(plain(rest), 2);
    ok &= gate.run_all(plain(starvation), 4);
    let agents =
        Item { file: "scenarios/agents/kill-agent.toml".into(), flags: vec!["--spawn-agents".into(), "3".into()] };
    ok &= gate.run_all(vec![agents], 1);
    if !ok {
        return Err(Error::Failed(format!(
            "smoke gate FAILED: see the scenarios marked FAILED above (run folders in {})",
            out.display()
        )));
    }
    println!("smoke gate passed (run folders in {})", out.display());
    Ok(())
}

/// The `*.toml` files of `dir`, sorted, as paths relative to the repository.
fn toml_files(dir: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(Error::io(dir))? {
        let path = entry.map_err(Error::io(dir))?.path();
        if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
            files.push(path.to_string_lossy().into_owned());
        }
    }
    files.sort();
    Ok(files)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

struct Gate<'a> {
    qb: &'a Qb,
    out: &'a Path,
    ledger: &'a [SmokeEntry],
}

impl Gate<'_> {
    /// Every item, `width` at a time; true when all passed and agreed.
    fn run_all(&self, items: Vec<Item>, width: usize) -> bool {
        let queue = Mutex::new(VecDeque::from(items));
        let ok = Mutex::new(true);
        std::thread::scope(|s| {
            for _ in 0..width {
                s.spawn(|| {
                    while let Some(item) = queue.lock().unwrap().pop_front() {
                        let (passed, text) = self.one(&item);
                        // One scenario's lines together, whatever ran beside it.
                        let stdout = std::io::stdout();
                        let mut lock = stdout.lock();
                        let _ = lock.write_all(text.as_bytes());
                        let _ = lock.flush();
                        if !passed {
                            *ok.lock().unwrap() = false;
                        }
                    }
                });
            }
        });
        ok.into_inner().unwrap()
    }

    /// One scenario, then `check` over its run folder; (passed and agreed, what to print).
    fn one(&self, item: &Item) -> (bool, String) {
        let stem = file_name(&item.file).trim_end_matches(".toml");
        if smoke::already_passed(self.ledger, &item.file, &item.flags) {
            return (true, format!("{stem}: passed in cargo test (the same file and flags; check agrees)\n"));
        }
        let parent = Path::new(&item.file).parent().and_then(|p| p.file_name()).map(|p| p.to_string_lossy());
        let dir = self.out.join(format!("{}-{stem}", parent.unwrap_or_default()));
        let start = Instant::now();
        let run = match self.qb.run(Path::new(&item.file), &dir, &item.flags) {
            Ok(run) => run,
            Err(e) => return (false, format!("error: {stem}: {e}\n")),
        };
        let mut text = run.output.trim_end().to_string();
        text.push_str(&format!("   [{} s, exit {}]\n", start.elapsed().as_secs(), run.code));
        let checkable = (0..=1).contains(&run.code) && dir.join("history.csv.gz").is_file();
        if let Some(why) = checkable.then(|| self.disagreement(&dir)).flatten() {
            text.push_str(&format!("  check DISAGREES with the run of {}: {why}\n", item.file));
            return (false, text);
        }
        (run.code == 0, text)
    }

    /// None when `queuebench check DIR --json` agrees with the run; else what it said.
    fn disagreement(&self, dir: &Path) -> Option<String> {
        let o = match self.qb.cmd().arg("check").arg(dir).arg("--json").output() {
            Ok(o) => o,
            Err(e) => return Some(format!("check did not start: {e}")),
        };
        match serde_json::from_slice::<serde_json::Value>(&o.stdout) {
            Ok(v) if v["agrees_with_run"] == true => None,
            Ok(v) => Some(format!("agrees_with_run is {}", v["agrees_with_run"])),
            Err(_) => Some(format!("no JSON from check: {}", String::from_utf8_lossy(&o.stderr).trim())),
        }
    }
}
