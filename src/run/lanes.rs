//! Threads for the workers: each worker lives on one lane (a thread with a
//! single-threaded runtime of its own), with its connection, its timers and its
//! reconnects, and never moves. This is pgbench's `-j`: a client and its
//! backend ping-pong on one core instead of one harness thread waking every
//! backend in turn, or a work-stealing pool moving workers between threads.
//!
//! How many: one per core, at most one per worker (`QUEUEBENCH_THREADS=N`
//! overrides; 1 runs every worker on the main thread beside the sampler and the
//! producers). Measured on 2 cores at 2 connections (README "Performance"): one
//! thread for both workers reached 0.72–0.89 of pgbench's jobs/s and spent 1.5×
//! its system time per job; a lane per worker, 0.97–1.08.

use std::future::Future;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct Lanes {
    handles: Vec<Handle>,
    /// Dropping a sender ends its lane's thread (the runtime is dropped there, with any task left).
    _stops: Vec<oneshot::Sender<()>>,
}

/// The environment variable that sets the lane count.
pub const THREADS_VAR: &str = "QUEUEBENCH_THREADS";

/// `QUEUEBENCH_THREADS` checked once at start (`main`): unset or empty is None (one lane per
/// core); anything but a whole number of at least 1 is refused (exit 2), not ignored.
pub fn threads_from_env() -> crate::error::Result<Option<usize>> {
    let Some(value) = std::env::var_os(THREADS_VAR) else { return Ok(None) };
    let text = value.to_string_lossy();
    parse_threads(&text).map_err(|e| crate::error::Error::Flag {
        flag: format!("{THREADS_VAR}={}", crate::error::shown(&text)),
        reason: e.reason,
    })
}

fn parse_threads(text: &str) -> std::result::Result<Option<usize>, crate::error::Invalid> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(crate::error::Invalid::new(
            "is not accepted: give a whole number of at least 1 (the threads the workers run on; 1 puts every \
             worker on the main thread), or leave it unset for one per core",
        )),
    }
}

/// The lane count for `workers` workers: `QUEUEBENCH_THREADS`, else the machine's cores,
/// never more than the workers.
pub fn count(workers: u32) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    count_from(std::env::var(THREADS_VAR).ok().as_deref(), cores, workers)
}

/// The value was checked at start (`threads_from_env`); one refused there never gets here.
fn count_from(asked: Option<&str>, cores: usize, workers: u32) -> usize {
    let asked = asked.and_then(|v| parse_threads(v).ok().flatten());
    asked.unwrap_or(cores).min(workers as usize)
}

impl Lanes {
    /// `count(workers)` lanes; none (the caller's runtime) when that is one.
    pub fn for_workers(workers: u32) -> std::io::Result<Lanes> {
        match count(workers) {
            0 | 1 => Ok(Lanes::none()),
            n => Lanes::start(n),
        }
    }

    /// Workers on the caller's runtime.
    pub fn none() -> Lanes {
        Lanes { handles: Vec::new(), _stops: Vec::new() }
    }

    /// `n` lanes, each a named thread running a single-threaded runtime.
    pub fn start(n: usize) -> std::io::Result<Lanes> {
        let mut lanes = Lanes::none();
        for i in 0..n {
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            let (handle_tx, handle_rx) = std::sync::mpsc::channel();
            std::thread::Builder::new().name(format!("queuebench-lane-{i}")).spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = handle_tx.send(Err(e));
                        return;
                    }
                };
                let _ = handle_tx.send(Ok(rt.handle().clone()));
                lane_main(&rt, stop_rx);
            })?;
            let handle = handle_rx.recv().map_err(std::io::Error::other)??;
            lanes.handles.push(handle);
            lanes._stops.push(stop_tx);
        }
        Ok(lanes)
    }

    /// Runs `fut` on lane `i` (modulo the lane count), or on the caller's runtime without lanes.
    pub fn spawn<F>(&self, i: usize, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.handles.len() {
            0 => tokio::spawn(fut),
            n => self.handles[i % n].spawn(fut),
        }
    }
}

/// A lane's thread: runs its runtime's tasks until the lanes are dropped. Never inlined, so
/// profilers can count the worker threads alone (`cargo xtask callgrind --hot`).
#[inline(never)]
fn lane_main(rt: &tokio::runtime::Runtime, stop: oneshot::Receiver<()>) {
    rt.block_on(async {
        let _ = stop.await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lane_per_core_at_most_one_per_worker() {
        assert_eq!(count_from(None, 2, 8), 2);
        assert_eq!(count_from(None, 16, 3), 3);
        assert_eq!(count_from(Some("4"), 2, 8), 4);
        assert_eq!(count_from(Some("1"), 2, 8), 1);
        // Nonsense is refused at start (`threads_from_env`), so it never gets here.
        assert_eq!(count_from(Some(""), 2, 8), 2);
    }

    #[test]
    fn a_thread_count_that_is_not_one_is_refused() {
        assert_eq!(parse_threads("3"), Ok(Some(3)));
        assert_eq!(parse_threads(" "), Ok(None));
        for bad in ["0", "abc", "-1", "1.5", "99999999999999999999999"] {
            let e = parse_threads(bad).unwrap_err();
            assert!(e.reason.contains("a whole number of at least 1") && e.reason.contains("unset"), "{bad}: {e}");
        }
    }

    #[test]
    fn workers_stay_on_their_lane() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let lanes = Lanes::start(2).unwrap();
            let name = || std::thread::current().name().unwrap_or("").to_string();
            let mut seen = Vec::new();
            for i in 0..4 {
                seen.push(
                    lanes.spawn(i, async move { (name(), tokio::task::yield_now().await, name()) }).await.unwrap(),
                );
            }
            let names: Vec<&str> = seen
                .iter()
                .map(|(a, _, b)| {
                    assert_eq!(a, b, "a task moved between threads");
                    a.as_str()
                })
                .collect();
            assert_eq!(names, ["queuebench-lane-0", "queuebench-lane-1", "queuebench-lane-0", "queuebench-lane-1"]);
            // Without lanes a task runs on the caller's runtime.
            let here = Lanes::none().spawn(0, async move { name() }).await.unwrap();
            assert_eq!(here, name());
        });
    }
}
