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
use crate::scenario::Plan;
use crate::scenario::plan::{Arrivals, Class};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
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
}

/// One class's producer: its arrivals spill to disk as they grow (see `collect::spill`).
#[derive(Default)]
struct ClassOutput {
    arrivals: Spill<Arrival>,
    unsent: u64,
    errors: u64,
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
        out.arrivals.extend(o.arrivals.into_vec());
        out.unsent += o.unsent;
        out.errors += o.errors;
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
    let mut out = ClassOutput { arrivals: Spill::new(), unsent: times.len() as u64, errors: 0 };
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
    for (n, t) in times.iter().enumerate() {
        let now = start.elapsed();
        if *t > now {
            tokio::select! {
                _ = tokio::time::sleep(*t - now) => {}
                _ = stop.cancelled() => { out.unsent = (times.len() - n) as u64; return out; }
            }
        }
        match enq.deliver(start, stop).await {
            Delivery::Sent { job, sent, took } => out.arrivals.push(Arrival {
                job,
                class: index as u16 + 1,
                intended_us: t.as_micros() as u64,
                sent_us: sent.as_micros() as u64,
                enqueue_us: took.as_micros().min(u128::from(u32::MAX)) as u32,
            }),
            Delivery::Failed => out.errors += 1,
            Delivery::Stopped => {
                out.unsent = (times.len() - n) as u64;
                return out;
            }
        }
        out.unsent = (times.len() - n - 1) as u64;
    }
    out
}

/// What became of one arrival.
enum Delivery {
    /// Enqueued: the new job's id, when the send that worked began (since the start), how long it took.
    Sent { job: i64, sent: Duration, took: Duration },
    /// The INSERT failed (not for a lost connection): counted as a producer error.
    Failed,
    /// The run stopped (or the statements cannot be prepared) before it was sent.
    Stopped,
}

/// A producer's connection and statements, prepared again after a reconnect.
struct Enqueuer<'a> {
    /// Where `side` connects: a transaction pooler's has a direct endpoint to describe on.
    endpoint: Endpoint,
    side: super::Side,
    /// (connection generation, enqueue, business row)
    prepared: Option<(u64, Prepared, Statement)>,
    pad: String,
    plan: &'a Plan,
    class: &'a Class,
    feed: &'a Feed<'a>,
}

impl Enqueuer<'_> {
    /// Sends one arrival. While the server is away the arrival waits and is sent late
    /// (never skipped), so its lag shows the outage; a send cut off by a lost connection
    /// is sent again on the next one.
    async fn deliver(&mut self, start: Instant, stop: &CancellationToken) -> Delivery {
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
                    Some((e, b)) => self.prepared = Some((generation, e, b)),
                    _ if client.is_closed() => continue,
                    _ => {
                        eprintln!("warning: producer {} could not prepare its statements", self.class.name);
                        return Delivery::Stopped;
                    }
                }
            }
            let (_, enqueue, business) = self.prepared.as_ref().expect("prepared above");
            let (sent, began) = (start.elapsed(), Instant::now());
            let n = self.feed.next_n.fetch_add(1, Ordering::Relaxed);
            match send(client, self.plan, self.class, (enqueue, business), &self.pad, n).await {
                Ok(key) => return Delivery::Sent { job: self.feed.ids.surrogate(&key), sent, took: began.elapsed() },
                Err(e) if super::connection_lost(&e, client) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(_) => {
                    let _ = client.batch_execute("ROLLBACK").await;
                    return Delivery::Failed;
                }
            }
        }
    }
}

/// The enqueue step and the business row's insert, prepared on the producer's connection, or
/// (through a transaction pooler) described on a short direct one and run unnamed.
async fn prepare_enqueue(
    endpoint: &Endpoint,
    client: &tokio_postgres::Client,
    plan: &Plan,
) -> Option<(Prepared, Statement)> {
    let describer = match &endpoint.direct {
        Some(direct) => Some(crate::db::connect::open(direct, |_| {}).await.ok()?.0),
        None => None,
    };
    let on = describer.as_ref().unwrap_or(client);
    let mut enqueue = prepare_step(on, &plan.adapter.enqueue).await.ok()?;
    enqueue.unnamed = endpoint.unnamed();
    Some((enqueue, on.prepare(BUSINESS_ROW).await.ok()?))
}

/// One enqueue (with its business row, in one transaction, if the scenario says so): the new
/// job's id as the queue returned it.
async fn send(
    client: &tokio_postgres::Client,
    plan: &Plan,
    class: &Class,
    (enqueue, business): (&Prepared, &Statement),
    pad: &String,
    n: i64,
) -> Result<Key, tokio_postgres::Error> {
    let mut v = Values::new(plan);
    let payload =
        if pad.is_empty() { serde_json::json!({ "n": n }) } else { serde_json::json!({ "n": n, "pad": pad }) };
    v.enqueue = Enqueue { payload: Some(payload), n, count: 0, class: &class.name, priority: class.priority };
    let business_row = plan.load.business_row;
    if business_row {
        client.batch_execute("BEGIN").await?;
        steps::execute(client, (business, BUSINESS_ROW, enqueue.unnamed), [pad as _].into_iter()).await?;
    }
    let rows = steps::rows(client, enqueue, &v, business_row).await?;
    if business_row {
        client.batch_execute("COMMIT").await?;
    }
    Ok(rows.first().map(|r| r.try_get::<_, Key>(0)).transpose()?.unwrap_or(Key::Int(n)))
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
