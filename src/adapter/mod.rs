//! A queue described as data (`docs/adapters.md`): its own schema and the statements it runs
//! to enqueue, claim, complete, fail, heartbeat, reclaim and cancel, how the claim's result
//! maps onto a job (id, attempt, token of any column type), how a write is judged accepted,
//! and the observer queries the harness reads its state with.
//!
//! One mechanism: the built-in strategies are adapters over queuebench's own `jobs` table
//! (`builtin`: the claim variants in `sql/`, and a scenario's `[strategies.NAME]`); a user's
//! queue is an adapter file (`file`), shipped ones compiled in from `adapters/`.

pub(crate) mod builtin;
pub(crate) mod drive;
pub(crate) mod file;
pub(crate) mod keys;
pub(crate) mod params;
pub(crate) mod raw;
pub(crate) mod verb;

pub(crate) use params::{Constant, Param};

use params::{Names, translate_with};
use std::path::PathBuf;
use std::time::Duration;

/// Which statement of an adapter; decides which parameters it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Select,
    Claim,
    Complete,
    Fail,
    Heartbeat,
    Reclaim,
    Cancel,
    Enqueue,
    Preload,
    Observe,
}

/// The parameters that order or pick jobs by class; a select or claim may use them.
const ORDERING: [Param; 3] = [Param::AgingStepSecs, Param::AgingCap, Param::DeadlineSecs];

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
            Role::Enqueue => "enqueue",
            Role::Preload => "preload",
            Role::Observe => "observe",
        }
    }

    /// The parameters a statement in this role may use (`has_select`: the claim gets `:ids`).
    pub fn allowed(self, has_select: bool) -> Vec<Param> {
        let always = [Param::LeaseSecs, Param::Now];
        let worker = [Param::Worker, Param::Pool];
        let job = [Param::Id, Param::Attempt, Param::Token];
        let extra: &[Param] = match self {
            Role::Select => &[Param::Batch],
            Role::Claim if has_select => &[Param::Batch, Param::Ids],
            Role::Claim => &[Param::Batch],
            Role::Fail => &[Param::BackoffSecs, Param::Error],
            Role::Reclaim => &[Param::RetryBaseSecs, Param::RetryCapSecs],
            Role::Enqueue => {
                &[Param::Payload, Param::N, Param::Class, Param::Priority, Param::MaxAttempts, Param::UniqueKey]
            }
            Role::Preload => &[Param::Count, Param::MaxAttempts],
            Role::Complete | Role::Heartbeat | Role::Cancel | Role::Observe => &[],
        };
        let mut out = [&always[..], extra].concat();
        if matches!(self, Role::Select | Role::Claim) {
            out.extend(worker);
            out.extend(ORDERING);
        }
        if matches!(self, Role::Complete | Role::Fail | Role::Heartbeat) {
            out.extend(worker);
            out.extend(job);
        }
        if self == Role::Cancel {
            out.push(Param::Id);
        }
        out
    }
}

/// One statement: the text as written (named parameters, fence expanded) and its positional
/// form for the driver.
#[derive(Debug, Clone)]
pub struct Statement {
    pub role: Role,
    pub text: String,
    pub sql: String,
    pub params: Vec<Param>,
    /// The previous statement's columns this one reads as `:prev.COLUMN` (`Param::Prev(i)`).
    pub carried: Vec<String>,
}

/// How a write is judged to have landed (`docs/adapters.md`, "Steps").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// The statement changed at least one row (plain DML only).
    Rows,
    /// The first column of the first row is true.
    True,
    /// The first column of the first row is above 0.
    Positive,
}

impl Accepted {
    pub fn parse(text: &str) -> Option<Accepted> {
        match text {
            "rows" => Some(Accepted::Rows),
            "true" => Some(Accepted::True),
            "positive" => Some(Accepted::Positive),
            _ => None,
        }
    }
}

/// A step: one statement or several run in one transaction; acceptance is judged on the
/// first, and a claim's jobs are the rows of its last.
#[derive(Debug, Clone)]
pub struct Step {
    pub role: Role,
    pub statements: Vec<Statement>,
    pub accepted: Accepted,
}

impl Step {
    pub fn first(&self) -> &Statement {
        &self.statements[0]
    }

    pub fn last(&self) -> &Statement {
        self.statements.last().expect("a step has a statement")
    }

    pub fn is_single(&self) -> bool {
        self.statements.len() == 1
    }

    /// The statement whose rows a reclaim counts: the first that writes (`INSERT`, `UPDATE`,
    /// `DELETE`, `MERGE` at its top level), so a `SELECT` that picks the jobs first is not
    /// counted; the first statement when none writes.
    pub fn counted(&self) -> usize {
        self.statements.iter().position(|s| verb::is_dml(&s.text)).unwrap_or(0)
    }
}

/// Where an adapter came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A built-in strategy over queuebench's own table.
    Builtin,
    /// A scenario's `[strategies.NAME]`, over queuebench's own table.
    Scenario,
    /// An adapter file: shipped (compiled in) or the user's own.
    File(PathBuf),
}

/// The claim's columns: by name, found in the claim's result when it is prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    pub id: String,
    pub attempt: Option<String>,
    pub token: Option<String>,
    pub class: Option<String>,
    /// The fail step returns the job's new id in this column (a retry under a new id).
    pub successor: Option<String>,
    /// Jobs sharing this column's value exclude each other (`[result] exclusion_key`).
    pub exclusion_key: Option<String>,
    /// The enqueue dedupes on this column's value, which it returns for a job it inserts
    /// (`[result] unique_key`).
    pub unique_key: Option<String>,
}

/// How the harness reads the queue.
#[derive(Debug, Clone)]
pub struct Observe {
    /// One row per job: id, status and optionally attempts, max_attempts, lease_expired.
    pub state: Statement,
    /// Anything still to do: a count or a boolean.
    pub remaining: Statement,
    /// The sampler's depth per class: class, status, count, oldest ready age in seconds.
    pub depth: Option<Statement>,
}

/// A queue, resolved: everything the runner needs to drive it.
#[derive(Debug, Clone)]
pub struct Adapter {
    pub name: String,
    pub origin: Origin,
    pub description: String,
    /// The version of the queue's design the SQL follows (adapter files).
    pub design: String,
    /// Does the claim lock the rows it picks? Reported, never trusted by checkers.
    pub locks_rows: bool,
    /// The built-in fencing predicate appended to `complete` (empty for `none` and for files).
    pub fence: String,
    /// The queue's main table.
    pub table: String,
    /// The queue's own default lease (adapter files).
    pub default_lease: Option<Duration>,
    /// `lease_fixed`: the default lease is the queue's only one; a scenario may not set another.
    pub lease_fixed: bool,
    pub constants: Vec<(String, Constant)>,
    /// The adapter's schema SQL; None for queuebench's own table (`migrations/`).
    pub setup: Option<String>,
    pub on_connect: Option<String>,
    pub columns: Columns,
    pub select: Option<Step>,
    pub claim: Step,
    pub complete: Step,
    pub fail: Option<Step>,
    pub heartbeat: Option<Step>,
    pub reclaim: Option<Step>,
    pub cancel: Option<Step>,
    pub enqueue: Step,
    pub preload: Option<Step>,
    pub observe: Observe,
    /// How the queue must be driven (`[drive]`; the default for the built-ins).
    pub drive: drive::Drive,
}

impl Adapter {
    /// Queuebench's own `jobs` table (a built-in or a scenario's custom strategy)?
    pub fn own_table(&self) -> bool {
        self.setup.is_none()
    }

    pub fn builtin(&self) -> bool {
        self.origin == Origin::Builtin
    }

    /// The steps a worker prepares on its connection, in the order of a job's life.
    pub fn worker_steps(&self) -> impl Iterator<Item = &Step> {
        self.select.iter().chain([&self.claim]).chain(&self.heartbeat).chain([&self.complete]).chain(&self.fail)
    }

    /// Every statement, for listings and validation.
    pub fn statements(&self) -> impl Iterator<Item = &Statement> {
        let steps = self.worker_steps().chain(&self.reclaim).chain(&self.cancel).chain([&self.enqueue]);
        let observe = [&self.observe.state, &self.observe.remaining].into_iter().chain(&self.observe.depth);
        steps.chain(&self.preload).flat_map(|s| &s.statements).chain(observe)
    }

    /// `:name` substituted with the constants' literals, for `setup` (a simple query).
    pub fn setup_sql(&self) -> Option<String> {
        let setup = self.setup.as_ref()?;
        let mut out = String::with_capacity(setup.len());
        let mut rest = setup.as_str();
        while let Some(i) = rest.find(':') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let prev_colon = out.ends_with(':') || after.starts_with(':');
            match self.constants.iter().find(|(c, _)| *c == name) {
                Some((_, v)) if !prev_colon && !name.is_empty() => {
                    out.push_str(&v.literal());
                    rest = &after[name.len()..];
                }
                _ => {
                    out.push(':');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Some(out)
    }
}

/// Builds one statement of `role`: the text trimmed of a final `;`, `{fence}` expanded, its
/// parameters checked and numbered. `cast_keys`: the built-in table's types for the keys.
pub(crate) fn statement(
    role: Role,
    text: &str,
    fence: &str,
    has_select: bool,
    constants: &[(String, Constant)],
    cast_keys: bool,
) -> Result<Statement, params::ParamError> {
    statement_at(role, text, fence, has_select, constants, cast_keys, false)
}

/// [`statement`] for a place in a step's list: `prev`, a statement after the first, may read
/// the previous one's columns as `:prev.COLUMN`.
pub(crate) fn statement_at(
    role: Role,
    text: &str,
    fence: &str,
    has_select: bool,
    constants: &[(String, Constant)],
    cast_keys: bool,
    prev: bool,
) -> Result<Statement, params::ParamError> {
    let text = text.replace("{fence}", fence);
    let text = text.trim().trim_end_matches(';').trim_end().to_string();
    let allowed = role.allowed(has_select);
    let p = translate_with(&text, &Names { allowed: &allowed, constants, cast_keys, prev })?;
    Ok(Statement { role, text, sql: p.sql, params: p.params, carried: p.carried })
}
