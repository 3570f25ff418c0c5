//! The two witnesses of execution agree: the harness's journal and the
//! `effects` table written by the workers.

use super::Evidence;
use crate::model::check::Check;
use crate::model::summary::CheckResult;

/// None when the effects table is disabled: a check that did not run is not reported as passed.
pub(super) fn check(e: &Evidence, journal_executions: u64) -> Option<CheckResult> {
    let rows = e.effects_rows?;
    // A killed agent's executions whose rows died in its batch are known to be missing.
    let expected = journal_executions.saturating_sub(e.effects_unwritten);
    let diff = rows.abs_diff(expected);
    let unwritten = match e.effects_unwritten {
        0 => String::new(),
        n => format!(
            " ({n} of them known to be missing from it: a killed agent's, done by its workers while their rows \
             still waited in its batch)"
        ),
    };
    Some(CheckResult {
        name: Check::EffectsLedgerAgrees,
        passed: diff == 0,
        violations: diff,
        detail: format!("journal {journal_executions} executions{unwritten}, effects table {rows} rows"),
        examples: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::check;
    use crate::verify::tests::evidence;

    #[test]
    fn rows_a_killed_agent_never_wrote_are_expected_missing_and_nothing_else_is() {
        let mut e = evidence(&[], &[], 0, Some(96));
        assert!(!check(&e, 100).unwrap().passed, "4 rows short, unexplained");
        e.effects_unwritten = 4;
        let c = check(&e, 100).unwrap();
        assert!(c.passed, "{}", c.detail);
        assert!(c.detail.contains("4 of them known to be missing"), "{}", c.detail);
        e.effects_unwritten = 2;
        assert_eq!(check(&e, 100).unwrap().violations, 2, "two rows short all the same");
        e.effects_rows = None;
        assert!(check(&e, 100).is_none(), "no table, no check");
    }
}
