//! `validate`'s smoke cycle: the adapter's statements run once with real values, inside the
//! transaction `validate` rolls back (`super::prove_in`), so a statement that prepares but fails
//! when it runs (a cast a real value breaks, a constraint, a write that never lands on the job
//! its own claim handed out) or an observer that maps a state onto a status the checkers do not
//! know is exit 2 before any run, with the adapter, the step and the server's message named.
//!
//! The cycle: four jobs (three by the preload when the adapter has one, the last by the
//! enqueue); claim one (one job per claim) → heartbeat → complete; claim one
//! → fail (an hour's backoff, so it stays out of the later claims); claim one with a lease that
//! ran out a minute ago → reclaim (its `:lease_secs` also a minute below zero: `now()` does not
//! move inside one transaction, so only a lease already over can be seen as expired); cancel the
//! last one enqueued; then the observer queries, every status they give checked. A step the
//! adapter lacks is skipped.
//!
//! After the first claim, `pg_locks` shows whether the transaction holds a row-share lock on any
//! table (what `FOR UPDATE`, `FOR NO KEY UPDATE`, `FOR SHARE` and `FOR KEY SHARE` take) or an
//! advisory lock. With neither, two workers can claim the same job: a warning, not a refusal
//! (a scenario may exist to show that race).

use crate::adapter::keys::Key;
use crate::adapter::{Origin, Step};
use crate::error::{Error, Result};
use crate::model::records::Status;
use crate::run::conn::{ClaimColumns, Prepared};
use crate::run::steps;
use crate::run::values::{Claimed, Enqueue, Values};
use crate::scenario::Plan;
use futures_util::TryStreamExt;
use tokio_postgres::{Client, Row};

/// How many jobs the cycle enqueues: one each to complete, fail, reclaim and cancel.
const JOBS: i64 = 4;
/// The lease of the job the reclaim takes back: over a minute ago.
const EXPIRED_SECS: f64 = -60.0;
/// The failed job's backoff: long enough that no later claim of the cycle takes it again.
const BACKOFF_SECS: f64 = 3600.0;

/// The adapter's steps, prepared on validate's connection.
pub(super) struct Steps {
    pub select: Option<Prepared>,
    pub claim: Prepared,
    pub complete: Prepared,
    pub fail: Option<Prepared>,
    pub heartbeat: Option<Prepared>,
    pub reclaim: Option<Prepared>,
    pub cancel: Option<Prepared>,
    pub enqueue: Prepared,
    pub preload: Option<Prepared>,
    pub columns: ClaimColumns,
    /// Where the fail step returns the job's new id (`[result] successor`).
    pub fail_successor: Option<crate::run::conn::Returned>,
}

/// What the cycle ran, and what it found that does not stop a run.
#[derive(Debug, Default)]
pub(super) struct Cycle {
    pub ran: Vec<&'static str>,
    pub warnings: Vec<String>,
    /// What observe.state must say of a job a write landed on (or leave it out: a queue that
    /// deletes finished jobs): (the job, the status, the step).
    ended: Vec<(Key, Status, &'static str)>,
}

struct Cx<'a> {
    plan: &'a Plan,
    client: &'a Client,
    steps: &'a Steps,
    pool: &'a str,
}

impl Cx<'_> {
    fn values(&self) -> Values<'_> {
        let mut v = Values::new(self.plan).with_claim(1, self.plan.lease.duration.as_secs_f64());
        v.worker = "validate";
        v.pool = self.pool;
        v
    }
}

/// Runs the cycle on `client`, inside the caller's transaction (no step commits: every list
/// runs as part of it).
pub(super) async fn run(plan: &Plan, client: &Client, steps: &Steps) -> Result<Cycle> {
    let pool = plan.workers.groups.first().map_or("", |(name, _)| name.as_str());
    let cx = Cx { plan, client, steps, pool };
    no_transaction_control(plan)?;
    let mut cycle = Cycle::default();
    let keys = enqueue(&cx, &mut cycle).await?;
    let first = claim(&cx, None).await?;
    if !holds_a_claim_lock(client).await.map_err(|e| failed(plan, "lock check (pg_locks)", None, &e))? {
        cycle.warnings.push(no_lock(plan));
    }
    let taken = match first {
        Some(job) => claimed(&cx, job, &mut cycle).await?,
        None => {
            cycle.warnings.push(nothing_claimed(plan));
            Vec::new()
        }
    };
    // The last job enqueued, which no claim took: cancelled while it waits.
    let waiting = keys.last().filter(|k| !taken.contains(k));
    if let (Some(cancel), Some(key)) = (&steps.cancel, waiting) {
        let key = key.clone();
        let job = Claimed::bare(0, key);
        landed(&cx, cancel, &job, 0.0).await?;
        cycle.ran.push("cancel");
        cycle.ended.push((job.key, Status::Cancelled, "cancel"));
    }
    observe(&cx, &cycle.ended).await?;
    cycle.ran.push("observers");
    Ok(cycle)
}

/// A statement that ends or starts a transaction would end the one the cycle runs in, and
/// commit what the setup wrote: refused before anything runs. (The harness runs a step's list
/// in a transaction of its own; a procedure cannot commit inside one.)
fn no_transaction_control(plan: &Plan) -> Result<()> {
    let a = &plan.adapter;
    let steps = a.worker_steps().chain(&a.reclaim).chain(&a.cancel).chain([&a.enqueue]).chain(&a.preload);
    for step in steps {
        for s in &step.statements {
            let words: Vec<String> = first_words(&s.text).split_whitespace().take(2).map(str::to_uppercase).collect();
            let control = match words.first().map(String::as_str) {
                Some("BEGIN" | "START" | "COMMIT" | "END" | "ABORT") => true,
                Some("ROLLBACK") => words.get(1).is_none_or(|w| w != "TO"),
                Some("PREPARE") => words.get(1).is_some_and(|w| w == "TRANSACTION"),
                _ => false,
            };
            if control {
                return Err(refused(
                    plan,
                    &format!(
                        "the {} step holds `{}`, which ends or starts a transaction:\n  \
                         queuebench runs each step in a transaction of its own; take transaction control out of it",
                        step.role.name(),
                        first_words(&s.text)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The steps on claimed jobs: heartbeat and complete the first; claim and fail a second;
/// claim a third with its lease already over and reclaim it. The keys of the jobs claimed.
async fn claimed(cx: &Cx<'_>, mut first: Claimed, cycle: &mut Cycle) -> Result<Vec<Key>> {
    cycle.ran.push("claim");
    if let Some(heartbeat) = &cx.steps.heartbeat {
        if let Some(token) = landed(cx, heartbeat, &first, 0.0).await? {
            // The heartbeat renewed the fence: the completion binds the new token, as in a run.
            first.tag = token.tag();
            first.token = Some(token);
        }
        cycle.ran.push("heartbeat");
    }
    landed(cx, &cx.steps.complete, &first, 0.0).await?;
    cycle.ran.push("complete");
    cycle.ended.push((first.key.clone(), Status::Done, "complete"));
    let mut taken = vec![first.key];
    if let Some(fail) = &cx.steps.fail
        && let Some(job) = claim(cx, None).await?
    {
        // With `[result] successor`, the fail's value is read as a run reads it (the job's new id).
        landed(cx, fail, &job, BACKOFF_SECS).await?;
        cycle.ran.push("fail");
        taken.push(job.key);
    }
    // A third job, claimed and held while the observers read the queue: the state a running
    // job is in must map onto a known status too (a run ends with jobs held). Then, with a
    // reclaim, its lease (over a minute ago) is taken back.
    let expired = cx.steps.reclaim.as_ref().map(|_| EXPIRED_SECS);
    if let Some(job) = claim(cx, expired).await? {
        observe(cx, &[]).await?;
        if let Some(reclaim) = &cx.steps.reclaim {
            match reclaimed(cx, reclaim).await? {
                steps::Counted::Changed(0) => cycle.warnings.push(nothing_reclaimed(cx.plan, &job)),
                steps::Counted::Returned(rows) if rows.is_empty() => {
                    cycle.warnings.push(nothing_reclaimed(cx.plan, &job));
                }
                steps::Counted::Changed(_) => cycle.warnings.push(reclaim_names_no_job(cx.plan)),
                steps::Counted::Returned(rows) => {
                    let id = &cx.plan.adapter.columns.id;
                    if !rows.iter().any(|r| crate::run::reaper::reclaimed_key(r, id).as_ref() == Some(&job.key)) {
                        cycle.warnings.push(reclaim_names_no_job(cx.plan));
                    }
                }
            }
            cycle.ran.push("reclaim");
        }
        taken.push(job.key);
    }
    Ok(taken)
}

/// The cycle's jobs: with a preload, all but one by it (a burn-down's jobs, which a claim that
/// wants jobs enqueued before now() can take in the same transaction), then the rest by the
/// enqueue, as a producer sends them. The ids the enqueue returned.
async fn enqueue(cx: &Cx<'_>, cycle: &mut Cycle) -> Result<Vec<Key>> {
    let mut from = 1;
    if let Some(p) = &cx.steps.preload {
        let mut v = cx.values();
        v.enqueue.count = JOBS - 1;
        for (st, s) in p.statements.iter().zip(&p.step.statements) {
            steps::traced(s, &v);
            cx.client.execute_raw(st, v.bind(&s.params)).await.map_err(|e| failed(cx.plan, "preload", Some(p), &e))?;
        }
        cycle.ran.push("preload");
        from = JOBS;
    }
    let class = cx.plan.load.classes.first();
    let mut keys = Vec::new();
    for n in from..=JOBS {
        let mut v = cx.values();
        v.enqueue = Enqueue {
            payload: Some(serde_json::json!({ "n": n })),
            n,
            count: 0,
            class: class.map_or("default", |c| c.name.as_str()),
            priority: class.map_or(0, |c| c.priority),
            unique_key: n,
        };
        let step = &cx.steps.enqueue;
        let rows =
            steps::rows(cx.client, step, &v, true).await.map_err(|e| failed(cx.plan, "enqueue", Some(step), &e))?;
        let key = rows.first().map(|r| r.try_get::<_, Key>(0)).transpose();
        keys.push(key.map_err(|e| failed(cx.plan, "enqueue", Some(step), &e))?.unwrap_or(Key::Int(n)));
    }
    cycle.ran.push("enqueue");
    Ok(keys)
}

/// One claim of one job (after the select, if the adapter has one); `lease_secs` replaces the
/// plan's lease.
async fn claim(cx: &Cx<'_>, lease_secs: Option<f64>) -> Result<Option<Claimed>> {
    let mut v = cx.values();
    if let Some(secs) = lease_secs {
        v = v.with_claim(1, secs);
    }
    let ids: Vec<i64> = match &cx.steps.select {
        Some(select) => {
            let rows = steps::rows(cx.client, select, &v, true)
                .await
                .map_err(|e| failed(cx.plan, "select", Some(select), &e))?;
            rows.iter().map(|r| r.get(0)).collect()
        }
        None => Vec::new(),
    };
    v.ids = &ids;
    let step = &cx.steps.claim;
    let rows = steps::rows(cx.client, step, &v, true).await.map_err(|e| failed(cx.plan, "claim", Some(step), &e))?;
    let Some(row) = rows.first() else { return Ok(None) };
    let job = job(row, cx.steps.columns).map_err(|e| failed(cx.plan, "claim (reading its row)", Some(step), &e))?;
    Ok(Some(job))
}

/// The claim's row as a job, by the columns found when the claim was prepared.
fn job(row: &Row, cols: ClaimColumns) -> std::result::Result<Claimed, tokio_postgres::Error> {
    let key: Key = row.try_get(cols.id)?;
    let attempt_key: Option<Key> = cols.attempt.map(|c| row.try_get(c)).transpose()?;
    let token: Option<Key> = cols.token.map(|c| row.try_get::<_, Option<Key>>(c)).transpose()?.flatten();
    Ok(Claimed {
        id: key.as_int().unwrap_or(0),
        attempt: attempt_key.as_ref().and_then(Key::as_int).map_or(-1, |a| a as i32),
        attempt_key: attempt_key.unwrap_or(Key::Int(-1)),
        tag: token.as_ref().map_or(0, Key::tag),
        token,
        key,
        seq: 1,
        class: 0,
        exclusion: None,
    })
}

/// A write on the job its own claim just handed out (or, for cancel, a job no one holds): it
/// must land, or a run would count every such write refused. A heartbeat that hands back a
/// new token gives it back.
async fn landed(cx: &Cx<'_>, step: &Prepared, job: &Claimed, backoff_secs: f64) -> Result<Option<Key>> {
    let name = step.step.role.name();
    let mut v = cx.values();
    v.job = Some(job);
    v.backoff_secs = backoff_secs;
    v.error = "validate";
    let returns = match name {
        "heartbeat" => crate::run::conn::renewed_token(step, &cx.plan.adapter),
        "fail" => cx.steps.fail_successor,
        _ => None,
    };
    let (accepted, token) = match returns {
        Some(at) => steps::write_renewing(cx.client, step, &v, true, at).await,
        None => steps::write(cx.client, step, &v, true).await.map(|a| (a, None)),
    }
    .map_err(|e| failed(cx.plan, name, Some(step), &e))?;
    if accepted {
        return Ok(token);
    }
    let whose =
        if name == "cancel" { "a job just enqueued that no one held" } else { "the job its claim had just handed out" };
    Err(refused(
        cx.plan,
        &format!(
            "the {name} step ran on {whose} (id {}) and did not land by its accepted rule ({:?}):\n  \
             a run would count every {name} refused. SQL: {}",
            job.key.show(),
            step.step.accepted,
            first_words(&step.step.first().text)
        ),
    ))
}

/// Runs every statement of the reclaim inside the caller's transaction: what its counted
/// statement took back (the one that changes state, as the reaper counts it).
async fn reclaimed(cx: &Cx<'_>, p: &Prepared) -> Result<steps::Counted> {
    let v = cx.values().with_claim(1, EXPIRED_SECS);
    steps::counted(cx.client, p, &v, true).await.map_err(|e| failed(cx.plan, "reclaim", Some(p), &e))
}

/// Does this transaction hold a row-share lock on a table (`SELECT … FOR UPDATE` and its
/// kin) or an advisory lock?
async fn holds_a_claim_lock(client: &Client) -> std::result::Result<bool, tokio_postgres::Error> {
    let sql = "SELECT count(*) > 0 FROM pg_locks WHERE pid = pg_backend_pid() AND granted \
               AND ((locktype = 'relation' AND mode = 'RowShareLock') OR locktype = 'advisory')";
    Ok(client.query_one(sql, &[]).await?.get(0))
}

/// The observer queries over what the cycle left: every status one the checkers know, and the
/// jobs the cycle completed and cancelled read so (or left out).
async fn observe(cx: &Cx<'_>, ended: &[(Key, Status, &'static str)]) -> Result<()> {
    let a = &cx.plan.adapter;
    let v = cx.values();
    let rows = |st: &'static str| move |e: tokio_postgres::Error| failed_observer(cx.plan, st, &e);
    let prepared = cx.client.prepare(&a.observe.state.sql).await.map_err(rows("state"))?;
    let column = |name: &str| prepared.columns().iter().position(|c| c.name() == name);
    let (Some(id), Some(status)) = (column("id"), column("status")) else {
        return Err(refused(cx.plan, "observe.state must return the columns `id` and `status`"));
    };
    let state: Vec<Row> =
        async { cx.client.query_raw(&prepared, v.bind(&a.observe.state.params)).await?.try_collect().await }
            .await
            .map_err(rows("state"))?;
    for r in &state {
        known(cx.plan, "state", r, status)?;
        as_ended(cx.plan, r, (id, status), ended)?;
    }
    let left = query(cx.client, &a.observe.remaining, &v).await.map_err(rows("remaining"))?;
    let counts = left.first().and_then(|r| r.columns().first()).map(|c| c.type_().clone());
    if !counts.as_ref().is_some_and(|t| matches!(t.name(), "bool" | "int2" | "int4" | "int8" | "float4" | "float8")) {
        let got = counts.map_or("no row".to_string(), |t| format!("a first column of type {t}"));
        return Err(refused(
            cx.plan,
            &format!("observe.remaining must give one row, a count or a boolean first; it gave {got}"),
        ));
    }
    if let Some(depth) = &a.observe.depth {
        for r in query(cx.client, depth, &v).await.map_err(rows("depth"))? {
            known(cx.plan, "depth", &r, 1)?;
        }
    }
    Ok(())
}

async fn query(
    client: &Client,
    st: &crate::adapter::Statement,
    v: &Values<'_>,
) -> std::result::Result<Vec<Row>, tokio_postgres::Error> {
    client.query_raw(st.sql.as_str(), v.bind(&st.params)).await?.try_collect().await
}

/// The status in column `at` is one of the six the checkers read.
fn known(plan: &Plan, observer: &str, row: &Row, at: usize) -> Result<()> {
    let text = match row.try_get::<_, Option<String>>(at) {
        Ok(Some(t)) => t,
        Ok(None) => "NULL".to_string(),
        Err(_) => format!("a value of type {}", row.columns()[at].type_()),
    };
    if Status::parse_known(&text).is_some() {
        return Ok(());
    }
    let accepted: Vec<&str> = Status::ALL.iter().map(|s| s.name()).collect();
    Err(refused(
        plan,
        &format!(
            "observe.{observer} gave the status `{text}`, which no checker knows (accepted: {}):\n  \
             map every state of the queue onto one of these in the query (a CASE with no ELSE gives NULL)",
            accepted.join(", ")
        ),
    ))
}

/// A job a complete or cancel landed on reads `done` or `cancelled` (a row whose id the cycle
/// cannot read as the claim's key is let be).
fn as_ended(plan: &Plan, row: &Row, (id, status): (usize, usize), ended: &[(Key, Status, &str)]) -> Result<()> {
    let Ok(key) = row.try_get::<_, Key>(id) else { return Ok(()) };
    let Some((_, want, step)) = ended.iter().find(|(k, _, _)| *k == key) else { return Ok(()) };
    let got: String = row.get(status);
    if got == want.name() {
        return Ok(());
    }
    Err(refused(
        plan,
        &format!(
            "observe.state gave the status `{got}` for job {} after its {step} landed:\n  \
             the checkers would read it as not {}; map the state the {step} writes onto `{}`",
            key.show(),
            want.name(),
            want.name()
        ),
    ))
}

/// Who wrote the SQL: the adapter file, or the scenario's strategy.
fn whose(plan: &Plan) -> String {
    match &plan.adapter.origin {
        Origin::File(path) => format!("adapter {}", path.display()),
        Origin::Scenario | Origin::Builtin => format!("strategy `{}`", plan.adapter.name),
    }
}

/// The adapter's SQL is wrong: exit 2, naming the scenario, the adapter and the reason.
fn refused(plan: &Plan, reason: &str) -> Error {
    Error::ScenarioFile {
        file: plan.source.path.clone(),
        sets: plan.source.overrides.clone(),
        reason: format!("{}: validate's smoke cycle: {reason}", whose(plan)),
    }
}

/// A step failed on the server: its name, its SQL's first words and the server's message.
fn failed(plan: &Plan, step: &str, p: Option<&Prepared>, e: &tokio_postgres::Error) -> Error {
    let sql = p.map(|p| statements(&p.step)).unwrap_or_default();
    refused(
        plan,
        &format!(
            "the {step} step failed on real values (it prepared, but the server refused it when run):\n  \
             {}{sql}",
            crate::db::sql(e)
        ),
    )
}

fn failed_observer(plan: &Plan, which: &str, e: &tokio_postgres::Error) -> Error {
    let st = match which {
        "state" => &plan.adapter.observe.state,
        "remaining" => &plan.adapter.observe.remaining,
        _ => plan.adapter.observe.depth.as_ref().unwrap_or(&plan.adapter.observe.state),
    };
    refused(plan, &format!("observe.{which} failed: {}\n  SQL: {}", crate::db::sql(e), first_words(&st.text)))
}

/// `\n  SQL: first words` of each statement of a step.
fn statements(step: &Step) -> String {
    let n = step.statements.len();
    step.statements
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let which = if n > 1 { format!(" #{}", i + 1) } else { String::new() };
            format!("\n  SQL{which}: {}", first_words(&s.text))
        })
        .collect()
}

fn no_lock(plan: &Plan) -> String {
    format!(
        "{}: the claim took no row lock and no advisory lock (pg_locks after it shows neither a RowShareLock \
         nor an advisory lock): two workers can then claim the same job, unless its UPDATE or DELETE checks \
         the job's state again in its own WHERE. Lock the rows it picks (FOR UPDATE SKIP LOCKED) unless the \
         scenario exists to show that race",
        whose(plan)
    )
}

fn nothing_claimed(plan: &Plan) -> String {
    format!(
        "{}: the claim returned no job, though the cycle had just enqueued jobs no one held, so heartbeat, \
         complete, fail and reclaim were only prepared, not run. The cycle runs in one transaction, where now() \
         does not move: a claim that takes only jobs enqueued strictly before now() finds none there and \
         works in a run. Otherwise check the claim's WHERE against what the enqueue writes",
        whose(plan)
    )
}

fn nothing_reclaimed(plan: &Plan, job: &Claimed) -> String {
    format!(
        "{}: the reclaim took back nothing, though job {} was claimed with a lease that ran out a minute \
         before (:lease_secs = {EXPIRED_SECS}): a job whose worker dies may never come back",
        whose(plan),
        job.key.show()
    )
}

fn reclaim_names_no_job(plan: &Plan) -> String {
    format!(
        "{}: the reclaim took the job back but its counted statement does not return its id (add `RETURNING {}` \
         to its first INSERT, UPDATE, DELETE or MERGE): the reaper cannot say which jobs it took back, so a \
         completion or failure that lands after it is not judged (checks.stale_completions_accepted)",
        whose(plan),
        plan.adapter.columns.id
    )
}

/// The first line of a statement that is not a comment, cut to 60 characters.
pub(super) fn first_words(text: &str) -> String {
    text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with("--")).unwrap_or("").chars().take(60).collect()
}
