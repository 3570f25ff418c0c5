//! Faults and recovery: for each fault that hit a job, the time from the
//! fault to that job's next accepted completion. A job never completed
//! after its fault is unrecovered (it may legitimately be dead).

use crate::collect::{Event, EventKind, FaultEvent};
use crate::report::summary::Faults;

pub fn check(faults: &[FaultEvent], per_job: &[&[Event]]) -> Faults {
    let mut f = Faults::default();
    for k in ["crash", "pause", "kill_backend", "lock_hold", "poison"] {
        f.by_kind.insert(k.into(), 0);
    }
    for ev in faults {
        *f.by_kind.entry(ev.kind.to_string()).or_default() += 1;
        f.injected += 1;
        let Some(job) = ev.job else { continue };
        let done = per_job
            .binary_search_by_key(&job, |events| events[0].job)
            .ok()
            .and_then(|i| per_job[i].iter().find(|e| e.kind == EventKind::Accepted && e.t_us >= ev.t_us));
        match done {
            Some(d) => {
                let ms = (d.t_us - ev.t_us) as f64 / 1000.0;
                f.recovered += 1;
                f.recovery_ms_max = f.recovery_ms_max.max(ms);
                f.recovery_ms_total += ms;
            }
            None => f.unrecovered += 1,
        }
    }
    if f.recovered > 0 {
        f.recovery_ms_mean = f.recovery_ms_total / f.recovered as f64;
    }
    f
}
