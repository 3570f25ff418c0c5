//! A counterexample, written out: numbered steps (session, statement, result, virtual time),
//! and a psql script with a window per session that does the same by hand. The script's
//! statements are the very text explore sent, the virtual clock written in as literals.

use super::protocol::Op;
use super::search::Found;
use crate::scenario::Plan;
use std::fmt::Write as _;

/// One line of SQL, shortened for the step list.
fn condensed(sql: &str) -> String {
    let code = sql.lines().map(|l| l.split_once("--").map_or(l, |(code, _)| code)).collect::<Vec<_>>().join(" ");
    let one: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 110 { format!("{}…", one.chars().take(109).collect::<String>()) } else { one }
}

pub(super) fn steps(f: &Found, plan: &Plan) -> String {
    let mut out = String::new();
    let then = if f.settled_from.is_some() { ", then left to itself" } else { "" };
    let _ = writeln!(out, "\nCOUNTEREXAMPLE ({}, {} steps{then}):", plan.adapter.name, f.depth);
    for v in &f.violations {
        let _ = writeln!(out, "  {}: {}", v.check.name(), v.detail);
    }
    let names: Vec<String> = ["A", "B", "C"]
        .iter()
        .enumerate()
        .filter(|(_, n)| f.records.iter().any(|r| r.actor == **n))
        .map(|(i, n)| format!("w{} = {n}", i + 1))
        .collect();
    let _ = writeln!(out, "  (the checkers' words name the sessions {})", names.join(", "));
    for (n, r) in f.records.iter().enumerate() {
        if f.settled_from == Some(n) {
            let _ = writeln!(out, "  -- from here on, left to itself: no more faults, every session in turn --");
        }
        let what = match (&r.sql, r.op) {
            (Some(sql), _) => condensed(sql),
            (None, Op::Tick) => "(the clock)".into(),
            (None, _) => "(crash)".into(),
        };
        let _ = writeln!(
            out,
            "  {:>2}. [{:>4.0} s] {:<5} {what}\n                     → {}",
            n + 1,
            r.at_secs,
            r.actor,
            r.result
        );
    }
    out
}

pub(super) fn psql(f: &Found, plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "-- The counterexample by hand ({}): make a schema with the scenario's table and {} waiting job(s),\n\
         --   queuebench prepare SCENARIO --set jobs.preload={} --set workers.batch=1 --database-url URL --schema qb_explore\n\
         -- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step\n\
         -- in its window, in order. A step marked \"waits\" hangs on a lock: send the next step once it hangs;\n\
         -- it returns after the step named. The virtual clock is\n\
         -- written in as timestamps.",
        plan.adapter.name, plan.jobs.preload, plan.jobs.preload
    );
    for (n, r) in f.records.iter().enumerate() {
        if f.settled_from == Some(n) {
            let _ = writeln!(out, "-- from here on, left to itself: no more faults, every session in turn");
        }
        match (&r.sql, r.op) {
            (Some(sql), _) => {
                let wait = r.waited_until.map_or(String::new(), |k| format!(" (waits; returns after step {})", k + 1));
                let _ = writeln!(out, "-- step {}, window {}{wait}", n + 1, r.actor);
                let _ = writeln!(out, "{};", sql.trim().trim_end_matches(';'));
                if let Op::AckLost(_) = r.op {
                    let _ = writeln!(
                        out,
                        "-- (its answer is lost: close window {} and open it again, `SET search_path = qb_explore;`)",
                        r.actor
                    );
                }
            }
            (None, Op::Crash(_)) => {
                let _ = writeln!(
                    out,
                    "-- step {}, window {}: close the window (\\q), or from another: SELECT pg_terminate_backend(<its pid>);",
                    n + 1,
                    r.actor
                );
            }
            (None, _) => {
                let _ = writeln!(out, "-- step {}: {}", n + 1, r.result);
            }
        }
    }
    let _ = writeln!(out, "-- then: {}", f.violations.iter().map(|v| v.detail.as_str()).collect::<Vec<_>>().join("; "));
    out
}

/// The counterexample's job as report.html draws a failed check's example (its swimlane), and
/// the causes `explain` would give, from the same journal the checkers read.
pub(super) fn swimlane(f: &Found, plan: &Plan) -> Option<crate::report::swimlane::Swimlane> {
    use crate::report::swimlane::{Source, swimlanes};
    let checks: Vec<_> = f.violations.iter().map(|v| v.result.clone()).collect();
    let src = Source {
        journal: &f.journal,
        faults: &f.faults,
        reaps: &[],
        final_jobs: &f.final_jobs,
        lease: plan.lease.duration,
        clock_us: 0,
        hold_transaction: plan.workers.mode == crate::model::protocol::Mode::HoldTransaction,
        network: &[],
    };
    swimlanes(&checks, &src).into_iter().next()
}
