//! The harness against pgbench (docs/performance.md): the same statements, the same number of
//! connections, the same server, alternating (who goes first changes every round and, in the
//! grid, every cell). pgbench runs the script of `queuebench sql SCENARIO --pgbench` with
//! run.effects_table = false (it cannot batch the effects INSERT the way the harness does): with
//! the effects ledger "off" the statements per job are identical; "on", the harness also writes
//! the effects table. Both sides run under /usr/bin/time -v against a server that is a child of
//! neither, so their CPU seconds are their own (the harness's include setup, checks and reports).
//! jobs/s: the harness's executions per second of run time; pgbench's tps (a job a transaction).

use crate::cluster::{psql, url_or_reenter};
use crate::error::{Error, Result};
use crate::measure::{cost, timed};
use crate::qb::{Build, Qb, root, work_dir};
use crate::stats::{Goal, median, median_or_zero, per_10k, ratio};
use crate::tasks::repeats::sets;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The grid's shape (`--grid`).
pub struct Grid {
    pub jobs: u64,
    pub rounds: u32,
    pub conns: Vec<u64>,
    pub modes: Vec<String>,
    pub effects: Vec<String>,
}

impl Grid {
    /// The grid from its flags; the lists are separated by commas or spaces (`"2 8 32"`).
    pub fn parse(jobs: u64, rounds: u32, conns: &str, modes: &str, effects: &str) -> Result<Grid> {
        let words = |s: &str| s.split([',', ' ']).filter(|w| !w.is_empty()).map(str::to_string).collect::<Vec<_>>();
        let conns: Vec<u64> = words(conns)
            .iter()
            .map(|c| c.parse().ok().filter(|&n| n > 0))
            .collect::<Option<_>>()
            .ok_or_else(|| Error::Usage(format!("--conns takes whole numbers above 0: {conns}")))?;
        Ok(Grid { jobs, rounds, conns, modes: words(modes), effects: words(effects) })
    }
}

/// The medians of one cell's rounds.
struct Cell {
    harness: f64,
    pgbench: f64,
    ratio: f64,
    harness_cpu_10k: Option<f64>,
    pgbench_cpu_10k: Option<f64>,
}

struct Bench<'a> {
    qb: &'a Qb,
    url: String,
    scenario: PathBuf,
    work: PathBuf,
    rounds: u32,
    /// Counts rounds (folder and schema names) and cells (who goes first).
    n: u32,
    cells: u32,
}

/// One setting: a line per round and the median ratio.
pub fn single(scenario: &Path, rounds: u32, set: &[String]) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let url = url_or_reenter(&qb, scenario)?;
    let (work, _tmp) = work_dir(None)?;
    let mut b = Bench { qb: &qb, url, scenario: scenario.to_path_buf(), work, rounds, n: 0, cells: 1 };
    eprintln!("scenario {}, {rounds} rounds (harness and pgbench alternate)", scenario.display());
    // Both sides without the effects table unless a later --set turns it on.
    let mut pairs = vec!["run.effects_table=false".to_string()];
    pairs.extend_from_slice(set);
    let c = b.cell(&pairs)?;
    println!(
        "median: harness {:.0} jobs/s, pgbench {:.0} jobs/s, ratio {:.3}; CPU s per 10k jobs: harness {}, pgbench {}",
        c.harness,
        c.pgbench,
        c.ratio,
        show(c.harness_cpu_10k),
        show(c.pgbench_cpu_10k)
    );
    println!("median ratio harness/pgbench: {:.3}", c.ratio);
    Ok(())
}

/// The overhead grid of bench/burn-down.toml: a Markdown table, a row per mode × effects ledger ×
/// connection count. Returns the table (also printed).
pub fn grid(g: &Grid) -> Result<String> {
    let qb = Qb::find(Build::Release)?;
    let url = url_or_reenter(&qb, &root().join("bench/server.toml"))?;
    grid_at(&qb, &url, g)
}

/// The grid against `url` (bench: the suite's own cluster).
pub fn grid_at(qb: &Qb, url: &str, g: &Grid) -> Result<String> {
    let (work, _tmp) = work_dir(None)?;
    let scenario = root().join("bench/burn-down.toml");
    let mut b = Bench { qb, url: url.to_string(), scenario, work, rounds: g.rounds, n: 0, cells: 1 };
    let mut table = String::from(
        "| mode | effects ledger | connections | harness jobs/s | pgbench jobs/s | ratio (goal ≥ 0.95) | | harness CPU s / 10k jobs | pgbench CPU s / 10k jobs |\n\
         |---|---|---|---:|---:|---:|---|---:|---:|\n",
    );
    print!("{table}");
    for mode in &g.modes {
        for eff in &g.effects {
            for &c in &g.conns {
                // The preload must divide by the connection count (pgbench -t is per client).
                let j = g.jobs / c * c;
                b.cells += 1;
                eprintln!("  {mode}, effects {eff}, {c} connections, {j} jobs");
                let pairs = [
                    format!("jobs.preload={j}"),
                    format!("workers.count={c}"),
                    format!("workers.mode={mode}"),
                    format!("run.effects_table={}", eff == "on"),
                ];
                let r = b.cell(&pairs)?;
                let row = format!(
                    "| {mode} | {eff} | {c} | {:.0} | {:.0} | {:.3} | {} | {} | {} |\n",
                    r.harness,
                    r.pgbench,
                    r.ratio,
                    Goal::AtLeast(0.95).verdict(r.ratio),
                    show(r.harness_cpu_10k),
                    show(r.pgbench_cpu_10k)
                );
                print!("{row}");
                table.push_str(&row);
            }
        }
    }
    Ok(table)
}

fn show(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.3}"))
}

/// One side's figures of a round.
struct Side {
    jobs_per_sec: f64,
    cpu_s: f64,
    jobs: f64,
}

impl Bench<'_> {
    /// ROUNDS alternating rounds of one setting: the medians.
    fn cell(&mut self, pairs: &[String]) -> Result<Cell> {
        let (mut hs, mut ps, mut rs, mut hc, mut pc) = (vec![], vec![], vec![], vec![], vec![]);
        for r in 1..=self.rounds {
            let harness_first = (r + self.cells).is_multiple_of(2);
            let (h, p) = self.round(harness_first, pairs)?;
            let (hcpu, pcpu) = (per_10k(h.cpu_s, h.jobs), per_10k(p.cpu_s, p.jobs));
            eprintln!(
                "    round {r}: harness {:.0} jobs/s, pgbench {:.0} jobs/s, ratio {:.3}; CPU s/10k jobs harness {}, pgbench {}; jobs done {} / {}",
                h.jobs_per_sec,
                p.jobs_per_sec,
                ratio(h.jobs_per_sec, p.jobs_per_sec),
                show(hcpu),
                show(pcpu),
                h.jobs,
                p.jobs
            );
            hs.push(h.jobs_per_sec);
            ps.push(p.jobs_per_sec);
            rs.push(ratio(h.jobs_per_sec, p.jobs_per_sec));
            hc.extend(hcpu);
            pc.extend(pcpu);
        }
        Ok(Cell {
            harness: median_or_zero(&hs),
            pgbench: median_or_zero(&ps),
            ratio: median_or_zero(&rs),
            harness_cpu_10k: median(&hc),
            pgbench_cpu_10k: median(&pc),
        })
    }

    /// One round: the harness and pgbench, in the order given.
    fn round(&mut self, harness_first: bool, pairs: &[String]) -> Result<(Side, Side)> {
        self.n += 1;
        let d = self.work.join(format!("round-{}", self.n));
        std::fs::create_dir_all(&d).map_err(Error::io(&d))?;
        if harness_first {
            let h = self.harness(&d, pairs)?;
            Ok((h, self.pgbench(&d, pairs)?))
        } else {
            let p = self.pgbench(&d, pairs)?;
            Ok((self.harness(&d, pairs)?, p))
        }
    }

    fn harness(&self, d: &Path, pairs: &[String]) -> Result<Side> {
        let mut cmd = self.qb.cmd();
        cmd.arg("run").arg(&self.scenario).args(sets(pairs)).args(["--database-url", &self.url]);
        cmd.arg("--out").arg(d.join("h")).arg("--quiet");
        let run = self.qb.finish(timed(&d.join("h.time"), &cmd), &d.join("h"))?;
        let s = run.need_summary()?;
        let (cpu_s, _) = cost(&d.join("h.time"))?;
        Ok(Side { jobs_per_sec: s.throughput.jobs_per_sec, cpu_s, jobs: s.executions.total as f64 })
    }

    fn pgbench(&self, d: &Path, pairs: &[String]) -> Result<Side> {
        let o = self
            .qb
            .cmd()
            .arg("sql")
            .arg(&self.scenario)
            .arg("--pgbench")
            .args(sets(pairs))
            .args(["--set", "run.effects_table=false"])
            .output()
            .map_err(|source| Error::Spawn { program: "queuebench sql".into(), source })?;
        let script = String::from_utf8_lossy(&o.stdout).into_owned();
        let script_path = d.join("script.sql");
        std::fs::write(&script_path, &script).map_err(Error::io(&script_path))?;
        let args: Vec<&str> = script
            .lines()
            .find_map(|l| l.strip_prefix("-- pgbench-args: "))
            .map(|a| a.split_whitespace().collect())
            .unwrap_or_default();
        let schema = format!("queuebench_pgbench_{}_{}", std::process::id(), self.n);
        let prep = self
            .qb
            .cmd()
            .arg("prepare")
            .arg(&self.scenario)
            .args(sets(pairs))
            .args(["--database-url", &self.url, "--schema", &schema])
            .output()
            .map_err(|source| Error::Spawn { program: "queuebench prepare".into(), source })?;
        if !prep.status.success() {
            return Err(Error::Run(format!("prepare failed: {}", String::from_utf8_lossy(&prep.stderr))));
        }
        let mut cmd = Command::new("pgbench");
        cmd.args(&args).arg("-f").arg(&script_path).arg(&self.url);
        cmd.env("PGOPTIONS", format!("-c search_path={schema}"));
        let o = timed(&d.join("p.time"), &cmd)
            .output()
            .map_err(|source| Error::Spawn { program: "pgbench".into(), source })?;
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        if !text.contains("number of transactions actually processed") {
            return Err(Error::Run(format!("pgbench failed:\n{text}")));
        }
        let tps =
            text.lines().find_map(|l| l.strip_prefix("tps = ")?.split_whitespace().next()?.parse().ok()).unwrap_or(0.0);
        // The schema name is this task's own (letters, digits and underscores).
        let done =
            psql(&self.url, &["-At", "-c", &format!("SELECT count(*) FROM {schema}.jobs WHERE status = 'done'")])?;
        psql(&self.url, &["-c", &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")])?;
        let (cpu_s, _) = cost(&d.join("p.time"))?;
        Ok(Side { jobs_per_sec: tps, cpu_s, jobs: done.trim().parse().unwrap_or(0.0) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_lists_take_commas_or_spaces() {
        let g = Grid::parse(10, 1, "2 8,32", "lease hold-transaction", "off").unwrap();
        assert_eq!(g.conns, [2, 8, 32]);
        assert_eq!(g.modes, ["lease", "hold-transaction"]);
        assert_eq!(g.effects, ["off"]);
        assert!(Grid::parse(10, 1, "2 x", "lease", "off").is_err());
        assert!(Grid::parse(10, 1, "0", "lease", "off").is_err());
    }
}
