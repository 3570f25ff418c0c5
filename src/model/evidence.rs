//! What the checkers read besides the history and the final table, saved with the run
//! (`evidence.json`), so `queuebench check` runs every checker again, offline, on exactly
//! what the run saw: the counts, the lease, the classes, the Postgres time series, the
//! blockers' spans, the restarts.

use super::errors::ErrorCount;
use super::records::{BlockerSpan, FailoverRecord, NetworkSpan, PgSample};
use serde::{Deserialize, Serialize};

/// `evidence.json`'s `schema_version` (renaming or removing a field bumps it).
pub(crate) const EVIDENCE_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SavedEvidence {
    pub schema_version: u32,
    /// Jobs enqueued (preloaded and produced).
    pub enqueued: u64,
    /// Rows in the effects table, when it was enabled and read.
    pub effects_rows: Option<u64>,
    /// Executions known to be missing from the effects table: a killed agent's, whose ledger
    /// rows died in its batch (its workers' done rows witness them).
    pub effects_unwritten: u64,
    /// The lease the claims took, in µs (as run: scaled by `run.time_scale`).
    pub lease_us: u64,
    /// hold-transaction mode: a claim ends with its transaction.
    pub hold_transaction: bool,
    /// Class names, "default" (preloaded) first: a history's class is one of these.
    pub classes: Vec<String>,
    pub samples: Vec<PgSample>,
    pub blockers: Vec<BlockerSpan>,
    /// When the server went down for each restart, µs after the start.
    pub restarts: Vec<u64>,
    /// When it accepted connections again after each restart, in the same order (`u64::MAX`:
    /// never); empty in evidence from before it was recorded. A connection open at any moment
    /// between the two may have been cut.
    #[serde(default)]
    pub restarts_up: Vec<u64>,
    /// The `failover` faults (the primary killed, the standby promoted); each is also in
    /// `restarts`/`restarts_up` (the server the run reaches went away and came back).
    pub failovers: Vec<FailoverRecord>,
    /// Why those restarts cannot test durability (`fsync = off`), if so.
    pub durability_untestable: Option<String>,
    pub starvation_threshold_us: u64,
    /// When the producers stopped, µs after the start.
    pub load_end_us: u64,
    /// The database was lost: there is no final table (the checks that need it are left out).
    pub partial: bool,
    /// `run.time_scale`, to report in the scenario's units.
    pub time_scale: f64,
    /// A run across agents: the largest clock error bound among them, µs (0 for one clock);
    /// the lease-race tolerance is no smaller than twice it.
    #[serde(default)]
    pub clock_bound_us: u64,
    /// When the workers were told to stop (a `run.stop` duration, the timeout, Ctrl-C, an
    /// abort), µs after the start; None when they stopped on their own (drained, claims), and
    /// in evidence written before the field.
    pub stopped_us: Option<u64>,
    /// How long the run lasted, µs (0 in evidence written before the field: the last event
    /// of the history then marks the end).
    pub duration_us: u64,
    /// The adapter's lease is its session (`drive.lease = "session"`, advisory locks): a claim
    /// holds its job until its holder lets go or its connection ends, whatever the lease says.
    #[serde(default)]
    pub session_lease: bool,
    /// Jobs the reaper reclaimed with a statement that returns no ids (no `RETURNING`): the
    /// history has no `reap` row for them, so writes after them cannot be judged against them.
    #[serde(default)]
    pub reaper_unjournaled: u64,
    /// The precision the queue keeps its times to, µs (`drive.time_resolution`; 0: exact).
    #[serde(default)]
    pub time_resolution_us: u64,
    /// (job, the job it was retried as): failures that re-inserted a job under a new id
    /// (`[result] successor`); the checkers judge each chain as one job.
    #[serde(default)]
    pub successors: Vec<(i64, i64)>,
    /// The network faults on agents' paths (report.html's swimlanes draw them); empty for a
    /// local run and in evidence written before the field.
    #[serde(default)]
    pub network: Vec<NetworkSpan>,
    /// The workers' statement errors by statement and code, each with its first message.
    #[serde(default)]
    pub errors: Vec<ErrorCount>,
    /// SQLSTATEs the adapter and the scenario declare expected (`unexpected_errors` leaves them).
    #[serde(default)]
    pub expected_errors: Vec<String>,
    /// The adapter's `[result] exclusion_key`: each claimed job's key, and how many jobs of one
    /// key may run at once (None: the adapter declares no key).
    #[serde(default)]
    pub exclusion: Option<Exclusion>,
    /// The adapter's `[result] unique_key`: each produced job's key, the enqueues that were
    /// deduplicated, and how long a job keeps its key (None: the enqueue does not dedupe).
    #[serde(default)]
    pub unique: Option<Unique>,
}

/// Jobs that exclude each other by a key (`mutual_exclusion`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Exclusion {
    /// How many jobs of one key may run at once.
    pub limit: u32,
    /// (job, key), one per job, sorted by job.
    pub keys: Vec<(i64, String)>,
}

/// A deduplicating enqueue (`unique_enqueue`): the keys of the jobs it inserted and its rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Unique {
    /// (job, key), one per produced job, sorted by job.
    pub keys: Vec<(i64, String)>,
    /// Enqueues that returned no row: the key was taken, no job was made.
    pub deduplicated: u64,
    /// A done, dead or cancelled job keeps its key too (`[drive] unique_states`); queued and
    /// running ones always do.
    pub done: bool,
    pub dead: bool,
    pub cancelled: bool,
    /// A job keeps its key at most this long after its enqueue, µs as run (`[drive] unique_period`).
    pub period_us: Option<u64>,
}

impl SavedEvidence {
    /// Half the slack the race/expiry boundary allows (`verify::claims::race_tolerance` takes
    /// twice it): the agents' clock error bound, or half the queue's time resolution, whichever
    /// is larger — a queue that keeps whole seconds sees a lease run out up to a second early.
    pub fn boundary_us(&self) -> u64 {
        self.clock_bound_us.max(self.time_resolution_us.div_ceil(2))
    }
}
