//! Why a job ran again: the one vocabulary the checkers (`exactly_once`, `run_after_completion`),
//! `explain`, the swimlanes and summary.json's `executions` use for an execution beyond a
//! job's first. Each cause has its own words, so a correct at-least-once queue and a broken
//! one never read alike.

use serde::{Deserialize, Serialize};

/// The cause of one execution after a job's first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rerun {
    /// The claim was sent while another claim's lease on the job still ran: the queue handed
    /// out a job somebody held (the bug a lock prevents).
    Race,
    /// The previous holder was alive and still believed it held the job, but its lease had run
    /// out (a pause, a slow job): the at-least-once a lease promises.
    LeaseExpired,
    /// The previous holder let go without finishing (a crash, a lost connection) and its lease
    /// had run out or been released: at-least-once after a crash.
    AfterCrash,
    /// A completion of the job had been accepted before this claim was sent: the queue gave a
    /// finished job out again (a rescuer overwriting a completion, a snapshot older than the
    /// lock, a claim that ignores the status).
    AfterCompletion,
    /// The previous holder's failure was accepted and the queue scheduled the job again: a
    /// retry, which is no duplicate.
    Retry,
    /// The previous holder sent its completion and lost the answer (its connection was cut):
    /// the job ran again after an acknowledgement whose outcome its worker did not know
    /// (the completion never landed and the lease ran out, or the completion sent again put a
    /// finished job back).
    AfterAckUnknown,
}

impl Rerun {
    /// Every cause, in the order summaries list them.
    pub const ALL: [Rerun; 6] = [
        Rerun::Race,
        Rerun::LeaseExpired,
        Rerun::AfterCrash,
        Rerun::AfterCompletion,
        Rerun::Retry,
        Rerun::AfterAckUnknown,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rerun::Race => "race",
            Rerun::LeaseExpired => "lease_expired",
            Rerun::AfterCrash => "after_crash",
            Rerun::AfterCompletion => "after_completion",
            Rerun::Retry => "retry",
            Rerun::AfterAckUnknown => "after_ack_unknown",
        }
    }

    /// A few words for summaries and legends ("by racing claims").
    pub fn words(self) -> &'static str {
        match self {
            Rerun::Race => "by racing claims",
            Rerun::LeaseExpired => "after a lease ran out while its holder lived",
            Rerun::AfterCrash => "after the holder crashed or lost its connection",
            Rerun::AfterCompletion => "after the job's completion was accepted",
            Rerun::Retry => "retries after an accepted failure",
            Rerun::AfterAckUnknown => "after an acknowledgement whose outcome was unknown",
        }
    }

    /// Does this execution break exactly-once? A retry after an accepted failure does not: the
    /// failure ended the attempt, and running the job again is what a retry is.
    pub fn is_duplicate(self) -> bool {
        self != Rerun::Retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_only_a_retry_is_no_duplicate() {
        for r in Rerun::ALL {
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{}\"", r.name()));
            assert_eq!(r.is_duplicate(), r != Rerun::Retry);
        }
    }
}
