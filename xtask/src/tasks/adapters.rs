//! The measured table of docs/adapters.md: every shipped adapter beside the built-in
//! skip-locked, on the same load, in the same run. Three sections, one run folder per queue (and
//! round) under OUT, then Markdown tables (also OUT/table.md):
//! - contention: JOBS preloaded jobs, zero work, 8 and 16 workers, the adapter's own default
//!   lease, no faults; ROUNDS rounds, the queues interleaved in each round: jobs/s, the median of
//!   each round's ratio to skip-locked, claim p99, exactly-once and duplicates by cause;
//! - crash: 8 workers, 1 % of jobs crash their worker right after the claim (respawn after
//!   100 ms), the adapter's reclaim as a reaper every 250 ms (none where the design has none);
//! - pause: 2 jobs, 2 workers, 500 ms of work: w1 freezes before it acknowledges for lease + 1 s,
//!   the job is re-claimed, w1 then sends its completion: did it land?
//!
//! Leases: the project's real default where a run can wait for it (≤ 30 s); otherwise shortened
//! (5 s crash, 3 s pause; 2 s everywhere with --quick), and the tables say so. Heartbeat
//! constants tied to the lease (solid_queue's process_heartbeat_interval, procrastinate's
//! update_heartbeat_interval) are scaled with it in a generated copy of the adapter.

use crate::error::{Error, Result};
use crate::qb::{Build, Qb, root};
use crate::stats::median_or_zero;
use crate::tasks::loops::utc_stamp;
use queuebench::model::summary::RunSummary;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

const QUEUES: [&str; 11] = [
    "skip-locked",
    "river",
    "pg-boss",
    "graphile-worker",
    "pgmq",
    "que",
    "oban",
    "solid_queue",
    "good_job",
    "procrastinate",
    "pgqueuer",
];

/// One run of the table.
struct Row {
    section: &'static str,
    queue: &'static str,
    workers: u32,
    round: u32,
    lease: String,
    default_lease: String,
    note: String,
    exit: i32,
    dir: PathBuf,
    pause: String,
    s: Option<RunSummary>,
}

/// A TOML duration ("1h", "60m", "30s", "500ms") in seconds.
fn secs(d: &str) -> Result<f64> {
    let split = d.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(d.len());
    let n: f64 = d[..split].parse().map_err(|_| Error::Usage(format!("bad duration {d}")))?;
    let f = match &d[split..] {
        "h" => 3600.0,
        "m" => 60.0,
        "s" => 1.0,
        "ms" => 0.001,
        _ => return Err(Error::Usage(format!("bad duration {d}"))),
    };
    Ok(n * f)
}

fn adapter_text(q: &str) -> Result<String> {
    let p = root().join(format!("adapters/{q}.toml"));
    std::fs::read_to_string(&p).map_err(Error::io(&p))
}

/// The lease the queue uses when a scenario leaves lease.duration out.
fn default_lease(q: &str) -> Result<String> {
    if q == "skip-locked" {
        return Ok("90s".into());
    }
    let text = adapter_text(q)?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("lease = \"")?.split('"').next().map(str::to_string))
        .unwrap_or_default())
}

fn has_reclaim(q: &str) -> Result<bool> {
    if q == "skip-locked" {
        return Ok(true);
    }
    Ok(adapter_text(q)?.lines().any(|l| {
        l.starts_with("[reclaim]") || l.strip_prefix("reclaim").is_some_and(|r| r.trim_start().starts_with('='))
    }))
}

/// Que and GoodJob have no lease at all: an advisory lock held by the worker's session.
fn leaseless(q: &str) -> bool {
    q == "que" || q == "good_job"
}

/// The heartbeat constant scaled with the lease, and its share: (constant, share, as what).
fn heartbeat(q: &str) -> Option<(&'static str, f64, &'static str)> {
    match q {
        "solid_queue" => Some(("process_heartbeat_interval_secs", 5.0, "1/5, as 60 s / 5 min")),
        "procrastinate" => Some(("update_heartbeat_interval_secs", 3.0, "1/3, as 10 s / 30 s")),
        _ => None,
    }
}

fn fmt_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

struct Table<'a> {
    qb: &'a Qb,
    quick: bool,
    out: PathBuf,
    rows: Vec<Row>,
}

pub fn adapters_table(quick: bool, rounds: u32, out: Option<&Path>, only: &[String], command: &str) -> Result<()> {
    if let Some(bad) = only.iter().find(|o| !["contention", "crash", "pause"].contains(&o.as_str())) {
        return Err(Error::Usage(format!("unknown section {bad} (accepted: contention, crash, pause)")));
    }
    let qb = Qb::find(Build::Release)?;
    let out = out.map_or_else(|| root().join(format!("results/adapters-table-{}", utc_stamp())), Path::to_path_buf);
    std::fs::create_dir_all(&out).map_err(Error::io(&out))?;
    let want = |s: &str| only.is_empty() || only.iter().any(|o| o == s);
    let started = Instant::now();
    let (jobs, crash_jobs, rounds) = if quick { (2000, 2000, 1) } else { (10_000, 5000, rounds) };
    let mut t = Table { qb: &qb, quick, out: out.clone(), rows: Vec::new() };
    if want("contention") {
        eprintln!("== contention: {jobs} jobs, zero work, 8 and 16 workers, {rounds} round(s)");
        for r in 1..=rounds {
            for w in [8, 16] {
                for q in QUEUES {
                    let lease = default_lease(q)?;
                    let body = format!(
                        "count = {w}\nwork = \"0ms\"\n[jobs]\npreload = {jobs}\n[run]\nstop = \"drained\"\ntimeout = \"5m\"\n"
                    );
                    t.run("contention", q, w, r, &lease, &body)?;
                }
            }
        }
    }
    if want("crash") {
        eprintln!("== crash after claim: {crash_jobs} jobs, 8 workers, 1 % of jobs");
        for q in QUEUES {
            let lease = t.lease_for(q, if quick { "2s" } else { "5s" })?;
            let reclaim = if has_reclaim(q)? { "reaper" } else { "off" };
            let body = format!(
                "count = 8\nwork = \"0ms\"\n[jobs]\npreload = {crash_jobs}\nmax_attempts = 5\n[lease]\nduration = \"{lease}\"\n\
                 reclaim = \"{reclaim}\"\nreaper_interval = \"250ms\"\n[retry]\nbase = \"100ms\"\ncap = \"1s\"\n[[faults]]\n\
                 kind = \"crash\"\npoint = \"after_claim\"\nprobability = 0.01\nrespawn_after = \"100ms\"\n[run]\nstop = \"drained\"\ntimeout = \"4m\"\n"
            );
            t.run("crash", q, 8, 1, &lease, &body)?;
        }
    }
    if want("pause") {
        eprintln!("== pause past the lease: 2 jobs, 2 workers");
        for q in QUEUES {
            let lease = t.lease_for(q, if quick { "2s" } else { "3s" })?;
            let reclaim = if has_reclaim(q)? { "reaper" } else { "off" };
            let pause = if leaseless(q) { 4000 } else { (secs(&lease)? * 1000.0 + 1000.0) as u64 };
            let body = format!(
                "count = 2\nwork = \"500ms\"\n[jobs]\npreload = 2\n[lease]\nduration = \"{lease}\"\nreclaim = \"{reclaim}\"\n\
                 reaper_interval = \"100ms\"\n[retry]\nbase = \"0ms\"\njitter = false\n[[faults]]\nkind = \"pause\"\n\
                 point = \"before_complete\"\nworkers = \"w1\"\nevery = 1\nlimit = 1\nduration = \"{pause}ms\"\n[[faults]]\n\
                 kind = \"pause\"\npoint = \"mid_work\"\nworkers = \"w2\"\nevery = 2\nlimit = 1\nduration = \"1500ms\"\n[run]\n\
                 stop = \"drained\"\ntimeout = \"2m\"\n[expect]\n\
                 # What the late completion does is the finding, not a failure of the run: these checks are\n\
                 # reported in the table, not gated.\n\"checks.exactly_once\" = \">= 0\"\n\
                 \"checks.stale_completions_accepted\" = \">= 0\"\n\"checks.ownership_overlap\" = \">= 0\"\n\
                 \"checks.attempts_within_budget\" = \">= 0\"\n"
            );
            t.run("pause", q, 2, 1, &lease, &body)?;
            if let Some(row) = t.rows.last_mut() {
                row.pause = format!("{pause}ms");
            }
        }
    }
    let elapsed = started.elapsed().as_secs();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut md = format!(
        "Machine: {cores} cores. {}, run {}, {} min {} s, command `{command}`{}.\n\n",
        qb.version(),
        crate::tasks::loops::utc_stamp(),
        elapsed / 60,
        elapsed % 60,
        if quick { " (--quick: the figures mean nothing)" } else { "" }
    );
    md.push_str(&tables(&t.rows));
    print!("{md}");
    let path = out.join("table.md");
    std::fs::write(&path, md).map_err(Error::io(&path))?;
    eprintln!("results: {}", out.display());
    Ok(())
}

impl Table<'_> {
    /// The real default when it is 30 s or less (or the queue has no lease), else `short`
    /// (and always `short` with --quick).
    fn lease_for(&self, q: &str, short: &str) -> Result<String> {
        let d = default_lease(q)?;
        if leaseless(q) {
            return Ok(d);
        }
        if !self.quick && secs(&d)? <= 30.0 { Ok(d) } else { Ok(short.to_string()) }
    }

    /// The scenario's first lines for the queue: a generated copy of the adapter when one of its
    /// constants is a heartbeat interval that must scale with the lease.
    fn adapter_line(&self, q: &str, lease: &str) -> Result<String> {
        if q == "skip-locked" {
            return Ok("[workers]\nstrategy = \"skip-locked\"\n".into());
        }
        let Some((constant, share, _)) = heartbeat(q) else {
            return Ok(format!("adapter = \"{q}\"\n[workers]\n"));
        };
        let l = secs(lease)?;
        let copy = self.out.join(format!("{q}-{}.toml", fmt_num(l)));
        let text: String = adapter_text(q)?
            .lines()
            .map(|line| {
                if line.starts_with(&format!("{constant} = ")) {
                    format!("{constant} = {}\n", fmt_num(l / share))
                } else {
                    format!("{line}\n")
                }
            })
            .collect();
        std::fs::write(&copy, text).map_err(Error::io(&copy))?;
        Ok(format!("adapter = \"{}\"\n[workers]\n", copy.display()))
    }

    /// What the lease column says beside the number.
    fn note(&self, q: &str, lease: &str) -> Result<String> {
        let d = default_lease(q)?;
        Ok(if leaseless(q) {
            "no lease (session advisory lock)".into()
        } else if lease == d {
            "real default".into()
        } else if let Some((_, share, what)) = heartbeat(q) {
            format!("shortened; heartbeat interval {} s ({what})", fmt_num(secs(lease)? / share))
        } else {
            "shortened".into()
        })
    }

    fn run(&mut self, section: &'static str, q: &'static str, w: u32, r: u32, lease: &str, body: &str) -> Result<()> {
        let name = match section {
            "contention" => format!("contention-{q}-w{w}"),
            _ => format!("{section}-{q}"),
        };
        let seed = if section == "contention" { r.to_string() } else { "42".into() };
        let text = format!("name = \"{name}\"\nseed = {seed}\n{}{body}", self.adapter_line(q, lease)?);
        let file = self.out.join(format!("{name}.toml"));
        std::fs::write(&file, text).map_err(Error::io(&file))?;
        let dir = match section {
            "contention" => self.out.join(format!("contention/{q}-w{w}-r{r}")),
            _ => self.out.join(format!("{section}/{q}")),
        };
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent).map_err(Error::io(parent))?;
        }
        let start = Instant::now();
        let run = self.qb.run(&file, &dir, &[])?;
        let log = dir.with_extension("log");
        std::fs::write(&log, &run.output).map_err(Error::io(&log))?;
        eprintln!(
            "  {section:<11} {q:<16} w{w:<3} round {r}  lease {lease:<5} exit {}  {:3}s",
            run.code,
            start.elapsed().as_secs()
        );
        self.rows.push(Row {
            section,
            queue: q,
            workers: w,
            round: r,
            lease: lease.to_string(),
            default_lease: default_lease(q)?,
            note: self.note(q, lease)?,
            exit: run.code,
            dir,
            pause: String::new(),
            s: run.summary,
        });
        Ok(())
    }
}

/// Why a late completion lands or not: the adapter's complete statement (adapters/*.toml) and, for
/// the built-in, src/adapter/sql/complete.sql with fencing = "token".
fn why(q: &str) -> &'static str {
    match q {
        "skip-locked" => {
            "token fence: `UPDATE jobs … WHERE id = :id AND claim_token = :token`; the re-claim issued a new token"
        }
        "river" => "state-only: `WHERE id = :id AND state = 'running'`; the re-claimed job is running again",
        "pg-boss" => {
            "state-only: `WHERE name = :queue AND id = :id AND state = 'active'`; the re-fetched job is active again"
        }
        "graphile-worker" => "no fence: `DELETE FROM _private_jobs WHERE id = :id` (locked_by is not checked)",
        "pgmq" => "no fence: archive() is `DELETE FROM q_default WHERE msg_id = :id` (vt and read_ct are not checked)",
        "que" => {
            "no fence (`DELETE … WHERE id = :id`), but no lease either: the paused session keeps its advisory lock, nobody re-claims"
        }
        "oban" => "no fence: `UPDATE oban_jobs SET state = 'completed' WHERE id = :id`",
        "solid_queue" => {
            "claim-row fence: the completion deletes its own claimed execution (`WHERE id = :token`); the prune deleted it and failed the job"
        }
        "good_job" => {
            "no fence (`WHERE id = :id`), but no lease either: the paused session keeps its advisory lock, nobody re-claims"
        }
        "procrastinate" => {
            "state-only: `WHERE id = :id AND status IN ('todo', 'doing')`; the retried job is doing again"
        }
        "pgqueuer" => "no fence: `DELETE FROM pgqueuer WHERE id = :id` (queue_manager_id is not checked)",
        _ => "",
    }
}

fn verdict(row: &Row) -> String {
    match row.exit {
        0 => "passed".into(),
        1 => "failed".into(),
        c => format!("error (exit {c})"),
    }
}

fn bold(q: &str) -> String {
    if q == "skip-locked" { format!("**{q}**") } else { q.to_string() }
}

fn once(s: &RunSummary) -> String {
    match s.checks.iter().find(|c| c.name.to_string() == "exactly_once") {
        None => "?".into(),
        Some(c) if c.violations == 0 => "yes".into(),
        Some(c) => format!("no ({} jobs)", c.violations),
    }
}

fn ms(v: f64) -> String {
    if v < 1000.0 { format!("{v:.0} ms") } else { format!("{:.1} s", v / 1000.0) }
}

fn lease_cell(row: &Row) -> String {
    if row.note == "real default" {
        format!("{} (real default)", row.lease)
    } else if row.note.starts_with("no lease") {
        "none (advisory lock)".into()
    } else {
        format!("**{}** ({}; real {})", row.lease, row.note, row.default_lease)
    }
}

/// The three tables, then a line per run that ended in an error.
fn tables(rows: &[Row]) -> String {
    let mut out = String::new();
    contention(&mut out, rows);
    crash(&mut out, rows);
    pause(&mut out, rows);
    for r in rows.iter().filter(|r| r.exit != 0 && r.exit != 1) {
        let _ = writeln!(
            out,
            "- {} {} w{} round {}: exit {}, see {}",
            r.section,
            r.queue,
            r.workers,
            r.round,
            r.exit,
            r.dir.with_extension("log").display()
        );
    }
    out
}

fn contention(out: &mut String, rows: &[Row]) {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.section == "contention").collect();
    let Some(first) = rows.first() else { return };
    let mut rounds: Vec<u32> = rows.iter().map(|r| r.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let enqueued = first.s.as_ref().map_or(0, |s| s.jobs.enqueued);
    let _ = writeln!(out, "### (a) Contention: {enqueued} jobs, zero work, burn-down, {} round(s)\n", rounds.len());
    out.push_str(
        "jobs/s: the median of the rounds (each round's value in brackets); × skip-locked: the median of each round's \
         ratio to skip-locked's run of the same round and worker count. Duplicates: racing claims / after lease expiry, \
         summed over the rounds.\n\n",
    );
    out.push_str("| queue | workers | jobs/s | × skip-locked | claim p99 ms | exactly-once | duplicates race / expiry | stale completions acc. / rej. | verdict |\n");
    out.push_str("|---|---:|---:|---:|---:|---|---|---|---|\n");
    let find = |q: &str, w: u32, r: u32| rows.iter().find(|x| x.queue == q && x.workers == w && x.round == r);
    for q in QUEUES {
        for w in [8, 16] {
            let runs: Vec<&&Row> = rows.iter().filter(|x| x.queue == q && x.workers == w).collect();
            if runs.is_empty() {
                continue;
            }
            let mut verdicts: Vec<String> = runs.iter().map(|x| verdict(x)).collect();
            verdicts.sort();
            verdicts.dedup();
            let ok: Vec<(&Row, &RunSummary)> = runs.iter().filter_map(|x| x.s.as_ref().map(|s| (**x, s))).collect();
            if ok.is_empty() {
                let _ = writeln!(out, "| {q} | {w} | — | — | — | — | — | — | {} |", verdicts.join(", "));
                continue;
            }
            let jps: Vec<f64> = ok.iter().map(|(_, s)| s.throughput.jobs_per_sec).collect();
            let ratios: Vec<f64> = ok
                .iter()
                .filter_map(|(x, s)| {
                    let base = find("skip-locked", w, x.round)?.s.as_ref()?.throughput.jobs_per_sec;
                    (base > 0.0).then(|| s.throughput.jobs_per_sec / base)
                })
                .collect();
            let p99 = median_or_zero(&ok.iter().map(|(_, s)| s.latency_ms.claim.p99).collect::<Vec<_>>());
            let each: Vec<String> = jps.iter().map(|v| format!("{v:.0}")).collect();
            let ratio = if ratios.is_empty() { "—".into() } else { format!("{:.2}×", median_or_zero(&ratios)) };
            let bad: Vec<String> = ok.iter().map(|(_, s)| once(s)).filter(|o| o != "yes").collect();
            let sum = |f: fn(&RunSummary) -> u64| ok.iter().map(|(_, s)| f(s)).sum::<u64>();
            let _ = writeln!(
                out,
                "| {} | {w} | {:.0} ({}) | {ratio} | {p99:.1} | {} | {} / {} | {} / {} | {} |",
                bold(q),
                median_or_zero(&jps),
                each.join(" / "),
                if bad.is_empty() { "yes".into() } else { bad.join("; ") },
                sum(|s| s.executions.duplicate_race),
                sum(|s| s.executions.duplicate_lease_expired),
                sum(|s| s.completions.stale_accepted),
                sum(|s| s.completions.stale_rejected),
                verdicts.join(", ")
            );
        }
    }
    out.push('\n');
}

fn crash(out: &mut String, rows: &[Row]) {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.section == "crash").collect();
    let Some(first) = rows.first() else { return };
    let enqueued = first.s.as_ref().map_or(0, |s| s.jobs.enqueued);
    let _ = writeln!(
        out,
        "### (b) Crash after claim: {enqueued} jobs, 8 workers, 1 % of jobs crash their worker after the claim (respawn after 100 ms)\n"
    );
    out.push_str(
        "Recovered: every crashed job completed later (faults.unrecovered = 0); recovery: from the crash to that job's \
         completion. Dead and lost as the checkers judge the final table. Duplicates: racing claims / after lease expiry. \
         Drain: the run's wall time until nothing was left to do.\n\n",
    );
    out.push_str("| queue | lease used | reclaim | crashes | recovered? | completed | lost | dead | duplicates race / expiry | recovery mean / max | drain s | jobs/s | verdict |\n");
    out.push_str("|---|---|---|---:|---|---:|---:|---:|---|---:|---:|---:|---|\n");
    for r in rows {
        let Some(s) = &r.s else {
            let _ = writeln!(out, "| {} | {} | | | | | | | | | | | {} |", bold(r.queue), lease_cell(r), verdict(r));
            continue;
        };
        let crashes: u64 = s.faults.by_kind.iter().filter(|(k, _)| k.to_string() == "crash").map(|(_, n)| *n).sum();
        let un = s.faults.unrecovered;
        let rec = if un == 0 { "yes".to_string() } else { format!("**no: {un} of {crashes}**") };
        let reclaim = if s.reaper.runs > 0 { "reaper" } else { "none (claim or connection)" };
        let recovery = if s.faults.recovered > 0 {
            format!("{} / {}", ms(s.faults.recovery_ms_mean), ms(s.faults.recovery_ms_max))
        } else {
            "—".into()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {reclaim} | {crashes} | {rec} | {} | {} | {} | {} / {} | {recovery} | {:.1} | {:.0} | {} |",
            bold(r.queue),
            lease_cell(r),
            s.jobs.completed,
            s.jobs.lost,
            s.jobs.dead,
            s.executions.duplicate_race,
            s.executions.duplicate_lease_expired,
            s.throughput.duration_s,
            s.throughput.jobs_per_sec,
            verdict(r)
        );
    }
    out.push('\n');
}

fn pause(out: &mut String, rows: &[Row]) {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.section == "pause").collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("### (c) Pause past the lease: w1 freezes before it acknowledges, the job is re-claimed, w1 wakes and completes\n\n");
    out.push_str(
        "Executions: of 2 jobs (3 = the paused job ran twice). Stale: completions sent after another claim had superseded \
         the sender's (accepted = the late write landed on the new owner's job). Overlap: jobs two workers believed they \
         owned at once.\n\n",
    );
    out.push_str("| queue | lease used | pause | re-claimed? | late completion | stale acc. / rej. | executions | final: completed / dead | overlap | why (the complete statement) |\n");
    out.push_str("|---|---|---:|---|---|---|---:|---|---:|---|\n");
    for r in rows {
        let Some(s) = &r.s else {
            let _ = writeln!(
                out,
                "| {} | {} | | | {} | | | | | {} |",
                bold(r.queue),
                lease_cell(r),
                verdict(r),
                why(r.queue)
            );
            continue;
        };
        let (sa, sr) = (s.completions.stale_accepted, s.completions.stale_rejected);
        let execs = s.executions.total;
        let reclaimed = execs > 2;
        let late = if sa > 0 {
            "**landed** on the new owner's job"
        } else if sr > 0 {
            "rejected (fence)"
        } else if s.completions.rejected > 0 && s.jobs.dead > 0 {
            "rejected: the job was failed instead"
        } else if !reclaimed {
            "not stale: nobody took the job"
        } else {
            "?"
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {late} | {sa} / {sr} | {execs} | {} / {} | {} | {} |",
            bold(r.queue),
            lease_cell(r),
            r.pause,
            if reclaimed { "yes" } else { "no" },
            s.jobs.completed,
            s.jobs.dead,
            s.ownership.overlapping_jobs,
            why(r.queue)
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_leases_and_notes() {
        assert_eq!(secs("1h").unwrap(), 3600.0);
        assert_eq!(secs("500ms").unwrap(), 0.5);
        assert!(secs("5 parsecs").is_err());
        assert_eq!(fmt_num(5.0 / 3.0), "1.667");
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(default_lease("pgmq").unwrap(), "30s");
        assert_eq!(default_lease("skip-locked").unwrap(), "90s");
        assert!(has_reclaim("river").unwrap());
        assert!(!has_reclaim("pgmq").unwrap());
    }

    #[test]
    fn the_contention_ratio_is_the_median_of_each_round_s_ratio() {
        let row = |q: &'static str, r: u32, jps: f64| {
            let mut s = RunSummary::default();
            s.jobs.enqueued = 100;
            s.throughput.jobs_per_sec = jps;
            Row {
                section: "contention",
                queue: q,
                workers: 8,
                round: r,
                lease: "30s".into(),
                default_lease: "30s".into(),
                note: "real default".into(),
                exit: 0,
                dir: PathBuf::new(),
                pause: String::new(),
                s: Some(s),
            }
        };
        let rows =
            [row("skip-locked", 1, 100.0), row("skip-locked", 2, 200.0), row("pgmq", 1, 50.0), row("pgmq", 2, 300.0)];
        let t = tables(&rows);
        // Ratios 0.5 and 1.5: their median (compare's rule) is 1.00; jobs/s median 175.
        assert!(t.contains("| pgmq | 8 | 175 (50 / 300) | 1.00× |"), "{t}");
        assert!(t.contains("| **skip-locked** | 8 | 150 (100 / 200) | 1.00× |"), "{t}");
    }
}
