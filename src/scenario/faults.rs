//! Fault plans: which fault, when it fires, which workers it hits. Built
//! from `[[faults]]`, `[[jobs.types]]` and `[[workers.groups]]`, validated
//! here so the runner only sees well-formed schedules.

use super::raw::{RawFault, RawGroup, RawJobType};
use super::units::parse_duration;
use crate::error::Invalid;
use crate::model::fault::FaultKind;
use std::collections::HashMap;
use std::time::Duration;

/// Where in a job's life a crash or pause happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    AfterClaim,
    MidWork,
    AfterEffect,
    BeforeComplete,
}

impl Point {
    fn parse(s: &str) -> Result<Point, Invalid> {
        Ok(match s {
            "after_claim" => Point::AfterClaim,
            "mid_work" => Point::MidWork,
            "after_effect" => Point::AfterEffect,
            "before_complete" => Point::BeforeComplete,
            other => {
                return Err(Invalid::new(format!(
                    "unknown point `{other}`; accepted: after_claim, mid_work, after_effect, before_complete"
                )));
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// The worker drops its connection without a word and comes back after `respawn_after`.
    Crash { point: Point, respawn_after: Duration, new_identity: bool },
    /// Every task of the targeted workers freezes for `duration` (heartbeats too).
    Pause { point: Option<Point>, duration: Duration },
    /// `pg_terminate_backend` on a targeted worker's connection.
    KillBackend,
    /// A competing session locks rows (or the table) for `duration`.
    LockHold { duration: Duration, rows: Option<i64> },
    /// An operator cancels `rows` waiting jobs (the newest ones) with the strategy's cancel statement.
    Cancel { rows: i64 },
    /// The ephemeral server is stopped (`immediate`: a crash, no checkpoint; `fast`: a clean
    /// shutdown), stays down for `down`, and is started again (crash recovery from the WAL).
    PostgresRestart { immediate: bool, down: Duration },
    /// The standby's WAL receiver is frozen for `hold` (SIGSTOP), the primary is SIGKILLed with
    /// its backends, and the standby is promoted; connections find it through the run's
    /// multi-host URL with `target_session_attrs=read-write`.
    Failover { hold: Duration },
    /// The network between agents and the server (docs/agents.md), for `duration`: run by the
    /// coordinator on the agents' network namespaces (`--spawn-agents N --netns`).
    Network { effect: NetEffect, duration: Duration },
    /// The coordinator SIGKILLs the agents named (`agents`), processes it spawned
    /// (`--spawn-agents N`): a host dying mid-run, with no goodbye and no upload.
    KillAgent,
    /// A worker's completion goes out and its connection is cut before the answer is read
    /// (`lose`: the answer, after the server ran it; or the request, which never reached the
    /// server): the worker cannot tell whether it landed. It reconnects, then sends the
    /// completion once more or leaves the job to the lease (`then`).
    AckLost { lose: Lose, then: AfterLoss },
}

/// What an `ack_lost` fault cuts off: the worker sees the same either way (no answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lose {
    /// The server ran the completion (it committed); its answer never reached the worker.
    Answer,
    /// The connection went as the completion was sent: it never reached the server.
    Request,
}

/// What a worker does after a completion whose outcome it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterLoss {
    /// Sends the completion once more on its new connection, as most clients do.
    Resend,
    /// Lets the job go: the lease brings it back if the completion did not land.
    Lease,
}

/// What a network fault does to the path between an agent and the server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NetEffect {
    /// Nothing passes either way: the agent's interface is down; connections hang, and TCP
    /// delivers what waited once it is up again.
    Partition,
    /// Every byte each way waits `delay` ± `jitter` (uniform), in order.
    Latency { delay: Duration, jitter: Duration },
    /// This share (0..=1) of the packets each way is dropped (the kernel's netem qdisc).
    Loss { share: f64 },
}

impl Kind {
    pub fn kind(&self) -> FaultKind {
        match self {
            Kind::Crash { .. } => FaultKind::Crash,
            Kind::Pause { .. } => FaultKind::Pause,
            Kind::KillBackend => FaultKind::KillBackend,
            Kind::LockHold { .. } => FaultKind::LockHold,
            Kind::Cancel { .. } => FaultKind::Cancel,
            Kind::PostgresRestart { .. } => FaultKind::PostgresRestart,
            Kind::Failover { .. } => FaultKind::Failover,
            Kind::Network { effect: NetEffect::Partition, .. } => FaultKind::Partition,
            Kind::Network { effect: NetEffect::Latency { .. }, .. } => FaultKind::Latency,
            Kind::Network { effect: NetEffect::Loss { .. }, .. } => FaultKind::Loss,
            Kind::KillAgent => FaultKind::KillAgent,
            Kind::AckLost { .. } => FaultKind::AckLost,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// Per job, with this chance (from the worker's seeded generator).
    Probability(f64),
    /// Every Nth job of a worker.
    Every(u64),
    /// Once, this long after the start.
    At(Duration),
    /// This many times per second, at seeded exponential intervals.
    Rate(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub index: usize,
    pub kind: Kind,
    pub trigger: Trigger,
    pub limit: Option<u64>,
    /// Worker ids (1-based) the fault may hit.
    pub workers: Vec<u32>,
    /// Network faults: the agents (1-based) it cuts off or slows down; empty = every agent.
    pub agents: Vec<u32>,
}

impl Fault {
    /// Fires on a job boundary inside the worker (rather than from the injector).
    pub fn per_job(&self) -> bool {
        matches!(self.trigger, Trigger::Probability(_) | Trigger::Every(_))
    }
}

/// A job type and the ids it owns.
#[derive(Debug, Clone, PartialEq)]
pub struct JobType {
    pub name: String,
    pub fail_probability: f64,
    pub fail_code: String,
    pub poison: bool,
}

/// The failure codes a job type may declare (seed 000's small fixed set).
pub(crate) const FAIL_CODES: [&str; 5] = ["TIMEOUT", "RATE_LIMIT", "INVALID_PAYLOAD", "LEASE_EXPIRED", "PERMANENT"];

/// Job types by id: `count` ids per type, spread evenly over 1..=preload.
pub(crate) fn job_types(raw: &[RawJobType], preload: u64) -> Result<(Vec<JobType>, HashMap<i64, u16>), Invalid> {
    let mut types = Vec::new();
    let mut by_id = HashMap::new();
    for (i, t) in raw.iter().enumerate() {
        let at = format!("jobs.types[{i}] ({})", t.name);
        if t.count <= 0 || t.count as u64 > preload {
            return Err(Invalid::new(format!(
                "{at}: count must be between 1 and jobs.preload ({preload}), got {}",
                t.count
            )));
        }
        if !(0.0..=1.0).contains(&t.fail_probability) {
            return Err(Invalid::new(format!("{at}: fail_probability must be between 0 and 1")));
        }
        if !FAIL_CODES.contains(&t.fail_code.as_str()) {
            return Err(Invalid::new(format!(
                "{at}: fail_code `{}` is not one of {}",
                t.fail_code,
                FAIL_CODES.join(", ")
            )));
        }
        let c = t.count as u64;
        for k in 0..c {
            let id = (preload * (2 * k + 1) / (2 * c)) as i64 + 1;
            by_id.insert(id, i as u16);
        }
        types.push(JobType {
            name: t.name.clone(),
            fail_probability: t.fail_probability,
            fail_code: t.fail_code.clone(),
            poison: t.poison,
        });
    }
    Ok((types, by_id))
}

/// Worker ids by group name; without groups every worker is in group "all".
pub(crate) fn groups(raw: &[RawGroup], workers: u32) -> Result<Vec<(String, Vec<u32>)>, Invalid> {
    if raw.is_empty() {
        return Ok(vec![("all".into(), (1..=workers).collect())]);
    }
    let mut next = 1;
    let mut out = Vec::new();
    for g in raw {
        if g.count <= 0 {
            return Err(Invalid::new(format!("workers.groups `{}`: count must be at least 1", g.name)));
        }
        let ids: Vec<u32> = (next..next + g.count as u32).collect();
        next += g.count as u32;
        out.push((g.name.clone(), ids));
    }
    if next - 1 != workers {
        return Err(Invalid::new(format!(
            "workers.groups: the group counts add up to {}, but workers.count is {workers}",
            next - 1
        )));
    }
    Ok(out)
}

pub(crate) fn fault(i: usize, f: &RawFault, groups: &[(String, Vec<u32>)], workers: u32) -> Result<Fault, Invalid> {
    let trigger = trigger(f)?;
    let kind = kind(f, trigger)?;
    if f.mode.is_some() && !matches!(kind, Kind::PostgresRestart { .. }) {
        return Err(Invalid::new("mode applies only to kind = \"postgres_restart\""));
    }
    if f.hold.is_some() && !matches!(kind, Kind::Failover { .. }) {
        return Err(Invalid::new("hold applies only to kind = \"failover\""));
    }
    if (f.lose.is_some() || f.then.is_some()) && !matches!(kind, Kind::AckLost { .. }) {
        return Err(Invalid::new("lose and then apply only to kind = \"ack_lost\""));
    }
    let limit = match f.limit {
        Some(n) if n <= 0 => return Err(Invalid::new("limit must be at least 1")),
        other => other.map(|n| n as u64),
    };
    let network = matches!(kind, Kind::Network { .. });
    if f.agents.is_some() && !kind.kind().on_agents() {
        return Err(Invalid::new(format!(
            "agents applies only to the kinds that act on agents ({})",
            FaultKind::on_agents_list()
        )));
    }
    if network && f.workers.is_some() {
        return Err(Invalid::new(
            "a network fault hits agents, not workers: give agents = [1, 2] (default: every agent)",
        ));
    }
    if kind == Kind::KillAgent && f.agents.is_none() {
        return Err(Invalid::new("kind = \"kill_agent\" needs agents: the agents to kill, e.g. agents = [2]"));
    }
    if kind == Kind::KillAgent && f.workers.is_some() {
        return Err(Invalid::new("kill_agent kills agents, not workers: give agents = [2]"));
    }
    let agents = match &f.agents {
        Some(list) if list.is_empty() || list.iter().any(|&k| k < 1) => {
            return Err(Invalid::new("agents: a list of agent numbers from 1, e.g. agents = [2]"));
        }
        Some(list) => list.iter().map(|&k| k as u32).collect(),
        None => Vec::new(),
    };
    Ok(Fault { index: i, kind, trigger, limit, workers: targets(f, groups, workers)?, agents })
}

/// A network fault: `partition`, `latency` (delay, jitter) or `loss` (percent), once at a
/// time for a duration.
fn network(f: &RawFault, named: FaultKind, length: Option<Duration>) -> Result<Kind, Invalid> {
    let span = length.ok_or_else(|| Invalid::new(format!("kind = \"{}\" needs duration", f.kind)))?;
    let stray = |key: &str, present: bool| match present {
        true => Err(Invalid::new(format!(
            "{key} applies only to kind = \"{}\"",
            if key == "percent" { "loss" } else { "latency" }
        ))),
        false => Ok(()),
    };
    let effect = match named {
        FaultKind::Partition => NetEffect::Partition,
        FaultKind::Latency => NetEffect::Latency {
            delay: duration(&f.delay, "delay")?.ok_or_else(|| Invalid::new("kind = \"latency\" needs delay"))?,
            jitter: duration(&f.jitter, "jitter")?.unwrap_or(Duration::ZERO),
        },
        _ => match f.percent {
            Some(p) if p > 0.0 && p <= 100.0 => NetEffect::Loss { share: p / 100.0 },
            _ => return Err(Invalid::new("kind = \"loss\" needs percent, above 0 and at most 100")),
        },
    };
    if !matches!(effect, NetEffect::Latency { .. }) {
        stray("delay", f.delay.is_some())?;
        stray("jitter", f.jitter.is_some())?;
    }
    if !matches!(effect, NetEffect::Loss { .. }) {
        stray("percent", f.percent.is_some())?;
    }
    if let NetEffect::Latency { delay, jitter } = effect
        && jitter > delay
    {
        return Err(Invalid::new("jitter must not exceed delay (a byte cannot arrive before it was sent)"));
    }
    Ok(Kind::Network { effect, duration: span })
}

/// An optional duration key of a fault.
fn duration(v: &Option<String>, key: &str) -> Result<Option<Duration>, Invalid> {
    v.as_deref().map(|s| parse_duration(s).map_err(|e| Invalid::from(e).within(key))).transpose()
}

/// Exactly one of probability, every, at and rate.
fn trigger(f: &RawFault) -> Result<Trigger, Invalid> {
    Ok(match (f.probability, f.every, duration(&f.at, "at")?, f.rate) {
        (Some(p), None, None, None) if (0.0..=1.0).contains(&p) => Trigger::Probability(p),
        (Some(_), None, None, None) => return Err(Invalid::new("probability must be between 0 and 1")),
        (None, Some(n), None, None) if n > 0 => Trigger::Every(n as u64),
        (None, None, Some(t), None) => Trigger::At(t),
        (None, None, None, Some(r)) if r > 0.0 && r <= 10_000.0 => Trigger::Rate(r),
        _ => {
            return Err(Invalid::new(
                "give exactly one of probability (0..1), every (>= 1), at (a duration) or rate (per second)",
            ));
        }
    })
}

/// The kind, with the keys it needs and the triggers it accepts.
fn kind(f: &RawFault, trigger: Trigger) -> Result<Kind, Invalid> {
    let per_job = matches!(trigger, Trigger::Probability(_) | Trigger::Every(_));
    let once = matches!(trigger, Trigger::At(_));
    let point = f.point.as_deref().map(Point::parse).transpose()?;
    let length = duration(&f.duration, "duration")?;
    let need = |what: Option<Duration>, key: &str| {
        what.ok_or_else(|| Invalid::new(format!("kind = \"{}\" needs {key}", f.kind)))
    };
    let refuse = |why: &str| Err(Invalid::new(why));
    let Some(named) = FaultKind::parse(&f.kind) else {
        return Err(Invalid::new(format!("unknown kind `{}`; accepted: {}", f.kind, FaultKind::accepted())));
    };
    Ok(match named {
        FaultKind::Crash if !per_job => return refuse("a crash fires per job: give probability or every, and a point"),
        FaultKind::Crash => Kind::Crash {
            point: point.ok_or_else(|| Invalid::new("kind = \"crash\" needs a point"))?,
            respawn_after: duration(&f.respawn_after, "respawn_after")?.unwrap_or(Duration::from_millis(100)),
            new_identity: match f.identity.as_deref().unwrap_or("same") {
                "same" => false,
                "new" => true,
                other => return Err(Invalid::new(format!("identity `{other}`; accepted: same, new"))),
            },
        },
        FaultKind::Pause if per_job != point.is_some() => {
            return refuse("a pause fires either per job at a point (probability/every + point) or at a time (at)");
        }
        FaultKind::Pause => Kind::Pause { point, duration: need(length, "duration")? },
        FaultKind::KillBackend if per_job => return refuse("kill_backend fires at a time (at) or a rate (rate)"),
        FaultKind::KillBackend => Kind::KillBackend,
        FaultKind::LockHold if !once => return refuse("lock_hold fires once at a time (at)"),
        FaultKind::LockHold => Kind::LockHold { duration: need(length, "duration")?, rows: f.rows },
        FaultKind::Cancel if !once => return refuse("cancel fires once at a time (at)"),
        FaultKind::Cancel => match f.rows {
            Some(n) if n <= 0 => return refuse("rows must be at least 1"),
            n => Kind::Cancel { rows: n.unwrap_or(1) },
        },
        FaultKind::PostgresRestart if !once => return refuse("postgres_restart fires once at a time (at)"),
        FaultKind::PostgresRestart => Kind::PostgresRestart {
            immediate: match f.mode.as_deref().unwrap_or("immediate") {
                "immediate" => true,
                "fast" => false,
                other => return Err(Invalid::new(format!("mode `{other}`; accepted: immediate, fast"))),
            },
            down: length.unwrap_or(Duration::ZERO),
        },
        FaultKind::Failover if !once => return refuse("failover fires once at a time (at)"),
        FaultKind::Failover if f.workers.is_some() || length.is_some() => {
            return refuse("failover takes at and hold (how long the standby's WAL receiver is frozen first)");
        }
        FaultKind::Failover => Kind::Failover { hold: duration(&f.hold, "hold")?.unwrap_or(Duration::ZERO) },
        FaultKind::Partition | FaultKind::Latency | FaultKind::Loss if !once => {
            return refuse("a network fault fires once at a time (at), for a duration");
        }
        FaultKind::Partition | FaultKind::Latency | FaultKind::Loss => network(f, named, length)?,
        FaultKind::KillAgent if !once => return refuse("kill_agent fires once at a time (at)"),
        FaultKind::KillAgent if length.is_some() => {
            return refuse("kill_agent takes at and agents (a killed agent does not come back: no duration)");
        }
        FaultKind::KillAgent => Kind::KillAgent,
        FaultKind::AckLost if !per_job => return refuse("ack_lost fires per job: give probability or every"),
        FaultKind::AckLost if point.is_some() => {
            return refuse("ack_lost cuts the connection at the completion: it takes no point");
        }
        FaultKind::AckLost => ack_lost(f)?,
        FaultKind::Poison | FaultKind::Exit => {
            return Err(Invalid::new(format!(
                "kind `{named}` is recorded, never injected ({}); accepted: {}",
                if named == FaultKind::Poison {
                    "a job type's poison = true makes poison jobs"
                } else {
                    "a process exits on its own"
                },
                FaultKind::accepted()
            )));
        }
    })
}

/// `ack_lost`: what is lost (`lose`) and what the worker does next (`then`).
fn ack_lost(f: &RawFault) -> Result<Kind, Invalid> {
    let lose = match f.lose.as_deref().unwrap_or("answer") {
        "answer" => Lose::Answer,
        "request" => Lose::Request,
        other => return Err(Invalid::new(format!("lose `{other}`; accepted: answer, request"))),
    };
    let then = match f.then.as_deref().unwrap_or("resend") {
        "resend" => AfterLoss::Resend,
        "lease" => AfterLoss::Lease,
        other => return Err(Invalid::new(format!("then `{other}`; accepted: resend, lease"))),
    };
    Ok(Kind::AckLost { lose, then })
}

/// The workers a fault may hit: all, one (`w3`) or a group.
fn targets(f: &RawFault, groups: &[(String, Vec<u32>)], workers: u32) -> Result<Vec<u32>, Invalid> {
    let target = f.workers.as_deref().unwrap_or("all");
    if target == "all" {
        return Ok((1..=workers).collect());
    }
    if let Some((_, ids)) = groups.iter().find(|(g, _)| g == target) {
        return Ok(ids.clone());
    }
    match target.strip_prefix('w').and_then(|n| n.parse::<u32>().ok()).filter(|n| (1..=workers).contains(n)) {
        Some(n) => Ok(vec![n]),
        None => {
            let names: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
            Err(Invalid::new(format!(
                "workers `{target}`: accepted: all, w1..w{workers}, or a group ({})",
                names.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests;
