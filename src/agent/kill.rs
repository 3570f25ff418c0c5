//! `kind = "kill_agent"`: the coordinator SIGKILLs agents it spawned (`--spawn-agents N`) at
//! the fault's time, as a host dying mid-run: no goodbye, no upload. The run then finds the
//! agent missing (it stopped answering) and recovers its executions from the effects ledger;
//! its jobs come back through the reaper, or, with nothing to reclaim them, the coordinator
//! stops the run that cannot progress (`stuck`). Agents that joined with `--agents N` run
//! elsewhere: this process cannot signal them, and such a plan is refused before the run.

use crate::collect::{FaultEvent, FaultKind};
use crate::error::{Error, Result};
use crate::options::AgentsOptions;
use crate::scenario::Plan;
use crate::scenario::faults::{Fault, Kind, Trigger};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The plan's `kill_agent` faults.
pub(crate) fn of(plan: &Plan) -> impl Iterator<Item = &Fault> {
    plan.faults.iter().filter(|f| f.kind == Kind::KillAgent)
}

/// What cannot run, before anything starts: agents this process did not spawn, or an agent
/// number the run does not have (exit 2).
pub(crate) fn check(plan: &Plan, opts: &AgentsOptions) -> Result<()> {
    let file = plan.source.path.display();
    for f in of(plan) {
        if !opts.spawn {
            return Err(Error::Flag {
                flag: "--agents".into(),
                reason: format!(
                    "{file}: faults[{}] (kind = \"kill_agent\") SIGKILLs an agent process this run spawned, and agents \
                     that join with --agents run where this process cannot signal them: run it with --spawn-agents \
                     {} (docs/agents.md)",
                    f.index, opts.count
                ),
            });
        }
        if let Some(k) = f.agents.iter().find(|&&k| k > opts.count) {
            return Err(Error::Flag {
                flag: "--spawn-agents".into(),
                reason: format!(
                    "{file}: faults[{}] (kind = \"kill_agent\") names agent {k}, but the run has {}",
                    f.index, opts.count
                ),
            });
        }
    }
    Ok(())
}

/// A spawned agent, killed by a fault: for its note in the summary.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Killed {
    pub agent: u32,
    /// The fault's place in the scenario, from 0.
    pub fault: usize,
    pub t_us: u64,
}

impl Killed {
    pub(crate) fn note(&self) -> String {
        format!("killed (SIGKILL) by faults[{}] (kind = \"kill_agent\") at {:.1} s", self.fault, self.t_us as f64 / 1e6)
    }
}

/// Fires every fault of `faults` at its time after `start` (unless `stop` comes first): a
/// SIGKILL to each named agent's process (`pids[k - 1]`, still an agent of `run_id`). Returns
/// the faults as they took effect and whom they killed.
pub(crate) async fn inject(
    faults: &[Fault],
    pids: &[Option<u32>],
    run_id: &str,
    start: Instant,
    stop: &CancellationToken,
) -> (Vec<FaultEvent>, Vec<Killed>) {
    let (mut events, mut killed) = (Vec::new(), Vec::new());
    let mut order: Vec<(Duration, &Fault)> =
        faults.iter().filter_map(|f| if let Trigger::At(at) = f.trigger { Some((at, f)) } else { None }).collect();
    order.sort_by_key(|(at, f)| (*at, f.index));
    for (at, f) in order {
        tokio::select! {
            _ = tokio::time::sleep_until((start + at).into()) => {}
            _ = stop.cancelled() => break,
        }
        for &k in &f.agents {
            let Some(pid) = pids.get(k as usize - 1).copied().flatten() else { continue };
            let t_us = start.elapsed().as_micros() as u64;
            match sigkill(pid, run_id) {
                Ok(()) => {
                    tracing::info!(fault = f.index + 1, agent = k, pid, "agent killed");
                    events.push(FaultEvent { t_us, kind: FaultKind::KillAgent, worker: None, job: None });
                    killed.push(Killed { agent: k, fault: f.index, t_us });
                }
                Err(why) => eprintln!("warning: faults[{}] (kill_agent) did not kill agent {k}: {why}", f.index),
            }
        }
    }
    (events, killed)
}

/// Why an agent was not killed.
#[derive(Debug, thiserror::Error)]
enum NotKilled {
    #[error("it is gone ({0})")]
    Gone(std::io::Error),
    #[error("process {pid} is no agent of run {run} any more")]
    NotOurs { pid: u32, run: String },
    #[error("kill(2) failed: {0}")]
    Signal(std::io::Error),
}

/// SIGKILL to `pid`, once it is sure to be an agent of this run (an agent that exited before
/// the start may have been reaped, and its number taken by another process).
fn sigkill(pid: u32, run_id: &str) -> std::result::Result<(), NotKilled> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).map_err(NotKilled::Gone)?;
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let ours = args.windows(2).any(|w| w[0] == b"--run" && w[1] == run_id.as_bytes());
    if !ours || !args.contains(&&b"agent"[..]) {
        return Err(NotKilled::NotOurs { pid, run: run_id.to_string() });
    }
    // SAFETY: kill(2) with a pid of our own child, checked just above.
    match unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } {
        0 => Ok(()),
        _ => Err(NotKilled::Signal(std::io::Error::last_os_error())),
    }
}
