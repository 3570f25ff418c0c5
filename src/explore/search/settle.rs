//! Left to itself: what a state comes to when the faults stop. From a schedule's end (and
//! from the start), every session that is still alive goes on with its protocol in turn (a
//! paused one resumes, a crashed one stays gone), and when nobody has a step to take, time
//! passes: a lease first, then four times longer each time nothing changed, up to a day of
//! quiet. A correct queue ends with every job done, dead or cancelled; one that does not is a
//! liveness counterexample (`verdict::judge_settled`). The continuation is fixed (round
//! robin, lowest session first), so a state's answer does not depend on the schedule that
//! reached it, and the search judges each state once.

use super::Search;
use crate::error::Result;
use crate::explore::protocol::Model;
use crate::model::records::{JobRow, Status};

/// How the continuation ended.
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    /// Steps it took (statements, commits, the clock).
    pub steps: usize,
    /// It stopped at the step bound with sessions still stepping (a livelock, or a bound too small).
    pub unsettled: bool,
    /// Seconds of virtual time that passed with nothing changing before it stopped.
    pub quiet_secs: f64,
    /// The final table.
    pub rows: Vec<JobRow>,
    /// The record where the continuation began.
    pub from: usize,
}

/// Quiet time after which a state counts as settled for good: a day.
const QUIET_LIMIT_SECS: f64 = 86_400.0;
/// Each quiet tick is this many times longer than the one before.
const QUIET_GROWTH: u64 = 4;

/// Every job is where it stays: done, dead or cancelled (a job gone from the table is not listed).
pub(crate) fn finished(rows: &[JobRow]) -> bool {
    rows.iter().all(|r| matches!(r.status, Status::Done | Status::Dead | Status::Cancelled))
}

impl<'a> Search<'a> {
    /// The step bound: generous for every attempt of every job (claim, commit, complete,
    /// commit, a reclaim and the claims that find nothing, for each session).
    fn settle_bound(&self, m: &Model<'a>) -> usize {
        let jobs = self.plan.jobs.preload as usize + 1;
        let attempts = self.plan.jobs.max_attempts.clamp(1, 25) as usize + 1;
        (12 * m.actors.len() * jobs * attempts).min(3_000)
    }

    /// Runs the continuation on `m` (which it changes, and the server's state with it).
    pub(super) async fn settle(&mut self, m: &mut Model<'a>) -> Result<Settled> {
        let from = m.records.len();
        let bound = self.settle_bound(m);
        let (mut steps, mut turn, mut quiet, mut leases) = (0usize, 0usize, 0f64, 1u64);
        let mut before: Option<String> = None;
        loop {
            let ops = m.settling();
            if !ops.is_empty() {
                if steps >= bound {
                    let rows = self.rows(m).await?;
                    return Ok(Settled { steps, unsettled: true, quiet_secs: quiet, rows, from });
                }
                // Round robin: the first session at or after `turn` with a step.
                let op = *ops
                    .iter()
                    .min_by_key(|op| (op.actor().unwrap_or(0) + m.actors.len() - turn) % m.actors.len())
                    .unwrap();
                turn = (op.actor().unwrap_or(0) + 1) % m.actors.len();
                self.exec(m, op).await?;
                steps += 1;
                continue;
            }
            let rows = self.rows(m).await?;
            if finished(&rows) || steps >= bound {
                return Ok(Settled {
                    steps,
                    unsettled: !finished(&rows) && steps >= bound,
                    quiet_secs: quiet,
                    rows,
                    from,
                });
            }
            // Nobody can step and work is left: did anything change since the last quiet moment?
            let now = self.snapshot.state(self.sessions.monitor()).await?;
            if before.as_ref() == Some(&now) {
                quiet += (m.tick_len().as_micros() as u64 * leases) as f64 / 1e6;
                if quiet >= QUIET_LIMIT_SECS {
                    return Ok(Settled { steps, unsettled: false, quiet_secs: quiet, rows, from });
                }
                leases *= QUIET_GROWTH;
            } else {
                leases = 1;
                quiet = 0.0;
            }
            before = Some(now);
            m.pass_time(leases);
            steps += 1;
        }
    }

    pub(super) async fn rows(&mut self, m: &Model<'a>) -> Result<Vec<JobRow>> {
        let observe = self.observe().await?;
        crate::run::observe::final_state_with(self.sessions.monitor(), &observe, self.plan, &m.ids).await
    }

    /// `observe.state`, prepared on the monitor once.
    pub(super) async fn observe(&mut self) -> Result<tokio_postgres::Statement> {
        if self.observe.is_none() {
            self.observe = Some(crate::run::observe::prepare_state(self.sessions.monitor(), self.plan).await?);
        }
        Ok(self.observe.clone().expect("prepared above"))
    }

    /// The job table the checkers read and, with reduction, the state's name, in one round
    /// trip (both queries sent at once on the monitor).
    pub(super) async fn read(&mut self, m: &Model<'a>) -> Result<(Vec<JobRow>, Option<u64>)> {
        let observe = self.observe().await?;
        let monitor = self.sessions.monitor();
        let rows = crate::run::observe::final_state_with(monitor, &observe, self.plan, &m.ids);
        if !self.bounds.reduce {
            return Ok((rows.await?, None));
        }
        let (rows, state) = tokio::try_join!(rows, self.snapshot.state(monitor))?;
        Ok((rows, Some(super::state_key(m, &state, self.sessions.backends()))))
    }
}
