//! Unexpected errors: the queue's own statements (claim, completion, failure, heartbeat, a
//! hold-transaction round's COMMIT, a producer's enqueue) ended with an error nothing explains.
//! A unique violation in the claim where two workers took one lock, a serialization failure, a deadlock: the database
//! turned a bug into an error, and the run does not pass on it. Left alone: the SQLSTATEs the
//! adapter (`[drive] expected_errors`) or the scenario (`[run] expected_errors`) declares, and a
//! lost connection (`io`, class 08, 57P01–57P03, a pool's acquire timeout) when the run cut
//! connections itself (a fault that does, a restart or failover) or was stopped; and a pooled
//! connection that never came (`acquire_timeout`: no statement was sent).

use super::Evidence;
use crate::model::check::Check;
use crate::model::errors::{ErrorCount, is_client_wait, is_connection_loss};
use crate::model::summary::CheckResult;
use crate::model::words::count;

pub(super) fn check(e: &Evidence) -> Option<CheckResult> {
    let judged: Vec<&ErrorCount> = e.errors.iter().filter(|c| c.statement.is_the_queues()).collect();
    if judged.is_empty() {
        return None;
    }
    let cut = e.faults.iter().any(|f| super::liveness::cuts_connection(f.kind)) || !e.restarts.is_empty();
    let explained = |c: &ErrorCount| {
        e.expected_errors.contains(&c.code)
            || is_client_wait(&c.code)
            || (is_connection_loss(&c.code) && (cut || e.stopped_us.is_some()))
            || (c.code == "57014" && e.stopped_us.is_some())
    };
    let bad: Vec<&&ErrorCount> = judged.iter().filter(|c| !explained(c)).collect();
    let n: u64 = bad.iter().map(|c| c.count).sum();
    let left: u64 = judged.iter().map(|c| c.count).sum::<u64>() - n;
    let detail = match bad.first() {
        None => format!(
            "{} of the queue's statements, each explained (declared expected, or a connection the run cut)",
            count(left, "error")
        ),
        Some(first) => {
            let by: Vec<String> =
                bad.iter().map(|c| format!("{} {} {}", c.count, c.statement.name(), c.code)).collect();
            format!(
                "{} of the queue's statements that nothing explains ({}); the first: {} {}: {}. Declare a code the queue ends with by design in the adapter's [drive] expected_errors or the scenario's [run] expected_errors",
                count(n, "error"),
                by.join(", "),
                first.statement.name(),
                first.code,
                first.first.chars().take(200).collect::<String>()
            )
        }
    };
    Some(CheckResult { name: Check::UnexpectedErrors, passed: n == 0, violations: n, detail, examples: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::{FaultEvent, FaultKind};
    use crate::model::errors::Statement;
    use std::time::Duration;

    fn err(statement: Statement, code: &str, count: u64) -> ErrorCount {
        ErrorCount { statement, code: code.into(), count, first: format!("{code} happened") }
    }

    #[test]
    fn an_error_fails_unless_declared_or_explained_by_a_cut_connection() {
        let errors = [err(Statement::Claim, "23505", 367), err(Statement::Complete, "io", 2)];
        let mut e = Evidence { errors: &errors, ..Evidence::bare(&[], &[], 0, Duration::from_secs(1)) };
        let r = check(&e).unwrap();
        assert!(!r.passed && r.violations == 369, "{r:?}");
        assert!(
            r.detail.contains("367 claim 23505") && r.detail.contains("the first: claim 23505: 23505 happened"),
            "{}",
            r.detail
        );
        let kill = [FaultEvent { t_us: 1, kind: FaultKind::KillBackend, worker: Some(1), job: None }];
        e.faults = &kill;
        assert_eq!(check(&e).unwrap().violations, 367, "the killed backends explain the lost connections");
        let declared = ["23505".to_string()];
        e.expected_errors = &declared;
        assert!(check(&e).unwrap().passed);
        // The harness's own statements are not judged; no queue error, no check.
        let own = [err(Statement::Effects, "53100", 1)];
        assert!(check(&Evidence { errors: &own, ..Evidence::bare(&[], &[], 0, Duration::from_secs(1)) }).is_none());
    }
}
