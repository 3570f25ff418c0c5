//! Live counters for abort-on-fail expectations. They exist only when the
//! plan has an abort expectation (`Shared::live` is None otherwise, so a
//! normal run shares nothing hot). Workers report every journal event here
//! as they log it; a watcher task judges a snapshot every 100 ms with
//! `gate::live` and stops the run at the first broken expectation.

use crate::collect::{Event, EventKind};
use crate::model::expect::{LiveValues, watches_claims};
use crate::scenario::Plan;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const SHARDS: usize = 64;

#[derive(Default, Clone, Copy)]
struct JobSeen {
    executions: u32,
    /// The newest claim that came back: (attempt, worker, claim number).
    latest: Option<(i32, u32, u32)>,
}

pub(crate) struct Live {
    jobs: Vec<Mutex<HashMap<i64, JobSeen>>>,
    duplicates: AtomicU64,
    jobs_duplicated: AtomicU64,
    stale_accepted: AtomicU64,
    lost: AtomicU64,
    /// The slowest claim so far in µs (only when an abort expectation watches it).
    claim_max_us: Option<AtomicU64>,
}

impl Live {
    /// Some when the plan has an abort expectation.
    pub(crate) fn for_plan(plan: &Plan) -> Option<Live> {
        plan.expectations.iter().any(|e| e.abort).then(|| Live::new(watches_claims(&plan.expectations)))
    }

    fn new(watch_claims: bool) -> Live {
        Live {
            jobs: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            duplicates: AtomicU64::new(0),
            jobs_duplicated: AtomicU64::new(0),
            stale_accepted: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            claim_max_us: watch_claims.then(|| AtomicU64::new(0)),
        }
    }

    /// A staleness witness taken before a completion is sent: the job's newest claim then.
    pub(crate) fn latest_claim(&self, job: i64) -> Option<(i32, u32, u32)> {
        self.shard(job).get(&job).and_then(|j| j.latest)
    }

    fn shard(&self, job: i64) -> std::sync::MutexGuard<'_, HashMap<i64, JobSeen>> {
        self.jobs[job.rem_euclid(SHARDS as i64) as usize].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One journal event; `before_send` is `latest_claim` taken when an Accepted completion was sent.
    pub(crate) fn observe(&self, e: &Event, before_send: Option<(i32, u32, u32)>) {
        if !matches!(e.kind, EventKind::Claimed | EventKind::Executed | EventKind::Accepted) {
            return;
        }
        let mut shard = self.shard(e.job);
        let seen = shard.entry(e.job).or_default();
        match e.kind {
            EventKind::Claimed if seen.latest.is_none_or(|(a, _, _)| e.attempt >= a) => {
                seen.latest = Some((e.attempt, e.worker, e.claim));
            }
            EventKind::Executed => {
                seen.executions += 1;
                if seen.executions >= 2 {
                    self.duplicates.fetch_add(1, Ordering::Relaxed);
                }
                if seen.executions == 2 {
                    self.jobs_duplicated.fetch_add(1, Ordering::Relaxed);
                }
            }
            EventKind::Accepted => {
                if seen.executions == 0 {
                    self.lost.fetch_add(1, Ordering::Relaxed);
                }
                if before_send.is_some_and(|(_, w, c)| (w, c) != (e.worker, e.claim)) {
                    self.stale_accepted.fetch_add(1, Ordering::Relaxed);
                }
            }
            _ => {}
        }
    }

    pub(crate) fn record_claim(&self, micros: u64) {
        if let Some(max) = &self.claim_max_us {
            max.fetch_max(micros, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self, errors: u64) -> LiveValues {
        LiveValues {
            duplicates: self.duplicates.load(Ordering::Relaxed),
            jobs_duplicated: self.jobs_duplicated.load(Ordering::Relaxed),
            stale_accepted: self.stale_accepted.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            errors,
            claim_max: self.claim_max_us.as_ref().map(|m| m.load(Ordering::Relaxed) as f64 / 1000.0),
        }
    }
}

/// Judges the live counters every 100 ms until `stop`; on the first broken abort expectation,
/// stops the run and returns its description.
pub(crate) async fn watch(
    live: &Live,
    plan: &Plan,
    errors: &AtomicU64,
    start: Instant,
    stop: &CancellationToken,
) -> Option<String> {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return None,
            _ = tick.tick() => {}
        }
        let t = start.elapsed().as_secs_f64();
        if let Some(failed) = live.snapshot(errors.load(Ordering::Relaxed)).first_failure(&plan.expectations, t) {
            stop.cancel();
            return Some(failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(job: i64, worker: u32, claim: u32, attempt: i32, kind: EventKind) -> Event {
        Event { t_us: 0, job, attempt, worker, claim, kind, dur_us: 0, token: 0 }
    }

    #[test]
    fn counts_duplicates_stale_and_lost_completions() {
        let live = Live::new(false);
        live.observe(&ev(1, 1, 1, 1, EventKind::Claimed), None);
        live.observe(&ev(1, 1, 1, 1, EventKind::Executed), None);
        live.observe(&ev(1, 2, 1, 2, EventKind::Claimed), None);
        live.observe(&ev(1, 2, 1, 2, EventKind::Executed), None);
        // Worker 1 completes after worker 2 re-claimed: stale.
        let witness = live.latest_claim(1);
        live.observe(&ev(1, 1, 1, 1, EventKind::Accepted), witness);
        // Worker 2's own completion is not.
        live.observe(&ev(1, 2, 1, 2, EventKind::Accepted), live.latest_claim(1));
        // A completion of a job nobody executed.
        live.observe(&ev(7, 3, 1, 1, EventKind::Accepted), None);
        let s = live.snapshot(4);
        assert_eq!((s.duplicates, s.jobs_duplicated, s.stale_accepted, s.lost, s.errors), (1, 1, 1, 1, 4));
        assert!(s.claim_max.is_none());
    }
}
