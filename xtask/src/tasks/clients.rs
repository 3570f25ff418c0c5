//! The harness's cost per execution on the reference clients (docs/clients.md, "At full speed"):
//! `clients-overhead`.

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
        // The cluster's defaults, as the script had it.
        None => crate::cluster::url_or_reenter_with(&Qb::find(Build::Release)?, None)?,
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

/// The client's environment at its settings, into `schema`.
fn client_env(url: &str, c: &Client, schema: &str, record: bool) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("QUEUEBENCH_DATABASE_URL", url.to_string()),
        ("QUEUEBENCH_SCHEMA", schema.to_string()),
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
    env
}

/// One drain of `n` jobs: enqueued through the client's own `run enqueue`, then `run work`
/// timed by the queue's own count of what is left, polled every 5 ms, from its first drop to 0.
async fn one(url: &str, c: &Client, n: u64, record: bool, tag: &str) -> Result<f64> {
    let schema = format!("qb_overhead_{}_{tag}", c.name.replace('-', "_"));
    let run = root().join("clients").join(c.name).join("run");
    let env = client_env(url, c, &schema, record);
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
    let drained = drain(&db, c, n, &run, &env).await?;
    let effects = count(&db, "SELECT count(*) FROM queuebench_effects").await?;
    db.batch_execute(&format!("DROP SCHEMA {q} CASCADE")).await.map_err(db_err("drop the schema"))?;
    let lines = drained.lines;
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
    let (t0, left0) = drained.first;
    rate(left0, t0, drained.end).ok_or_else(|| {
        Error::Run(format!(
            "{}: {n} jobs drained between two polls of the count, nothing to time: give more --jobs",
            c.name
        ))
    })
}

/// A drain watched: the first count below N and when, when it reached 0, the event lines read.
struct Drained {
    first: (Instant, u64),
    end: Instant,
    lines: u64,
}

/// `run work` started, its event lines counted, the count polled every 5 ms until 0 (at most
/// 300 s), then the worker stopped.
async fn drain(db: &tokio_postgres::Client, c: &Client, n: u64, run: &Path, env: &[(&str, String)]) -> Result<Drained> {
    let mut worker = client_cmd(run, env)
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
    let watched = watch(db, c, n).await;
    stop(&mut worker);
    let _ = reader.join();
    let (first, end) = watched?;
    Ok(Drained { first, end, lines: lines.load(Ordering::Relaxed) })
}

/// The count polled every 5 ms: its first value below `n` and when, and when it reached 0.
async fn watch(db: &tokio_postgres::Client, c: &Client, n: u64) -> Result<((Instant, u64), Instant)> {
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut first: Option<(Instant, u64)> = None;
    loop {
        let left = count(db, c.remaining).await?;
        let now = Instant::now();
        if first.is_none() && left < n {
            first = Some((now, left));
        }
        if left == 0 {
            return Ok((first.expect("0 is below n"), now));
        }
        if now >= deadline {
            return Err(Error::Run(format!("{}: not drained in 300 s ({left} left)", c.name)));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
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
