//! Tables of single runs: each row one run's summary as the docs quote it.

use crate::error::Result;
use crate::qb::{Build, Qb, root, work_dir};
use queuebench::model::summary::RunSummary;
use std::path::Path;

/// `passed`, or `FAILED (CODE)`.
fn verdict(code: i32) -> String {
    if code == 0 { "passed".into() } else { format!("FAILED ({code})") }
}

/// One stop-the-world pause past the lease under each fencing mode (docs/faults.md):
/// scenarios/gc-pause-fencing-{none,status,attempts,token}.toml, what the late completion did.
pub fn fencing_table() -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    println!(
        "| fencing | stale completions accepted | stale completions rejected | executions (3 jobs) | duplicates after lease expiry | verdict |"
    );
    println!("|---|---|---|---|---|---|");
    for f in ["none", "status", "attempts", "token"] {
        let scenario = root().join(format!("scenarios/gc-pause-fencing-{f}.toml"));
        let run = qb.run(&scenario, &work.join(f), &[])?;
        let s = run.need_summary()?;
        println!(
            "| `{f}` | {} | {} | {} | {} | {} |",
            s.completions.stale_accepted,
            s.completions.stale_rejected,
            s.executions.total,
            s.executions.duplicate_lease_expired,
            verdict(run.code)
        );
    }
    Ok(())
}

/// Failover under load, asynchronous against synchronous replication (docs/failover.md):
/// scenarios/failover-{async,sync}.toml RUNS times each, a row per run.
pub fn failover_table(runs: u32) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    println!(
        "| replication | run | acknowledged completions lost | acknowledged enqueues lost | re-executions | lag at failure (KiB) | WAL never received (KiB) | server down (ms) | longest worker outage (ms) | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for mode in ["async", "sync"] {
        for i in 1..=runs {
            let scenario = root().join(format!("scenarios/failover-{mode}.toml"));
            let run = qb.run(&scenario, &work.join(format!("{mode}-{i}")), &[])?;
            let s = run.need_summary()?;
            let (d, o) = (&s.durability, &s.outage);
            println!(
                "| {} | {i} | {} of {} | {} of {} ({} ids reissued) | {} | {:.0} | {:.0} | {:.0} | {:.0} | {} |",
                d.replication,
                d.lost_completions,
                d.acknowledged_completions,
                d.lost_enqueues,
                d.acknowledged_enqueues,
                d.ids_reissued,
                d.reexecutions,
                d.lag_bytes_at_failure as f64 / 1024.0,
                d.wal_lost_bytes as f64 / 1024.0,
                o.server_down_ms,
                o.longest_worker_outage_ms,
                verdict(run.code)
            );
        }
    }
    Ok(())
}

/// The reference clients at full size (docs/clients.md#at-full-size): each library's contention
/// scenario with JOBS jobs, its crash scenario with the SIGKILL repeated every 2 s for 20 s, and
/// its kill-backend scenario where there is one; each run's own expectations left out.
pub fn clients_table(jobs: u64, only: &str) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    let no_expect = ["--set".to_string(), "expect={}".to_string()];
    println!(
        "| client | run | jobs/s | enqueued / completed | executed (distinct) | duplicates | at the end | faults |"
    );
    println!("|---|---|---:|---|---:|---|---|---|");
    for c in only.split(',').filter(|c| !c.is_empty()) {
        let dir = root().join("scenarios/clients");
        let mut args = vec!["--set".into(), format!("jobs.preload={jobs}"), "--set".into(), "run.timeout=10m".into()];
        args.extend(no_expect.clone());
        let run = qb.run(&dir.join(format!("{c}-contention.toml")), &work.join(format!("{c}-contention")), &args)?;
        client_row(c, &format!("contention, {jobs} jobs"), run.summary.as_ref(), run.code);
        // The crash every 2 s: the shipped file with an interval on its fault and a 20 s run.
        let crash = crash_every_2s(&dir.join(format!("{c}-crash.toml")), &work.join(format!("{c}-crash.toml")))?;
        let run = qb.run(&crash, &work.join(format!("{c}-crash")), &no_expect)?;
        client_row(c, "SIGKILL every 2 s, 20 s", run.summary.as_ref(), run.code);
        let kill = dir.join(format!("{c}-kill-backend.toml"));
        if kill.is_file() {
            let run = qb.run(&kill, &work.join(format!("{c}-kill")), &no_expect)?;
            client_row(c, "kill_backend at 2 s", run.summary.as_ref(), run.code);
        }
    }
    Ok(())
}

/// A copy of a client's crash scenario at `to` whose fault repeats every 2 s, in a 20 s run.
fn crash_every_2s(from: &Path, to: &Path) -> Result<std::path::PathBuf> {
    use crate::error::Error;
    let text = std::fs::read_to_string(from).map_err(Error::io(from))?;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("stop = ") {
            out.push_str("stop = \"20s\"\n");
        } else if line.starts_with("timeout = ") {
            out.push_str("timeout = \"60s\"\n");
        } else {
            out.push_str(line);
            out.push('\n');
            if line.starts_with("respawn_after = ") {
                out.push_str("interval = \"2s\"\n");
            }
        }
    }
    std::fs::write(to, out).map_err(Error::io(to))?;
    Ok(to.to_path_buf())
}

fn client_row(name: &str, kind: &str, s: Option<&RunSummary>, code: i32) {
    let Some(s) = s else {
        println!("| {name} | {kind} | exit {code}: no summary | | | | | |");
        return;
    };
    let (ex, j) = (&s.executions, &s.jobs);
    let fired: Vec<String> =
        s.faults.by_kind.iter().filter(|(_, n)| **n > 0).map(|(k, n)| format!("{k} {n}")).collect();
    let fired = if fired.is_empty() { "—".to_string() } else { fired.join(", ") };
    println!(
        "| {name} | {kind} | {:.0} | {} / {} | {} | {} ({} race, {} after expiry) | {} lost, {} still running | {fired} |",
        s.throughput.jobs_per_sec,
        j.enqueued,
        j.completed,
        ex.distinct_jobs,
        ex.duplicate,
        ex.duplicate_race,
        ex.duplicate_lease_expired,
        j.lost,
        j.stuck_running
    );
}

/// Every shipped adapter scenario (the real-schema ones aside), the LISTEN/NOTIFY scenario and
/// the sqlx client through PgBouncer in each pool mode (docs/production-postgres.md), each
/// verdict what the checkers and the summary said; each run cut at run.timeout = 60s.
pub fn pgbouncer_table(modes: &str) -> Result<()> {
    let qb = Qb::find(Build::Release)?;
    let (work, _keep) = work_dir(None)?;
    let mut files: Vec<_> = std::fs::read_dir(root().join("scenarios/adapters"))
        .map_err(crate::error::Error::io(root().join("scenarios/adapters")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| !p.to_string_lossy().ends_with("-real-schema.toml"))
        .collect();
    files.sort();
    files.push(root().join("scenarios/idle-listen-notify.toml"));
    files.push(root().join("scenarios/sqlx-pool-exhaustion.toml"));
    println!("| scenario | pool mode | exit | completed | duplicates | notifications | errors | verdict |");
    println!("|---|---|---:|---:|---|---|---|---|");
    for file in &files {
        let name = file.file_stem().unwrap_or_default().to_string_lossy();
        for mode in modes.split_whitespace() {
            let args = [
                "--set".into(),
                format!("postgres.pgbouncer.pool_mode={mode}"),
                "--set".into(),
                "run.timeout=60s".into(),
            ];
            let run = qb.run(file, &work.join(format!("{name}-{mode}")), &args)?;
            let Some(s) = &run.summary else {
                let said: String =
                    run.output.chars().take(200).map(|c| if c == '\n' || c == '|' { ' ' } else { c }).collect();
                println!("| {name} | {mode} | {} | – | – | – | {said} | refused |", run.code);
                continue;
            };
            println!("{}", pgbouncer_row(&name, mode, run.code, s));
        }
    }
    Ok(())
}

fn pgbouncer_row(name: &str, mode: &str, code: i32, s: &RunSummary) -> String {
    let codes: Vec<String> = s.errors.by_code.iter().map(|(k, v)| format!("{k} × {v}")).collect();
    let listen = (s.wakeup.mode == "listen").then_some(&s.wakeup);
    let lost_wakeups = listen.is_some_and(|w| w.committed_notify_delivered.unwrap_or(1) == 0);
    let mut bad = Vec::new();
    if s.executions.duplicate > 0 {
        bad.push("duplicates");
    }
    if lost_wakeups {
        bad.push("lost wake-ups");
    }
    if s.errors.total > 0 {
        bad.push("errors");
    }
    if s.jobs.completed < s.jobs.enqueued {
        bad.push("unfinished");
    }
    let notifications = match listen {
        None => "–".to_string(),
        Some(w) => format!(
            "{} (probe {}/1)",
            w.notifications_received,
            w.committed_notify_delivered.map_or("null".into(), |n| n.to_string())
        ),
    };
    let errors = if codes.is_empty() { "0".to_string() } else { format!("{}: {}", s.errors.total, codes.join(", ")) };
    let verdict = if bad.is_empty() { "clean".to_string() } else { bad.join(", ") };
    format!(
        "| {name} | {mode} | {code} | {}/{} | {} | {notifications} | {errors} | {verdict} |",
        s.jobs.completed, s.jobs.enqueued, s.executions.duplicate
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pgbouncer_row_names_every_problem_and_a_clean_run_is_clean() {
        let mut s = RunSummary::default();
        s.jobs.enqueued = 10;
        s.jobs.completed = 10;
        assert_eq!(pgbouncer_row("a", "session", 0, &s), "| a | session | 0 | 10/10 | 0 | – | 0 | clean |");
        s.jobs.completed = 9;
        s.executions.duplicate = 2;
        s.errors.total = 3;
        s.errors.by_code.insert("08P01".into(), 3);
        s.wakeup.mode = "listen".into();
        s.wakeup.notifications_received = 4;
        s.wakeup.committed_notify_delivered = Some(0);
        assert_eq!(
            pgbouncer_row("b", "transaction", 1, &s),
            "| b | transaction | 1 | 9/10 | 2 | 4 (probe 0/1) | 3: 08P01 × 3 | duplicates, lost wake-ups, errors, unfinished |"
        );
    }

    #[test]
    fn the_crash_copy_repeats_its_fault_every_2_s() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("a.toml");
        std::fs::write(&from, "[[faults]]\nrespawn_after = \"500ms\"\n[run]\nstop = \"drained\"\ntimeout = \"5m\"\n")
            .unwrap();
        let to = crash_every_2s(&from, &dir.path().join("b.toml")).unwrap();
        assert_eq!(
            std::fs::read_to_string(to).unwrap(),
            "[[faults]]\nrespawn_after = \"500ms\"\ninterval = \"2s\"\n[run]\nstop = \"20s\"\ntimeout = \"60s\"\n"
        );
    }
}
