//! A schedule's history judged by the run's own checkers (`verify::verify`), keeping the safety
//! properties a schedule can break at any length: a job handed out while another claim's
//! lease still ran (exactly once, by race; ownership, a claim over a live lease), a stale
//! completion accepted, attempts beyond the budget, a cancelled job run. A duplicate after a lease ran out is the
//! at-least-once a lease promises, as in a run's verdict by cause, and two workers believing
//! they own a job after the first one's lease ran out is what a pause past the lease is: the
//! queue's fence decides whether that belief does harm, and the stale-completion check judges
//! it. Neither is a counterexample by itself.

use super::protocol::Model;
use super::search::settle::{Settled, finished};
use crate::collect::EventKind;
use crate::model::check::Check;
use crate::model::records::{JobRow, Status};
use crate::model::summary::CheckResult;
use crate::model::words::count;
use crate::verify::{self, Evidence};

/// A broken property: the check's name, what it says, and the check's own result (its
/// example jobs, for the swimlane and the story).
#[derive(Debug, Clone)]
pub(super) struct Violation {
    pub check: Check,
    pub detail: String,
    pub result: CheckResult,
    /// Broken on the way of a continuation whose end broke another check: shown beside it as
    /// its likely cause, no counterexample of its own.
    pub beside: bool,
}

/// The checks a schedule is judged by (`mutual_exclusion` only where the adapter declares an
/// exclusion key: `judged`).
pub(super) const CHECKS: [Check; 14] = [
    Check::ExactlyOnce,
    Check::RunAfterCompletion,
    Check::NoLostJobs,
    Check::StaleCompletionsAccepted,
    Check::OwnershipOverlap,
    Check::AttemptsWithinBudget,
    Check::CancelledJobsNotRun,
    Check::CompletionsRefusedUnexplained,
    Check::JobsLeftAbandoned,
    Check::Progress,
    Check::FaultsRecovered,
    Check::DeadAfterOneFault,
    Check::MutualExclusion,
    Check::CompletionIdempotent,
];

/// The checks the header names: `mutual_exclusion` only where the adapter declares an exclusion key.
pub(super) fn judged(plan: &crate::scenario::Plan) -> Vec<Check> {
    let declared = plan.adapter.columns.exclusion_key.is_some();
    CHECKS.into_iter().filter(|c| *c != Check::MutualExclusion || declared).collect()
}

/// The checks a schedule's own history settles, at any length.
const HISTORY: [Check; 8] = [
    Check::RunAfterCompletion,
    Check::NoLostJobs,
    Check::StaleCompletionsAccepted,
    Check::AttemptsWithinBudget,
    Check::CancelledJobsNotRun,
    Check::CompletionsRefusedUnexplained,
    Check::MutualExclusion,
    Check::CompletionIdempotent,
];

/// The checks only a schedule left to itself settles: what its end state comes to.
const SETTLED: [Check; 3] = [Check::JobsLeftAbandoned, Check::FaultsRecovered, Check::DeadAfterOneFault];

pub(super) fn judge(model: &Model<'_>, final_jobs: &[JobRow]) -> Vec<Violation> {
    judge_by(model, final_jobs, &HISTORY)
}

/// A schedule left to itself (`search::settle`): where it left the jobs. What its history
/// broke on the way (a duplicate, a refused completion) is not judged here: the search finds
/// such a schedule itself, at its own shortest length, not behind a fixed continuation.
pub(super) fn judge_settled(model: &Model<'_>, settled: &Settled) -> Vec<Violation> {
    // A day of quiet passed: every lease has run out, on the virtual clock the observer does not read.
    let rows: Vec<JobRow> = settled
        .rows
        .iter()
        .map(|r| JobRow { lease_expired: r.lease_expired || settled.quiet_secs > 0.0, ..*r })
        .collect();
    let mut out: Vec<Violation> =
        judge_by(model, &rows, &SETTLED).into_iter().filter(|v| SETTLED.contains(&v.check)).collect();
    let how = if settled.unsettled {
        format!("the sessions were still stepping after {} steps (a livelock?)", settled.steps)
    } else if finished(&settled.rows) {
        "until no job was left to run".to_string()
    } else {
        format!("then {} of virtual time passed with nothing changing", duration(settled.quiet_secs))
    };
    let said = format!("left to itself (no more faults, every session going on: {how})");
    for v in &mut out {
        v.detail = format!("{said}: {}", v.detail);
    }
    // Ready work nobody takes: a job waiting (queued, or failed and due again) at the end. A
    // search whose sessions never claim anything says so as a whole (VACUOUS) instead.
    let waiting: Vec<i64> =
        settled.rows.iter().filter(|r| matches!(r.status, Status::Queued | Status::Failed)).map(|r| r.id).collect();
    let claimed = model.journal.iter().any(|e| e.kind == EventKind::Claimed);
    if (!waiting.is_empty() && claimed) || (settled.unsettled && !finished(&settled.rows)) {
        let n = waiting.len().max(1) as u64;
        let detail = format!("{said}: {} never finished", count(n, "waiting job"));
        let result = CheckResult {
            name: Check::Progress,
            passed: false,
            violations: n,
            detail: detail.clone(),
            examples: waiting,
        };
        out.push(Violation { check: Check::Progress, detail, result, beside: false });
    }
    out.retain(|v| excused(model.plan, v).is_none());
    // What the continuation broke on the way, beside the end it came to: the cause, often.
    if !out.is_empty() {
        let seen: Vec<Check> = out.iter().map(|v| v.check).collect();
        let on_the_way = judge_by(model, &rows, &HISTORY).into_iter().filter(|v| !seen.contains(&v.check));
        out.extend(on_the_way.map(|v| Violation { beside: true, ..v }).collect::<Vec<_>>());
    }
    out
}

fn duration(secs: f64) -> String {
    if secs >= 3600.0 { format!("{:.0} h", secs / 3600.0) } else { format!("{secs:.0} s") }
}

fn judge_by(model: &Model<'_>, final_jobs: &[JobRow], judged: &[Check]) -> Vec<Violation> {
    let plan = model.plan;
    let end_us = (model.journal.iter().map(|e| e.t_us).max().unwrap_or(0) + 1).max(model.epoch_us());
    let expected_errors: Vec<String> =
        plan.adapter.drive.expected_errors.iter().chain(&plan.run.expected_errors).cloned().collect();
    let exclusion = plan.adapter.columns.exclusion_key.as_ref().map(|_| {
        let mut keys = model.exclusion_keys.clone();
        keys.sort_unstable();
        keys.dedup_by_key(|(job, _)| *job);
        crate::model::evidence::Exclusion { limit: plan.adapter.drive.exclusion_limit.max(1), keys }
    });
    let e = Evidence {
        faults: &model.faults,
        exclusion: exclusion.as_ref(),
        errors: &model.claim_errors,
        expected_errors: &expected_errors,
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
        out.push(Violation { check: Check::ExactlyOnce, detail, result, beside: false });
    }
    if v.ownership.claims_during_lease > 0
        && let Some(result) = result(Check::OwnershipOverlap)
    {
        let detail = "a claim handed the job out over another holder's live lease".into();
        out.push(Violation { check: Check::OwnershipOverlap, detail, result, beside: false });
    }
    for c in &v.checks {
        if !c.passed && judged.contains(&c.name) {
            out.push(Violation { check: c.name, detail: c.detail.clone(), result: c.clone(), beside: false });
        }
    }
    out.retain(|v| excused(plan, v).is_none());
    for v in &mut out {
        if let Some(e) = expected(plan, v.check) {
            v.detail = format!("{} (the scenario expects it: {})", v.detail, e.label());
        }
    }
    out
}

/// The scenario's `[expect]` on `checks.<name>` that excuses the check, as a run's gate
/// judges it (the expectation replaces the check's default): one that holds both when the
/// check passes and when it is violated (`">= 0"`) tolerates it, so no schedule that
/// breaks it is a counterexample. One that holds only when it is violated (`"> 0"`: the
/// scenario exists to show the bug) does not: explore's answer is that bug's schedule.
pub(super) fn excused<'p>(
    plan: &'p crate::scenario::Plan,
    v: &Violation,
) -> Option<&'p crate::model::expect::Expectation> {
    let n = v.result.violations.max(1) as f64;
    naming(plan, v.check).find(|e| e.op.holds(0.0, e.value) && e.op.holds(n, e.value))
}

/// The checks the scenario excuses whatever their count (`">= 0"`), for the header.
pub(super) fn tolerated(plan: &crate::scenario::Plan) -> Vec<String> {
    plan.expectations
        .iter()
        .filter(|e| e.name.starts_with("checks.") && e.op.holds(0.0, e.value) && e.op.holds(1e9, e.value))
        .map(|e| e.label())
        .collect()
}

/// The expectation that names `check` and holds only when it is violated (the scenario shows the bug).
fn expected(plan: &crate::scenario::Plan, check: Check) -> Option<&crate::model::expect::Expectation> {
    naming(plan, check).find(|e| !e.op.holds(0.0, e.value) && e.op.holds(1.0, e.value))
}

fn naming(plan: &crate::scenario::Plan, check: Check) -> impl Iterator<Item = &crate::model::expect::Expectation> {
    plan.expectations.iter().filter(move |e| e.name.strip_prefix("checks.") == Some(check.name()))
}
