//! The benchmark suite (docs/performance.md): is the harness ever the bottleneck? A Markdown
//! report (also DIR/bench.md) with one table per figure, each with its goal and PASS or MISS,
//! and the machine it ran on. Everything runs against one ephemeral cluster started with
//! bench/server.toml's settings (max_connections 600, fsync and synchronous_commit off, so the
//! database is as fast as it can be and harness overhead shows), or DATABASE_URL if set. The
//! harness always runs in URL mode, so the server is never its child: /usr/bin/time -v counts
//! the harness's own CPU and memory only. `--quick` runs every section small (~2 minutes) to
//! check the task itself; its figures mean nothing. The full suite takes about 20 minutes.

use crate::cluster::{psql, url_or_reenter};
use crate::error::{Error, Result};
use crate::measure::{cost, timed};
use crate::qb::{Build, Qb, root};
use crate::stats::{Goal, median_or_zero, ratio};
use crate::tasks::loops::utc_stamp;
use crate::tasks::repeats::{alternate, sets};
use crate::tasks::vs_pgbench::{Grid, grid_at};
use queuebench::model::summary::RunSummary;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub const SECTIONS: [&str; 6] = ["pgbench", "preload", "verify", "workers", "sampler", "history"];

/// The sizes of one suite: full, or `--quick`.
struct Sizes {
    grid: Grid,
    preload_jobs: u64,
    preload_rounds: u32,
    verify_jobs: u64,
    curve_points: &'static [u32],
    curve_secs: u32,
    curve_jobs: u64,
    sampler_jobs: u64,
    sampler_rounds: u32,
    history_jobs: u64,
    history_rounds: u32,
    history_conns: &'static [u32],
}

fn sizes(quick: bool) -> Sizes {
    let modes = vec!["lease".to_string(), "hold-transaction".to_string()];
    let effects = vec!["off".to_string(), "on".to_string()];
    if quick {
        Sizes {
            grid: Grid { jobs: 4000, rounds: 1, conns: vec![2, 8], modes, effects },
            preload_jobs: 100_000,
            preload_rounds: 1,
            verify_jobs: 50_000,
            curve_points: &[1, 8, 64, 512],
            curve_secs: 2,
            curve_jobs: 20_000,
            sampler_jobs: 5000,
            sampler_rounds: 1,
            history_jobs: 5000,
            history_rounds: 1,
            history_conns: &[2, 8],
        }
    } else {
        Sizes {
            grid: Grid { jobs: 100_000, rounds: 1, conns: vec![2, 8, 32], modes, effects },
            preload_jobs: 1_000_000,
            preload_rounds: 3,
            verify_jobs: 1_000_000,
            curve_points: &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
            curve_secs: 10,
            curve_jobs: 150_000,
            sampler_jobs: 100_000,
            sampler_rounds: 5,
            history_jobs: 100_000,
            history_rounds: 3,
            history_conns: &[2, 8, 32],
        }
    }
}

/// The report: printed and written to DIR/bench.md line by line.
struct Report {
    file: std::fs::File,
}

impl Report {
    fn say(&mut self, text: &str) {
        println!("{text}");
        let _ = writeln!(self.file, "{text}");
    }
}

struct Suite<'a> {
    qb: &'a Qb,
    url: String,
    work: PathBuf,
    scenario: PathBuf,
    r: Report,
}

pub fn bench(quick: bool, out: Option<&Path>, only: &[String], command: &str) -> Result<()> {
    for s in only {
        if !SECTIONS.contains(&s.as_str()) {
            return Err(Error::Usage(format!("unknown section {s} (accepted: {})", SECTIONS.join(","))));
        }
    }
    for tool in ["pgbench", "psql"] {
        if !crate::tasks::repeats::which(tool) {
            return Err(Error::Usage(format!("{tool} not found (apt-get install postgresql-client)")));
        }
    }
    if !Path::new("/usr/bin/time").is_file() {
        return Err(Error::Usage("/usr/bin/time not found (apt-get install time)".into()));
    }
    let qb = Qb::find(Build::Release)?;
    let url = url_or_reenter(&qb, &root().join("bench/server.toml"))?;
    let out = out.map_or_else(|| root().join(format!("results/bench-{}", utc_stamp())), Path::to_path_buf);
    let work = out.join("work");
    std::fs::create_dir_all(&work).map_err(Error::io(&work))?;
    let report = out.join("bench.md");
    let file = std::fs::File::create(&report).map_err(Error::io(&report))?;
    let mut s =
        Suite { qb: &qb, url, work: work.clone(), scenario: root().join("bench/burn-down.toml"), r: Report { file } };
    let z = sizes(quick);
    let started = Instant::now();
    s.machine(quick, command)?;
    let want = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    if want("pgbench") {
        s.pgbench(&z.grid)?;
    }
    if want("preload") {
        s.preload(z.preload_jobs, z.preload_rounds)?;
    }
    if want("verify") {
        s.verify(z.verify_jobs)?;
    }
    if want("workers") {
        s.workers(z.curve_points, z.curve_secs, z.curve_jobs, &out)?;
    }
    if want("sampler") {
        s.sampler(z.sampler_jobs, z.sampler_rounds)?;
    }
    if want("history") {
        s.history(z.history_jobs, z.history_rounds, z.history_conns)?;
    }
    s.r.say(&format!("Total suite time: {} s. Raw runs: `{}`.", started.elapsed().as_secs(), work.display()));
    eprintln!("\nreport: {}", report.display());
    Ok(())
}

/// A line of /proc/cpuinfo or /proc/meminfo.
fn proc_field(file: &str, name: &str) -> String {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(name).map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string()))
        .unwrap_or_else(|| "?".into())
}

fn output_of(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

impl Suite<'_> {
    fn machine(&mut self, quick: bool, command: &str) -> Result<()> {
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let mem_kb: f64 = proc_field("/proc/meminfo", "MemTotal").trim_end_matches(" kB").trim().parse().unwrap_or(0.0);
        let cpu = proc_field("/proc/cpuinfo", "model name");
        let pgv = psql(&self.url, &["-At", "-c", "SHOW server_version"])?;
        let settings = psql(
            &self.url,
            &[
                "-At",
                "-c",
                "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings \
                 WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'max_connections', 'shared_buffers')",
            ],
        )?;
        let quick_note = if quick { " (--quick: a smoke test of the task, the figures mean nothing)" } else { "" };
        self.r.say(&format!("# queuebench benchmark{quick_note}"));
        self.r.say("");
        self.r.say(&format!(
            "Machine: {cores} cores ({cpu}), {:.1} GiB memory, PostgreSQL {} ({}), {}.",
            mem_kb / 1_048_576.0,
            pgv.trim(),
            settings.trim(),
            output_of("uname", &["-sr"])
        ));
        let describe = output_of("git", &["-C", &root().to_string_lossy(), "describe", "--always", "--dirty"]);
        self.r.say(&format!(
            "Release build {describe}, run {}, command `{command}`.",
            output_of("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
        ));
        self.r.say("");
        Ok(())
    }

    /// One harness run of the burn-down into work/NAME with `pairs`: its summary.
    fn run(&self, name: &str, pairs: &[String]) -> Result<RunSummary> {
        let dir = self.work.join(name);
        let mut args = sets(pairs);
        args.extend(["--database-url".to_string(), self.url.clone()]);
        let run = self.qb.run(&self.scenario, &dir, &args)?;
        Ok(run.need_summary()?.clone())
    }

    fn pgbench(&mut self, grid: &Grid) -> Result<()> {
        eprintln!("== pgbench comparison");
        self.r.say("## Harness ÷ pgbench (same SQL, same server)");
        self.r.say("");
        self.r.say(
            "skip-locked, zero work, burn-down, lease mode (claim + complete, two transactions) and hold-transaction",
        );
        self.r.say(
            "mode (one). pgbench runs `queuebench sql --pgbench` without the effects INSERT; with the effects ledger",
        );
        self.r.say(
            "\"on\" the harness also writes the effects table (one INSERT per 64 jobs). CPU: user + system of each",
        );
        self.r.say("process (/usr/bin/time -v), per 10,000 jobs; the harness's includes setup, checks and reports.");
        self.r.say("");
        let table = grid_at(self.qb, &self.url, grid)?;
        let _ = write!(self.r.file, "{table}");
        self.r.say("");
        Ok(())
    }

    fn preload(&mut self, jobs: u64, rounds: u32) -> Result<()> {
        eprintln!("== preload ({jobs} jobs, {rounds} rounds)");
        let (mut hs, mut ps) = (Vec::new(), Vec::new());
        for r in 1..=rounds {
            let (s1, s2) = (
                format!("qb_bench_pre_h_{}_{r}", std::process::id()),
                format!("qb_bench_pre_p_{}_{r}", std::process::id()),
            );
            let (mut h, mut p) = (0.0, 0.0);
            for harness in alternate(r, true, false) {
                if harness {
                    h = self.harness_preload(jobs, &s1)?;
                } else {
                    p = self.plain_preload(jobs, &s2)?;
                }
            }
            eprintln!("    round {r}: harness preload {h} s, plain INSERT … SELECT generate_series {p:.3} s");
            hs.push(h);
            ps.push(p);
        }
        let (h, p) = (median_or_zero(&hs), median_or_zero(&ps));
        let r = ratio(h, p);
        self.r.say("## Preload");
        self.r.say("");
        self.r.say("| jobs | harness preload | plain INSERT … SELECT generate_series | ratio (goal ≤ 1.5) | |");
        self.r.say("|---:|---:|---:|---:|---|");
        self.r.say(&format!("| {jobs} | {h:.3} s | {p:.3} s | {r:.3} | {} |", Goal::AtMost(1.5).verdict(r)));
        self.r.say("");
        self.r.say(&format!(
            "Medians of {rounds} alternating rounds into the same empty table (indexes included); the harness's"
        ));
        self.r.say("time is `timings.preload_s` of summary.json (the INSERT alone, without VACUUM ANALYZE).");
        self.r.say("");
        Ok(())
    }

    /// `queuebench prepare` with JOBS preloaded: the seconds it says the preload took.
    fn harness_preload(&self, jobs: u64, schema: &str) -> Result<f64> {
        let o = self.prepare(&format!("jobs.preload={jobs}"), schema)?;
        drop_schema(&self.url, schema)?;
        // "… (preload 1.234 s) …"
        o.split("(preload ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::Run(format!("prepare did not say how long the preload took:\n{o}")))
    }

    /// The same rows as the harness's preload (src/db/schema.rs PRELOAD), as one plain statement.
    fn plain_preload(&self, jobs: u64, schema: &str) -> Result<f64> {
        // (jobs.preload = 1: a scenario must have work; one row more changes nothing measurable.)
        self.prepare("jobs.preload=1", schema)?;
        let start = Instant::now();
        psql(
            &self.url,
            &[
                "-c",
                &format!("SET search_path = {schema}"),
                "-c",
                &format!(
                    "INSERT INTO jobs (payload, run_at, max_attempts) SELECT jsonb_build_object('n', g), \
                     now() - make_interval(secs => ({jobs} - g) / 1e6), 5 FROM generate_series(1, {jobs}) AS g"
                ),
            ],
        )?;
        let secs = start.elapsed().as_secs_f64();
        drop_schema(&self.url, schema)?;
        Ok(secs)
    }

    fn prepare(&self, set: &str, schema: &str) -> Result<String> {
        let o = self
            .qb
            .cmd()
            .arg("prepare")
            .arg(&self.scenario)
            .args(["--set", set, "--database-url", &self.url, "--schema", schema])
            .output()
            .map_err(|source| Error::Spawn { program: "queuebench prepare".into(), source })?;
        if !o.status.success() {
            return Err(Error::Run(format!("prepare failed: {}", String::from_utf8_lossy(&o.stderr))));
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    fn verify(&mut self, jobs: u64) -> Result<()> {
        eprintln!("== verification over {jobs} jobs");
        let d = self.work.join("verify");
        let mut cmd = self.qb.cmd();
        cmd.arg("run").arg(&self.scenario);
        let pairs = [
            format!("jobs.preload={jobs}"),
            "workers.count=8".into(),
            "workers.batch=100".into(),
            "workers.mode=hold-transaction".into(),
        ];
        cmd.args(sets(&pairs)).args(["--database-url", &self.url]).arg("--out").arg(&d).arg("--quiet");
        let time = self.work.join("verify.time");
        let run = self.qb.finish(timed(&time, &cmd), &d)?;
        if run.code != 0 {
            return Err(Error::Run(format!("the verification run failed:\n{}", run.output)));
        }
        let s = run.need_summary()?;
        let (_, rss) = cost(&time)?;
        let v = s.timings.verify_s;
        self.r.say("## Verification at scale");
        self.r.say("");
        self.r.say(
            "| jobs completed | executions | checker time (goal < 5 s) | | peak harness RSS (goal < 1024 MiB) | |",
        );
        self.r.say("|---:|---:|---:|---|---:|---|");
        self.r.say(&format!(
            "| {} | {} | {v:.3} s | {} | {rss:.0} MiB | {} |",
            s.jobs.completed,
            s.executions.total,
            Goal::AtMost(5.0).verdict(v),
            Goal::AtMost(1024.0).verdict(rss)
        ));
        self.r.say("");
        self.r.say(
            "One burn-down (8 workers, batch 100, hold-transaction), then every checker over its journal and final",
        );
        self.r.say("table: `timings.verify_s`; peak RSS of the whole harness process from /usr/bin/time -v.");
        self.r.say("");
        Ok(())
    }

    fn workers(&mut self, points: &[u32], secs: u32, jobs: u64, out: &Path) -> Result<()> {
        eprintln!("== worker-count curve ({points:?}; {secs} s each)");
        let csv_path = out.join("worker-curve.csv");
        let mut csv = String::from("workers,jobs_per_sec,claim_p50_ms,claim_p99_ms\n");
        self.r.say("## Throughput and claim latency by worker count");
        self.r.say("");
        self.r.say("| workers | jobs/s | claim p50 ms | claim p99 ms | errors | checks | |");
        self.r.say("|---:|---:|---:|---:|---:|---|---|");
        for &w in points {
            let pairs = [
                format!("jobs.preload={jobs}"),
                format!("workers.count={w}"),
                format!("run.stop={secs}s"),
                "run.effects_table=false".into(),
            ];
            let s = self.run(&format!("workers-{w}"), &pairs)?;
            let (jps, p50, p99) = (s.throughput.jobs_per_sec, s.latency_ms.claim.p50, s.latency_ms.claim.p99);
            csv.push_str(&format!("{w},{jps:.0},{p50:.3},{p99:.3}\n"));
            eprintln!("    {w} workers: {jps:.0} jobs/s, claim p50 {p50:.3} ms, p99 {p99:.3} ms");
            let checks = if s.passed { "passed" } else { "FAILED" };
            let verdict = if s.passed && s.errors.total == 0 { "PASS" } else { "MISS" };
            self.r
                .say(&format!("| {w} | {jps:.0} | {p50:.3} | {p99:.3} | {} | {checks} | {verdict} |", s.errors.total));
        }
        std::fs::write(&csv_path, csv).map_err(Error::io(&csv_path))?;
        let curve = self.qb.bin.with_file_name("queuebench-curve");
        let o = std::process::Command::new(&curve).arg(&csv_path).arg(out).output();
        if !o.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("    (no chart: {} did not run; cargo build --release --bins builds it)", curve.display());
        }
        self.r.say("");
        self.r.say(&format!(
            "Each point: skip-locked, lease mode, zero work, {secs} s against a queue that does not run dry; checks"
        ));
        self.r.say(
            "= every checker (exactly once, no lost jobs …) over that run. Charts: `worker-curve-throughput.png`,",
        );
        self.r.say("`worker-curve-claim.png` (and .svg) beside this report; data: `worker-curve.csv`.");
        self.r.say("");
        Ok(())
    }

    fn sampler(&mut self, jobs: u64, rounds: u32) -> Result<()> {
        eprintln!("== sampler and plan probe on/off ({rounds} rounds of {jobs} jobs)");
        let (mut ons, mut offs, mut shares) = (Vec::new(), Vec::new(), Vec::new());
        for r in 1..=rounds {
            for on in alternate(r, true, false) {
                let (side, every) = if on { ("on", "1s") } else { ("off", "off") };
                let pairs = [
                    format!("jobs.preload={jobs}"),
                    "workers.count=8".into(),
                    format!("run.sample_interval={every}"),
                    format!("run.plan_probe={every}"),
                ];
                let s = self.run(&format!("sampler-{side}-{r}"), &pairs)?;
                if on {
                    ons.push(s.throughput.jobs_per_sec);
                    shares.push(100.0 * ratio(s.timings.sampler_s + s.timings.probe_s, s.throughput.duration_s));
                } else {
                    offs.push(s.throughput.jobs_per_sec);
                }
            }
            eprintln!("    round {r}: on {:.0} jobs/s, off {:.0} jobs/s", ons[ons.len() - 1], offs[offs.len() - 1]);
        }
        let (on, off, share) = (median_or_zero(&ons), median_or_zero(&offs), median_or_zero(&shares));
        let cost = (1.0 - ratio(on, off)) * 100.0;
        self.r.say("## Sampler and claim-plan probe");
        self.r.say("");
        self.r.say(&format!(
            "| sampler + probe | jobs/s (median of {rounds}) | throughput cost (goal < 1 %) | | their query time ÷ run time (goal < 1 %) | |"
        ));
        self.r.say("|---|---:|---:|---|---:|---|");
        self.r.say(&format!(
            "| on (1 s, 1 s) | {on:.0} | {cost:.2} % | {} | {share:.4} % | {} |",
            Goal::AtMost(1.0).verdict(cost),
            Goal::AtMost(1.0).verdict(share)
        ));
        self.r.say(&format!("| off | {off:.0} | | | | |"));
        self.r.say("");
        self.r.say("Cost = 1 − on ÷ off (negative: on was faster, i.e. noise). The second figure does not depend on noise: the");
        self.r.say(
            "sampler's and the probe's own round trips (`timings.sampler_s + timings.probe_s`) as a share of the run's",
        );
        self.r.say("wall time — the most time they can take from one connection's worth of the server.");
        self.r.say("");
        Ok(())
    }

    fn history(&mut self, jobs: u64, rounds: u32, conns: &[u32]) -> Result<()> {
        eprintln!("== history on/off ({rounds} rounds of {jobs} jobs at {conns:?} connections)");
        self.r.say("## The history kept");
        self.r.say("");
        self.r.say("| connections | jobs/s on | jobs/s off | jobs/s on ÷ off | writing it (timings.history_s) | ÷ the run's duration (goal ≤ 3 %) | | history.csv.gz | per million events |");
        self.r.say("|---:|---:|---:|---:|---:|---:|---|---:|---:|");
        for &c in conns {
            let (mut ons, mut offs, mut writes, mut shares) = (vec![], vec![], vec![], vec![]);
            let (mut size, mut rows) = (0u64, 0u64);
            for r in 1..=rounds {
                for on in alternate(r, true, false) {
                    let name = format!("history-{c}-{}-{r}", if on { "on" } else { "off" });
                    let pairs =
                        [format!("jobs.preload={jobs}"), format!("workers.count={c}"), format!("run.history={on}")];
                    let s = self.run(&name, &pairs)?;
                    if on {
                        ons.push(s.throughput.jobs_per_sec);
                        writes.push(s.timings.history_s);
                        shares.push(100.0 * ratio(s.timings.history_s, s.throughput.duration_s));
                        let gz = self.work.join(&name).join("history.csv.gz");
                        size = std::fs::metadata(&gz).map_err(Error::io(&gz))?.len();
                        rows = gz_lines(&gz)?.saturating_sub(1);
                    } else {
                        offs.push(s.throughput.jobs_per_sec);
                    }
                }
                eprintln!(
                    "    {c} connections, round {r}: on {:.0} jobs/s, off {:.0} jobs/s",
                    ons[ons.len() - 1],
                    offs[offs.len() - 1]
                );
            }
            let (on, off, write, share) =
                (median_or_zero(&ons), median_or_zero(&offs), median_or_zero(&writes), median_or_zero(&shares));
            let per_million = if rows > 0 { size as f64 / rows as f64 } else { 0.0 };
            self.r.say(&format!(
                "| {c} | {on:.0} | {off:.0} | {:.2} | {write:.3} s | {share:.2} % | {} | {:.1} MB ({rows} events) | {per_million:.1} MB |",
                ratio(on, off),
                Goal::AtMost(3.0).verdict(share),
                size as f64 / 1e6
            ));
        }
        self.r.say("");
        self.r.say(&format!(
            "Medians of {rounds} alternating rounds. The journal the checkers read is recorded during the run"
        ));
        self.r.say(
            "either way; the history is that journal compressed once, after the run, so jobs/s (measured over the",
        );
        self.r.say(
            "run) can only move by noise, and what keeping it costs is the time to write it (`timings.history_s`),",
        );
        self.r.say("shown as a share of the run's own duration.");
        self.r.say("");
        Ok(())
    }
}

fn drop_schema(url: &str, schema: &str) -> Result<()> {
    // The schema names are this task's own (letters, digits and underscores).
    psql(url, &["-c", &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")]).map(drop)
}

/// Lines of a gzipped file.
fn gz_lines(path: &Path) -> Result<u64> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).map_err(Error::io(path))?;
    let mut n = 0;
    for line in std::io::BufReader::new(flate2::read::GzDecoder::new(f)).split(b'\n') {
        line.map_err(Error::io(path))?;
        n += 1;
    }
    Ok(n)
}
