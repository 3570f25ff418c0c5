//! What the machine can take, checked before anything starts (`validate` and `run`, in well
//! under a second): the process's open-file limit and the memory the plan needs. A plan over
//! a limit is exit 2 naming the limit, the number and the fix, instead of a run that grows to
//! 14 GB and dies with `Resource temporarily unavailable (os error 11)` (100,000 workers).
//!
//! The figures are measured with the release build on the development machine (2 cores,
//! 24 GiB; `docs/performance.md#memory-per-worker`): the harness's peak RSS grew by about
//! 0.8 MB per worker (10 → 400 workers, 4 s runs) and by about 264 bytes per preloaded job
//! (20,000 → 500,000 jobs). The budget rounds them up.

use super::connections_needed;
use crate::error::Result;
use crate::scenario::Plan;
use crate::scenario::plan::Stop;

/// The harness's memory per worker (its connection, buffers, histograms, per-second stats).
pub(super) const WORKER_BYTES: u64 = 1 << 20;
/// Per preloaded job (the id numbering, the final table, the checkers' per-job arrays).
pub(super) const JOB_BYTES: u64 = 300;
/// Per job a claim may hold in flight (`workers.batch` per worker).
pub(super) const CLAIMED_BYTES: u64 = 300;
/// Per row of a time series (the harness's and the sampler's).
pub(super) const SERIES_ROW_BYTES: u64 = 256;
/// The harness's own base (runtime, buffers, the binary) before workers and jobs.
pub(super) const BASE_BYTES: u64 = 32 << 20;
/// Open files besides the workers' connections: stdio, logs, spill files, the cluster's.
pub(super) const SPARE_FILES: u64 = 64;

/// Checks the plan against this process's open-file limit (raising the soft limit to the
/// hard one when that is enough) and this machine's available memory.
pub(crate) fn check(plan: &Plan) -> Result<()> {
    check_files(plan, raise_nofile)?;
    match mem_available() {
        Some(available) => check_memory(plan, available),
        None => Ok(()),
    }
}

/// Open files the run needs: a connection per worker and side task, and the spare ones.
pub(super) fn files_needed(plan: &Plan) -> u64 {
    connections_needed(plan).max(0) as u64 + SPARE_FILES
}

fn check_files(plan: &Plan, raise: impl Fn(u64) -> Option<u64>) -> Result<()> {
    let need = files_needed(plan);
    let Some(limit) = raise(need) else { return Ok(()) };
    if need <= limit {
        return Ok(());
    }
    let most = limit.saturating_sub(need - u64::from(plan.workers.count));
    Err(plan.source.error(
        "workers.count",
        format!(
            "{} need about {need} open files (a connection each, plus {} for the side connections, logs and \
             spill files) but this process may open at most {limit} (RLIMIT_NOFILE, its hard limit); lower \
             workers.count to at most {most}, or raise the limit (`ulimit -n {need}` as root, or LimitNOFILE= in \
             a systemd unit)",
            crate::model::words::count(plan.workers.count, "worker"),
            need - u64::from(plan.workers.count),
        ),
    ))
}

/// Raises the soft RLIMIT_NOFILE towards `need` (up to the hard limit); returns the limit
/// that holds afterwards (None when it cannot be read).
fn raise_nofile(need: u64) -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit write and read only the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let (soft, hard): (u64, u64) = (lim.rlim_cur, lim.rlim_max);
    if soft >= need {
        return Some(soft);
    }
    let wanted = libc::rlimit { rlim_cur: need.min(hard), rlim_max: lim.rlim_max };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) } == 0 {
        return Some(need.min(hard));
    }
    Some(soft)
}

/// One part of the memory estimate: its key, its bytes, and how it was counted.
struct Part {
    key: &'static str,
    bytes: u64,
    what: String,
    /// The fix: what to lower and to how much, given the bytes left for this part.
    fix: fn(&Plan, u64) -> String,
}

fn parts(plan: &Plan) -> Vec<Part> {
    let w = u64::from(plan.workers.count);
    let claimed = w * u64::from(plan.workers.batch);
    let horizon = match plan.run.stop {
        Stop::After(d) => d.min(plan.run.timeout),
        Stop::Drained | Stop::Claims => plan.run.timeout,
    }
    .max(plan.load.duration());
    let every = |d: std::time::Duration| horizon.as_secs() / d.as_secs().max(1);
    let rows = every(plan.run.series_interval) + plan.run.sample_interval.map_or(0, every);
    vec![
        Part {
            key: "workers.count",
            bytes: w * WORKER_BYTES,
            what: format!("{} × about 1 MiB", crate::model::words::count(w, "worker")),
            fix: |_, left| format!("lower workers.count to at most {}", left / WORKER_BYTES),
        },
        Part {
            key: "jobs.preload",
            bytes: plan.jobs.preload * JOB_BYTES,
            what: format!("{} preloaded jobs × about {JOB_BYTES} bytes", plan.jobs.preload),
            fix: |_, left| format!("lower jobs.preload to at most {}", left / JOB_BYTES),
        },
        Part {
            key: "workers.batch",
            bytes: claimed * CLAIMED_BYTES,
            what: format!("batch × workers = {claimed} claimed jobs × about {CLAIMED_BYTES} bytes"),
            fix: |p, left| {
                format!(
                    "lower workers.batch to at most {} (or workers.count)",
                    (left / CLAIMED_BYTES / u64::from(p.workers.count).max(1)).max(1)
                )
            },
        },
        Part {
            key: "run.timeout",
            bytes: rows * SERIES_ROW_BYTES,
            what: format!("{rows} time-series rows over {} s × about {SERIES_ROW_BYTES} bytes", horizon.as_secs()),
            fix: |_, _| "shorten run.timeout (or run.stop), or sample less often (run.sample_interval)".into(),
        },
    ]
}

fn check_memory(plan: &Plan, available: u64) -> Result<()> {
    let parts = parts(plan);
    let need: u64 = BASE_BYTES + parts.iter().map(|p| p.bytes).sum::<u64>();
    if need <= available {
        return Ok(());
    }
    let big = parts.iter().max_by_key(|p| p.bytes).expect("four parts");
    let left = available.saturating_sub(need - big.bytes);
    let listed: Vec<String> = parts.iter().filter(|p| p.bytes > 0).map(|p| p.what.clone()).collect();
    Err(plan.source.error(
        big.key,
        format!(
            "the run needs about {} of memory in queuebench alone ({}; measured figures, docs/performance.md) but \
             this machine has {} available (MemAvailable in /proc/meminfo); {}",
            gib(need),
            listed.join(" + "),
            gib(available),
            (big.fix)(plan, left)
        ),
    ))
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// MemAvailable from /proc/meminfo, in bytes (None elsewhere).
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(sets: &[&str]) -> Plan {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.toml");
        std::fs::write(&f, "name = \"s\"\n[jobs]\npreload = 100\n[workers]\ncount = 4\n").unwrap();
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        crate::scenario::plan_from_file(&f, &sets, Some(1)).unwrap()
    }

    #[test]
    fn too_many_workers_for_the_open_file_limit_names_the_limit_and_the_fix() {
        let p = plan(&["workers.count=100000"]);
        let e = check_files(&p, |_| Some(20_000)).unwrap_err().to_string();
        assert!(e.contains("--set workers.count=100000: 100000 workers need about 100069 open files"), "{e}");
        assert!(e.contains("at most 20000 (RLIMIT_NOFILE"), "{e}");
        assert!(e.contains("lower workers.count to at most 19931"), "{e}");
        assert!(e.contains("ulimit -n 100069"), "{e}");
        check_files(&plan(&[]), |_| Some(20_000)).unwrap();
    }

    #[test]
    fn too_much_memory_names_the_biggest_part_and_how_far_to_lower_it() {
        let p = plan(&["workers.count=100000"]);
        let e = check_memory(&p, 16 << 30).unwrap_err().to_string();
        assert!(e.contains("--set workers.count=100000: the run needs about 97.7 GiB"), "{e}");
        assert!(e.contains("100000 workers × about 1 MiB"), "{e}");
        assert!(e.contains("16.0 GiB available"), "{e}");
        assert!(e.contains("lower workers.count to at most 16323"), "{e}");
        let p = plan(&["jobs.preload=100000000"]);
        let e = check_memory(&p, 16 << 30).unwrap_err().to_string();
        assert!(e.contains("--set jobs.preload=100000000: ") && e.contains("lower jobs.preload to at most"), "{e}");
        let p = plan(&["workers.count=1000", "workers.batch=100000"]);
        let e = check_memory(&p, 16 << 30).unwrap_err().to_string();
        assert!(e.contains("lower workers.batch to at most") && e.contains("100000000 claimed jobs"), "{e}");
        check_memory(&plan(&[]), 16 << 30).unwrap();
    }
}
