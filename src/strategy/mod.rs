//! Claim strategies as data: SQL text with named parameters plus a few
//! properties. The built-ins are files in `strategy/sql/` compiled into the
//! binary; a user's own strategy is the same thing written in the scenario
//! under `[strategies.NAME]`, so users can test their queue's real SQL.

pub mod params;
pub mod print;

use crate::scenario::raw::{Fencing, RawStrategy};
pub use params::Param;
use params::translate;
use std::collections::BTreeMap;

/// The names of the built-in strategies, in the order the README lists them.
pub const BUILTINS: [&str; 8] = [
    "naive",
    "naive-select-update",
    "for-update",
    "skip-locked",
    "skip-locked-inline-reclaim",
    "priority",
    "priority-aging",
    "deadline-first",
];

/// The parameters that order jobs by class; a select or claim may use them.
const ORDERING: [Param; 3] = [Param::AgingStepSecs, Param::AgingCap, Param::DeadlineSecs];

/// Which statement of a strategy; decides which parameters it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Select,
    Claim,
    Complete,
    Fail,
    Heartbeat,
    Reclaim,
    Cancel,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Select => "select",
            Role::Claim => "claim",
            Role::Complete => "complete",
            Role::Fail => "fail",
            Role::Heartbeat => "heartbeat",
            Role::Reclaim => "reclaim",
            Role::Cancel => "cancel",
        }
    }

    fn allowed(self, has_select: bool) -> Vec<Param> {
        let picking =
            |extra: &[Param]| [&[Param::Batch, Param::LeaseSecs, Param::Worker][..], extra, &ORDERING[..]].concat();
        match self {
            Role::Select => picking(&[]),
            Role::Claim if has_select => picking(&[Param::Ids]),
            Role::Claim => picking(&[]),
            Role::Complete => vec![Param::Id, Param::Attempt, Param::Token, Param::Worker],
            Role::Fail => {
                vec![Param::Id, Param::Attempt, Param::Token, Param::Worker, Param::BackoffSecs, Param::Error]
            }
            Role::Heartbeat => vec![Param::Id, Param::Attempt, Param::Token, Param::Worker, Param::LeaseSecs],
            Role::Reclaim => vec![Param::RetryBaseSecs, Param::RetryCapSecs],
            Role::Cancel => vec![Param::Id],
        }
    }
}

/// One statement: the text as written (named parameters, fence expanded)
/// and its positional form for the driver.
#[derive(Debug, Clone)]
pub struct Statement {
    pub role: Role,
    pub text: String,
    pub sql: String,
    pub params: Vec<Param>,
}

#[derive(Debug, Clone)]
pub struct Strategy {
    pub name: String,
    pub builtin: bool,
    pub description: String,
    /// Does the claim lock the rows it picks? Reported, never trusted by checkers.
    pub locks_rows: bool,
    /// The fencing predicate appended to `complete` (empty for `none`).
    pub fence: String,
    pub select: Option<Statement>,
    pub claim: Statement,
    pub complete: Statement,
    pub fail: Statement,
    pub heartbeat: Statement,
    pub reclaim: Statement,
    pub cancel: Statement,
}

impl Strategy {
    /// Every statement a worker may run, in the order of a job's life.
    pub fn statements(&self) -> impl Iterator<Item = &Statement> {
        self.select.iter().chain([&self.claim, &self.heartbeat, &self.complete, &self.fail])
    }
}

/// The predicate each fencing mode adds to a completion (seed 000 and 001).
pub fn fence_predicate(fencing: Fencing) -> &'static str {
    match fencing {
        Fencing::None => "",
        Fencing::Status => "AND status = 'running'",
        Fencing::Attempts => "AND status = 'running' AND attempts = :attempt",
        Fencing::Token => "AND status = 'running' AND claim_token = :token",
    }
}

const COMPLETE: &str = include_str!("sql/complete.sql");
const FAIL: &str = include_str!("sql/fail.sql");
const HEARTBEAT: &str = include_str!("sql/heartbeat.sql");
const RECLAIM: &str = include_str!("sql/reclaim.sql");
const CANCEL: &str = include_str!("sql/cancel.sql");

fn builtin_sql(name: &str) -> Option<(Option<&'static str>, &'static str, bool, &'static str)> {
    Some(match name {
        "naive" => (
            None,
            include_str!("sql/naive.claim.sql"),
            false,
            "UPDATE … WHERE id = ANY(ARRAY(SELECT … LIMIT n)), no row lock (seed 001)",
        ),
        "naive-select-update" => (
            Some(include_str!("sql/naive-select-update.select.sql")),
            include_str!("sql/naive-select-update.claim.sql"),
            false,
            "SELECT the oldest ids, then a separate UPDATE of those ids",
        ),
        "for-update" => (
            None,
            include_str!("sql/for-update.claim.sql"),
            true,
            "CTE with FOR UPDATE, no SKIP LOCKED: workers wait on each other",
        ),
        "skip-locked" => (
            None,
            include_str!("sql/skip-locked.claim.sql"),
            true,
            "CTE with FOR UPDATE SKIP LOCKED and UPDATE … RETURNING (seed 001)",
        ),
        "skip-locked-inline-reclaim" => (
            None,
            include_str!("sql/skip-locked-inline-reclaim.claim.sql"),
            true,
            "SKIP LOCKED claim that also takes expired leases (seed 004)",
        ),
        "priority" => (
            None,
            include_str!("sql/priority.claim.sql"),
            true,
            "SKIP LOCKED claim, highest priority first, then oldest: strict priority (starves lower classes)",
        ),
        "priority-aging" => (
            None,
            include_str!("sql/priority-aging.claim.sql"),
            true,
            "SKIP LOCKED claim by priority + least(:aging_cap, seconds ready / :aging_step_secs)",
        ),
        "deadline-first" => (
            None,
            include_str!("sql/deadline-first.claim.sql"),
            true,
            "SKIP LOCKED claim: jobs ready longer than :deadline_secs first, then priority, then age",
        ),
        _ => return None,
    })
}

/// Finds `name` among the scenario's own strategies, then the built-ins,
/// and checks every statement's parameters.
pub fn resolve(name: &str, custom: &BTreeMap<String, RawStrategy>, fencing: Fencing) -> Result<Strategy, String> {
    let fence = fence_predicate(fencing);
    let texts = if let Some(c) = custom.get(name) {
        Texts {
            builtin: false,
            description: c.description.clone(),
            locks_rows: c.locks_rows,
            select: c.select.clone(),
            claim: c.claim.clone(),
            complete: c.complete.clone(),
            fail: c.fail.clone().unwrap_or_else(|| FAIL.into()),
            heartbeat: c.heartbeat.clone().unwrap_or_else(|| HEARTBEAT.into()),
            reclaim: c.reclaim.clone().unwrap_or_else(|| RECLAIM.into()),
            cancel: c.cancel.clone().unwrap_or_else(|| CANCEL.into()),
        }
    } else if let Some((select, claim, locks, desc)) = builtin_sql(name) {
        Texts {
            builtin: true,
            description: desc.to_string(),
            locks_rows: locks,
            select: select.map(str::to_string),
            claim: claim.to_string(),
            complete: COMPLETE.into(),
            fail: FAIL.into(),
            heartbeat: HEARTBEAT.into(),
            reclaim: RECLAIM.into(),
            cancel: CANCEL.into(),
        }
    } else {
        let mut known: Vec<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
        known.extend(custom.keys().cloned());
        return Err(format!(
            "unknown strategy `{name}`; accepted: {} (or define [strategies.{name}] with claim and complete)",
            known.join(", ")
        ));
    };
    let has_select = texts.select.is_some();
    let stmt = |role: Role, text: &str| -> Result<Statement, String> {
        let text = text.replace("{fence}", fence);
        let text = text.trim().trim_end_matches(';').trim_end().to_string();
        if text.is_empty() {
            return Err(format!("strategy `{name}`: the {} statement is empty", role.name()));
        }
        let p = translate(&text, &role.allowed(has_select))
            .map_err(|e| format!("strategy `{name}`, {} statement: {e}", role.name()))?;
        Ok(Statement { role, text, sql: p.sql, params: p.params })
    };
    let select = texts.select.as_deref().map(|s| stmt(Role::Select, s)).transpose()?;
    let claim = stmt(Role::Claim, &texts.claim)?;
    if has_select && !claim.params.contains(&Param::Ids) {
        return Err(format!("strategy `{name}`: it has a select statement, so its claim must use :ids"));
    }
    Ok(Strategy {
        name: name.to_string(),
        builtin: texts.builtin,
        description: texts.description,
        locks_rows: texts.locks_rows,
        fence: fence.to_string(),
        select,
        claim,
        complete: stmt(Role::Complete, &texts.complete)?,
        fail: stmt(Role::Fail, &texts.fail)?,
        heartbeat: stmt(Role::Heartbeat, &texts.heartbeat)?,
        reclaim: stmt(Role::Reclaim, &texts.reclaim)?,
        cancel: stmt(Role::Cancel, &texts.cancel)?,
    })
}

/// A strategy's SQL before translation.
struct Texts {
    builtin: bool,
    description: String,
    locks_rows: bool,
    select: Option<String>,
    claim: String,
    complete: String,
    fail: String,
    heartbeat: String,
    reclaim: String,
    cancel: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_resolves_with_every_fence() {
        for name in BUILTINS {
            for f in [Fencing::None, Fencing::Status, Fencing::Attempts, Fencing::Token] {
                let s = resolve(name, &BTreeMap::new(), f).unwrap();
                assert!(s.statements().any(|st| st.params.contains(&Param::Batch)), "{name}");
                assert!(!s.complete.sql.contains("{fence}"));
            }
        }
    }

    #[test]
    fn token_fence_binds_the_token() {
        let s = resolve("skip-locked", &BTreeMap::new(), Fencing::Token).unwrap();
        assert_eq!(s.complete.params, vec![Param::Id, Param::Token]);
        let s = resolve("skip-locked", &BTreeMap::new(), Fencing::None).unwrap();
        assert_eq!(s.complete.params, vec![Param::Id]);
    }

    #[test]
    fn unknown_strategy_lists_the_accepted_ones() {
        let e = resolve("skip-lock", &BTreeMap::new(), Fencing::Token).unwrap_err();
        assert!(e.contains("skip-locked-inline-reclaim"), "{e}");
    }

    #[test]
    fn custom_strategy_parameters_are_checked() {
        let mut custom = BTreeMap::new();
        custom.insert(
            "mine".to_string(),
            RawStrategy {
                description: String::new(),
                select: None,
                claim: "UPDATE jobs SET status = 'running' WHERE id = :id RETURNING id".into(),
                complete: "UPDATE jobs SET status = 'done' WHERE id = :id".into(),
                fail: None,
                heartbeat: None,
                reclaim: None,
                cancel: None,
                locks_rows: false,
            },
        );
        let e = resolve("mine", &custom, Fencing::None).unwrap_err();
        assert!(e.contains("claim statement") && e.contains(":id"), "{e}");
    }
}
