//! A schedule's history judged by the run's own checkers (`verify::verify`), keeping the safety
//! properties a schedule can break at any length: a job handed out while another claim's
//! lease still ran (exactly once, by race; ownership, a claim over a live lease), a stale
//! completion accepted, attempts beyond the budget, a cancelled job run. A duplicate after a lease ran out is the
//! at-least-once a lease promises, as in a run's verdict by cause, and two workers believing
//! they own a job after the first one's lease ran out is what a pause past the lease is: the
//! queue's fence decides whether that belief does harm, and the stale-completion check judges
//! it. Neither is a counterexample by itself.

use super::protocol::Model;
use crate::model::check::Check;
use crate::model::records::JobRow;
use crate::model::summary::CheckResult;
use crate::verify::{self, Evidence};

/// A broken property: the check's name, what it says, and the check's own result (its
/// example jobs, for the swimlane and the story).
#[derive(Debug, Clone)]
pub struct Violation {
    pub check: Check,
    pub detail: String,
    pub result: CheckResult,
}

/// The checks a schedule is judged by.
pub const CHECKS: [Check; 6] = [
    Check::ExactlyOnce,
    Check::NoLostJobs,
    Check::StaleCompletionsAccepted,
    Check::OwnershipOverlap,
    Check::AttemptsWithinBudget,
    Check::CancelledJobsNotRun,
];

pub fn judge(model: &Model<'_>, final_jobs: &[JobRow]) -> Vec<Violation> {
    let plan = model.plan;
    let end_us = model.journal.iter().map(|e| e.t_us).max().unwrap_or(0) + 1;
    let e = Evidence {
        faults: &model.faults,
        hold_transaction: plan.workers.mode == crate::model::protocol::Mode::HoldTransaction,
        session_lease: plan.adapter.drive.lease == crate::adapter::drive::LeaseKind::Session,
        end_us,
        ..Evidence::bare(&model.journal, final_jobs, plan.jobs.preload + model.produced, plan.lease.duration)
    };
    let v = verify::verify(&e);
    let result = |check: Check| v.checks.iter().find(|c| c.name == check).cloned();
    let mut out = Vec::new();
    if v.executions.duplicate_race > 0
        && let Some(result) = result(Check::ExactlyOnce)
    {
        let detail = "a job was handed out twice while the first claim's lease still ran".into();
        out.push(Violation { check: Check::ExactlyOnce, detail, result });
    }
    if v.ownership.claims_during_lease > 0
        && let Some(result) = result(Check::OwnershipOverlap)
    {
        let detail = "a claim handed the job out over another holder's live lease".into();
        out.push(Violation { check: Check::OwnershipOverlap, detail, result });
    }
    for c in &v.checks {
        let judged = [Check::StaleCompletionsAccepted, Check::AttemptsWithinBudget, Check::CancelledJobsNotRun]
            .contains(&c.name);
        if !c.passed && judged {
            out.push(Violation { check: c.name, detail: c.detail.clone(), result: c.clone() });
        }
    }
    out
}
