//! The worker processes of one run, slot by slot: started, faulted (SIGKILL and a restart,
//! SIGSTOP/SIGCONT, `pg_terminate_backend` by application_name), restarted when they exit on
//! their own, and stopped with SIGTERM at the end. Everything that happened to them is kept
//! for the journal (kills, fault events, every process's event lines).

use super::child::{ClientEvent, Env, Proc, shown};
use super::journal::Killed;
use crate::collect::{FaultEvent, FaultKind};
use crate::error::{Error, Result};
use crate::scenario::client::{ClientFault, ClientFaultKind, ClientPlan};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_postgres::Client;

/// After a process exits on its own, its slot gets a new one this much later.
const RESTART_AFTER_EXIT: Duration = Duration::from_millis(500);
/// The contract: a worker exits within 5 s of SIGTERM (4.5 s grace, then exit 3).
pub(crate) const STOP_GRACE: Duration = Duration::from_millis(5_500);

pub(crate) fn now_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

#[derive(Default)]
struct Slot {
    proc: Option<Proc>,
    restart_at: Option<Instant>,
    resume_at: Option<Instant>,
}

struct Scheduled {
    fault: ClientFault,
    next: Duration,
    fired: u64,
}

/// A fault waits up to this long past its time for the target to hold a job (by its event
/// lines), so that it hits work in flight rather than an idle poller.
const WAIT_FOR_WORK: Duration = Duration::from_secs(1);

pub(crate) struct Fleet<'a> {
    client: &'a ClientPlan,
    env: Env<'a>,
    start: Instant,
    slots: Vec<Slot>,
    next_identity: u32,
    scheduled: Vec<Scheduled>,
    pub killed: Vec<Killed>,
    pub faults: Vec<FaultEvent>,
    /// Every process's event lines, the stopped ones' too.
    pub events: Vec<Arc<Mutex<Vec<ClientEvent>>>>,
    /// Processes that exited on their own during the run.
    pub exits: u64,
    /// When the first job's execution was seen: the clock of the faults' `at` starts here, not
    /// at the spawn (a library's worker can take seconds to start on a loaded machine).
    pub ready: Option<Instant>,
}

impl<'a> Fleet<'a> {
    pub(crate) fn start(client: &'a ClientPlan, env: Env<'a>, count: u32) -> Result<Fleet<'a>> {
        let scheduled = client.faults.iter().map(|f| Scheduled { fault: f.clone(), next: f.at, fired: 0 }).collect();
        let mut fleet = Fleet {
            client,
            env,
            start: Instant::now(),
            slots: (0..count).map(|_| Slot::default()).collect(),
            next_identity: count + 1,
            scheduled,
            killed: Vec::new(),
            faults: Vec::new(),
            events: Vec::new(),
            exits: 0,
            ready: None,
        };
        for i in 0..count as usize {
            fleet.spawn(i, i as u32 + 1)?;
        }
        Ok(fleet)
    }

    fn spawn(&mut self, slot: usize, identity: u32) -> Result<()> {
        let p = Proc::spawn(self.client, &self.env, identity)?;
        self.events.push(p.events.clone());
        self.slots[slot] = Slot { proc: Some(p), restart_at: None, resume_at: None };
        Ok(())
    }

    fn t_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Restarts and resumes that are due, and processes that exited on their own (an error
    /// while nothing has run yet: the client is broken, not faulted).
    pub(crate) fn tend(&mut self, anything_ran: bool, job_of: impl Fn(&str) -> i64) -> Result<()> {
        let now = Instant::now();
        if anything_ran && self.ready.is_none() {
            self.ready = Some(now);
        }
        for i in 0..self.slots.len() {
            if self.slots[i].resume_at.is_some_and(|t| t <= now)
                && let Some(p) = self.slots[i].proc.as_mut()
            {
                p.signal(libc::SIGCONT);
                p.paused = false;
                self.slots[i].resume_at = None;
            }
            if self.slots[i].restart_at.is_some_and(|t| t <= now) {
                let identity = self.next_identity;
                self.next_identity += 1;
                self.spawn(i, identity)?;
            }
            let Some(p) = self.slots[i].proc.as_mut() else { continue };
            let Some(status) = p.exited() else { continue };
            // Broken, not faulted: it exited before any job ran and before any fault fired.
            if !anything_ran && self.faults.is_empty() {
                return Err(Error::Machine {
                    action: format!("running the client's worker `{}` (p{})", shown(self.client), p.identity),
                    cause: format!(
                        "it exited ({status}) before any job ran; its last stderr lines:\n  {}",
                        p.stderr_tail()
                    ),
                });
            }
            eprintln!(
                "warning: worker p{} exited on its own ({status}); restarting it like a crash; its last stderr lines:\n  {}",
                p.identity,
                p.stderr_tail()
            );
            let (identity, job) = (p.identity, first_in_flight(&p.events).map(|j| job_of(&j)));
            self.killed.push(Killed { identity, at_ms: now_ms() });
            self.faults.push(FaultEvent { t_us: self.t_us(), kind: FaultKind::Exit, worker: Some(identity), job });
            self.exits += 1;
            self.slots[i].proc = None;
            self.slots[i].restart_at = Some(now + RESTART_AFTER_EXIT);
        }
        Ok(())
    }

    /// Fires the faults that are due.
    pub(crate) async fn inject(&mut self, side: &Client, job_of: impl Fn(&str) -> i64) {
        let Some(ready) = self.ready else { return };
        let elapsed = ready.elapsed();
        for k in 0..self.scheduled.len() {
            let s = &self.scheduled[k];
            if s.next > elapsed || s.fault.limit.is_some_and(|l| s.fired >= l) {
                continue;
            }
            let slot = (s.fault.workers[s.fired as usize % s.fault.workers.len()] - 1) as usize;
            let kind = s.fault.kind;
            // A process that has not started a job yet has nothing a fault could hit (no
            // connection to terminate, no job to crash): the fault waits for it.
            let started = self.slots[slot].proc.as_ref().is_some_and(|p| !p.events.lock().unwrap().is_empty());
            if !started {
                continue;
            }
            let idle = self.slots[slot].proc.as_ref().is_some_and(|p| first_in_flight(&p.events).is_none());
            if idle && elapsed < s.next + WAIT_FOR_WORK {
                continue;
            }
            let s = &mut self.scheduled[k];
            s.fired += 1;
            s.next = match s.fault.interval {
                Some(i) => s.next + i,
                None => Duration::MAX,
            };
            self.fire(slot, kind, side, &job_of).await;
        }
    }

    async fn fire(&mut self, slot: usize, kind: ClientFaultKind, side: &Client, job_of: &impl Fn(&str) -> i64) {
        let t_us = self.t_us();
        let Some(p) = self.slots[slot].proc.as_mut() else { return };
        let (identity, job) = (p.identity, first_in_flight(&p.events).map(|j| job_of(&j)));
        match kind {
            ClientFaultKind::Crash { restart_after } => {
                p.kill().await;
                self.killed.push(Killed { identity, at_ms: now_ms() });
                self.slots[slot].proc = None;
                self.slots[slot].restart_at = Some(Instant::now() + restart_after);
            }
            ClientFaultKind::Pause { duration } => {
                if p.paused {
                    return;
                }
                p.signal(libc::SIGSTOP);
                p.paused = true;
                self.slots[slot].resume_at = Some(Instant::now() + duration);
            }
            ClientFaultKind::KillBackend => {
                let name = format!("queuebench-p{identity}");
                let sql = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1";
                if let Err(e) = side.query_one(sql, &[&name]).await {
                    eprintln!("warning: kill_backend of p{identity} failed: {e}");
                }
            }
        }
        self.faults.push(FaultEvent { t_us, kind: kind.kind(), worker: Some(identity), job });
    }

    /// SIGTERM to every process (SIGCONT to a paused one), all at once; SIGKILL after the
    /// contract's grace. A process that did not exit 0 is a warning.
    pub(crate) async fn stop(&mut self) {
        let stops = self.slots.iter_mut().filter_map(|s| s.proc.as_mut()).map(|p| async move {
            let status = p.stop(STOP_GRACE).await;
            (p.identity, status, p.stderr_tail())
        });
        for (identity, status, tail) in futures_util::future::join_all(stops).await {
            match status {
                Some(s) if s.success() => {}
                Some(s) => eprintln!("warning: worker p{identity} exited {s} after SIGTERM; stderr:\n  {tail}"),
                None => eprintln!("warning: worker p{identity} did not exit within 5 s of SIGTERM: killed"),
            }
        }
        for s in &mut self.slots {
            s.proc = None;
        }
    }
}

/// A job the process had started and not finished, by its event lines (the oldest one).
fn first_in_flight(events: &Mutex<Vec<ClientEvent>>) -> Option<String> {
    let events = events.lock().unwrap();
    let mut open: Vec<&str> = Vec::new();
    for e in events.iter() {
        if e.ev == "start" {
            open.push(&e.job);
        } else if let Some(i) = open.iter().position(|j| *j == e.job) {
            open.remove(i);
        }
    }
    open.first().map(|s| s.to_string())
}
