//! The built-in strategies: adapters over queuebench's own `jobs` table, whose claim
//! variants are the files in `adapter/sql/` compiled into the binary; and a scenario's own
//! `[strategies.NAME]`, the same shape written in the scenario so users can test their claim
//! and completion SQL against the harness's table. Enqueue, preload and the observer queries
//! are the table's own (`sql/enqueue.sql`, `preload.sql`, `state.sql`, `remaining.sql`,
//! `depth.sql`).

use super::{Accepted, Adapter, Columns, Observe, Origin, Param, Role, Statement, Step, statement, verb};
use crate::error::Invalid;
use crate::model::protocol::Fencing;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A user's own claim strategy: the same shape as the built-ins.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStrategy {
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
    /// How complete, fail and heartbeat are judged accepted: `rows` (default), `true`, `positive`.
    pub accepted: Option<String>,
}

/// The names of the built-in strategies, in the order the README lists them.
pub(crate) const BUILTINS: [&str; 10] = [
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

/// The predicate each fencing mode adds to a completion (seed 000 and 001).
pub(crate) fn fence_predicate(fencing: Fencing) -> &'static str {
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
const ENQUEUE: &str = include_str!("sql/enqueue.sql");
const PRELOAD: &str = include_str!("sql/preload.sql");
const STATE: &str = include_str!("sql/state.sql");
const REMAINING: &str = include_str!("sql/remaining.sql");
const DEPTH: &str = include_str!("sql/depth.sql");

fn builtin_sql(name: &str) -> Option<(Option<&'static str>, &'static str, bool, &'static str)> {
    Some(match name {
        "naive" => (
            None,
            include_str!("sql/naive.claim.sql"),
            false,
            "UPDATE … WHERE id = ANY(ARRAY(SELECT … LIMIT n)), no row lock (the classic duplicate-claim bug)",
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
            "CTE with FOR UPDATE SKIP LOCKED and UPDATE … RETURNING (the usual fix)",
        ),
        "skip-locked-inline-reclaim" => (
            None,
            include_str!("sql/skip-locked-inline-reclaim.claim.sql"),
            true,
            "SKIP LOCKED claim that also takes expired leases",
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
pub(crate) fn safe_class_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The `priority-quota` claim for these (class, jobs per claim) pairs, in
/// their order. Class names become SQL literals, so they are checked here
/// too, not only in the scenario's validation.
pub(crate) fn quota_claim(quotas: &[(String, u32)]) -> Result<String, Invalid> {
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
            "{q} AS (\n  SELECT id FROM jobs\n  WHERE queue = 'default' AND status = 'queued' AND run_at <= now() AND class = {}\n  ORDER BY priority DESC, run_at\n  LIMIT {n}\n  FOR UPDATE SKIP LOCKED\n)",
            crate::quote::literal(class)
        ));
        union.push(format!("SELECT id FROM {q}"));
    }
    Ok(QUOTA_TEMPLATE.replace("{per_class}", &ctes.join(",\n")).replace("{union}", &union.join(" UNION ALL ")))
}

/// Finds `name` among the scenario's own strategies, then the built-ins, and checks every
/// statement's parameters. `quotas` (class, jobs per claim) feed the generated
/// `priority-quota` claim; other strategies ignore them.
pub(crate) fn resolve(
    name: &str,
    custom: &BTreeMap<String, RawStrategy>,
    fencing: Fencing,
    quotas: &[(String, u32)],
) -> Result<Adapter, Invalid> {
    let fence = fence_predicate(fencing);
    let texts = texts(name, custom, quotas)?;
    // The default fail and heartbeat of a custom strategy fence only on what its claim can
    // return: never a column the claim does not mention.
    let default_fence = fence_predicate(defaults_fencing(fencing, &texts));
    let accepted = match texts.accepted.as_deref() {
        None => Accepted::Rows,
        Some(a) => Accepted::parse(a).ok_or_else(|| {
            Invalid::new(format!("strategy `{name}`: accepted = `{a}`; accepted: rows, true, positive"))
        })?,
    };
    let has_select = texts.select.is_some();
    let stmt = |role: Role, text: &str| -> Result<Statement, Invalid> {
        if text.trim().trim_end_matches(';').trim().is_empty() {
            return Err(Invalid::new(format!("strategy `{name}`: the {} statement is empty", role.name())));
        }
        let defaulted = match role {
            Role::Fail => texts.fail_default,
            Role::Heartbeat => texts.heartbeat_default,
            _ => false,
        };
        let fence = if defaulted { default_fence } else { fence };
        statement(role, text, fence, has_select, &[], true)
            .map_err(|e| Invalid::new(format!("strategy `{name}`, {} statement: {e}", role.name())))
    };
    let step = |role: Role, text: &str, accepted: Accepted| -> Result<Step, Invalid> {
        let s = stmt(role, text)?;
        if accepted == Accepted::Rows && matches!(role, Role::Complete | Role::Fail | Role::Heartbeat) {
            rows_rule_fits(name, &s)?;
        }
        Ok(Step { role, statements: vec![s], accepted })
    };
    let select = texts.select.as_deref().map(|s| step(Role::Select, s, Accepted::Rows)).transpose()?;
    let claim = step(Role::Claim, &texts.claim, Accepted::Rows)?;
    if has_select && !claim.first().params.contains(&Param::Ids) {
        return Err(Invalid::new(format!("strategy `{name}`: it has a select statement, so its claim must use :ids")));
    }
    Ok(Adapter {
        name: name.to_string(),
        origin: if texts.builtin { Origin::Builtin } else { Origin::Scenario },
        description: texts.description,
        design: String::new(),
        locks_rows: texts.locks_rows,
        fence: fence.to_string(),
        table: "jobs".into(),
        default_lease: None,
        lease_fixed: false,
        constants: Vec::new(),
        setup: None,
        on_connect: None,
        columns: Columns {
            id: "id".into(),
            attempt: Some("attempts".into()),
            token: Some("claim_token".into()),
            class: Some("class".into()),
            successor: None,
            exclusion_key: None,
            unique_key: None,
        },
        select,
        claim,
        complete: step(Role::Complete, &texts.complete, accepted)?,
        fail: Some(step(Role::Fail, &texts.fail, accepted)?),
        heartbeat: Some(step(Role::Heartbeat, &texts.heartbeat, accepted)?),
        reclaim: Some(step(Role::Reclaim, &texts.reclaim, Accepted::Rows)?),
        cancel: Some(step(Role::Cancel, &texts.cancel, Accepted::Rows)?),
        enqueue: step(Role::Enqueue, ENQUEUE, Accepted::Rows)?,
        preload: Some(step(Role::Preload, PRELOAD, Accepted::Rows)?),
        observe: Observe {
            state: stmt(Role::Observe, STATE)?,
            remaining: stmt(Role::Observe, REMAINING)?,
            depth: Some(stmt(Role::Observe, DEPTH)?),
        },
        drive: super::drive::Drive::default(),
    })
}

/// A write judged by its row count must be plain DML: a top-level SELECT reports the rows it
/// returned, whatever its data-modifying CTEs changed.
pub(crate) fn rows_rule_fits(name: &str, s: &Statement) -> Result<(), Invalid> {
    // A word that is no statement at all (a typo) is left for the server to name.
    let returns_rows = matches!(
        verb::top_level(&s.text).as_deref(),
        Some("SELECT" | "VALUES" | "TABLE" | "CALL" | "EXECUTE" | "SHOW" | "EXPLAIN")
    );
    if verb::is_dml(&s.text) || !returns_rows {
        return Ok(());
    }
    Err(Invalid::new(format!(
        "`{name}`: the {} statement's top level is {}, so its row count says what it returned, not what it \
         changed; declare accepted = \"true\" (its first column is true when the write landed) or \
         accepted = \"positive\" (its first column counts the rows it changed)",
        s.role.name(),
        verb::top_level(&s.text).unwrap_or_else(|| "not a statement".into())
    )))
}

/// The fencing the default fail and heartbeat of a custom strategy use: the scenario's, unless
/// the claim's RETURNING does not name the column it needs (`claim_token`, `attempts`), then
/// the next weaker one it can give.
fn defaults_fencing(fencing: Fencing, texts: &Texts) -> Fencing {
    if texts.builtin {
        return fencing;
    }
    // What the claim returns: the words after its (last) RETURNING.
    let claim = texts.claim.to_lowercase();
    let returned = claim.rfind("returning").map_or("", |i| &claim[i..]);
    let returns = |col: &str| returned.contains(col) || returned.contains('*');
    let (token, attempts) = (returns("claim_token"), returns("attempts"));
    match fencing {
        Fencing::Token if !token && attempts => Fencing::Attempts,
        Fencing::Token if !token => Fencing::Status,
        Fencing::Attempts if !attempts => Fencing::Status,
        f => f,
    }
}

/// A strategy's SQL before translation: the scenario's own, else a built-in's.
fn texts(name: &str, custom: &BTreeMap<String, RawStrategy>, quotas: &[(String, u32)]) -> Result<Texts, Invalid> {
    if let Some(c) = custom.get(name) {
        return Ok(Texts {
            builtin: false,
            description: c.description.clone(),
            locks_rows: c.locks_rows,
            accepted: c.accepted.clone(),
            select: c.select.clone(),
            claim: c.claim.clone(),
            complete: c.complete.clone(),
            fail: c.fail.clone().unwrap_or_else(|| FAIL.into()),
            fail_default: c.fail.is_none(),
            heartbeat: c.heartbeat.clone().unwrap_or_else(|| HEARTBEAT.into()),
            heartbeat_default: c.heartbeat.is_none(),
            reclaim: c.reclaim.clone().unwrap_or_else(|| RECLAIM.into()),
            cancel: c.cancel.clone().unwrap_or_else(|| CANCEL.into()),
        });
    }
    let Some((select, claim, locks, desc)) = builtin_sql(name) else {
        let mut known: Vec<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
        known.extend(custom.keys().cloned());
        return Err(Invalid::new(format!(
            "unknown strategy `{name}`; accepted: {} (or define [strategies.{name}] with claim and complete)",
            known.join(", ")
        )));
    };
    let claim = if name == "priority-quota" {
        quota_claim(quotas).map_err(|e| e.within(format_args!("strategy `{name}`")))?
    } else {
        claim.to_string()
    };
    Ok(Texts {
        builtin: true,
        description: desc.to_string(),
        locks_rows: locks,
        accepted: None,
        select: select.map(str::to_string),
        claim,
        complete: COMPLETE.into(),
        fail: FAIL.into(),
        fail_default: true,
        heartbeat: HEARTBEAT.into(),
        heartbeat_default: true,
        reclaim: RECLAIM.into(),
        cancel: CANCEL.into(),
    })
}

/// A strategy's SQL before translation.
struct Texts {
    builtin: bool,
    description: String,
    locks_rows: bool,
    accepted: Option<String>,
    select: Option<String>,
    claim: String,
    complete: String,
    fail: String,
    fail_default: bool,
    heartbeat: String,
    heartbeat_default: bool,
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
                assert!(!s.complete.first().sql.contains("{fence}"));
            }
        }
    }

    #[test]
    fn token_fence_binds_the_token() {
        let s = resolve("skip-locked", &BTreeMap::new(), Fencing::Token, &[]).unwrap();
        assert_eq!(s.complete.first().params, vec![Param::Id, Param::Token]);
        let s = resolve("skip-locked", &BTreeMap::new(), Fencing::None, &[]).unwrap();
        assert_eq!(s.complete.first().params, vec![Param::Id]);
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
                accepted: None,
            },
        );
        let e = resolve("mine", &custom, Fencing::None, &[]).unwrap_err().reason;
        assert!(e.contains("claim statement") && e.contains(":id"), "{e}");
    }

    #[test]
    fn default_fail_and_heartbeat_fence_only_on_what_the_claim_returns() {
        let mut custom = BTreeMap::new();
        custom.insert(
            "mine".to_string(),
            RawStrategy {
                description: String::new(),
                select: None,
                claim: "UPDATE jobs SET status = 'running' WHERE id = (SELECT min(id) FROM jobs) RETURNING id".into(),
                complete: "UPDATE jobs SET status = 'done' WHERE id = :id".into(),
                fail: None,
                heartbeat: None,
                reclaim: None,
                cancel: None,
                locks_rows: false,
                accepted: None,
            },
        );
        let s = resolve("mine", &custom, Fencing::Token, &[]).unwrap();
        for step in [s.fail.as_ref().unwrap(), s.heartbeat.as_ref().unwrap()] {
            assert!(!step.first().params.contains(&Param::Token), "{}", step.first().text);
            assert!(step.first().text.contains("status = 'running'"), "{}", step.first().text);
        }
        let builtin = resolve("skip-locked", &BTreeMap::new(), Fencing::Token, &[]).unwrap();
        assert!(builtin.fail.unwrap().first().params.contains(&Param::Token), "built-ins keep the scenario's fence");
    }

    #[test]
    fn quota_claim_has_one_locking_cte_per_class() {
        let quotas = [("high".to_string(), 12), ("normal".to_string(), 6), ("low-1".to_string(), 2)];
        let s = resolve("priority-quota", &BTreeMap::new(), Fencing::Token, &quotas).unwrap();
        let sql = &s.claim.first().text;
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
        assert_eq!(s.claim.first().params, vec![Param::LeaseSecs, Param::Worker]);
        assert!(s.claim.first().text.contains("RETURNING j.id, j.attempts, j.claim_token, j.class"));
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
        assert!(s.claim.first().text.contains("AND class = :pool"));
        assert!(s.claim.first().params.contains(&Param::Pool));
        assert!(s.claim.first().sql.contains("::text"));
        // :pool names a worker's group: a cancel (sent by the injector, not a worker) cannot use it.
        assert!(crate::adapter::params::translate("SELECT :pool", &Role::Cancel.allowed(false)).is_err());
    }
}
