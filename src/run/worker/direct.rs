//! The direct transport: one connection of the worker's own, every statement prepared once
//! (`run::conn::Conn`), parameters bound straight from the round's values without a list
//! (`Values::bind`). The fast path, and pgbench's shape. A lost connection is opened again
//! with a growing pause for up to `run.reconnect_timeout`; past that the database is lost.

use super::WorkerFailure;
use super::transport::{Claim, Ctx, Effects, Halt, Sent, Transport, Write};
use crate::adapter::keys::Key;
use crate::db::statements;
use crate::model::transport::TransportKind;
use crate::run::conn::Conn;
use crate::run::idle::Wakeups;
use crate::run::steps;
use crate::run::values::{Claimed, Values};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(crate) struct Direct {
    conn: Option<Conn>,
}

impl Direct {
    pub(crate) fn new(conn: Conn) -> Direct {
        Direct { conn: Some(conn) }
    }

    fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("a worker between rounds is connected")
    }

    /// Opens a new connection, retrying with a growing pause (20 ms to 500 ms) for up to
    /// `run.reconnect_timeout`. Past that the database is lost: the run stops (exit 3).
    async fn reconnect(&mut self, cx: &mut Ctx<'_>) -> Result<(), WorkerFailure> {
        if let Some(old) = self.conn.take() {
            old.abort();
        }
        let sh = cx.sh;
        sh.faults.pids[cx.slot as usize].store(0, Ordering::Relaxed);
        let (lost_at, began) = (cx.now_us(), Instant::now());
        let timeout = sh.plan.run.reconnect_timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            if sh.stop.is_cancelled() {
                return Err(WorkerFailure::StoppedReconnecting { worker: cx.name.to_string() });
            }
            cx.stats.reconnect_attempts += 1;
            let last = match Conn::open(&sh.pooled, &sh.plan.adapter, sh.channel.as_deref()).await {
                Ok(c) => {
                    let after_ms = began.elapsed().as_millis() as u64;
                    tracing::info!(worker = %cx.name, pid = c.pid, after_ms, "reconnected");
                    sh.faults.pids[cx.slot as usize].store(c.pid, Ordering::Relaxed);
                    self.conn = Some(c);
                    cx.stats.reconnects += 1;
                    cx.stats.outages.push((lost_at, cx.now_us()));
                    return Ok(());
                }
                Err(e) => e,
            };
            let left = timeout.saturating_sub(began.elapsed());
            if left.is_zero() {
                let why = WorkerFailure::Unreachable {
                    worker: cx.name.to_string(),
                    seconds: began.elapsed().as_secs_f64(),
                    last,
                };
                cx.stats.outages.push((lost_at, cx.now_us()));
                tracing::error!(worker = %cx.name, "{why}");
                if sh.lost.set(why.to_string()).is_ok() {
                    sh.stop.cancel();
                }
                return Err(why);
            }
            tokio::select! {
                _ = tokio::time::sleep(pause.min(left)) => {}
                _ = sh.stop.cancelled() => {}
            }
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// The claim's rows as jobs, by the columns found when the claim was prepared.
    fn jobs(&self, cx: &mut Ctx<'_>, rows: &[tokio_postgres::Row]) -> Result<Vec<Claimed>, tokio_postgres::Error> {
        let cols = self.conn().columns;
        let classes = &cx.sh.plan.load.classes;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let key: Key = r.try_get(cols.id)?;
            let attempt_key: Option<Key> = cols.attempt.map(|c| r.try_get(c)).transpose()?;
            let attempt = attempt_key.as_ref().and_then(Key::as_int).map_or(-1, |a| a as i32);
            let token: Option<Key> = cols.token.map(|c| r.try_get::<_, Option<Key>>(c)).transpose()?.flatten();
            out.push(Claimed {
                tag: token.as_ref().map_or(0, Key::tag),
                id: cx.sh.ids.surrogate(&key),
                key,
                attempt,
                attempt_key: attempt_key.unwrap_or(Key::Int(-1)),
                token,
                seq: 0,
                class: cols
                    .class
                    .and_then(|c| r.get::<_, Option<&str>>(c))
                    .and_then(|q| classes.iter().position(|c| c.name == q))
                    .map_or(0, |c| c as u16 + 1),
                exclusion: cols
                    .exclusion_key
                    .map(|c| r.try_get::<_, Option<Key>>(c))
                    .transpose()?
                    .flatten()
                    .map(|k| k.show()),
            });
        }
        Ok(out)
    }
}

impl Transport for Direct {
    type Error = tokio_postgres::Error;
    const KIND: TransportKind = TransportKind::Direct;

    async fn begin(&mut self, _cx: &mut Ctx<'_>) -> Result<(), Halt<Self::Error>> {
        Ok(steps::batch(&self.conn().client, "BEGIN").await?)
    }

    async fn commit(&mut self, _cx: &mut Ctx<'_>) -> Result<(), Halt<Self::Error>> {
        Ok(steps::batch(&self.conn().client, "COMMIT").await?)
    }

    async fn claim(&mut self, cx: &mut Ctx<'_>, v: Values<'_>, in_tx: bool) -> Result<Claim, Halt<Self::Error>> {
        let mut v = v; // a binding of its own, so its lifetime can shrink to the ids' below
        let t0 = Instant::now();
        let conn = self.conn();
        let ids: Vec<i64> = match &conn.select {
            Some(select) => {
                let rows = steps::rows(&conn.client, select, &v, in_tx).await?;
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                if ids.is_empty() {
                    let took_us = t0.elapsed().as_micros() as u64;
                    return Ok(Claim { jobs: Vec::new(), t0_us: cx.since_start(t0), took_us });
                }
                ids
            }
            None => Vec::new(),
        };
        v.ids = &ids;
        let rows = steps::rows(&conn.client, &conn.claim, &v, in_tx).await?;
        let took_us = t0.elapsed().as_micros() as u64;
        let jobs = self.jobs(cx, &rows)?;
        Ok(Claim { jobs, t0_us: cx.since_start(t0), took_us })
    }

    async fn write(
        &mut self,
        cx: &mut Ctx<'_>,
        what: Write,
        v: &Values<'_>,
        in_tx: bool,
    ) -> Result<Sent, Halt<Self::Error>> {
        let conn = self.conn();
        let step = match what {
            Write::Complete => &conn.complete,
            Write::Fail => conn.fail.as_ref().expect("validated: a failing job type needs the adapter's fail"),
            Write::Heartbeat => {
                conn.heartbeat.as_ref().expect("validated: lease.heartbeat needs the adapter's heartbeat")
            }
        };
        let sent = Instant::now();
        let returned = match what {
            Write::Heartbeat => conn.heartbeat_token,
            Write::Fail => conn.fail_successor,
            Write::Complete => None,
        };
        let (accepted, token) = match returned {
            Some(column) => steps::write_renewing(&conn.client, step, v, in_tx, column).await?,
            None => (steps::write(&conn.client, step, v, in_tx).await?, None),
        };
        Ok(Sent { accepted, t_us: cx.since_start(sent), took_us: sent.elapsed().as_micros() as u64, token })
    }

    async fn anything_left(&mut self, _cx: &mut Ctx<'_>, v: &Values<'_>) -> Result<bool, Halt<Self::Error>> {
        let conn = self.conn();
        let params = &v.plan.adapter.observe.remaining.params;
        let remaining = (&conn.remaining, v.plan.adapter.observe.remaining.sql.as_str(), conn.unnamed);
        let row = steps::first_row(&conn.client, remaining, v.bind(params)).await?;
        Ok(steps::truthy(row.as_ref()))
    }

    async fn flush_effects(&mut self, cx: &mut Ctx<'_>, e: &mut Effects, _last: bool) -> Result<(), Halt<Self::Error>> {
        if e.ids.is_empty() {
            return Ok(());
        }
        let conn = self.conn();
        // The ids and attempts are the journal's numbers: one array each.
        tracing::trace!(worker = %cx.name, ids = ?e.ids, attempts = ?e.attempts, "statement: the effects insert");
        let own = cx.sh.plan.adapter.own_table();
        let (batch, worker) = (e.name_batch(cx.id), cx.id as i32);
        // Written again after a failed try: the same parameters, sent unnamed (it is rare).
        let again = e.again.then(|| statements::effects_again(own));
        let effects = match &again {
            Some(sql) => (&conn.effects, sql.as_str(), true),
            None => (&conn.effects, conn.effects_sql, conn.unnamed),
        };
        let written = if own {
            steps::execute(
                &conn.client,
                effects,
                [&e.ids as _, &worker as _, &e.attempts as _, &batch as _].into_iter(),
            )
            .await
        } else {
            let params = [&e.keys as _, &e.ids as _, &cx.name as _, &e.attempts as _, &batch as _];
            steps::execute(&conn.client, effects, params.into_iter()).await
        };
        if written.is_err() {
            e.again = true;
        }
        written?;
        e.clear();
        Ok(())
    }

    async fn recover(&mut self, cx: &mut Ctx<'_>, e: &Self::Error, hold: bool) -> Result<(), WorkerFailure> {
        cx.stats.record_error(&super::error_code(e), &crate::db::error_text(e));
        cx.sh.progress.errors.fetch_add(1, Ordering::Relaxed);
        let lost = self.conn.as_ref().is_none_or(|c| crate::run::connection_lost(e, &c.client));
        if lost {
            tracing::warn!(worker = %cx.name, error = %crate::db::error_text(e), "connection lost; reconnecting");
            return self.reconnect(cx).await;
        }
        if hold {
            let _ = steps::batch(&self.conn().client, "ROLLBACK").await;
        }
        Ok(())
    }

    fn resend(&self, e: &Self::Error, resends: u32, hold: bool) -> bool {
        resends == 0 && !hold && self.conn.as_ref().is_none_or(|c| crate::run::connection_lost(e, &c.client))
    }

    fn crash(&mut self, cx: &mut Ctx<'_>) {
        if let Some(c) = self.conn.take() {
            c.abort();
        }
        cx.sh.faults.pids[cx.slot as usize].store(0, Ordering::Relaxed);
    }

    async fn reopen(&mut self, cx: &mut Ctx<'_>) -> Result<(), WorkerFailure> {
        self.reconnect(cx).await
    }

    fn wakeups(&mut self) -> Option<&mut Wakeups> {
        self.conn.as_mut().map(|c| &mut c.notifications)
    }

    fn is_open(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| !c.client.is_closed())
    }
}
