//! Open-model producers: one task per job class, each with its own
//! connection, enqueueing at the class's rate times the current phase's
//! multiplier, on a constant or seeded Poisson schedule.
//!
//! Every arrival has an intended time from the schedule. A producer that
//! falls behind sends late (never skips), so its lag shows; queue wait is
//! measured from the intended time, so a slow producer cannot hide latency
//! (no coordinated omission). Arrivals still unsent when the load ends are
//! counted as unsent.

use super::conn::{Prepared, prepare_step};
use super::steps;
use super::values::{Enqueue, Values};
use crate::adapter::keys::{Interner, Key};
use crate::collect::Arrival;
use crate::collect::spill::Spill;
use crate::db::Endpoint;
use crate::db::statements::BUSINESS_ROW;
use crate::error::SessionFailure;
use crate::scenario::Plan;
use crate::scenario::plan::{Arrivals, Class};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};
use tokio_postgres::Statement;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Default)]
pub(crate) struct ProducerOutput {
    pub arrivals: Vec<Arrival>,
    /// Scheduled arrivals not sent before the load ended or the run stopped.
    pub unsent: u64,
    pub errors: u64,
    /// The enqueues' errors by SQLSTATE (`io` for a connection lost without a reconnect):
    /// how many, and the first message.
    pub failures: BTreeMap<String, (u64, String)>,
    /// Enqueues a deduplicating adapter (`[result] unique_key`) answered with no row: not jobs.
    pub deduplicated: u64,
    /// (job, its `[result] unique_key` as the enqueue returned it), for a deduplicating adapter.
    pub unique_keys: Vec<(i64, String)>,
}

/// One class's producer: its arrivals spill to disk as they grow (see `collect::spill`).
#[derive(Default)]
struct ClassOutput {
    arrivals: Spill<Arrival>,
    unsent: u64,
    errors: u64,
    failures: BTreeMap<String, (u64, String)>,
    deduplicated: u64,
    unique_keys: Vec<(i64, String)>,
}

impl ProducerOutput {
    fn add(&mut self, o: ClassOutput) {
        self.arrivals.extend(o.arrivals.into_vec());
        self.unsent += o.unsent;
        self.errors += o.errors;
        for (code, (n, first)) in o.failures {
            self.failures.entry(code).or_insert((0, first)).0 += n;
        }
        self.deduplicated += o.deduplicated;
        self.unique_keys.extend(o.unique_keys);
    }
}

/// Runs every class's producer until the phases end; merges their journals.
/// `ids` numbers the jobs an adapter's enqueue returns; the payload's `n` continues after the preload.
pub(crate) async fn run(
    plan: &Plan,
    config: &Endpoint,
    start: Instant,
    stop: &CancellationToken,
    ids: &Interner,
) -> ProducerOutput {
    let next_n = AtomicI64::new(plan.jobs.preload as i64 + 1);
    let feed = Feed { ids, next_n: &next_n };
    let tasks = plan.load.classes.iter().enumerate().map(|(i, c)| one(plan, i, c, config, start, stop, &feed));
    let mut out = ProducerOutput::default();
    for o in futures_util::future::join_all(tasks).await {
        out.add(o);
    }
    out
}

/// The schedule: intended arrival times of one class, from 0 to the end of the last phase.
pub(crate) fn schedule(plan: &Plan, class: usize) -> Vec<Duration> {
    let c = &plan.load.classes[class];
    let mut rng = StdRng::seed_from_u64(plan.seed ^ (0xA77 + class as u64));
    let mut out = Vec::new();
    for p in &plan.load.phases {
        let rate = c.rate * p.rate;
        if rate <= 0.0 {
            continue;
        }
        let end = p.start + p.duration;
        let mut t = p.start;
        loop {
            let gap = match plan.load.arrivals {
                Arrivals::Constant => 1.0 / rate,
                Arrivals::Poisson => -(1.0 - rng.random::<f64>()).ln() / rate,
            };
            t += Duration::from_secs_f64(gap);
            if t >= end {
                break;
            }
            out.push(t);
        }
    }
    out
}

/// What the producers share: the numbering of new jobs.
struct Feed<'a> {
    ids: &'a Interner,
    next_n: &'a AtomicI64,
}

async fn one(
    plan: &Plan,
    index: usize,
    class: &Class,
    config: &Endpoint,
    start: Instant,
    stop: &CancellationToken,
    feed: &Feed<'_>,
) -> ClassOutput {
    let times = schedule(plan, index);
    let mut out = ClassOutput { unsent: times.len() as u64, ..Default::default() };
    let Some(side) = super::Side::connect(config, &format!("producer {}", class.name)).await else { return out };
    let mut enq = Enqueuer {
        endpoint: config.clone(),
        side,
        prepared: None,
        pad: "x".repeat(class.payload_bytes),
        plan,
        class,
        feed,
    };
    for (k, t) in times.iter().enumerate() {
        let now = start.elapsed();
        if *t > now {
            tokio::select! {
                _ = tokio::time::sleep(*t - now) => {}
                _ = stop.cancelled() => { out.unsent = (times.len() - k) as u64; return out; }
            }
        }
        match enq.deliver(start, stop, k as u64).await {
            Delivery::Sent { job, sent, took, unique } => {
                out.arrivals.push(Arrival {
                    job,
                    class: index as u16 + 1,
                    intended_us: t.as_micros() as u64,
                    sent_us: sent.as_micros() as u64,
                    enqueue_us: took.as_micros().min(u128::from(u32::MAX)) as u32,
                });
                out.unique_keys.extend(unique.map(|key| (job, key)));
            }
            Delivery::Deduplicated => out.deduplicated += 1,
            Delivery::Failed { code, message } => {
                out.errors += 1;
                out.failures.entry(code).or_insert((0, message)).0 += 1;
            }
            Delivery::Stopped => {
                out.unsent = (times.len() - k) as u64;
                return out;
            }
        }
        out.unsent = (times.len() - k - 1) as u64;
    }
    out
}

/// What became of one arrival.
enum Delivery {
    /// Enqueued: the new job's id, when the send that worked began (since the start), how long
    /// it took, and the key a deduplicating enqueue returned.
    Sent { job: i64, sent: Duration, took: Duration, unique: Option<String> },
    /// A deduplicating enqueue returned no row: the key was taken, no job was made.
    Deduplicated,
    /// The enqueue failed (not for a lost connection), or could not be prepared: a producer
    /// error, by its SQLSTATE.
    Failed { code: String, message: String },
    /// The run stopped before it was sent.
    Stopped,
}

/// A producer's connection and statements, prepared again after a reconnect.
struct Enqueuer<'a> {
    /// Where `side` connects: a transaction pooler's has a direct endpoint to describe on.
    endpoint: Endpoint,
    side: super::Side,
    /// (connection generation, enqueue, business row when `jobs.business_row`)
    prepared: Option<(u64, Prepared, Option<Statement>)>,
    pad: String,
    plan: &'a Plan,
    class: &'a Class,
    feed: &'a Feed<'a>,
}

impl Enqueuer<'_> {
    /// Sends one arrival, the producer's `k`-th. While the server is away the arrival waits
    /// and is sent late (never skipped), so its lag shows the outage; a send cut off by a lost
    /// connection is sent again on the next one.
    async fn deliver(&mut self, start: Instant, stop: &CancellationToken, k: u64) -> Delivery {
        loop {
            if stop.is_cancelled() {
                return Delivery::Stopped;
            }
            let Some((client, generation)) = self.side.client().await else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            if self.prepared.as_ref().is_none_or(|(g, ..)| *g != generation) {
                match prepare_enqueue(&self.endpoint, client, self.plan).await {
                    Ok((e, b)) => self.prepared = Some((generation, e, b)),
                    Err(_) if client.is_closed() => continue,
                    Err(e) => return Delivery::Failed { code: failure_code(&e), message: e.to_string() },
                }
            }
            let (_, enqueue, business) = self.prepared.as_ref().expect("prepared above");
            let (sent, began) = (start.elapsed(), Instant::now());
            let n = self.feed.next_n.fetch_add(1, Ordering::Relaxed);
            let unique_key = self.plan.jobs.unique_keys.map_or(n, |keys| (k % u64::from(keys)) as i64);
            let job = Job { n, unique_key, pad: &self.pad };
            match send(client, self.plan, self.class, (enqueue, business.as_ref()), job).await {
                Ok(Some((key, unique))) => {
                    let job = self.feed.ids.surrogate(&key);
                    return Delivery::Sent { job, sent, took: began.elapsed(), unique };
                }
                Ok(None) => return Delivery::Deduplicated,
                Err(e) if super::connection_lost(&e, client) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(e) => {
                    let _ = client.batch_execute("ROLLBACK").await;
                    let code = e.code().map_or("io", |c| c.code()).to_string();
                    return Delivery::Failed { code, message: crate::db::sql(&e).message };
                }
            }
        }
    }
}

/// The SQLSTATE a failed preparation ended with (`prepare` when it was not the server's).
fn failure_code(e: &SessionFailure) -> String {
    match e {
        SessionFailure::Sql { sql, .. } => sql.sqlstate.clone().unwrap_or_else(|| "io".into()),
        _ => "prepare".into(),
    }
}

/// The enqueue step, and the business row's insert when `jobs.business_row` (queuebench's
/// own table only), prepared on the producer's connection, or (through a transaction pooler)
/// described on a short direct one and run unnamed. A deduplicating adapter's enqueue must
/// return its `[result] unique_key` column.
pub(crate) async fn prepare_enqueue(
    endpoint: &Endpoint,
    client: &tokio_postgres::Client,
    plan: &Plan,
) -> Result<(Prepared, Option<Statement>), SessionFailure> {
    let describer = match &endpoint.direct {
        Some(direct) => Some(
            crate::db::connect::open(direct, |_| {})
                .await
                .map_err(|e| SessionFailure::Sql {
                    step: "connecting past the pooler to describe the enqueue".into(),
                    sql: crate::db::sql(&e),
                    statement: None,
                })?
                .0,
        ),
        None => None,
    };
    if let Some(init) = &plan.adapter.on_connect {
        client.batch_execute(init).await.map_err(|e| SessionFailure::Sql {
            step: "the adapter's on_connect, on a producer's connection".into(),
            sql: crate::db::sql(&e),
            statement: Some(init.clone()),
        })?;
    }
    let on = describer.as_ref().unwrap_or(client);
    let mut enqueue = prepare_step(on, &plan.adapter.enqueue).await?;
    enqueue.unnamed = endpoint.unnamed();
    unique_key_returned(&enqueue, &plan.adapter)?;
    if !plan.load.business_row {
        return Ok((enqueue, None));
    }
    let business = on.prepare(BUSINESS_ROW).await.map_err(|e| SessionFailure::Sql {
        step: "preparing the business row's insert".into(),
        sql: crate::db::sql(&e),
        statement: Some(BUSINESS_ROW.to_string()),
    })?;
    Ok((enqueue, Some(business)))
}

/// A deduplicating adapter's enqueue (`[result] unique_key`) returns the key column from its
/// last statement (a run and `validate` ask the same).
pub(crate) fn unique_key_returned(enqueue: &Prepared, adapter: &crate::adapter::Adapter) -> Result<(), SessionFailure> {
    let Some(column) = &adapter.columns.unique_key else { return Ok(()) };
    let returned: Vec<&str> = enqueue.last().columns().iter().map(|c| c.name()).collect();
    if returned.contains(&column.as_str()) {
        return Ok(());
    }
    Err(SessionFailure::Statements(crate::error::Invalid::new(format!(
        "[result] unique_key = \"{column}\", but the enqueue returns no column `{column}` (it returns: {}); a \
         deduplicating enqueue returns the job's id and its key for a job it inserts, no row for a duplicate",
        if returned.is_empty() { "no columns".to_string() } else { returned.join(", ") }
    ))))
}

/// Before the clock starts: the producers' enqueue prepared once on a connection of their own,
/// so an enqueue the server refuses (a table the adapter's setup does not create, a column the
/// enqueue does not return) stops the run at once, as a worker's claim does, instead of
/// leaving every arrival unsent.
pub(crate) async fn preflight(plan: &Plan, config: &Endpoint) -> Result<(), SessionFailure> {
    let (client, _task) = crate::db::connect::open(config, |_| {}).await.map_err(|e| SessionFailure::Sql {
        step: "connecting a producer".into(),
        sql: crate::db::sql(&e),
        statement: None,
    })?;
    prepare_enqueue(config, &client, plan).await.map(|_| ())
}

/// One arrival's numbers: its sequence number, its unique key, its payload's padding.
struct Job<'a> {
    n: i64,
    unique_key: i64,
    pad: &'a String,
}

/// One enqueue (with its business row, in one transaction, if the scenario says so): the new
/// job's id as the queue returned it, with its `[result] unique_key`; None when a deduplicating
/// enqueue returned no row.
async fn send(
    client: &tokio_postgres::Client,
    plan: &Plan,
    class: &Class,
    (enqueue, business): (&Prepared, Option<&Statement>),
    job: Job<'_>,
) -> Result<Option<(Key, Option<String>)>, tokio_postgres::Error> {
    let Job { n, unique_key, pad } = job;
    let mut v = Values::new(plan);
    let payload =
        if pad.is_empty() { serde_json::json!({ "n": n }) } else { serde_json::json!({ "n": n, "pad": pad }) };
    v.enqueue =
        Enqueue { payload: Some(payload), n, count: 0, class: &class.name, priority: class.priority, unique_key };
    if let Some(business) = business {
        client.batch_execute("BEGIN").await?;
        steps::execute(client, (business, BUSINESS_ROW, enqueue.unnamed), [pad as _].into_iter()).await?;
    }
    let rows = steps::rows(client, enqueue, &v, business.is_some()).await?;
    if business.is_some() {
        client.batch_execute("COMMIT").await?;
    }
    let Some(column) = &plan.adapter.columns.unique_key else {
        return Ok(Some((rows.first().map(|r| r.try_get::<_, Key>(0)).transpose()?.unwrap_or(Key::Int(n)), None)));
    };
    let Some(row) = rows.first() else { return Ok(None) };
    let unique = row.try_get::<_, Option<Key>>(column.as_str())?.map(|k| k.show());
    Ok(Some((row.try_get::<_, Key>(0)?, unique)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load::{Source, parse_text};
    use crate::scenario::validate::validate;

    fn plan(arrivals: &str) -> Plan {
        let text = format!(
            "name = \"x\"\n[jobs]\narrivals = \"{arrivals}\"\n[[jobs.classes]]\nname = \"a\"\nrate = 100.0\n\
             [[run.phases]]\nname = \"warm\"\nduration = \"1s\"\nrate = 0.5\n[[run.phases]]\nname = \"steady\"\nduration = \"2s\"\n"
        );
        let raw = parse_text(&text).unwrap();
        validate(raw, Source { path: "t.toml".into(), text, overrides: vec![] }, Some(3)).unwrap()
    }

    #[test]
    fn constant_schedule_follows_the_phases() {
        let s = schedule(&plan("constant"), 0);
        // 50/s for 1 s, then 100/s for 2 s (the arrival at a phase's very end falls in the next phase).
        assert!((248..=250).contains(&s.len()), "{}", s.len());
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(s.iter().filter(|t| **t < Duration::from_secs(1)).count() <= 50);
    }

    #[test]
    fn poisson_schedule_is_seeded_and_near_the_rate() {
        let p = plan("poisson");
        let (a, b) = (schedule(&p, 0), schedule(&p, 0));
        assert_eq!(a, b, "same seed, same schedule");
        assert!((200..=300).contains(&a.len()), "{}", a.len());
    }
}
