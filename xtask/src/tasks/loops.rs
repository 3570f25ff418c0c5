//! Long and repeated runs: the client scenarios round after round beside a CPU hog, and one long
//! open-model run with the harness's memory sampled.

use crate::error::{Error, Result};
use crate::hog::Hog;
use crate::qb::{Build, Qb, root};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The client smoke scenarios on a busy machine (docs/clients.md): every scenarios/clients/*.toml
/// (or those whose name contains ONLY) once per round, one at a time, beside `stress-ng --cpu
/// HOG`; a table of the rounds each passed. The binary is copied into OUT first, so a rebuild
/// during the loop does not change what runs. Each run is stopped after 3 minutes (exit 124, a
/// failure); a passed run's folder is removed, a failed one's kept; results.csv has a line per run.
pub fn clients_loop(rounds: u32, hog: u32, only: &str, out: Option<&Path>) -> Result<()> {
    if rounds < 1 {
        return Err(Error::Usage("--rounds must be at least 1".into()));
    }
    let root = root();
    if !root.join("clients/.venv/bin/python").is_file() || !root.join("clients/pg-boss/node_modules").is_dir() {
        return Err(Error::Usage("the reference clients are not installed; run: bash clients/install.sh".into()));
    }
    let dir = root.join("scenarios/clients");
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(Error::io(&dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().contains(only)))
        .collect();
    scenarios.sort();
    if scenarios.is_empty() {
        return Err(Error::Usage(format!("no scenarios/clients/*.toml matches --only {only}")));
    }
    let out = match out {
        Some(o) => o.to_path_buf(),
        None => tempfile::Builder::new()
            .prefix("qb-clients-loop.")
            .tempdir()
            .map_err(Error::io("a temporary folder"))?
            .keep(),
    };
    std::fs::create_dir_all(&out).map_err(Error::io(&out))?;
    let found = Qb::find(Build::Release)?;
    let copy = out.join("queuebench");
    std::fs::copy(&found.bin, &copy).map_err(Error::io(&copy))?;
    let qb = Qb { bin: copy };
    let runs = rounds as usize * scenarios.len();
    println!(
        "clients loop: {rounds} round(s) of {} client scenario(s) beside stress-ng --cpu {hog}; {}",
        scenarios.len(),
        qb.version()
    );
    println!("output in {}", out.display());
    let csv_path = out.join("results.csv");
    let mut csv = String::from("round,scenario,exit,seconds\n");
    let _hog = Hog::start(hog, runs as u64 * 240)?;
    let started = Instant::now();
    let mut passes: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for r in 1..=rounds {
        let round_dir = out.join(format!("round-{r}"));
        std::fs::create_dir_all(&round_dir).map_err(Error::io(&round_dir))?;
        let round_start = Instant::now();
        let mut failed_here = Vec::new();
        for f in &scenarios {
            let name = f.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            let dir = round_dir.join(&name);
            let start = Instant::now();
            let log = round_dir.join(format!("{name}.log"));
            let code = run_bounded(&qb, f, &dir, &log, Duration::from_secs(180))?;
            csv.push_str(&format!("{r},{name},{code},{}\n", start.elapsed().as_secs()));
            std::fs::write(&csv_path, &csv).map_err(Error::io(&csv_path))?;
            let p = passes.entry(name.clone()).or_default();
            p.1 += 1;
            if code == 0 {
                p.0 += 1;
                let _ = std::fs::remove_dir_all(&dir);
            } else {
                failed_here.push(format!("{name} (exit {code})"));
            }
        }
        let failed =
            if failed_here.is_empty() { String::new() } else { format!("; FAILED: {}", failed_here.join(" ")) };
        println!(
            "round {r}: {} of {} passed, {} s ({} s in all){failed}",
            scenarios.len() - failed_here.len(),
            scenarios.len(),
            round_start.elapsed().as_secs(),
            started.elapsed().as_secs()
        );
    }
    println!("passes per scenario (of {rounds} round(s), beside stress-ng --cpu {hog}):");
    let mut failed = 0;
    for (name, (ok, n)) in &passes {
        println!("  {name:<32} {ok}/{n}");
        failed += n - ok;
    }
    if failed == 0 {
        println!("clients loop passed: {runs} of {runs} runs, in {} s", started.elapsed().as_secs());
        return Ok(());
    }
    Err(Error::Failed(format!(
        "clients loop FAILED: {failed} of {runs} runs; their folders and logs are under {}/round-*/",
        out.display()
    )))
}

/// One run with its output in `log`, stopped after `limit` (exit 124, as timeout(1) says).
fn run_bounded(qb: &Qb, scenario: &Path, out: &Path, log: &Path, limit: Duration) -> Result<i32> {
    let file = std::fs::File::create(log).map_err(Error::io(log))?;
    let mut child = qb
        .cmd()
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .stdin(Stdio::null())
        .stdout(file.try_clone().map_err(Error::io(log))?)
        .stderr(file)
        .spawn()
        .map_err(|source| Error::Spawn { program: qb.bin.display().to_string(), source })?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(Error::io(log))? {
            return Ok(status.code().unwrap_or(-1));
        }
        if start.elapsed() > limit {
            // SIGTERM first, as timeout(1): the run cleans up its cluster; SIGKILL 10 s later.
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            let grace = Instant::now();
            while grace.elapsed() < Duration::from_secs(10) {
                if child.try_wait().map_err(Error::io(log))?.is_some() {
                    return Ok(124);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = child.kill();
            let _ = child.wait();
            return Ok(124);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Soak (docs/long-runs.md): one long open-model run, the scenario's phases replaced by one
/// steady phase of DURATION at RATE times the classes' rates, with the harness's resident memory
/// sampled every INTERVAL seconds from /proc/PID/status (VmRSS, and VmHWM: the peak so far).
/// Writes soak-rss.csv (t_s,rss_kb,hwm_kb) and the run folder under OUT.
pub fn soak(duration: &str, scenario: &Path, rate: f64, interval: u64, out: Option<&Path>) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let out = match out {
        Some(o) => o.to_path_buf(),
        None => root().join(format!("results/soak-{}", utc_stamp())),
    };
    std::fs::create_dir_all(&out).map_err(Error::io(&out))?;
    let csv_path = out.join("soak-rss.csv");
    let log_path = out.join("run.log");
    let log = std::fs::File::create(&log_path).map_err(Error::io(&log_path))?;
    let phases = format!("run.phases=[{{ name = \"soak\", duration = \"{duration}\", rate = {rate} }}]");
    let mut child = qb
        .cmd()
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out.join("run"))
        .arg("--quiet")
        .args(["--set", &phases, "--set", "run.timeout=24h", "--set", "expect={}"])
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(Error::io(&log_path))?)
        .stderr(log)
        .spawn()
        .map_err(|source| Error::Spawn { program: qb.bin.display().to_string(), source })?;
    let start = Instant::now();
    let mut csv = String::from("t_s,rss_kb,hwm_kb\n");
    let mut samples: Vec<(u64, u64)> = Vec::new();
    let code = loop {
        if let Some(status) = child.try_wait().map_err(Error::io(&log_path))? {
            break status.code().unwrap_or(-1);
        }
        if let Some((rss, hwm)) = memory(child.id()) {
            let t = start.elapsed().as_secs();
            csv.push_str(&format!("{t},{rss},{hwm}\n"));
            std::fs::write(&csv_path, &csv).map_err(Error::io(&csv_path))?;
            samples.push((t, rss));
        }
        // Sleep the interval, but notice the end of the run within a second.
        let wake = Instant::now() + Duration::from_secs(interval);
        while Instant::now() < wake && child.try_wait().map_err(Error::io(&log_path))?.is_none() {
            std::thread::sleep(Duration::from_millis(250).min(wake.saturating_duration_since(Instant::now())));
        }
    };
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(&std::fs::read(&log_path).unwrap_or_default());
    let mib = |kb: u64| kb as f64 / 1024.0;
    if let (Some(first), Some(last)) = (samples.first(), samples.last()) {
        let peak = samples.iter().map(|s| s.1).max().unwrap_or(0);
        println!(
            "rss start {:.1} MiB, peak {:.1} MiB, end {:.1} MiB over {} s ({} samples, every {interval} s)",
            mib(first.1),
            mib(peak),
            mib(last.1),
            last.0,
            samples.len()
        );
    }
    println!("samples: {}  run: {}  exit: {code}", csv_path.display(), out.join("run").display());
    if code != 0 {
        return Err(Error::Failed(format!("the soak run exited {code}")));
    }
    Ok(())
}

/// (VmRSS, VmHWM) in kB of a process, None once it is gone.
fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)?.trim().strip_suffix(" kB")?.trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// The time now as YYYYMMDDTHHMMSS (UTC), for default folder names.
pub fn utc_stamp() -> String {
    Command::new("date")
        .args(["-u", "+%Y%m%dT%H%M%S"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "now".into())
}
