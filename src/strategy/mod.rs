//! Claim strategies as data: SQL text with named parameters plus a few
//! properties. The built-ins are files in `strategy/sql/` compiled into the
//! binary; a user's own strategy is the same thing written in the scenario
//! under `[strategies.NAME]`, so users can test their queue's real SQL.

pub mod params;

use crate::error::Invalid;
use crate::model::protocol::Fencing;
pub use params::Param;
use params::translate;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A user's own claim strategy: the same shape as the built-ins.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawStrategy {
    #[serde(default)]
    pub description: String,
    /// Optional first statement returning `id`s; the claim then gets them as `:ids`.
    pub select: Option<String>,
    pub claim: String,
    pub complete: String,
    /// Optional; default: the built-in fail/heartbeat/reclaim statements.
    pub fail: Option<String>,
    pub heartbeat: Option<String>,
    pub reclaim: Option<String>,
    pub cancel: Option<String>,
    /// Does the claim lock the rows it picks (reported; the checkers do not trust it).
    #[serde(default)]
    pub locks_rows: bool,
}

/// The names of the built-in strategies, in the order the README lists them.
pub const BUILTINS: [&str; 10] = [
    "naive",
    "naive-select-update",
    "for-update",
    "skip-locked",
    "skip-locked-inline-reclaim",
    "priority",
    "priority-aging",
    "deadline-first",
    "priority-quota",
    "priority-pools",
];

/// The parameters that order or pick jobs by class; a select or claim may use them.
const ORDERING: [Param; 4] = [Param::AgingStepSecs, Param::AgingCap, Param::DeadlineSecs, Param::Pool];

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
        "priority-quota" => (
            None,
            QUOTA_TEMPLATE,
            true,
            "one SKIP LOCKED CTE per class, up to workers.quotas jobs of each class per claim",
        ),
        "priority-pools" => (
            None,
            include_str!("sql/priority-pools.claim.sql"),
            true,
            "SKIP LOCKED claim by priority, only jobs of the worker's pool (class = :pool, its group's name)",
        ),
        _ => return None,
    })
}

const QUOTA_TEMPLATE: &str = include_str!("sql/priority-quota.claim.sql");

/// Can `name` go into a SQL string literal as is? Letters, digits, `-` and `_`.
pub fn safe_class_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The `priority-quota` claim for these (class, jobs per claim) pairs, in
/// their order. Class names become SQL literals, so they are checked here
/// too, not only in the scenario's validation.
pub fn quota_claim(quotas: &[(String, u32)]) -> Result<String, Invalid> {
    if quotas.is_empty() {
        return Err(Invalid::new("priority-quota needs workers.quotas, e.g. quotas = { high = 5, normal = 3 }"));
    }
    let mut ctes = Vec::new();
    let mut union = Vec::new();
    for (i, (class, n)) in quotas.iter().enumerate() {
        if !safe_class_name(class) {
            return Err(Invalid::new(format!(
                "quota class `{class}`: class names may use only letters, digits, `-` and `_`"
            )));
        }
        if !(1..=1000).contains(n) {
            return Err(Invalid::new(format!("quota for `{class}`: must be between 1 and 1000, got {n}")));
        }
        let q = format!("q{}", i + 1);
        ctes.push(format!(
            "{q} AS (\n  SELECT id FROM jobs\n  WHERE queue = 'default' AND status = 'queued' AND run_at <= now() AND class = '{class}'\n  ORDER BY priority DESC, run_at\n  LIMIT {n}\n  FOR UPDATE SKIP LOCKED\n)"
        ));
        union.push(format!("SELECT id FROM {q}"));
    }
    Ok(QUOTA_TEMPLATE.replace("{per_class}", &ctes.join(",\n")).replace("{union}", &union.join(" UNION ALL ")))
}

/// Finds `name` among the scenario's own strategies, then the built-ins,
/// and checks every statement's parameters.
/// `quotas` (class, jobs per claim) feed the generated `priority-quota`
/// claim; other strategies ignore them.
pub fn resolve(
    name: &str,
    custom: &BTreeMap<String, RawStrategy>,
    fencing: Fencing,
    quotas: &[(String, u32)],
) -> Result<Strategy, Invalid> {
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
        let claim = if name == "priority-quota" {
            quota_claim(quotas).map_err(|e| e.within(format_args!("strategy `{name}`")))?
        } else {
            claim.to_string()
        };
        Texts {
            builtin: true,
            description: desc.to_string(),
            locks_rows: locks,
            select: select.map(str::to_string),
            claim,
            complete: COMPLETE.into(),
            fail: FAIL.into(),
            heartbeat: HEARTBEAT.into(),
            reclaim: RECLAIM.into(),
            cancel: CANCEL.into(),
        }
    } else {
        let mut known: Vec<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
        known.extend(custom.keys().cloned());
        return Err(Invalid::new(format!(
            "unknown strategy `{name}`; accepted: {} (or define [strategies.{name}] with claim and complete)",
            known.join(", ")
        )));
    };
    let has_select = texts.select.is_some();
    let stmt = |role: Role, text: &str| -> Result<Statement, Invalid> {
        let text = text.replace("{fence}", fence);
        let text = text.trim().trim_end_matches(';').trim_end().to_string();
        if text.is_empty() {
            return Err(Invalid::new(format!("strategy `{name}`: the {} statement is empty", role.name())));
        }
        let p = translate(&text, &role.allowed(has_select))
            .map_err(|e| Invalid::new(format!("strategy `{name}`, {} statement: {e}", role.name())))?;
        Ok(Statement { role, text, sql: p.sql, params: p.params })
    };
    let select = texts.select.as_deref().map(|s| stmt(Role::Select, s)).transpose()?;
    let claim = stmt(Role::Claim, &texts.claim)?;
    if has_select && !claim.params.contains(&Param::Ids) {
        return Err(Invalid::new(format!("strategy `{name}`: it has a select statement, so its claim must use :ids")));
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
                let quotas = [("high".to_string(), 5), ("normal".to_string(), 3)];
                let s = resolve(name, &BTreeMap::new(), f, &quotas).unwrap();
                // The quota claim's batch is the quotas' LIMITs, written into its text.
                let batch = if name == "priority-quota" { Param::LeaseSecs } else { Param::Batch };
                assert!(s.statements().any(|st| st.params.contains(&batch)), "{name}");
                assert!(!s.complete.sql.contains("{fence}"));
            }
        }
    }

    #[test]
    fn token_fence_binds_the_token() {
        let s = resolve("skip-locked", &BTreeMap::new(), Fencing::Token, &[]).unwrap();
        assert_eq!(s.complete.params, vec![Param::Id, Param::Token]);
        let s = resolve("skip-locked", &BTreeMap::new(), Fencing::None, &[]).unwrap();
        assert_eq!(s.complete.params, vec![Param::Id]);
    }

    #[test]
    fn unknown_strategy_lists_the_accepted_ones() {
        let e = resolve("skip-lock", &BTreeMap::new(), Fencing::Token, &[]).unwrap_err().reason;
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
        let e = resolve("mine", &custom, Fencing::None, &[]).unwrap_err().reason;
        assert!(e.contains("claim statement") && e.contains(":id"), "{e}");
    }

    #[test]
    fn quota_claim_has_one_locking_cte_per_class() {
        let quotas = [("high".to_string(), 12), ("normal".to_string(), 6), ("low-1".to_string(), 2)];
        let s = resolve("priority-quota", &BTreeMap::new(), Fencing::Token, &quotas).unwrap();
        let sql = &s.claim.text;
        assert_eq!(sql.matches("FOR UPDATE SKIP LOCKED\n)").count(), 3, "{sql}");
        for (class, n) in [("high", 12), ("normal", 6), ("low-1", 2)] {
            let cte = sql.split(&format!("class = '{class}'")).nth(1).unwrap_or_else(|| panic!("{class}: {sql}"));
            assert!(
                cte.trim_start().starts_with(
                    "ORDER BY priority DESC, run_at\n  LIMIT {n}\n".replace("{n}", &n.to_string()).as_str()
                ),
                "{sql}"
            );
        }
        assert!(
            sql.contains("next AS (\n  SELECT id FROM q1 UNION ALL SELECT id FROM q2 UNION ALL SELECT id FROM q3\n)"),
            "{sql}"
        );
        assert!(!sql.contains("{per_class}") && !sql.contains("{union}"), "{sql}");
        assert_eq!(s.claim.params, vec![Param::LeaseSecs, Param::Worker]);
        assert!(s.claim.text.contains("RETURNING j.id, j.attempts, j.claim_token, j.class"));
    }

    #[test]
    fn quota_claim_rejects_unsafe_names_bad_numbers_and_no_quotas() {
        let one = |c: &str, n: u32| quota_claim(&[(c.to_string(), n)]);
        let e = one("x'; DROP TABLE jobs; --", 1).unwrap_err().reason;
        assert!(e.contains("letters, digits"), "{e}");
        assert!(one("", 1).is_err());
        let e = one("high", 0).unwrap_err().reason;
        assert!(e.contains("between 1 and 1000, got 0"), "{e}");
        assert!(one("high", 1001).is_err());
        assert!(one("high", 1000).is_ok());
        let e = resolve("priority-quota", &BTreeMap::new(), Fencing::None, &[]).unwrap_err().reason;
        assert!(e.contains("workers.quotas"), "{e}");
    }

    #[test]
    fn pools_claim_filters_by_the_workers_pool() {
        let s = resolve("priority-pools", &BTreeMap::new(), Fencing::Token, &[]).unwrap();
        assert!(s.claim.text.contains("AND class = :pool"));
        assert!(s.claim.params.contains(&Param::Pool));
        assert!(s.claim.sql.contains("::text"));
        // :pool is for picking jobs, not for finishing them.
        assert!(translate("SELECT :pool", &Role::Complete.allowed(false)).is_err());
    }
}
