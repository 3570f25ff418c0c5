//! Measurements of one mechanism: explore's reset against a template database, and the
//! instructions the harness executes per job (callgrind).

use crate::cluster::{psql, psql_script, url_or_reenter};
use crate::error::{Error, Result};
use crate::qb::{Build, Qb, root, work_dir};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// How fast a schedule can start again from the same state (docs/explore.md): a template database
/// (CREATE DATABASE … TEMPLATE, both strategies, then DROP) against explore's own reset, whose
/// time explore prints as "reset … ms". Makes and drops qb_reset_tpl and qb_reset_copy on URL.
pub fn explore_reset(url: &str, rounds: u32) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let admin = format!("{url}/postgres");
    let cleanup = || {
        let _ = psql(
            &admin,
            &["-c", "DROP DATABASE IF EXISTS qb_reset_copy", "-c", "DROP DATABASE IF EXISTS qb_reset_tpl"],
        );
    };
    cleanup();
    let result = (|| {
        psql(&admin, &["-c", "CREATE DATABASE qb_reset_tpl"])?;
        psql(
            &format!("{url}/qb_reset_tpl"),
            &[
                "-c",
                "CREATE TABLE jobs (id bigserial PRIMARY KEY, status text, payload jsonb, locked_until timestamptz)",
                "-c",
                "INSERT INTO jobs (status) VALUES ('queued')",
            ],
        )?;
        for strategy in ["wal_log", "file_copy"] {
            // One psql session sends every round, so its start is paid once.
            let sql: String = (0..rounds)
                .map(|_| {
                    format!(
                        "CREATE DATABASE qb_reset_copy TEMPLATE qb_reset_tpl STRATEGY {strategy};\nDROP DATABASE qb_reset_copy;\n"
                    )
                })
                .collect();
            let start = Instant::now();
            psql_script(&admin, &sql)?;
            let per = start.elapsed().as_millis() / u128::from(rounds.max(1));
            println!(
                "template database ({strategy}): {per} ms per schedule (create and drop; the sessions would also reconnect)"
            );
        }
        let o = qb
            .cmd()
            .arg("explore")
            .arg(root().join("scenarios/skip-locked.toml"))
            .args(["--database-url", &admin, "--depth", "6", "--time", "30"])
            .output()
            .map_err(|source| Error::Spawn { program: "queuebench explore".into(), source })?;
        let text = String::from_utf8_lossy(&o.stdout);
        // The tally's "reset … ms", wherever explore prints it.
        let line = text.lines().rev().find(|l| l.contains("reset ")).or(text.lines().last()).unwrap_or("");
        let reset = line.rsplit_once("reset ").map_or(line, |(_, r)| r);
        println!("explore's reset: {reset}");
        Ok(())
    })();
    cleanup();
    result
}

/// Instructions the harness executes per job, counted by callgrind (repeatable on a busy machine,
/// unlike wall time; docs/performance.md): two burn-downs of N and 2N jobs under valgrind, and
/// (Ir(2N) − Ir(N)) ÷ N, so setup, checks and reports cancel out; then each function's self cost
/// per job. `hot`: count only the worker threads (run::lanes::lane_main; 2 workers or more).
pub fn callgrind(n: u64, extra: &[String], hot: bool, top: usize, keep: Option<&Path>) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    if !crate::tasks::repeats::which("valgrind") {
        return Err(Error::Usage("valgrind not found: apt-get install valgrind".into()));
    }
    let url = url_or_reenter(&qb, &root().join("bench/server.toml"))?;
    let (work, _tmp) = work_dir(keep)?;
    let ir = |jobs: u64| -> Result<u64> {
        let cg = work.join(format!("cg.{jobs}"));
        let mut cmd = Command::new("valgrind");
        cmd.arg("--tool=callgrind");
        if hot {
            cmd.arg("--toggle-collect=*lanes::lane_main*");
        }
        cmd.arg(format!("--callgrind-out-file={}", cg.display()))
            .arg(&qb.bin)
            .arg("run")
            .arg(root().join("bench/burn-down.toml"))
            .args([
                "--set",
                &format!("jobs.preload={jobs}"),
                "--set",
                "workers.count=8",
                "--set",
                "run.sample_interval=off",
            ])
            .args(extra)
            .args(["--database-url", &url, "--out"])
            .arg(work.join(format!("run.{jobs}")))
            .arg("--quiet");
        let o = cmd.output().map_err(|source| Error::Spawn { program: "valgrind".into(), source })?;
        if !o.status.success() {
            return Err(Error::Run(format!("the run under valgrind failed:\n{}", String::from_utf8_lossy(&o.stderr))));
        }
        let text = std::fs::read_to_string(&cg).map_err(Error::io(&cg))?;
        text.lines()
            .find_map(|l| l.strip_prefix("summary: ").or_else(|| l.strip_prefix("totals: ")))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| Error::Run(format!("{}: no summary line", cg.display())))
    };
    let a = ir(n)?;
    let b = ir(2 * n)?;
    println!("instructions: {n} jobs {a}, {} jobs {b}", 2 * n);
    let what = if hot { "hot path only: the worker threads" } else { "whole process" };
    let settings = if extra.is_empty() { "lease mode, effects on".to_string() } else { extra.join(" ") };
    println!("per job: {} instructions ({what}; settings: {settings})", (b.saturating_sub(a)) / n);
    let (fa, fb) = (self_costs(&work.join(format!("cg.{n}"))), self_costs(&work.join(format!("cg.{}", 2 * n))));
    println!("top functions per job (self instructions, 2N run minus N run, ÷ N):");
    for (per, name) in per_job(&fa, &fb, n).into_iter().take(top) {
        println!("{per:8.0}  {}", name.chars().take(150).collect::<String>());
    }
    Ok(())
}

/// Each function's self instructions in a callgrind file (callgrind_annotate's listing).
fn self_costs(file: &Path) -> BTreeMap<String, u64> {
    let o =
        Command::new("callgrind_annotate").args(["--inclusive=no", "--auto=no", "--threshold=100"]).arg(file).output();
    let text = o.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    annotate_lines(&text)
}

/// `  1,234 (12.3%)  file:function` lines → function → count.
fn annotate_lines(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let (count, rest) = l.split_once(' ')?;
            let count: u64 = count.replace(',', "").parse().ok()?;
            let rest = rest.trim_start().strip_prefix('(')?;
            let (_, name) = rest.split_once(')')?;
            Some((name.trim().to_string(), count))
        })
        .collect()
}

/// (instructions per job, function) where the 2N run spent more than the N run, largest first.
fn per_job(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>, n: u64) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = b
        .iter()
        .map(|(name, &cb)| ((cb as f64 - a.get(name).copied().unwrap_or(0) as f64) / n as f64, name.clone()))
        .filter(|(d, name)| *d > 0.0 && name != "PROGRAM TOTALS")
        .collect();
    out.sort_by(|x, y| y.0.total_cmp(&x.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotate_lines_become_costs_per_job() {
        let a = annotate_lines("  2,000 (10.0%)  src/x.rs:f\n  500 ( 2.5%)  ???:g\nIr  file:function\n");
        let b = annotate_lines(
            "  9,000 (100.0%)  PROGRAM TOTALS\n  5,000 (12.0%)  src/x.rs:f\n  400 ( 1.0%)  ???:g\n  1,000 ( 2.0%)  h\n",
        );
        assert_eq!(a.get("src/x.rs:f"), Some(&2000));
        assert_eq!(per_job(&a, &b, 100), vec![(30.0, "src/x.rs:f".to_string()), (10.0, "h".to_string())]);
    }
}
