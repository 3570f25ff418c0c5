//! graphile-worker's own perfTest beside queuebench at the same settings (docs/clients.md, "At
//! full speed"): `graphile-worker-perf`.

use crate::error::{Error, Result};
use crate::qb::{Build, Qb, root};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

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
    let args: Vec<std::ffi::OsString> = vec![
        "graphile-worker-perf".into(),
        "--jobs".into(),
        jobs.to_string().into(),
        "--perf-dir".into(),
        perf.clone().into(),
        checkout.into(),
    ];
    let status = crate::cluster::in_cluster(&qb, None, args)?;
    if !status.success() {
        return Err(Error::Run(format!("the perfTest inside queuebench cluster: {status}")));
    }
    println!("queuebench, clients/graphile-worker at the same settings (4 processes × 24, batch 500):");
    queuebench_same_settings(&qb, jobs, work.path())
}

/// The scenario of the same settings: 4 processes × 24 handlers, batch 500, no work time.
pub fn same_settings(client: &Path, jobs: u64) -> String {
    format!(
        "name = \"graphile-worker-perf\"\nclient = {client:?}\n[jobs]\npreload = {jobs}\n[workers]\ncount = 4\n\
         concurrency = 24\nbatch = 500\nwork = \"0ms\"\n[run]\nstop = \"drained\"\ntimeout = \"20m\"\nhistory = false\n",
        client = client.display().to_string()
    )
}

/// queuebench through clients/graphile-worker at the same settings, in `work`.
fn queuebench_same_settings(qb: &Qb, jobs: u64, work: &Path) -> Result<()> {
    let scenarios = work.join("scenarios/clients");
    std::fs::create_dir_all(&scenarios).map_err(Error::io(&scenarios))?;
    let toml = scenarios.join("graphile-worker-perf.toml");
    std::fs::write(&toml, same_settings(&root().join("clients/graphile-worker"), jobs)).map_err(Error::io(&toml))?;
    let run = qb.run(&toml, &work.join("run"), &[])?;
    if run.code != 0 {
        let lines: Vec<_> = run.output.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        return Err(Error::Run(format!("queuebench run exited {}:\n{tail}", run.code)));
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
    fn run_js_rate_and_the_same_settings() {
        assert_eq!(perf_rate(20_000, 2_000, 1_000), Some(20_000.0));
        assert_eq!(perf_rate(20_000, 1_000, 1_000), None);
        let text = same_settings(Path::new("/x/clients/graphile-worker"), 2000);
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(v["client"].as_str(), Some("/x/clients/graphile-worker"));
        assert_eq!(v["jobs"]["preload"].as_integer(), Some(2000));
        assert_eq!(v["workers"]["count"].as_integer(), Some(4));
        assert_eq!(v["workers"]["concurrency"].as_integer(), Some(24));
        assert_eq!(v["workers"]["batch"].as_integer(), Some(500));
    }
}
