//! The values a statement's named parameters draw from (`adapter::params`), bound in the
//! statement's order without building a list (the driver's `*_raw` calls take an iterator):
//! the plan's numbers, the worker's name and pool, the job in hand (its id, attempt and token
//! as the queue keeps them), and the clock.

use crate::adapter::Param;
use crate::adapter::keys::Key;
use crate::adapter::params::Constant;
use crate::scenario::Plan;
use std::time::SystemTime;
use tokio_postgres::types::ToSql;

/// A job as the claim returned it; `seq` numbers the worker's claims.
#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    /// The job's number in the journal (its id when the id is an integer).
    pub id: i64,
    /// The queue's own id, bound back as `:id`.
    pub key: Key,
    /// The attempt the claim returned (-1 when it returns none).
    pub attempt: i32,
    /// The same, bound back as `:attempt` in the claim's own type.
    pub attempt_key: Key,
    pub token: Option<Key>,
    /// The token as 64 bits for the journal (0: none).
    pub tag: u64,
    pub seq: u32,
    /// 0 = preloaded ("default"), i + 1 = the plan's class i.
    pub class: u16,
    /// `[result] exclusion_key`'s value as text (None: not declared, or NULL).
    pub exclusion: Option<String>,
}

impl Claimed {
    /// A job known only by its number and the queue's id, as no claim returned it (a cancel's
    /// target, a job a fault picks): no attempt, no token, the default class.
    pub(crate) fn bare(id: i64, key: Key) -> Claimed {
        Claimed {
            id,
            key,
            attempt: -1,
            attempt_key: Key::Int(-1),
            token: None,
            tag: 0,
            seq: 0,
            class: 0,
            exclusion: None,
        }
    }
}

/// What an enqueue or a preload binds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Enqueue<'a> {
    pub payload: Option<serde_json::Value>,
    pub n: i64,
    pub count: i64,
    pub class: &'a str,
    pub priority: i32,
    /// `:unique_key`: the key a deduplicating enqueue dedupes on (`jobs.unique_keys`).
    pub unique_key: i64,
}

/// The values for one statement.
pub(crate) struct Values<'a> {
    pub plan: &'a Plan,
    batch: i64,
    lease_secs: f64,
    aging_step_secs: f64,
    aging_cap: i64,
    deadline_secs: f64,
    retry_base_secs: f64,
    retry_cap_secs: f64,
    max_attempts: i32,
    now: SystemTime,
    pub worker: &'a str,
    /// The worker's group name (`:pool`).
    pub pool: &'a str,
    pub ids: &'a [i64],
    pub job: Option<&'a Claimed>,
    pub backoff_secs: f64,
    pub error: &'a str,
    pub enqueue: Enqueue<'a>,
}

/// One parameter's value, resolved (see [`Values::resolve`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    Int(i64),
    Int4(i32),
    Float(f64),
    Text(&'a str),
    Ids(&'a [i64]),
    /// A job's id, attempt or token in the type the queue keeps it in; None: no job or no token.
    Key(Option<&'a Key>),
    Json(Option<&'a serde_json::Value>),
    Time(SystemTime),
    Const(&'a Constant),
    /// `:prev.COLUMN`: known only while the step runs (`run::steps`), so none here.
    Prev,
}

static NO_KEY: Key = Key::Int(0);
static NO_TOKEN: Option<Key> = None;
static NO_TEXT: &str = "";
static NO_ROWS: Vec<Key> = Vec::new();

impl<'a> Values<'a> {
    /// The plan's values, for a statement the harness sends itself (no worker, no job).
    pub(crate) fn new(plan: &'a Plan) -> Values<'a> {
        Values {
            plan,
            batch: i64::from(plan.workers.batch),
            lease_secs: plan.lease.duration.as_secs_f64(),
            aging_step_secs: plan.workers.ordering.aging_step.as_secs_f64(),
            aging_cap: plan.workers.ordering.aging_cap,
            deadline_secs: plan.workers.ordering.deadline.as_secs_f64(),
            retry_base_secs: plan.retry.base.as_secs_f64(),
            retry_cap_secs: plan.retry.cap.as_secs_f64(),
            max_attempts: plan.jobs.max_attempts,
            now: SystemTime::now(),
            worker: NO_TEXT,
            pool: NO_TEXT,
            ids: &[],
            job: None,
            backoff_secs: 0.0,
            error: NO_TEXT,
            enqueue: Enqueue::default(),
        }
    }

    /// The same values with another `:batch` and `:lease_secs` (validate's smoke cycle claims one
    /// job at a time, and one with a lease that has already run out).
    pub(crate) fn with_claim(mut self, batch: i64, lease_secs: f64) -> Values<'a> {
        self.batch = batch;
        self.lease_secs = lease_secs;
        self
    }

    /// The same values at another instant (`:now`; `explore`'s virtual clock).
    pub(crate) fn at(mut self, now: SystemTime) -> Values<'a> {
        self.now = now;
        self
    }

    /// The instant `:now` stands for.
    pub(crate) fn now(&self) -> SystemTime {
        self.now
    }

    /// The value of one parameter, resolved: what a transport that does not take
    /// tokio-postgres's `ToSql` (the sqlx pool, a printed psql script) encodes. The direct
    /// path binds [`Values::bind`] instead, without this step.
    pub(crate) fn resolve(&'a self, p: Param) -> Value<'a> {
        match p {
            Param::Batch => Value::Int(self.batch),
            Param::LeaseSecs => Value::Float(self.lease_secs),
            Param::Worker => Value::Text(self.worker),
            Param::Pool => Value::Text(self.pool),
            Param::Ids => Value::Ids(self.ids),
            Param::Id => Value::Key(self.job.map(|j| &j.key)),
            Param::Attempt => Value::Key(self.job.map(|j| &j.attempt_key)),
            Param::Token => Value::Key(self.job.and_then(|j| j.token.as_ref())),
            Param::BackoffSecs => Value::Float(self.backoff_secs),
            Param::Error => Value::Text(self.error),
            Param::RetryBaseSecs => Value::Float(self.retry_base_secs),
            Param::RetryCapSecs => Value::Float(self.retry_cap_secs),
            Param::AgingStepSecs => Value::Float(self.aging_step_secs),
            Param::AgingCap => Value::Int(self.aging_cap),
            Param::DeadlineSecs => Value::Float(self.deadline_secs),
            Param::Payload => Value::Json(self.enqueue.payload.as_ref()),
            Param::N => Value::Int(self.enqueue.n),
            Param::Count => Value::Int(self.enqueue.count),
            Param::Class => Value::Text(self.enqueue.class),
            Param::Priority => Value::Int4(self.enqueue.priority),
            Param::MaxAttempts => Value::Int4(self.max_attempts),
            Param::Now => Value::Time(self.now),
            Param::UniqueKey => Value::Int(self.enqueue.unique_key),
            Param::Const(i) => Value::Const(&self.plan.adapter.constants[i as usize].1),
            Param::Prev(_) => Value::Prev,
        }
    }

    /// The statement's parameters in order.
    pub(crate) fn bind(&'a self, params: &'a [Param]) -> impl ExactSizeIterator<Item = &'a (dyn ToSql + Sync)> + 'a {
        params.iter().map(|p| self.value(*p))
    }

    /// The same, with the columns the step's previous statement returned (`:prev.COLUMN`).
    pub(crate) fn bind_carried<'b>(
        &'b self,
        params: &'b [Param],
        carried: &'b [Vec<Key>],
    ) -> impl ExactSizeIterator<Item = &'b (dyn ToSql + Sync)> + 'b
    where
        'a: 'b,
    {
        params.iter().map(move |p| match p {
            Param::Prev(i) => carried.get(usize::from(*i)).map_or(&NO_ROWS as &(dyn ToSql + Sync), |c| c as _),
            p => self.value(*p),
        })
    }

    fn value(&'a self, p: Param) -> &'a (dyn ToSql + Sync) {
        match p {
            Param::Batch => &self.batch,
            Param::LeaseSecs => &self.lease_secs,
            Param::Worker => &self.worker,
            Param::Pool => &self.pool,
            Param::Ids => &self.ids,
            Param::Id => self.job.map_or(&NO_KEY, |j| &j.key),
            Param::Attempt => self.job.map_or(&NO_KEY, |j| &j.attempt_key),
            Param::Token => self.job.map_or(&NO_TOKEN, |j| &j.token),
            Param::BackoffSecs => &self.backoff_secs,
            Param::Error => &self.error,
            Param::RetryBaseSecs => &self.retry_base_secs,
            Param::RetryCapSecs => &self.retry_cap_secs,
            Param::AgingStepSecs => &self.aging_step_secs,
            Param::AgingCap => &self.aging_cap,
            Param::DeadlineSecs => &self.deadline_secs,
            Param::Payload => &self.enqueue.payload,
            Param::N => &self.enqueue.n,
            Param::Count => &self.enqueue.count,
            Param::Class => &self.enqueue.class,
            Param::Priority => &self.enqueue.priority,
            Param::MaxAttempts => &self.max_attempts,
            Param::Now => &self.now,
            Param::UniqueKey => &self.enqueue.unique_key,
            Param::Const(i) => &self.plan.adapter.constants[i as usize].1,
            Param::Prev(_) => &NO_ROWS,
        }
    }
}
