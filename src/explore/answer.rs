//! The answer: each counterexample (steps, psql script, swimlane), or what the search found
//! nothing in, said no wider than it searched; the tally; and `explore.json` in `--out`.

use super::Options;
use super::search::coverage::Coverage;
use super::search::single::Random;
use super::search::{Found, Stats};
use super::{script, verdict};
use crate::error::{ExitCode, Result};
use crate::scenario::Plan;
use std::time::Duration;

/// What was searched, for the last words and explore.json.
pub(super) struct Searched<'a> {
    pub plan: &'a Plan,
    pub o: &'a Options,
    pub reaper: bool,
    pub stats: &'a Stats,
    pub took: Duration,
    pub coverage: &'a Coverage,
    pub random: Option<&'a Random>,
}

impl Searched<'_> {
    fn tally(&self) -> String {
        let s = self.stats;
        let rate = s.schedules as f64 / self.took.as_secs_f64().max(1e-9);
        if self.o.replay.is_some() || self.random.is_some() {
            return format!(
                "{} played, {} steps sent, {:.1} s: {rate:.0} schedules/s",
                crate::model::words::count(s.schedules, "schedule"),
                s.steps,
                self.took.as_secs_f64()
            );
        }
        let per_reset = s.reset_time.as_secs_f64() * 1e3 / s.resets.max(1) as f64;
        let factor = s.covered / (s.schedules.max(1) as f64);
        format!(
            "{} schedules run, standing for at least {:.0} without reduction (×{factor:.1}); {} distinct states; {} steps \
             sent, {:.1} s: {rate:.0} schedules/s, reset {per_reset:.2} ms",
            s.schedules,
            s.covered,
            s.states,
            s.steps,
            self.took.as_secs_f64()
        )
    }

    /// The depth the search reached: the deepest level finished, or the counterexample's.
    fn depth(&self, found: &[Found]) -> usize {
        found.iter().map(|f| f.depth).max().unwrap_or(0).max(self.stats.depth_done)
    }

    /// The unit of a step, for explore.json and in words: whole statements, or with pauses
    /// inside the statements that call a lock that never waits (`pause`).
    fn granularity(&self) -> (&'static str, &'static str) {
        if self.o.inside && super::pause::any_point(&self.plan.adapter) {
            (
                "statement_with_pauses",
                "whole statements as steps, and the statements that call a lock that never waits also paused \
                 between their snapshot and their first such lock (any other race inside one statement, \
                 between rows or row locks, is out of its reach)",
            )
        } else {
            ("statement", "whole statements as steps (a race inside one statement is out of its reach)")
        }
    }

    /// What was searched, and no more (`scope_only`), what it reached, and for `--random` the
    /// seed and the bound PCT gives.
    fn scope(&self, found: &[Found]) -> String {
        let mut out = format!("{}\n{}", self.scope_only(found), self.coverage.summary());
        if let Some(r) = self.random {
            let (one, all) = r.bounds();
            out.push_str(&format!(
                "\nrandom (PCT): seed {}, {} schedules of at most {} steps, bug depth {} ({} agents: the sessions, and the \
                 clock and the connection faults, a crash or a lost answer, where they may move): a bug that needs {} orderings is hit by one schedule with probability ≥ \
                 1/(n·k^(d−1)) = {one:.3e}, by the {} with ≥ {all:.3e}; `--seed {}` plays them again",
                r.seed,
                r.schedules.len(),
                r.steps,
                r.depth,
                r.agents,
                r.depth,
                r.schedules.len(),
                r.seed
            ));
        }
        out
    }

    /// What was searched, and no more: the unit of a step (`granularity`), the sessions, jobs,
    /// depth and faults.
    fn scope_only(&self, found: &[Found]) -> String {
        let o = self.o;
        let mut faults =
            format!("≤ {} clock tick(s), ≤ {} crash(es), ≤ {} heartbeat(s)", o.ticks, o.crashes, o.heartbeats);
        if o.fail {
            faults.push_str(", failures");
        }
        if o.acks_lost > 0 {
            faults.push_str(&format!(", ≤ {} completion answer(s) lost", o.acks_lost));
        }
        format!(
            "searched: {}, {} worker sessions{}, {} job(s), depth {} reached (bound {}), faults {faults}, {:.1} s",
            self.granularity().1,
            o.sessions,
            super::helpers(self.reaper, o),
            o.jobs,
            self.depth(found),
            o.depth,
            self.took.as_secs_f64()
        )
    }
}

/// Prints the answer, writes `--out`, and gives the exit code.
pub(super) fn answer(w: &Searched<'_>, found: &[Found]) -> Result<ExitCode> {
    let (tally, scope) = (w.tally(), w.scope(found));
    let mut written = Vec::new();
    for f in found {
        written.push(counterexample(w, f, found.len() > 1 || w.o.all)?);
    }
    if !found.is_empty() {
        println!("{tally}\n{scope}");
        if w.o.all {
            let checks: Vec<&str> =
                found.iter().flat_map(|f| &f.violations).filter(|v| !v.beside).map(|v| v.check.name()).collect();
            println!("{} found: {}", count_of(found.len()), checks.join(", "));
        }
    }
    let s = w.stats;
    let code = match (found.is_empty(), s.claimed, &s.claim_error) {
        (false, _, _) => ExitCode::ExpectationFailed,
        (true, false, Some((sql, error))) => {
            println!(
                "QUEUE ERROR: the queue's claim failed on the server, so no session ever claimed a job: {error}\n  \
                 the statement: {}\n{tally}\n{scope}",
                sql.replace('\n', "\n  ")
            );
            ExitCode::ExpectationFailed
        }
        (true, false, None) => {
            println!(
                "VACUOUS: no session claimed a job in any of {} schedules, so nothing was tested (are the preloaded \
                 jobs of a class or queue these sessions claim? explore preloads the default class): {tally}\n{scope}",
                s.schedules
            );
            ExitCode::ExpectationFailed
        }
        (true, true, _) => {
            let how = match (&w.o.replay, w.random) {
                (Some(_), _) => format!("in the schedule replayed ({} steps, then left to itself)", s.depth_done),
                (None, Some(r)) => format!("in {} random schedules", r.schedules.len()),
                (None, None) => reached(s),
            };
            println!("no counterexample {how}: {tally}\n{scope}");
            ExitCode::Passed
        }
    };
    if let Some(out) = &w.o.out {
        if let Some(r) = w.random {
            crate::files::write_new(out, "random-schedules.txt", format!("{}\n", r.schedules.join("\n")).as_bytes())?;
        }
        let json = serde_json::to_string_pretty(&summary(w, found, &written)).unwrap_or_default();
        crate::files::write_new(out, "explore.json", format!("{json}\n").as_bytes())?;
    }
    Ok(code)
}

fn count_of(n: usize) -> String {
    crate::model::words::count(n as u64, "counterexample")
}

/// How far a search that found nothing went.
fn reached(s: &Stats) -> String {
    crate::model::words::explore_reached(s.depth_done, s.exhausted, s.timed_out)
}

/// One counterexample printed, and written to `--out`: `counterexample.txt` and `.sql`, or
/// with `--all` a pair for each check it breaks (`counterexample-CHECK.txt`); the scripts'
/// file names.
fn counterexample(w: &Searched<'_>, f: &Found, named: bool) -> Result<Vec<String>> {
    let mut text = script::steps(f, w.plan);
    let lane = script::swimlane(f, w.plan);
    // The story's words for the job; "ran exactly once" is no cause of a cancelled job run.
    for cause in lane.iter().flat_map(|l| &l.causes).filter(|c| c.as_str() != "ran exactly once") {
        text.push_str(&format!("  cause: {cause}\n"));
    }
    text.push_str(&format!("  schedule (replay it with the same flags and --replay '…'): {}\n", f.schedule));
    let sql = script::psql(f, w.plan);
    println!("{text}\n{sql}");
    let Some(out) = &w.o.out else { return Ok(Vec::new()) };
    let stems: Vec<String> = if named {
        f.violations.iter().filter(|v| !v.beside).map(|v| format!("counterexample-{}", v.check.name())).collect()
    } else {
        vec!["counterexample".to_string()]
    };
    for stem in &stems {
        crate::files::write_new(out, &format!("{stem}.txt"), text.as_bytes())?;
        crate::files::write_new(out, &format!("{stem}.sql"), sql.as_bytes())?;
        if let Some(l) = &lane {
            crate::files::write_new(out, &format!("{stem}.svg"), l.svg.as_bytes())?;
        }
        println!("written: {}, .sql and .svg (the job's swimlane)", out.join(format!("{stem}.txt")).display());
    }
    Ok(stems.into_iter().map(|s| format!("{s}.sql")).collect())
}

/// explore.json: what was searched, how far, and each counterexample.
fn summary(w: &Searched<'_>, found: &[Found], written: &[Vec<String>]) -> serde_json::Value {
    let (s, o) = (w.stats, w.o);
    let violations: Vec<serde_json::Value> = found
        .iter()
        .zip(written)
        .flat_map(|(f, files)| {
            f.violations.iter().map(move |v| {
                let own = format!("counterexample-{}.sql", v.check.name());
                let script = files.iter().find(|s| **s == own).or(files.first());
                serde_json::json!({
                    "check": v.check.name(),
                    "detail": v.detail,
                    "steps": f.depth,
                    "left_to_itself": f.settled_from.is_some(),
                    "beside": v.beside,
                    "script": script,
                    "schedule": f.schedule,
                })
            })
        })
        .collect();
    serde_json::json!({
        "scenario": w.plan.name,
        "queue": w.plan.adapter.name,
        "granularity": w.granularity().0,
        "sessions": o.sessions,
        "reaper": w.reaper,
        "jobs": o.jobs,
        "depth_bound": o.depth,
        "depth": w.depth(found),
        "exhausted": s.exhausted,
        "timed_out": s.timed_out,
        "faults": { "ticks": o.ticks, "crashes": o.crashes, "heartbeats": o.heartbeats, "fail": o.fail, "acks_lost": o.acks_lost },
        "schedules": s.schedules,
        "distinct_states": s.states,
        "naive_schedules": s.covered.round(),
        "naive_schedules_is": if o.reduce { "lower_bound" } else { "counted" },
        "steps_sent": s.steps,
        "seconds": (w.took.as_secs_f64() * 10.0).round() / 10.0,
        "claimed": s.claimed,
        "excused": verdict::tolerated(w.plan),
        "ignored": o.ignore,
        "violations": violations,
        "mode": match (&o.replay, w.random) { (Some(_), _) => "replay", (None, Some(_)) => "random", (None, None) => "search" },
        "coverage": w.coverage.json(),
        "random": w.random.map(|r| {
            let (one, all) = r.bounds();
            serde_json::json!({
                "seed": r.seed, "schedules": r.schedules.len(), "max_steps": r.steps, "bug_depth": r.depth,
                "agents": r.agents, "bound_per_schedule": one, "bound_all": all, "file": "random-schedules.txt",
            })
        }),
    })
}
