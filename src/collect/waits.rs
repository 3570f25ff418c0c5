//! Queue wait and end-to-end latency, measured from each job's *intended*
//! enqueue time (the producer's schedule; the start of the run for preloaded
//! jobs), so a producer that falls behind cannot hide latency. Built after
//! the run from the producers' and the workers' journals: nothing shared
//! while the run is hot.

use super::histogram;
use super::phases::{Window, window_of};
use super::{Arrival, Event, EventKind, Sample};
use hdrhistogram::Histogram;
use std::collections::HashMap;

/// Microsecond histograms; `queue_wait[0]` is the preloaded "default" class.
pub(crate) struct Waits {
    pub queue_wait: Vec<Histogram<u64>>,
    pub end_to_end: Histogram<u64>,
    pub producer_lag: Histogram<u64>,
    pub enqueue: Histogram<u64>,
    /// Enqueue commit (sent + enqueue time) to first claim, open-model jobs only:
    /// how fast an idle worker notices new work (polling backoff vs LISTEN/NOTIFY).
    pub pickup: Histogram<u64>,
    /// Jobs left out because they were meant to arrive during a warm-up phase.
    pub excluded_warmup: u64,
    /// The queue wait per class (taken at the claim), and end to end (taken at the completion):
    /// the interval logs.
    pub queue_wait_samples: Vec<Vec<Sample>>,
    pub end_to_end_samples: Vec<Sample>,
    /// Per load phase (by the job's intended enqueue time): queue wait per class and end to end.
    pub by_phase: Vec<PhaseWaits>,
}

pub(crate) struct PhaseWaits {
    pub queue_wait: Vec<Histogram<u64>>,
    pub end_to_end: Histogram<u64>,
}

/// `classes` counts the open-model classes (the default class comes on top); `phases` are the load
/// phases' windows (µs since the start). Warm-up jobs stay out of the totals but count in their phase.
pub(crate) fn measure(
    journal: &[Event],
    arrivals: &[Arrival],
    classes: usize,
    warmup_end_us: u64,
    phases: &[Window],
) -> Waits {
    let mut w = Waits {
        queue_wait: (0..=classes).map(|_| histogram()).collect(),
        end_to_end: histogram(),
        producer_lag: histogram(),
        enqueue: histogram(),
        pickup: histogram(),
        excluded_warmup: 0,
        queue_wait_samples: vec![Vec::new(); classes + 1],
        end_to_end_samples: Vec::new(),
        by_phase: phases
            .iter()
            .map(|_| PhaseWaits { queue_wait: (0..=classes).map(|_| histogram()).collect(), end_to_end: histogram() })
            .collect(),
    };
    let mut intended: HashMap<i64, (u16, u64, Option<u64>)> = HashMap::with_capacity(arrivals.len());
    for a in arrivals {
        intended.insert(a.job, (a.class, a.intended_us, Some(a.sent_us + u64::from(a.enqueue_us))));
        w.producer_lag.saturating_record(a.sent_us.saturating_sub(a.intended_us).max(1));
        w.enqueue.saturating_record(u64::from(a.enqueue_us).max(1));
    }
    // First claim and first accepted completion of each job.
    let mut first: HashMap<i64, (Option<u64>, Option<u64>)> = HashMap::new();
    for e in journal {
        let slot = match e.kind {
            EventKind::Claimed => 0,
            EventKind::Accepted => 1,
            _ => continue,
        };
        let entry = first.entry(e.job).or_default();
        let t = if slot == 0 { &mut entry.0 } else { &mut entry.1 };
        *t = Some(t.map_or(e.t_us, |old| old.min(e.t_us)));
    }
    for (job, (claimed, done)) in first {
        let (class, at, committed) = intended.get(&job).copied().unwrap_or((0, 0, None));
        if let Some(p) = window_of(phases, at).map(|i| &mut w.by_phase[i]) {
            if let Some(c) = claimed {
                p.queue_wait[class as usize].saturating_record(c.saturating_sub(at).max(1));
            }
            if let Some(d) = done {
                p.end_to_end.saturating_record(d.saturating_sub(at).max(1));
            }
        }
        if at < warmup_end_us {
            w.excluded_warmup += 1;
            continue;
        }
        let sample =
            |t: u64| Sample { at_ms: (t / 1000) as u32, us: t.saturating_sub(at).clamp(1, u64::from(u32::MAX)) as u32 };
        if let Some(c) = claimed {
            w.queue_wait[class as usize].saturating_record(c.saturating_sub(at).max(1));
            w.queue_wait_samples[class as usize].push(sample(c));
            if let Some(commit) = committed {
                w.pickup.saturating_record(c.saturating_sub(commit).max(1));
            }
        }
        if let Some(d) = done {
            w.end_to_end.saturating_record(d.saturating_sub(at).max(1));
            w.end_to_end_samples.push(sample(d));
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t_us: u64, job: i64, kind: EventKind) -> Event {
        Event { t_us, job, attempt: 1, worker: 1, claim: 1, kind, dur_us: 0, token: 0 }
    }

    #[test]
    fn wait_counts_from_the_intended_time_not_the_send_time() {
        // Job 9 was meant to arrive at 1 s, sent late at 3 s, claimed at 3.5 s.
        let arrivals = [Arrival { job: 9, class: 1, intended_us: 1_000_000, sent_us: 3_000_000, enqueue_us: 500 }];
        let journal = [ev(3_500_000, 9, EventKind::Claimed), ev(3_600_000, 9, EventKind::Accepted)];
        let w = measure(&journal, &arrivals, 1, 0, &[]);
        assert!((2_490_000..=2_510_000).contains(&w.queue_wait[1].max()), "{}", w.queue_wait[1].max());
        assert!(w.end_to_end.max() >= 2_590_000);
        assert!(w.producer_lag.max() >= 1_990_000, "the producer's lag is reported too");
        // Pickup counts from the commit (sent 3 s + 500 µs enqueue), not from the intended time.
        assert!((495_000..=505_000).contains(&w.pickup.max()), "{}", w.pickup.max());
    }

    #[test]
    fn preloaded_jobs_wait_from_the_start_and_warmup_is_excluded() {
        let arrivals = [Arrival { job: 2, class: 1, intended_us: 100, sent_us: 100, enqueue_us: 500 }];
        let journal = [ev(5_000, 1, EventKind::Claimed), ev(6_000, 2, EventKind::Claimed)];
        let w = measure(&journal, &arrivals, 1, 1_000, &[(0, 1_000), (1_000, 10_000_000)]);
        assert_eq!(w.queue_wait[0].len(), 0, "job 1 (intended at 0) is in the warm-up");
        assert_eq!(w.excluded_warmup, 2);
        assert_eq!(w.by_phase[0].queue_wait[0].len(), 1, "the warm-up phase still has its own numbers");
        assert_eq!(w.by_phase[0].queue_wait[1].len(), 1);
        assert_eq!(w.by_phase[1].queue_wait[1].len(), 0);
        let w = measure(&journal, &arrivals, 1, 0, &[]);
        assert_eq!(w.queue_wait[0].len(), 1);
        assert_eq!(w.queue_wait[1].len(), 1);
        assert_eq!(w.pickup.len(), 1, "preloaded jobs have no enqueue commit: no pickup latency");
    }
}
