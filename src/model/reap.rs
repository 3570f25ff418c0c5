//! What the reaper did to a job: the harness's reaper runs the adapter's `reclaim` step, and
//! each job id its counted statement returned is one `ReapEvent` in the run's history (the
//! `reap` rows of `history.csv.gz`). The stale checker judges a worker's completion or failure
//! against them (a write that lands after the reaper gave the job back or failed it), the
//! refusal checker takes them as an explanation, and `explain` tells them in the job's story.

/// What a reclaim did with a job it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReapAction {
    /// Gave the job back to be run again (a `status` column other than `dead`, or the adapter's
    /// `[drive] reclaim = "retry"`).
    Requeued,
    /// Failed it for good: `dead`, discarded, a failed execution (a `status` of `dead`, or
    /// `[drive] reclaim = "fail"`).
    Failed,
    /// Took it back, the rows do not say how (no `status` column, no `[drive] reclaim`).
    Reclaimed,
}

impl ReapAction {
    pub const ALL: [ReapAction; 3] = [ReapAction::Requeued, ReapAction::Failed, ReapAction::Reclaimed];

    /// Its name in the history's `detail` column and in `[drive] reclaim`.
    pub fn name(self) -> &'static str {
        match self {
            ReapAction::Requeued => "retry",
            ReapAction::Failed => "fail",
            ReapAction::Reclaimed => "reclaim",
        }
    }

    pub fn parse(name: &str) -> Option<ReapAction> {
        ReapAction::ALL.into_iter().find(|a| a.name() == name)
    }

    /// What the reaper did, as a verb phrase with the job as its object ("failed it").
    pub fn did(self) -> &'static str {
        match self {
            ReapAction::Requeued => "gave it back",
            ReapAction::Failed => "failed it",
            ReapAction::Reclaimed => "reclaimed it",
        }
    }
}

/// One job a reclaim returned: when its statement returned (µs after the start; it was sent
/// `dur_us` before), and what it did with the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReapEvent {
    pub t_us: u64,
    pub job: i64,
    pub action: ReapAction,
    /// The reclaim's round trip, µs (it was sent at `t_us - dur_us`).
    pub dur_us: u32,
}

impl ReapEvent {
    /// When the reclaim was sent: it cannot have acted before.
    pub fn sent_us(&self) -> u64 {
        self.t_us.saturating_sub(u64::from(self.dur_us))
    }
}
