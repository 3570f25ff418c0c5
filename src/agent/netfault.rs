//! Network faults between agents and PostgreSQL (`partition`, `latency`, `loss`), run by
//! the coordinator on the agents' hosts (`netns`) at their scenario times:
//! - `partition`: the agent's end of its veth pair goes down for the duration. Nothing passes
//!   either way; its connections hang (no reset, no error), its workers live on, and once the
//!   link is up again TCP delivers what waited (after its retransmission back-off).
//! - `latency`: the agent's forwarder holds every chunk each way for delay ± jitter.
//! - `loss`: the kernel's netem qdisc drops that share of packets on both ends of the pair
//!   (a kernel without netem is refused before the run starts).
//!
//! Each firing is recorded when it takes effect; a run that stops during a fault ends it
//! first, so agents can always upload their evidence.

use super::forward::Forwarder;
use super::netns::{Host, Hosts, run};
use super::problem::CommandFailed;
use crate::collect::FaultEvent;
use crate::error::{Error, Result};
use crate::model::records::NetworkSpan;
use crate::scenario::Plan;
use crate::scenario::faults::{Fault, Kind, NetEffect, Trigger};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The plan's network faults.
pub(crate) fn of(plan: &Plan) -> impl Iterator<Item = &Fault> {
    plan.faults.iter().filter(|f| matches!(f.kind, Kind::Network { .. }))
}

/// The agents a network fault hits (its `agents`, or every one of `count`).
fn targets(f: &Fault, count: u32) -> Vec<u32> {
    match f.agents.is_empty() {
        true => (1..=count).collect(),
        false => f.agents.clone(),
    }
}

/// What cannot run before anything starts: agents named that do not exist, and `loss` on a
/// kernel without netem (tried on the first host's interface, then removed).
pub(crate) fn preflight(plan: &Plan, hosts: &Hosts) -> Result<()> {
    let count = hosts.hosts.len() as u32;
    for f in of(plan) {
        if let Some(k) = f.agents.iter().find(|&&k| k > count) {
            return Err(Error::Flag {
                flag: "--spawn-agents".into(),
                reason: format!(
                    "{}: faults[{}] (kind = \"{}\") names agent {k}, but the run has {count}",
                    plan.source.path.display(),
                    f.index,
                    f.kind.name()
                ),
            });
        }
    }
    let wants_netem = of(plan).any(|f| matches!(f.kind, Kind::Network { effect: NetEffect::Loss { .. }, .. }));
    if let (true, Some(h)) = (wants_netem, hosts.hosts.first()) {
        run("tc", &["qdisc", "add", "dev", &h.host_if, "root", "netem", "loss", "0%"]).map_err(|e| {
            Error::machine(
                "kind = \"loss\" needs the kernel's netem qdisc (CONFIG_NET_SCH_NETEM); this kernel refused it \
                 (partition and latency work without it)",
                e,
            )
        })?;
        let _ = run("tc", &["qdisc", "del", "dev", &h.host_if, "root"]);
    }
    Ok(())
}

/// The agents' hosts and the forwarders to the server on them (dropped in this order: the
/// relays close, then the namespaces go).
pub(crate) struct Net {
    pub forwarders: Vec<Forwarder>,
    pub hosts: Hosts,
}

impl Net {
    /// A host per agent, checked against the plan's network faults, with its forwarder.
    pub(crate) async fn up(plan: &Plan, server: &tokio_postgres::Config, count: u32) -> Result<Net> {
        let hosts = tokio::task::spawn_blocking(move || Hosts::create(count))
            .await
            .map_err(|e| Error::machine("making the agents' network namespaces", e))??;
        preflight(plan, &hosts)?;
        let mut forwarders = Vec::new();
        for h in &hosts.hosts {
            forwarders.push(Forwarder::start(h.host_ip, server, plan.seed ^ u64::from(u32::from(h.agent_ip))).await?);
        }
        Ok(Net { forwarders, hosts })
    }

    /// Fires every network fault in `faults` at its time after `start`, each for its
    /// duration, ending early when `stop` is cancelled; returns what took effect, and each
    /// agent's span from on to off (its `workers` left for the caller, who knows the slots).
    pub(crate) async fn inject(
        &self,
        faults: &[Fault],
        start: Instant,
        stop: &CancellationToken,
    ) -> (Vec<FaultEvent>, Vec<NetworkSpan>) {
        inject(faults, &self.hosts, &self.forwarders, start, stop).await
    }
}

async fn inject(
    faults: &[Fault],
    hosts: &Hosts,
    forwarders: &[Forwarder],
    start: Instant,
    stop: &CancellationToken,
) -> (Vec<FaultEvent>, Vec<NetworkSpan>) {
    let count = hosts.hosts.len() as u32;
    let tasks = faults.iter().map(|f| async move {
        let (Trigger::At(at), Kind::Network { effect, duration }) = (f.trigger, &f.kind) else {
            return (Vec::new(), Vec::new());
        };
        let agents = targets(f, count);
        if !wait_until(start + at, stop).await {
            return (Vec::new(), Vec::new());
        }
        let (mut events, mut spans) = (Vec::new(), Vec::new());
        for &k in &agents {
            let (Some(host), Some(fw)) = (hosts.of(k), forwarders.get(k as usize - 1)) else { continue };
            match apply(host, fw, effect, true).await {
                Ok(()) => {
                    let t_us = start.elapsed().as_micros() as u64;
                    events.push(FaultEvent { t_us, kind: f.kind.kind(), worker: None, job: None });
                    spans.push(NetworkSpan {
                        kind: f.kind.name().to_string(),
                        agent: k,
                        start_us: t_us,
                        end_us: t_us,
                        workers: Vec::new(),
                    });
                }
                Err(e) => {
                    eprintln!("warning: fault #{} ({}) on agent {k} did not apply: {e}", f.index + 1, f.kind.name())
                }
            }
        }
        tracing::info!(fault = f.index + 1, kind = f.kind.name(), ?agents, "network fault on");
        wait_until(start + at + *duration, stop).await;
        for &k in &agents {
            let (Some(host), Some(fw)) = (hosts.of(k), forwarders.get(k as usize - 1)) else { continue };
            if let Err(e) = apply(host, fw, effect, false).await {
                eprintln!("warning: ending fault #{} ({}) on agent {k} failed: {e}", f.index + 1, f.kind.name());
            }
            let off = start.elapsed().as_micros() as u64;
            spans.iter_mut().filter(|s| s.agent == k).for_each(|s| s.end_us = off);
        }
        tracing::info!(fault = f.index + 1, kind = f.kind.name(), "network fault off");
        (events, spans)
    });
    let (mut events, mut spans) = (Vec::new(), Vec::new());
    for (e, s) in futures_util::future::join_all(tasks).await {
        events.extend(e);
        spans.extend(s);
    }
    (events, spans)
}

/// Sleeps until `at`; false when the run stopped first.
async fn wait_until(at: Instant, stop: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep_until(at.into()) => true,
        _ = stop.cancelled() => false,
    }
}

/// Turns `effect` on or off for one agent.
async fn apply(host: &Host, fw: &Forwarder, effect: &NetEffect, on: bool) -> std::result::Result<(), CommandFailed> {
    let (ns, agent_if, host_if) = (host.ns.clone(), host.agent_if.clone(), host.host_if.clone());
    let state = if on { "down" } else { "up" };
    match *effect {
        NetEffect::Latency { delay, jitter } => {
            match on {
                true => fw.shape.set(delay, jitter),
                false => fw.shape.set(Duration::ZERO, Duration::ZERO),
            }
            Ok(())
        }
        NetEffect::Partition => blocking(move || run("ip", &["-n", &ns, "link", "set", &agent_if, state])).await,
        NetEffect::Loss { share } => {
            let pct = format!("{:.3}%", share * 100.0);
            blocking(move || match on {
                true => run("tc", &["-n", &ns, "qdisc", "replace", "dev", &agent_if, "root", "netem", "loss", &pct])
                    .and_then(|()| run("tc", &["qdisc", "replace", "dev", &host_if, "root", "netem", "loss", &pct])),
                false => run("tc", &["-n", &ns, "qdisc", "del", "dev", &agent_if, "root"])
                    .and(run("tc", &["qdisc", "del", "dev", &host_if, "root"])),
            })
            .await
        }
    }
}

async fn blocking(
    f: impl FnOnce() -> std::result::Result<(), CommandFailed> + Send + 'static,
) -> std::result::Result<(), CommandFailed> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| Err(CommandFailed::Task(e.to_string())))
}

/// How long the plan keeps an agent silent: its longest partition, twice (TCP's
/// retransmission back-off after the link is up can wait about as long again), plus 5 s.
pub(crate) fn silence(plan: &Plan) -> Duration {
    of(plan)
        .filter_map(|f| match f.kind {
            Kind::Network { effect: NetEffect::Partition, duration } => Some(duration * 2 + Duration::from_secs(5)),
            _ => None,
        })
        .max()
        .unwrap_or(Duration::ZERO)
}
