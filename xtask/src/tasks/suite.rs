//! Where `cargo test` spends its time (docs/development.md, "CI's time"): the integration suite
//! with libtest's own per-test timing (`--report-time`, unstable: RUSTC_BOOTSTRAP=1 for the test
//! binary only; the build is `cargo test`'s own, so nothing is built again), the slowest tests
//! and the total per module.

use crate::error::{Error, Result};
use crate::qb::{cargo, root};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

pub fn test_times(top: usize, out: Option<&Path>, filter: &[String]) -> Result<()> {
    let raw = match out {
        Some(p) => p.to_path_buf(),
        None => {
            let f =
                tempfile::Builder::new().prefix("qb-test-times.").tempfile().map_err(Error::io("a temporary file"))?;
            f.keep().map_err(|e| Error::io("a temporary file")(e.error))?.1
        }
    };
    let file = std::fs::File::create(&raw).map_err(Error::io(&raw))?;
    let started = Instant::now();
    let suite = build_suite()?;
    let status = Command::new(&suite)
        .args(["-Z", "unstable-options", "--report-time"])
        .args(filter)
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(root())
        .stdout(file.try_clone().map_err(Error::io(&raw))?)
        .stderr(file)
        .status()
        .map_err(|source| Error::Spawn { program: suite.display().to_string(), source })?;
    let code = status.code().unwrap_or(-1);
    println!("suite: exit {code} in {} s (build included); raw output: {}", started.elapsed().as_secs(), raw.display());
    let text = std::fs::read_to_string(&raw).map_err(Error::io(&raw))?;
    let times = timed_lines(&text);
    if times.is_empty() {
        return Err(Error::Failed("no timed test lines found (did the build fail? see the raw output)".into()));
    }
    print!("{}", report(&times, top));
    if code != 0 {
        return Err(Error::Failed(format!("the suite exited {code}")));
    }
    Ok(())
}

/// `cargo test --test suite --no-run`, as built for `cargo test`: the test binary's path.
fn build_suite() -> Result<std::path::PathBuf> {
    let o = Command::new(cargo())
        .args(["test", "--locked", "--test", "suite", "--no-run", "--message-format=json"])
        .current_dir(root())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|source| Error::Spawn { program: "cargo test --no-run".into(), source })?;
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["target"]["name"] == "suite")
        .find_map(|v| v["executable"].as_str().map(std::path::PathBuf::from))
        .ok_or_else(|| Error::Run("cargo test --no-run built no suite binary (see its output above)".into()))
}

/// (seconds, test, result) of every `test NAME ... RESULT <12.345s>` line, slowest first.
fn timed_lines(text: &str) -> Vec<(f64, String, String)> {
    let mut out: Vec<(f64, String, String)> = text
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("test ")?;
            let (name, rest) = rest.split_once(" ... ")?;
            let (result, time) = rest.split_once(" <")?;
            let secs = time.strip_suffix("s>")?.parse().ok()?;
            (!name.contains(' ')).then(|| (secs, name.to_string(), result.to_string()))
        })
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out
}

fn report(times: &[(f64, String, String)], top: usize) -> String {
    let total: f64 = times.iter().map(|t| t.0).sum();
    let mut s = format!("\n{} tests, {total:.0} s of test time in all (two run at once)\n", times.len());
    s.push_str(&format!("\nslowest {}:\n", top.min(times.len())));
    for (t, name, result) in times.iter().take(top) {
        let mark = if result == "ok" { String::new() } else { format!("  ({result})") };
        s.push_str(&format!("  {t:8.1} s  {name}{mark}\n"));
    }
    let mut per: BTreeMap<&str, f64> = BTreeMap::new();
    for (t, name, _) in times {
        *per.entry(name.split("::").next().unwrap_or(name)).or_default() += t;
    }
    let mut per: Vec<_> = per.into_iter().collect();
    per.sort_by(|a, b| b.1.total_cmp(&a.1));
    s.push_str("\nper module:\n");
    for (module, t) in per {
        s.push_str(&format!("  {t:8.1} s  {module}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_lines_are_read_and_summed_per_module() {
        let text = "running 3 tests\ntest a::one ... ok <1.500s>\ntest b::two ... FAILED <3.000s>\n\
                    test a::three ... ok <2.000s>\ntest c::untimed ... ok\n";
        let times = timed_lines(text);
        assert_eq!(times.len(), 3);
        assert_eq!(times[0], (3.0, "b::two".to_string(), "FAILED".to_string()));
        let r = report(&times, 2);
        assert!(r.contains("3 tests, 6 s of test time"), "{r}");
        assert!(r.contains("slowest 2:\n       3.0 s  b::two  (FAILED)\n       2.0 s  a::three\n"), "{r}");
        assert!(r.contains("per module:\n       3.5 s  a\n       3.0 s  b\n"), "{r}");
    }
}
