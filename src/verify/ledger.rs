//! The two witnesses of execution agree: the harness's journal and the
//! `effects` table written by the workers.

use super::Evidence;
use crate::model::summary::CheckResult;

/// None when the effects table is disabled: a check that did not run is not reported as passed.
pub fn check(e: &Evidence, journal_executions: u64) -> Option<CheckResult> {
    let rows = e.effects_rows?;
    let diff = rows.abs_diff(journal_executions);
    Some(CheckResult {
        name: "effects_ledger_agrees".into(),
        passed: diff == 0,
        violations: diff,
        detail: format!("journal {journal_executions} executions, effects table {rows} rows"),
        examples: Vec::new(),
    })
}
