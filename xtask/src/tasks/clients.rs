//! The reference clients measured at full speed (docs/clients.md, "At full speed"): the harness's
//! cost per execution (`clients-overhead`), and graphile-worker's own perfTest beside queuebench
//! at the same settings (`graphile-worker-perf`).

use crate::error::{Error, Result};
use crate::qb::{Build, Qb, root};
use crate::stats::median;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One client at its throughput scenario's settings, in one process.
pub struct Client {
    pub name: &'static str,
    pub concurrency: u32,
    pub batch: Option<u32>,
    pub poll_ms: Option<u32>,
    /// The shipped adapter's `observe.remaining`: what is left of the queue.
    pub remaining: &'static str,
}

pub const CLIENTS: [Client; 4] = [
    Client {
        name: "pg-boss",
        concurrency: 4,
        batch: Some(50),
        poll_ms: Some(500),
        remaining: "SELECT count(*) FROM job WHERE state < 'completed'",
    },
    Client {
        name: "graphile-worker",
        concurrency: 24,
        batch: Some(500),
        poll_ms: None,
        remaining: "SELECT count(*) FROM _private_jobs",
    },
    Client {
        name: "procrastinate",
        concurrency: 16,
        batch: None,
        poll_ms: None,
        remaining: "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')",
    },
    Client {
        name: "pgqueuer",
        concurrency: 32,
        batch: Some(16),
        poll_ms: None,
        remaining: "SELECT count(*) FROM pgqueuer WHERE status IN ('queued', 'picked')",
    },
];

impl Client {
    /// "24 handlers, batch 500", as the table's settings column says it.
    pub fn settings(&self) -> String {
        let mut s = format!("{} handlers", self.concurrency);
        if let Some(b) = self.batch {
            s.push_str(&format!(", batch {b}"));
        }
        if let Some(p) = self.poll_ms {
            s.push_str(&format!(", poll {p} ms"));
        }
        s
    }
}

/// The clients `--only` names (comma-separated; empty: all), each known.
pub fn pick(only: &str) -> Result<Vec<&'static Client>> {
    if only.trim().is_empty() {
        return Ok(CLIENTS.iter().collect());
    }
    only.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| {
            CLIENTS.iter().find(|c| c.name == n).ok_or_else(|| {
                let known: Vec<_> = CLIENTS.iter().map(|c| c.name).collect();
                Error::Usage(format!("--only: no client `{n}` (known: {})", known.join(", ")))
            })
        })
        .collect()
}

/// Jobs per second from the first drop of the count (`left0` left at `t0`) to empty at `end`;
/// None when the first count seen below N was already 0 (drained between two polls: nothing timed).
pub fn rate(left0: u64, t0: Instant, end: Instant) -> Option<f64> {
    (left0 > 0).then(|| left0 as f64 / end.duration_since(t0).as_secs_f64().max(1e-6))
}

/// The harness's cost per execution in µs: the time per job with recording less without.
pub fn cost_us(off: f64, on: f64) -> f64 {
    (1.0 / on - 1.0 / off) * 1e6
}

/// 12345.6 → "12,346": a whole number with thousands separators.
pub fn thousands(x: f64) -> String {
    let neg = x < 0.0;
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if neg && digits != "0" { format!("-{out}") } else { out }
}

/// One row of the table from the rounds' rates: compare's median of each side.
pub fn overhead_row(c: &Client, off: &[f64], on: &[f64]) -> Option<String> {
    let (a, b) = (median(off)?, median(on)?);
    Some(format!(
        "| {} | {} | {} | {} | {:.2} | {} µs |",
        c.name,
        c.settings(),
        thousands(a),
        thousands(b),
        b / a,
        thousands(cost_us(a, b))
    ))
}

/// An identifier quoted for SQL (the schema names here are built from the fixed client names).
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn venv_python() -> PathBuf {
    root().join("clients/.venv/bin/python")
}

/// The harness's cost per execution on each reference client: `rounds` rounds of `jobs` jobs,
/// recording on and off in alternating order, on the server DATABASE_URL names or a throw-away
/// cluster.
pub fn clients_overhead(jobs: u64, rounds: u32, only: &str) -> Result<()> {
    let clients = pick(only)?;
    if jobs == 0 || rounds == 0 {
        return Err(Error::Usage("--jobs and --rounds take whole numbers above 0".into()));
    }
    if !venv_python().is_file() {
        return Err(Error::Usage("the reference clients are not installed: bash clients/install.sh".into()));
    }
    let url = match std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()) {
        Some(u) => u,
        None => reenter_in_cluster(&Qb::find(Build::Release)?)?,
    };
    let rt =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(Error::io("a tokio runtime"))?;
    println!("{jobs} jobs, no work time, one worker process, {rounds} round(s), median shown");
    println!();
    println!(
        "| client | settings | jobs/s without recording | jobs/s with recording | ratio | harness cost per execution |"
    );
    println!("|---|---|---|---|---|---|");
    for c in clients {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for r in 0..rounds {
            let order = if r % 2 == 0 { [false, true] } else { [true, false] };
            for record in order {
                let tag = format!("{}{r}", if record { "on" } else { "off" });
                let rate = rt.block_on(one(&url, c, jobs, record, &tag))?;
                if record { on.push(rate) } else { off.push(rate) }
            }
        }
        println!("{}", overhead_row(c, &off, &on).expect("at least one round"));
    }
    Ok(())
}

/// This very task again inside `queuebench cluster -- …` (no scenario: the cluster's defaults,
/// as the script had it); the process exits with its exit code.
fn reenter_in_cluster(qb: &Qb) -> Result<String> {
    let me = std::env::current_exe().map_err(Error::io("the xtask binary"))?;
    let status = qb
        .cmd()
        .arg("cluster")
        .arg("--")
        .arg(me)
        .args(std::env::args_os().skip(1))
        .env("QUEUEBENCH", &qb.bin)
        .status()
        .map_err(|source| Error::Spawn { program: "queuebench cluster".into(), source })?;
    std::process::exit(status.code().unwrap_or(3));
}

fn db_err(what: &str) -> impl FnOnce(tokio_postgres::Error) -> Error + '_ {
    move |e| Error::Run(format!("{what}: {e}"))
}

async fn count(db: &tokio_postgres::Client, sql: &str) -> Result<u64> {
    let row = db.query_one(sql, &[]).await.map_err(db_err(sql))?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// `clients/CLIENT/run` with `env`; a batch or poll setting the client does not take is not
/// inherited either.
fn client_cmd(run: &Path, env: &[(&str, String)]) -> Command {
    let mut cmd = Command::new(run);
    cmd.env_remove("QUEUEBENCH_BATCH").env_remove("QUEUEBENCH_POLL_MS").envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    cmd
}

/// `clients/CLIENT/run ARGS…` to the end, its output dropped.
fn run_client(run: &Path, args: &[&str], env: &[(&str, String)]) -> Result<()> {
    let status = client_cmd(run, env)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .map_err(|source| Error::Spawn { program: run.display().to_string(), source })?;
    if !status.success() {
        return Err(Error::Run(format!("{} {}: {status}", run.display(), args.join(" "))));
    }
    Ok(())
}

/// SIGTERM, as the client expects; SIGKILL 10 s later.
fn stop(worker: &mut Child) {
    let _ = Command::new("kill").arg("-TERM").arg(worker.id().to_string()).status();
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if let Ok(Some(_)) = worker.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = worker.kill();
    let _ = worker.wait();
}

/// One drain of `n` jobs: enqueued through the client's own `run enqueue`, then `run work`
/// timed by the queue's own count of what is left, polled every 5 ms, from its first drop to 0.
async fn one(url: &str, c: &Client, n: u64, record: bool, tag: &str) -> Result<f64> {
    let schema = format!("qb_overhead_{}_{tag}", c.name.replace('-', "_"));
    let run = root().join("clients").join(c.name).join("run");
    let mut env = vec![
        ("QUEUEBENCH_DATABASE_URL", url.to_string()),
        ("QUEUEBENCH_SCHEMA", schema.clone()),
        ("QUEUEBENCH_WORKER", "p1".into()),
        ("QUEUEBENCH_CONCURRENCY", c.concurrency.to_string()),
        ("QUEUEBENCH_WORK_MS", "0".into()),
        ("QUEUEBENCH_EVENTS", "1".into()),
        ("QUEUEBENCH_RECORD", if record { "1" } else { "0" }.into()),
    ];
    if let Some(b) = c.batch {
        env.push(("QUEUEBENCH_BATCH", b.to_string()));
    }
    if let Some(p) = c.poll_ms {
        env.push(("QUEUEBENCH_POLL_MS", p.to_string()));
    }
    let (db, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.map_err(db_err("connect"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let q = ident(&schema);
    let effects_sql = root().join("src/db/sql/adapter_effects.sql");
    let effects_sql = std::fs::read_to_string(&effects_sql).map_err(Error::io(&effects_sql))?;
    db.batch_execute(&format!("DROP SCHEMA IF EXISTS {q} CASCADE; CREATE SCHEMA {q}; SET search_path TO {q}"))
        .await
        .map_err(db_err("create the schema"))?;
    db.batch_execute(&effects_sql).await.map_err(db_err("adapter_effects.sql"))?;
    run_client(&run, &["setup"], &env)?;
    run_client(&run, &["enqueue", &n.to_string()], &env)?;
    let left = count(&db, c.remaining).await?;
    if left != n {
        return Err(Error::Run(format!("{}: {left} jobs waiting after enqueue {n}", c.name)));
    }
    let mut worker = client_cmd(&run, &env)
        .arg("work")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| Error::Spawn { program: run.display().to_string(), source })?;
    // Whole chunks, counted: a reader slower than the worker would fill the pipe and hold the
    // worker's writes up.
    let lines = Arc::new(AtomicU64::new(0));
    let mut pipe = worker.stdout.take().expect("piped");
    let counter = Arc::clone(&lines);
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(k) = pipe.read(&mut buf) {
            if k == 0 {
                break;
            }
            counter.fetch_add(buf[..k].iter().filter(|b| **b == b'\n').count() as u64, Ordering::Relaxed);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut first: Option<(Instant, u64)> = None;
    let drained = loop {
        let left = match count(&db, c.remaining).await {
            Ok(l) => l,
            Err(e) => {
                stop(&mut worker);
                return Err(e);
            }
        };
        let now = Instant::now();
        if first.is_none() && left < n {
            first = Some((now, left));
        }
        if left == 0 {
            break Ok(now);
        }
        if now >= deadline {
            break Err(left);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    stop(&mut worker);
    let _ = reader.join();
    let end = drained.map_err(|left| Error::Run(format!("{}: not drained in 300 s ({left} left)", c.name)))?;
    let effects = count(&db, "SELECT count(*) FROM queuebench_effects").await?;
    db.batch_execute(&format!("DROP SCHEMA {q} CASCADE")).await.map_err(db_err("drop the schema"))?;
    let lines = lines.load(Ordering::Relaxed);
    if record && (effects < n || lines < 2 * n) {
        return Err(Error::Failed(format!(
            "{}: recording on, but {effects} effect rows and {lines} event lines for {n} jobs",
            c.name
        )));
    }
    if !record && (effects > 0 || lines > 0) {
        return Err(Error::Failed(format!(
            "{}: recording off, but {effects} effect rows and {lines} event lines",
            c.name
        )));
    }
    let (t0, left0) = first.expect("the count dropped before it reached 0");
    rate(left0, t0, end).ok_or_else(|| {
        Error::Run(format!(
            "{}: {n} jobs drained between two polls of the count, nothing to time: give more --jobs",
            c.name
        ))
    })
}

/// The installed graphile-worker package (clients/graphile-worker's node_modules).
fn gw_modules() -> PathBuf {
    root().join("clients/graphile-worker/node_modules")
}

/// graphile-worker's own perfTest (its run.js steps, the installed CLI) on a throw-away cluster,
/// then queuebench through clients/graphile-worker at the same settings. `perf_dir` set: the
/// first part only, already inside the cluster, on that copy of perfTest/.
pub fn graphile_worker_perf(jobs: u64, checkout: &Path, perf_dir: Option<&Path>) -> Result<()> {
    if jobs == 0 {
        return Err(Error::Usage("--jobs takes a whole number above 0".into()));
    }
    let modules = gw_modules();
    if let Some(dir) = perf_dir {
        return perf_test(jobs, dir, &modules);
    }
    if !modules.join("graphile-worker").is_dir() {
        return Err(Error::Usage("install the clients first: bash clients/install.sh".into()));
    }
    if !checkout.join("perfTest/run.js").is_file() {
        return Err(Error::Usage(format!(
            "{}: not found (give a checkout of graphile-worker's repository, the 0.17.x line: its perfTest folder is \
             not in the npm package)",
            checkout.join("perfTest/run.js").display()
        )));
    }
    let qb = Qb::find(Build::Release)?;
    let work = tempfile::Builder::new().prefix("qb-gw-perf.").tempdir().map_err(Error::io("a temporary folder"))?;
    let perf = work.path().join("perfTest");
    let status = Command::new("cp")
        .arg("-r")
        .arg(checkout.join("perfTest"))
        .arg(&perf)
        .status()
        .map_err(|source| Error::Spawn { program: "cp".into(), source })?;
    if !status.success() {
        return Err(Error::Run(format!("cp -r {}/perfTest failed", checkout.display())));
    }
    println!("graphile-worker's perfTest (its run.js steps, the installed 0.17.3 CLI):");
    let me = std::env::current_exe().map_err(Error::io("the xtask binary"))?;
    let status = qb
        .cmd()
        .arg("cluster")
        .arg("--")
        .arg(me)
        .args(["graphile-worker-perf", "--jobs", &jobs.to_string(), "--perf-dir"])
        .arg(&perf)
        .arg(checkout)
        .status()
        .map_err(|source| Error::Spawn { program: "queuebench cluster".into(), source })?;
    if !status.success() {
        return Err(Error::Run(format!("the perfTest inside queuebench cluster: {status}")));
    }
    let scenarios = work.path().join("scenarios/clients");
    std::fs::create_dir_all(&scenarios).map_err(Error::io(&scenarios))?;
    let toml = scenarios.join("graphile-worker-perf.toml");
    let client = root().join("clients/graphile-worker");
    let text = format!(
        "name = \"graphile-worker-perf\"\nclient = {client:?}\n[jobs]\npreload = {jobs}\n[workers]\ncount = 4\n\
         concurrency = 24\nbatch = 500\nwork = \"0ms\"\n[run]\nstop = \"drained\"\ntimeout = \"20m\"\nhistory = false\n",
        client = client.display().to_string()
    );
    std::fs::write(&toml, text).map_err(Error::io(&toml))?;
    println!("queuebench, clients/graphile-worker at the same settings (4 processes × 24, batch 500):");
    let run = qb.run(&toml, &work.path().join("run"), &[])?;
    if run.code != 0 {
        let tail: Vec<_> = run.output.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(Error::Run(format!("queuebench run exited {}:\n{}", run.code, tail.join("\n"))));
    }
    let s = run.need_summary()?;
    println!(
        "queuebench: {} jobs completed, {} duplicates, {:.0} jobs/s over {:.1} s",
        s.jobs.completed, s.executions.duplicate, s.throughput.jobs_per_sec, s.throughput.duration_s
    );
    Ok(())
}

/// run.js's jobs/s: N ÷ (drain − startup), in ms.
pub fn perf_rate(jobs: u64, drain_ms: u128, startup_ms: u128) -> Option<f64> {
    (drain_ms > startup_ms).then(|| 1000.0 * jobs as f64 / (drain_ms - startup_ms) as f64)
}

/// graphile-worker's CLI (or node) with perfTest's environment, stderr without the "Failed to
/// load task" noise.
fn gw(dir: &Path, modules: &Path, url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("node");
    cmd.args(args)
        .current_dir(dir)
        .env("PERF_DATABASE_URL", url)
        .env("NO_LOG_SUCCESS", "1")
        .env("NODE_PATH", modules)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn finish(child: Child, what: &str) -> Result<()> {
    let o = child.wait_with_output().map_err(Error::io(what))?;
    for line in String::from_utf8_lossy(&o.stderr).lines().filter(|l| !l.contains("Failed to load task")) {
        eprintln!("{line}");
    }
    if !o.status.success() {
        return Err(Error::Run(format!("{what}: {}", o.status)));
    }
    Ok(())
}

fn spawn(mut cmd: Command, what: &str) -> Result<Child> {
    cmd.spawn().map_err(|source| Error::Spawn { program: what.into(), source })
}

/// perfTest/run.js's steps, inside the cluster (DATABASE_URL set).
fn perf_test(jobs: u64, dir: &Path, modules: &Path) -> Result<()> {
    let url = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Error::Usage("--perf-dir runs inside queuebench cluster (DATABASE_URL is not set)".into()))?;
    let cli = modules.join("graphile-worker/dist/cli.js");
    let cli = cli.to_string_lossy();
    let cli = cli.as_ref();
    finish(spawn(gw(dir, modules, &url, &[cli, "--schema-only"]), "graphile-worker --schema-only")?, "--schema-only")?;
    let t0 = Instant::now();
    finish(spawn(gw(dir, modules, &url, &[cli, "--once"]), "graphile-worker --once")?, "--once")?;
    let startup = t0.elapsed().as_millis();
    finish(spawn(gw(dir, modules, &url, &["./init.js", &jobs.to_string()]), "node init.js")?, "init.js")?;
    let t0 = Instant::now();
    let workers: Vec<Child> = (0..4)
        .map(|_| spawn(gw(dir, modules, &url, &[cli, "--once"]), "graphile-worker --once"))
        .collect::<Result<_>>()?;
    let waits: Vec<_> = workers.into_iter().map(|c| std::thread::spawn(move || finish(c, "--once"))).collect();
    for w in waits {
        w.join().map_err(|_| Error::Run("a worker's thread panicked".into()))??;
    }
    let drain = t0.elapsed().as_millis();
    let left = crate::cluster::psql(&url, &["-Atc", "select count(*) from graphile_worker._private_jobs"])?;
    let rate = perf_rate(jobs, drain, startup)
        .map(|r| format!("{r:.0} jobs/s"))
        .unwrap_or_else(|| "no rate (the drain took no longer than the startup)".into());
    println!(
        "graphile-worker perfTest: {jobs} jobs, drain {drain} ms, startup {startup} ms, {} left: {rate}",
        left.trim()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_row_uses_compares_median_and_the_cost_per_execution() {
        let c = &CLIENTS[1];
        assert_eq!(c.settings(), "24 handlers, batch 500");
        assert_eq!(CLIENTS[0].settings(), "4 handlers, batch 50, poll 500 ms");
        assert_eq!(CLIENTS[2].settings(), "16 handlers");
        // Even count: the mean of the middle two (10,000 and 20,000 → 15,000; 5,000 and 7,000 → 6,000).
        let row = overhead_row(c, &[10_000.0, 40_000.0, 20_000.0, 1_000.0], &[5_000.0, 7_000.0]).unwrap();
        // 1/6000 − 1/15000 s = 100 µs.
        assert_eq!(row, "| graphile-worker | 24 handlers, batch 500 | 15,000 | 6,000 | 0.40 | 100 µs |");
        assert_eq!(overhead_row(c, &[], &[1.0]), None);
        assert!((cost_us(1000.0, 500.0) - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn thousands_and_rates() {
        assert_eq!(thousands(0.4), "0");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1234.5), "1,234");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(thousands(-1500.0), "-1,500");
        let t0 = Instant::now();
        assert!((rate(500, t0, t0 + Duration::from_millis(250)).unwrap() - 2000.0).abs() < 1e-6);
        assert_eq!(rate(0, t0, t0), None, "drained between two polls: no rate, not 0 jobs/s");
        assert_eq!(perf_rate(20_000, 2_000, 1_000), Some(20_000.0));
        assert_eq!(perf_rate(20_000, 1_000, 1_000), None);
    }

    #[test]
    fn only_names_known_clients() {
        assert_eq!(pick("").unwrap().len(), 4);
        let two: Vec<_> = pick("pgqueuer, pg-boss").unwrap().iter().map(|c| c.name).collect();
        assert_eq!(two, ["pgqueuer", "pg-boss"]);
        assert!(matches!(pick("pg-boss,sidekiq"), Err(Error::Usage(m)) if m.contains("sidekiq")));
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }
}
