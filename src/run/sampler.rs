//! The Postgres time series: every `run.sample_interval`, from its own
//! connection, the queue's depth by status and class, the oldest ready age
//! per class, the table's live and dead tuples and vacuum counts, its sizes,
//! the oldest transaction and xmin horizon, and what non-idle backends wait
//! on. It also drives the live progress line. The interval stretches when a
//! sample is slow (big tables), so the sampler's queries keep to half a percent
//! of the run (`budget`); `run.sample_interval = "off"` turns them off (the
//! progress line stays, from the workers' counters).

use super::values::Values;
use super::worker::Progress;
use crate::db::Endpoint;
use crate::db::error_text;
use crate::db::statements::STATS;
use crate::model::records::PgSample;
use crate::model::words::{count, count_as};
use crate::scenario::Plan;
use futures_util::TryStreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio_postgres::{Client, Statement};
use tokio_util::sync::CancellationToken;

pub(crate) struct SamplerOptions {
    pub progress: bool,
}

pub(crate) async fn run(
    plan: &Plan,
    config: &Endpoint,
    start: Instant,
    progress: &Progress,
    opts: SamplerOptions,
    stop: &CancellationToken,
) -> Vec<PgSample> {
    let mut out = Vec::new();
    // `run.sample_interval = "off"`: no connection and no queries, only the progress line (every second).
    let mut side = match plan.run.sample_interval {
        Some(_) => match super::Side::connect(config, "the sampler").await {
            Some(side) => Some(side),
            None => return out,
        },
        None => None,
    };
    let every = plan.run.sample_interval.unwrap_or(std::time::Duration::from_secs(1));
    let bar = opts.progress.then(|| live_line(std::io::stderr().is_terminal()));
    let classes: Vec<&str> = plan.load.class_names().collect();
    let mut next = tokio::time::Instant::now();
    let mut prepared: Option<Prepared> = None;
    let (mut last_done, mut last_at) = (0, Instant::now());
    let mut last = false;
    while !last {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            // One last sample when the workers are done, so the series covers the whole run.
            _ = stop.cancelled() => last = true,
        }
        let t_ms = start.elapsed().as_millis() as u64;
        let sampled_at = tokio::time::Instant::now();
        next = sampled_at + every;
        let s = match side.as_mut() {
            Some(side) => {
                // While the server is down there is nothing to sample: a gap in the series.
                let Some((client, generation)) = side.client().await else { continue };
                if prepared.as_ref().is_none_or(|p: &Prepared| p.generation != generation) {
                    prepared = match Prepared::new(client, generation, plan).await {
                        Ok(p) => Some(p),
                        Err(e) => {
                            eprintln!("warning: sampler: {}", error_text(&e));
                            continue;
                        }
                    };
                }
                let statements = prepared.as_ref().expect("prepared above");
                match sample(client, statements, plan, &classes, t_ms).await {
                    Ok(s) => Some(s),
                    Err(e) => {
                        eprintln!("warning: sampler: {}", error_text(&e));
                        continue;
                    }
                }
            }
            None => None,
        };
        // The budget: a sample that took `t` is followed by the next one no sooner than
        // budget::SHARE⁻¹ × t after it started (see `budget`).
        next = super::budget::next(sampled_at, every, s.as_ref().map_or(0.0, |s| s.took_ms / 1000.0));
        if next > sampled_at + every {
            tracing::debug!(
                took_ms = s.as_ref().map_or(0.0, |s| s.took_ms),
                interval_ms = every.as_millis() as u64,
                next_in_ms = (next - sampled_at).as_millis() as u64,
                "sampler interval stretched (the sample was slow; see run::budget)"
            );
        }
        if let Some(bar) = &bar {
            let done = progress.completed.load(Ordering::Relaxed);
            let rate = (done - last_done) as f64 / last_at.elapsed().as_secs_f64().max(0.001);
            (last_done, last_at) = (done, Instant::now());
            let phase = plan.load.phase_name(start.elapsed());
            // The depth comes from the adapter's `observe.depth`: without one, nothing is said
            // (not "queued 0 running 0" while jobs run).
            let depth = match (&s, &plan.adapter.observe.depth) {
                (Some(s), Some(_)) => format!(" · queued {} running {}", s.queued, s.running),
                _ => String::new(),
            };
            bar.show(&format!(
                "{phase} · {:.0} s · {} · {rate:.0} jobs/s{depth} · {}",
                t_ms as f64 / 1000.0,
                count_as(done, "completion accepted", "completions accepted"),
                count(progress.errors.load(Ordering::Relaxed), "error")
            ));
        }
        out.extend(s);
    }
    if let Some(bar) = bar {
        bar.finish();
    }
    out
}

/// The sampler's statements, prepared once per connection (`generation` counts reconnects):
/// the adapter's depth query (if it has one) and the table statistics; `flush` makes the
/// statistics current (`pg_stat_force_next_flush()` exists from PostgreSQL 15 on: before it, only
/// the snapshot is cleared).
struct Prepared {
    generation: u64,
    depth: Option<Statement>,
    stats: Statement,
    flush: &'static str,
}

impl Prepared {
    async fn new(client: &Client, generation: u64, plan: &Plan) -> Result<Prepared, tokio_postgres::Error> {
        let depth = match &plan.adapter.observe.depth {
            Some(d) => Some(client.prepare(&d.sql).await?),
            None => None,
        };
        let has_flush: bool =
            client.query_one("SELECT to_regprocedure('pg_stat_force_next_flush()') IS NOT NULL", &[]).await?.get(0);
        let flush = if has_flush {
            "SELECT pg_stat_force_next_flush(); SELECT pg_stat_clear_snapshot()"
        } else {
            "SELECT pg_stat_clear_snapshot()"
        };
        Ok(Prepared { generation, depth, stats: client.prepare(STATS).await?, flush })
    }
}

/// One sample: the flush and both queries are sent together (pipelined), one round trip.
async fn sample(
    client: &Client,
    st: &Prepared,
    plan: &Plan,
    classes: &[&str],
    t_ms: u64,
) -> Result<PgSample, tokio_postgres::Error> {
    let sent = Instant::now();
    let v = Values::new(plan);
    let depth = async {
        match (&st.depth, &plan.adapter.observe.depth) {
            (Some(d), Some(s)) => client.query_raw(d, v.bind(&s.params)).await?.try_collect::<Vec<_>>().await,
            _ => Ok(Vec::new()),
        }
    };
    let table: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&plan.adapter.table];
    let (flushed, depth, stats) =
        tokio::join!(client.batch_execute(st.flush), depth, client.query_one(&st.stats, &table),);
    flushed?;
    let mut s = PgSample { t_ms, per_class: vec![(0, 0.0); classes.len()], ..Default::default() };
    for r in depth? {
        let (queue, status, n, age): (&str, &str, i64, f64) = (r.get(0), r.get(1), r.get(2), r.get(3));
        match status {
            "queued" => s.queued += n,
            "running" => s.running += n,
            "done" => s.done += n,
            "dead" => s.dead += n,
            _ => {}
        }
        // A run with one class counts every queued row as that class: a library's own name for
        // it (a client's task or queue, `queuebench`) is not the scenario's `default`.
        let class = match classes.len() {
            1 => Some(0),
            _ => classes.iter().position(|c| *c == queue),
        };
        if status == "queued"
            && let Some(i) = class
        {
            let (count, oldest) = s.per_class[i];
            s.per_class[i] = (count + n, oldest.max(age));
        }
    }
    let r = stats?;
    s.n_live_tup = r.get(0);
    s.n_dead_tup = r.get(1);
    s.vacuum_count = r.get(2);
    s.autovacuum_count = r.get(3);
    s.table_bytes = r.get(4);
    s.index_bytes = r.get(5);
    s.oldest_xact_s = r.get(6);
    s.xmin_age = r.get(7);
    s.waits = r.get(8);
    s.took_ms = sent.elapsed().as_secs_f64() * 1000.0;
    Ok(s)
}

/// The live line: a spinner on a terminal, a plain line per sample otherwise.
enum Live {
    Bar(ProgressBar),
    Plain,
}

fn live_line(tty: bool) -> Live {
    if tty {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
        Live::Bar(bar)
    } else {
        Live::Plain
    }
}

impl Live {
    fn show(&self, msg: &str) {
        match self {
            Live::Bar(b) => {
                b.set_message(msg.to_string());
                b.tick();
            }
            Live::Plain => eprintln!("  … {msg}"),
        }
    }

    fn finish(self) {
        if let Live::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}
