//! The smoke gate's ledger: the shipped scenarios the test suite already ran exactly as CI's
//! smoke gate runs them (`cargo xtask smoke`, through scripts/smoke.sh), with the run's exit
//! code and whether `queuebench check` agreed. `.ci/run` names the file in
//! `QUEUEBENCH_SMOKE_LEDGER`; tests/common/mod.rs appends an entry after each such run, and the
//! gate skips a file whose entry says it passed with the same flags. One type writes and reads
//! it: a JSON object per line, so no other program has to know a format.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The environment variable that names the ledger file (unset: nothing is written or read).
pub const LEDGER_ENV: &str = "QUEUEBENCH_SMOKE_LEDGER";

/// One run of a shipped scenario, as the smoke gate would have made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmokeEntry {
    /// The scenario file under the repository (`scenarios/skip-locked.toml`).
    pub scenario: String,
    /// The flags besides `--quiet` (none, or `--spawn-agents 3` for the agents' scenarios).
    pub flags: Vec<String>,
    /// The run's exit code.
    pub exit: i32,
    /// `queuebench check` over the run folder agreed with the run.
    pub agrees: bool,
}

impl SmokeEntry {
    /// The gate need not run this file again: it passed (exit 0) and `check` agreed.
    pub fn passed(&self) -> bool {
        self.exit == 0 && self.agrees
    }
}

/// Appends one entry to the ledger at `path` (created when missing).
pub fn append(path: &Path, entry: &SmokeEntry) -> std::io::Result<()> {
    let mut line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    line.push('\n');
    // One write per line, in append mode: tests writing at once never interleave within a line.
    std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(line.as_bytes())
}

/// Every entry of the ledger at `path` (none when the file does not exist). A line that is not
/// an entry is an error naming its line number: the ledger is only ever written by [`append`].
pub fn read(path: &Path) -> std::io::Result<Vec<SmokeEntry>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("line {}: {e}", i + 1)))
        })
        .collect()
}

/// Did the ledger's runs already pass `scenario` with exactly `flags`?
pub fn already_passed(entries: &[SmokeEntry], scenario: &str, flags: &[String]) -> bool {
    entries.iter().any(|e| e.scenario == scenario && e.flags == flags && e.passed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_appended_reads_back_and_only_a_clean_pass_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger");
        assert_eq!(read(&path).unwrap(), vec![], "a missing ledger is empty");
        let entry = |scenario: &str, flags: &[&str], exit, agrees| SmokeEntry {
            scenario: scenario.into(),
            flags: flags.iter().map(|f| f.to_string()).collect(),
            exit,
            agrees,
        };
        let written = [
            entry("scenarios/a.toml", &[], 0, true),
            entry("scenarios/b.toml", &[], 1, true),
            entry("scenarios/c.toml", &[], 0, false),
            entry("scenarios/agents/d.toml", &["--spawn-agents", "3"], 0, true),
        ];
        for e in &written {
            append(&path, e).unwrap();
        }
        let back = read(&path).unwrap();
        assert_eq!(back, written);
        assert!(already_passed(&back, "scenarios/a.toml", &[]));
        assert!(!already_passed(&back, "scenarios/b.toml", &[]), "exit 1 is not a pass");
        assert!(!already_passed(&back, "scenarios/c.toml", &[]), "check disagreed");
        assert!(!already_passed(&back, "scenarios/agents/d.toml", &[]), "other flags");
        assert!(already_passed(&back, "scenarios/agents/d.toml", &["--spawn-agents".into(), "3".into()]));
        std::fs::write(&path, "scenarios/a.toml\t\t0\ttrue\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("line 1:"), "{err}");
    }
}
