//! `queuebench explain RUN_DIR [--job N]`: one job's story from the run's saved history —
//! who claimed it when, each lease window, each execution, each write and whether it landed,
//! the faults that touched it, what the reaper did to it — and the cause of what went wrong in one line each. Without
//! `--job`, the first example of the first failed check.

use crate::collect::history;
use crate::error::{Error, ExitCode, Result};
use crate::model::evidence::SavedEvidence;
use crate::model::summary::RunSummary;
use crate::verify::story::story;
use crate::verify::successors;
use crate::verify::time::secs;
use std::path::Path;
use std::time::Duration;

pub(crate) fn explain(dir: &Path, job: Option<i64>) -> Result<ExitCode> {
    crate::files::refuse_special_inputs(dir)?;
    let read = |name: &str| super::check::read(dir, name);
    let bad = |name: &str, reason: String| Error::Input { path: dir.join(name), reason: crate::error::filter(&reason) };
    let summary: RunSummary =
        serde_json::from_slice(&read("summary.json")?).map_err(|e| bad("summary.json", e.to_string()))?;
    let saved: SavedEvidence =
        serde_json::from_slice(&read("evidence.json")?).map_err(|e| bad("evidence.json", e.to_string()))?;
    let job =
        match job {
            Some(j) => j,
            None => summary.checks.iter().filter(|c| !c.passed).find_map(|c| c.examples.first().copied()).ok_or_else(
                || Error::Flag {
                    flag: "--job".into(),
                    reason: "is needed: no check failed in this run, so there is no example job to explain".into(),
                },
            )?,
        };
    let h =
        history::read(&read("history.csv.gz")?, &saved.classes).map_err(|e| bad("history.csv.gz", e.to_string()))?;
    let state = if saved.partial {
        Vec::new()
    } else {
        history::read_final_state(&read("final_state.csv.gz")?).map_err(|e| bad("final_state.csv.gz", e.to_string()))?
    };
    // A job retried under a new id (`[result] successor`) is one job, told under its first id,
    // as the checks count it; asked by any id of the chain, the whole chain is told.
    let (first, chain) = successors::chain_of(&saved.successors, job);
    let (journal, state) = successors::follow(&h.journal, &state, &saved.successors);
    let job = first;
    let events: Vec<_> = journal.iter().filter(|e| e.job == job).copied().collect();
    let row = state.iter().find(|r| r.id == job);
    if events.is_empty() && row.is_none() {
        return Err(Error::Flag {
            flag: "--job".into(),
            reason: format!("{job}: no such job in {}", dir.join("history.csv.gz").display()),
        });
    }
    let s = story(
        &events,
        (&h.faults, &successors::follow_reaps(&h.reaps, &saved.successors)),
        row,
        (Duration::from_micros(saved.lease_us), saved.hold_transaction, saved.boundary_us()),
    );
    println!("job {job} in {} ({}):", summary.scenario, dir.display());
    if chain.len() > 1 {
        let ids: Vec<String> = chain.iter().map(i64::to_string).collect();
        println!("  retried under new ids ([result] successor): {}; told as one job", ids.join(" → "));
    }
    if let Some(enq) = h.arrivals.iter().find(|a| a.job == job) {
        println!("  t={}  enqueued (meant for t={})", secs(enq.sent_us), secs(enq.intended_us));
    }
    for (t, line) in &s.lines {
        println!("  t={}  {line}", secs(*t));
    }
    match row {
        Some(r) => println!("  end: {} after {} attempt(s)", r.status.name(), r.attempts),
        None if !saved.partial => println!("  end: no longer in the table"),
        None => {}
    }
    for c in &s.causes {
        println!("→ {c}");
    }
    if let Some(line) = unique_key(&summary, &saved, &h.arrivals, job) {
        println!("→ {line}");
    }
    Ok(ExitCode::Passed)
}

/// A deduplicating enqueue's job (`[result] unique_key`): its key, the other jobs of that key
/// with their enqueues, and whether `unique_enqueue` names it.
fn unique_key(
    summary: &RunSummary,
    saved: &SavedEvidence,
    arrivals: &[crate::collect::Arrival],
    job: i64,
) -> Option<String> {
    let unique = saved.unique.as_ref()?;
    let key = unique.keys.iter().find(|(j, _)| *j == job).map(|(_, k)| k)?;
    let window = |j: i64| {
        arrivals.iter().find(|a| a.job == j).map_or(String::new(), |a| {
            format!(" (enqueued t={}–{})", secs(a.sent_us), secs(a.sent_us + u64::from(a.enqueue_us)))
        })
    };
    let others: Vec<String> = unique
        .keys
        .iter()
        .filter(|(j, k)| k == key && *j != job)
        .map(|(j, _)| format!("job {j}{}", window(*j)))
        .collect();
    let named = summary
        .checks
        .iter()
        .any(|c| c.name == crate::model::check::Check::UniqueEnqueue && !c.passed && c.examples.contains(&job));
    let verdict = if named {
        "unique_enqueue: it landed while another job of its key held it"
    } else {
        "its enqueue dedupes on this key"
    };
    let others = if others.is_empty() { "no other job of it landed".to_string() } else { others.join(", ") };
    Some(format!("key {key}{}: {verdict}; {others}", window(job)))
}
