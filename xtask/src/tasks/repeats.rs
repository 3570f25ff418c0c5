//! Tables of repeated runs: the median of each figure, by compare's rule (`crate::stats`).
//! Where the order of the runs does not matter, `queuebench run --repeat N` makes them; where
//! two sides must alternate so a drift of the machine favours neither, the rounds interleave.

use crate::error::{Error, Result};
use crate::qb::{Build, Qb, root, work_dir};
use crate::stats::{Worse, group_medians, median_or_zero, min_max, ratio};
use crate::summary::{load_repeats, metric_of_all};
use queuebench::model::summary::RunSummary;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `--set` pairs as arguments.
pub fn sets(pairs: &[String]) -> Vec<String> {
    pairs.iter().flat_map(|p| ["--set".to_string(), p.clone()]).collect()
}

/// `queuebench run SCENARIO --repeat N` into `out`: every repeat's summary; an error unless every
/// run exited 0.
fn repeated(qb: &Qb, scenario: &Path, out: &Path, n: u32, args: &[String]) -> Result<Vec<RunSummary>> {
    let mut all = vec!["--repeat".to_string(), n.to_string()];
    all.extend_from_slice(args);
    let run = qb.run(scenario, out, &all)?;
    if run.code != 0 {
        return Err(Error::Run(format!("{} exited {}:\n{}", scenario.display(), run.code, run.output)));
    }
    load_repeats(out)
}

const NOISE_METRICS: [&str; 5] = [
    "throughput.jobs_per_sec",
    "throughput.claims_per_sec",
    "latency_ms.claim.p99",
    "latency_ms.complete.p99",
    "latency_ms.end_to_end.p99",
];

/// Run-to-run noise (docs/gating.md's table of default tolerances): each scenario `--repeat
/// RUNS`, then per metric the median, min–max, spread = (max − min) / median, the worst change
/// between two single runs and between the medians of disjoint groups of three runs, in the bad
/// direction. A latency rise under compare's slack is marked `(< 1 ms)`: it would pass.
pub fn noise(runs: u32, raw: Option<&Path>, scenarios: &[PathBuf]) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    let defaults = [root().join("scenarios/skip-locked.toml"), root().join("scenarios/skip-locked-hold.toml")];
    let scenarios = if scenarios.is_empty() { &defaults[..] } else { scenarios };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    eprintln!("queuebench noise: {}, {cores} cores, {runs} runs per scenario", qb.version());
    let mut raw_lines = vec!["scenario,run,metric,value".to_string()];
    let mut rows = Vec::new();
    for scenario in scenarios {
        let name = scenario.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let summaries = repeated(&qb, scenario, &work.join(&name), runs, &[])?;
        for metric in NOISE_METRICS {
            for (k, s) in summaries.iter().enumerate() {
                if let Some(v) = crate::summary::metric(s, metric) {
                    raw_lines.push(format!("{name},{},{metric},{v}", k + 1));
                }
            }
            let values = metric_of_all(&summaries, metric);
            if let Some(row) = noise_row(&name, metric, &values) {
                rows.push(row);
            }
        }
    }
    if let Some(path) = raw {
        std::fs::write(path, raw_lines.join("\n") + "\n").map_err(Error::io(path))?;
    }
    println!("| scenario | metric | runs | median | min–max | spread | worst 1 vs 1 | worst 3 vs 3 |");
    println!("|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

/// One metric's row of the noise table, from its values in run order; None without values.
pub fn noise_row(name: &str, metric: &str, values: &[f64]) -> Option<String> {
    let (lo, hi) = min_max(values)?;
    let m = median_or_zero(values);
    let worse = Worse::of_metric(metric);
    let slack = |lo: f64, hi: f64| if worse.within_slack(lo, hi) { " (< 1 ms)" } else { "" };
    let groups = group_medians(values, 3);
    let three = match min_max(&groups) {
        Some((glo, ghi)) if groups.len() >= 2 => format!("{:.1} %{}", 100.0 * worse.change(glo, ghi), slack(glo, ghi)),
        _ => "–".to_string(),
    };
    let spread = if m > 0.0 { 100.0 * (hi - lo) / m } else { 0.0 };
    Some(format!(
        "| {name} | `{metric}` | {} | {m:.3} | {lo:.3}–{hi:.3} | {spread:.1} % | {:.1} %{} | {three} |",
        values.len(),
        100.0 * worse.change(lo, hi),
        slack(lo, hi)
    ))
}

/// The direct client (a connection per worker) against the sqlx pool at several sizes
/// (docs/pool.md): scenarios/skip-locked.toml with 16 workers, `--repeat ROUNDS` each, medians.
pub fn pool_curve(rounds: u32, sizes: &[u32]) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    let scenario = root().join("scenarios/skip-locked.toml");
    println!("| client | jobs/s (median of {rounds}) | acquire p99 ms | claim p99 ms |\n|---|---:|---:|---:|");
    let mut cells: Vec<(String, Vec<String>)> = vec![("direct (16 connections)".into(), vec![])];
    for size in sizes {
        cells.push((
            format!("pool size {size}"),
            vec![format!("workers.pool={{ size = {size}, acquire_timeout = \"30s\" }}")],
        ));
    }
    for (k, (label, extra)) in cells.iter().enumerate() {
        let mut pairs = vec!["workers.count=16".to_string()];
        pairs.extend(extra.iter().cloned());
        let runs = repeated(&qb, &scenario, &work.join(format!("cell-{k}")), rounds, &sets(&pairs))?;
        let m = |metric: &str| median_or_zero(&metric_of_all(&runs, metric));
        println!(
            "| {label} | {:.0} | {:.2} | {:.2} |",
            m("throughput.jobs_per_sec"),
            m("latency_ms.acquire.p99"),
            m("latency_ms.claim.p99")
        );
    }
    Ok(())
}

/// FOR UPDATE against FOR UPDATE SKIP LOCKED with the transaction held while working:
/// scenarios/for-update-convoy.toml and scenarios/skip-locked-hold.toml `--repeat ROUNDS` each,
/// jobs/s and the ratio of their medians (docs/strategies.md).
pub fn convoy_ratio(rounds: u32) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    let mut medians = Vec::new();
    for name in ["for-update-convoy", "skip-locked-hold"] {
        let runs = repeated(&qb, &root().join(format!("scenarios/{name}.toml")), &work.join(name), rounds, &[])?;
        let jps = metric_of_all(&runs, "throughput.jobs_per_sec");
        let each: Vec<String> = jps.iter().map(|v| format!("{v:.0}")).collect();
        let m = median_or_zero(&jps);
        println!("{name:<20} jobs/s: {}  (median {m:.0})", each.join(" "));
        medians.push(m);
    }
    println!("skip-locked-hold / for-update-convoy = {:.1}x", ratio(medians[1], medians[0]));
    Ok(())
}

/// Alternate the order of two sides by round: round 1 `[a, b]`, round 2 `[b, a]` …
pub fn alternate<T: Copy>(round: u32, a: T, b: T) -> [T; 2] {
    if round % 2 == 1 { [a, b] } else { [b, a] }
}

/// What TLS costs (docs/production-postgres.md): jobs/s of scenarios/skip-locked.toml with TLS
/// against without, the two sides alternating, median of ROUNDS each. `machine`: the service at
/// localhost:5432, sslmode=disable against require (TLS alone); `ephemeral`: queuebench's own
/// cluster, its Unix socket against --tls (TCP and TLS together).
pub fn tls_bench(rounds: u32, targets: &[String], workers: &[u32]) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    // libpq's default files of whoever runs this play no part.
    let home = work.join("home");
    std::fs::create_dir_all(&home).map_err(Error::io(&home))?;
    let scenario = root().join("scenarios/skip-locked.toml");
    let machine = "postgres://root@localhost:5432/postgres";
    println!("| target | workers | without TLS (jobs/s) | with TLS (jobs/s) | with ÷ without |");
    println!("|---|---:|---:|---:|---:|");
    for target in targets {
        let (label, plain, tls): (&str, Vec<String>, Vec<String>) = match target.as_str() {
            "machine" => (
                "localhost:5432, disable vs require",
                vec!["--database-url".into(), format!("{machine}?sslmode=disable")],
                vec!["--database-url".into(), format!("{machine}?sslmode=require")],
            ),
            "ephemeral" => ("ephemeral, Unix socket vs --tls", vec![], vec!["--tls".into()]),
            other => return Err(Error::Usage(format!("unknown target {other} (machine, ephemeral)"))),
        };
        for &w in workers {
            let (mut p, mut t) = (Vec::new(), Vec::new());
            for r in 1..=rounds {
                for side in alternate(r, false, true) {
                    let mut args = sets(&[format!("workers.count={w}")]);
                    args.extend(if side { tls.clone() } else { plain.clone() });
                    let out = work.join(format!("{target}-{w}-{r}-{}", if side { "tls" } else { "plain" }));
                    let mut cmd = qb.cmd();
                    cmd.env("HOME", &home).arg("run").arg(&scenario).arg("--out").arg(&out).arg("--quiet").args(&args);
                    let run = qb.finish(cmd, &out)?;
                    let jps = run.need_summary()?.throughput.jobs_per_sec;
                    if side { t.push(jps) } else { p.push(jps) }
                }
            }
            let (p, t) = (median_or_zero(&p), median_or_zero(&t));
            println!("| {label} | {w} | {p:.0} | {t:.0} | {:.2} |", ratio(t, p));
        }
    }
    println!();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("median of {rounds} rounds each; {}; {cores} cores", qb.version());
    Ok(())
}

/// What PgBouncer costs (docs/production-postgres.md): scenarios/skip-locked.toml direct against
/// through PgBouncer in session and in transaction pooling (a server connection per worker),
/// then pool saturation in transaction pooling; median of ROUNDS interleaved rounds.
pub fn pgbouncer_bench(rounds: u32, workers: &[u32], pools: &[u32]) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    let scenario = root().join("scenarios/skip-locked.toml");
    let mut n = 0;
    // One run → (jobs/s, claim p50, claim p99).
    let mut once = |w: u32, mode: Option<(&str, u32)>| -> Result<[f64; 3]> {
        n += 1;
        let mut pairs = vec![format!("workers.count={w}")];
        if let Some((mode, size)) = mode {
            pairs.push(format!("postgres.pgbouncer.pool_mode={mode}"));
            pairs.push(format!("postgres.pgbouncer.pool_size={size}"));
        }
        let run = qb.run(&scenario, &work.join(format!("run-{n}")), &sets(&pairs))?;
        let s = run.need_summary()?;
        Ok([s.throughput.jobs_per_sec, s.latency_ms.claim.p50, s.latency_ms.claim.p99])
    };
    println!(
        "| workers | direct (jobs/s) | PgBouncer session (jobs/s) | PgBouncer transaction (jobs/s) | transaction ÷ direct |"
    );
    println!("|---:|---:|---:|---:|---:|");
    for &w in workers {
        let mut sides: [Vec<f64>; 3] = Default::default();
        for _ in 0..rounds {
            sides[0].push(once(w, None)?[0]);
            sides[1].push(once(w, Some(("session", w)))?[0]);
            sides[2].push(once(w, Some(("transaction", w)))?[0]);
        }
        let [d, s, t] = sides.map(|v| median_or_zero(&v));
        println!("| {w} | {d:.0} | {s:.0} | {t:.0} | {:.2} |", ratio(t, d));
    }
    println!();
    println!("| workers | pool size (transaction) | jobs/s | claim p50 (ms) | claim p99 (ms) |");
    println!("|---:|---:|---:|---:|---:|");
    for &w in workers {
        let mut sizes: Vec<u32> = pools.iter().copied().chain([w]).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for pool in sizes {
            let mut cols: [Vec<f64>; 3] = Default::default();
            for _ in 0..rounds {
                for (col, v) in cols.iter_mut().zip(once(w, Some(("transaction", pool)))?) {
                    col.push(v);
                }
            }
            let [j, p50, p99] = cols.map(|v| median_or_zero(&v));
            println!("| {w} | {pool} | {j:.0} | {p50:.2} | {p99:.2} |");
        }
    }
    Ok(())
}

/// Agents measured (docs/agents.md#measured): scenarios/skip-locked.toml with 16 workers and
/// JOBS jobs, locally and with 1, 2 and 4 spawned agents (in network namespaces with --netns,
/// as root with iproute2): median jobs/s of ROUNDS, exactly-once, whether the agents' figures
/// add up; then one run of BIG jobs over 4 agents: the merge's cost and the coordinator's memory.
pub fn agents_bench(rounds: u32, jobs: u64, big: Option<u64>, netns: bool) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    let netns = netns && is_root() && which("ip");
    if !netns {
        eprintln!("note: agents run without network namespaces (--no-netns, or not root, or no iproute2)");
    }
    let scenario = root().join("scenarios/skip-locked.toml");
    let base = sets(&["workers.count=16".into(), format!("jobs.preload={jobs}"), "expect={}".into()]);
    let agents_args = |n: u32| {
        let mut a = vec!["--spawn-agents".to_string(), n.to_string()];
        if netns {
            a.push("--netns".into());
        }
        a
    };
    println!(
        "## jobs/s with agents ({jobs} jobs, 16 workers, median of {rounds}; {})",
        if netns { "--netns" } else { "no network namespaces" }
    );
    println!("| agents | jobs/s | exactly once | agents add up |\n|---|---:|---|---|");
    for n in [0, 1, 2, 4] {
        let (mut jps, mut once, mut adds) = (Vec::new(), true, true);
        for r in 1..=rounds {
            let mut args = base.clone();
            if n > 0 {
                args.extend(agents_args(n));
            }
            let run = qb.run(&scenario, &work.join(format!("{n}-{r}")), &args)?;
            let s = run.need_summary()?;
            jps.push(s.throughput.jobs_per_sec);
            once &= s.executions.duplicate == 0 && s.executions.distinct_jobs == jobs;
            adds &= s.agents.iter().map(|a| a.jobs).sum::<u64>() == s.executions.total;
        }
        let yes = |b: bool| if b { "yes" } else { "NO" };
        let label = if n == 0 { "local".to_string() } else { n.to_string() };
        let adds = if n == 0 { "—" } else { yes(adds) };
        println!("| {label} | {:.0} | {} | {adds} |", median_or_zero(&jps), yes(once));
    }
    if let Some(big) = big {
        println!();
        println!("## the merge for {big} jobs over 4 agents");
        let mut args = sets(&[
            "workers.count=16".into(),
            format!("jobs.preload={big}"),
            "expect={}".into(),
            "run.timeout=30m".into(),
        ]);
        args.extend(agents_args(4));
        let run = qb.run(&scenario, &work.join("big"), &args)?;
        let s = run.need_summary()?;
        let evidence: u64 = s.agents.iter().map(|a| a.evidence_bytes).sum();
        println!(
            "| jobs | run s | merge s | evidence uploaded MB | coordinator peak MiB | exactly once |\n|---:|---:|---:|---:|---:|---|"
        );
        println!(
            "| {big} | {:.1} | {:.2} | {:.1} | {:.0} | {} |",
            s.throughput.duration_s,
            s.timings.merge_s,
            evidence as f64 / 1e6,
            s.timings.merge_peak_rss_mib,
            if s.executions.duplicate == 0 { "yes" } else { "NO" }
        );
    }
    std::io::stdout().flush().ok();
    Ok(())
}

fn is_root() -> bool {
    std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Is `program` on the PATH?
pub fn which(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noise_row_takes_compare_s_median_and_the_bad_direction() {
        // Six throughput runs: median 100 (the mean of 98 and 102, compare's rule), spread
        // (110 − 90) / 100, one run against another drops 20 / 110, the groups' medians are
        // 98 (90, 98, 102) and 104 (110, 95, 104): a drop of 6 / 104.
        let v = [90.0, 98.0, 102.0, 110.0, 95.0, 104.0];
        assert_eq!(
            noise_row("s", "throughput.jobs_per_sec", &v).unwrap(),
            "| s | `throughput.jobs_per_sec` | 6 | 100.000 | 90.000–110.000 | 20.0 % | 18.2 % | 5.8 % |"
        );
        // Latency: a rise seen from the lower figure, and under 1 ms it is marked as passing.
        assert_eq!(
            noise_row("s", "latency_ms.claim.p99", &[2.0, 2.5]).unwrap(),
            "| s | `latency_ms.claim.p99` | 2 | 2.250 | 2.000–2.500 | 22.2 % | 25.0 % (< 1 ms) | – |"
        );
        assert_eq!(noise_row("s", "latency_ms.claim.p99", &[]), None);
    }

    #[test]
    fn sides_alternate_by_round() {
        assert_eq!(alternate(1, 'a', 'b'), ['a', 'b']);
        assert_eq!(alternate(2, 'a', 'b'), ['b', 'a']);
        assert_eq!(sets(&["a=1".into(), "b=2".into()]), ["--set", "a=1", "--set", "b=2"]);
    }
}
