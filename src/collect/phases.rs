//! Per-phase numbers: the claim, work and completion latencies of the
//! statements sent inside each load phase, and the executions and claims
//! counted there. Queue waits per phase are in `waits` (they follow the
//! job's intended enqueue time, not the claim's).

use super::histogram;
use super::{Event, EventKind, Samples};
use hdrhistogram::Histogram;

/// One phase's window in µs since the start: `[start, end)`.
pub(crate) type Window = (u64, u64);

pub(crate) struct PhaseStats {
    pub claim: Histogram<u64>,
    pub work: Histogram<u64>,
    pub complete: Histogram<u64>,
    pub claims: u64,
    pub executions: u64,
}

/// The index of the window `t_us` falls in.
pub(crate) fn window_of(windows: &[Window], t_us: u64) -> Option<usize> {
    windows.iter().position(|(s, e)| (*s..*e).contains(&t_us))
}

pub(crate) fn measure(windows: &[Window], samples: &Samples, journal: &[Event]) -> Vec<PhaseStats> {
    let mut out: Vec<PhaseStats> = windows
        .iter()
        .map(|_| PhaseStats { claim: histogram(), work: histogram(), complete: histogram(), claims: 0, executions: 0 })
        .collect();
    if out.is_empty() {
        return out;
    }
    for (list, which) in [(&samples.claim, 0), (&samples.work, 1), (&samples.complete, 2)] {
        for &super::Sample { at_ms: ms, us } in list {
            let Some(i) = window_of(windows, u64::from(ms) * 1000) else { continue };
            let p = &mut out[i];
            match which {
                0 => {
                    p.claims += 1;
                    p.claim.saturating_record(u64::from(us).max(1));
                }
                1 => p.work.saturating_record(u64::from(us).max(1)),
                _ => p.complete.saturating_record(u64::from(us).max(1)),
            }
        }
    }
    for e in journal.iter().filter(|e| e.kind == EventKind::Executed) {
        if let Some(i) = window_of(windows, e.t_us) {
            out[i].executions += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::{Latency, WorkerStats};

    #[test]
    fn samples_and_executions_fall_in_their_phase() {
        let mut st = WorkerStats::default();
        st.record(Latency::Claim, 500_000, 100);
        st.record(Latency::Claim, 1_500_000, 9_000);
        st.record(Latency::Claim, 1_700_000, 8_000);
        st.record(Latency::Claim, 9_000_000, 1);
        let ev = |t_us| Event {
            t_us,
            job: 1,
            attempt: 1,
            worker: 1,
            claim: 1,
            kind: EventKind::Executed,
            dur_us: 0,
            token: 0,
        };
        let journal = [ev(100), ev(1_200_000), ev(1_300_000), ev(1_999_999)];
        let mut samples = Samples::default();
        st.take_samples(&mut samples);
        let p = measure(&[(0, 1_000_000), (1_000_000, 2_000_000)], &samples, &journal);
        assert_eq!((p[0].claims, p[1].claims), (1, 2), "the sample at 9 s is after every phase");
        assert_eq!((p[0].executions, p[1].executions), (1, 3));
        assert!(p[1].claim.min() >= 7_990 && p[0].claim.max() <= 101);
    }
}
