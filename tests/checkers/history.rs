//! Histories: what the checkers read, built by hand or generated.

use super::*;

/// Everything the checkers read (the rest of `Evidence` is empty: no samples, classes, blockers).
#[derive(Debug, Clone, Default)]
pub(crate) struct History {
    pub(crate) journal: Vec<Event>,
    /// The final table, sorted by id (as `observe::final_state` returns it).
    pub(crate) rows: Vec<JobRow>,
    pub(crate) faults: Vec<FaultEvent>,
    /// Jobs 1..=enqueued were enqueued.
    pub(crate) enqueued: u64,
    pub(crate) restarts: Vec<u64>,
    /// When the server was back after each restart (empty: not recorded, as in old evidence).
    pub(crate) restarts_up: Vec<u64>,
    /// The failovers among the restarts (evidence.json's `failovers`).
    pub(crate) failovers: Vec<FailoverRecord>,
    pub(crate) arrivals: Vec<Arrival>,
    /// When the workers were told to stop (None: they stopped on their own).
    pub(crate) stopped: Option<u64>,
    /// The run's duration (0: the last event marks the end).
    pub(crate) end: u64,
}

impl History {
    pub(crate) fn new(journal: Vec<Event>, mut rows: Vec<JobRow>, enqueued: u64) -> History {
        rows.sort_by_key(|r| r.id);
        History { journal, rows, enqueued, ..Default::default() }
    }

    pub(crate) fn evidence(&self) -> Evidence<'_> {
        Evidence {
            journal: &self.journal,
            final_jobs: &self.rows,
            enqueued: self.enqueued,
            effects_rows: None,
            effects_unwritten: 0,
            faults: &self.faults,
            reaps: &[],
            reaps_unjournaled: 0,
            lease: LEASE,
            hold_transaction: false,
            session_lease: false,
            successors: &[],
            arrivals: &self.arrivals,
            classes: &[],
            samples: &[],
            starvation: starvation::Rule { threshold: Duration::from_secs(3600), load_end: Duration::ZERO },
            blockers: &[],
            restarts: &self.restarts,
            restarts_up: &self.restarts_up,
            failovers: &self.failovers,
            durability_untestable: None,
            clock_us: 0,
            stopped_us: self.stopped,
            end_us: self.end,
            errors: &[],
            expected_errors: &[],
            exclusion: None,
            unique: None,
        }
    }

    /// Printable, one event a line, for replaying a failure by hand.
    pub(crate) fn show(&self) -> String {
        let mut s = format!(
            "enqueued = {}, lease = {LEASE_US} µs, restarts = {:?}, stopped = {:?}, end = {}\njournal (t_us, job, attempt, worker, claim, kind, dur_us):\n",
            self.enqueued, self.restarts, self.stopped, self.end
        );
        let mut journal = self.journal.clone();
        journal.sort_by_key(|e| (e.job, e.t_us));
        for e in &journal {
            let _ = writeln!(
                s,
                "  ({:>9}, {}, {:>2}, {}, {:>2}, {:?}, {})",
                e.t_us, e.job, e.attempt, e.worker, e.claim, e.kind, e.dur_us
            );
        }
        let _ = writeln!(s, "rows:");
        for r in &self.rows {
            let _ = writeln!(s, "  {r:?}");
        }
        for f in &self.faults {
            let _ = writeln!(s, "fault: {f:?}");
        }
        for a in &self.arrivals {
            let _ = writeln!(s, "arrival: {a:?}");
        }
        s
    }
}

/// One claim, for building histories by hand.
#[derive(Clone, Copy)]
pub(crate) struct C {
    pub(crate) job: i64,
    pub(crate) worker: u32,
    pub(crate) claim: u32,
    pub(crate) attempt: i32,
}

pub(crate) const fn c(job: i64, worker: u32, claim: u32, attempt: i32) -> C {
    C { job, worker, claim, attempt }
}

impl C {
    pub(crate) fn ev(self, t_us: u64, kind: EventKind, dur_us: u64) -> Event {
        let C { job, worker, claim, attempt } = self;
        Event { t_us, job, attempt, worker, claim, kind, dur_us: u32::try_from(dur_us).unwrap(), token: 0 }
    }
    /// The claim was sent at `sent` and came back at `ret`.
    pub(crate) fn claimed(self, sent: u64, ret: u64) -> Event {
        self.ev(ret, Claimed, ret - sent)
    }
    /// The side effect, ending at `t`.
    pub(crate) fn executed(self, t: u64) -> Event {
        self.ev(t, Executed, 0)
    }
    /// A completion, failure or heartbeat sent at `sent` that returned at `ret`.
    pub(crate) fn write(self, kind: EventKind, sent: u64, ret: u64) -> Event {
        self.ev(sent, kind, ret - sent)
    }
    pub(crate) fn at(self, kind: EventKind, t: u64) -> Event {
        self.ev(t, kind, 0)
    }
}

pub(crate) fn row(id: i64, status: Status) -> JobRow {
    JobRow { id, status, attempts: 1, max_attempts: 5, lease_expired: false }
}

pub(crate) fn cancel(job: i64, t_us: u64) -> FaultEvent {
    FaultEvent { t_us, kind: FaultKind::Cancel, worker: None, job: Some(job) }
}
