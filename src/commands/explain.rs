//! `queuebench explain RUN_DIR [--job N]`: one job's story from the run's saved history —
//! who claimed it when, each lease window, each execution, each write and whether it landed,
//! the faults that touched it, what the reaper did to it — and the cause of what went wrong in one line each. Without
//! `--job`, the first example of the first failed check.

use crate::collect::history;
use crate::error::{Error, ExitCode, Result};
use crate::model::evidence::SavedEvidence;
use crate::model::summary::RunSummary;
use crate::verify::story::story;
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
    let events: Vec<_> = h.journal.iter().filter(|e| e.job == job).copied().collect();
    let state = if saved.partial {
        Vec::new()
    } else {
        history::read_final_state(&read("final_state.csv.gz")?).map_err(|e| bad("final_state.csv.gz", e.to_string()))?
    };
    let row = state.iter().find(|r| r.id == job);
    if events.is_empty() && row.is_none() {
        return Err(Error::Flag {
            flag: "--job".into(),
            reason: format!("{job}: no such job in {}", dir.join("history.csv.gz").display()),
        });
    }
    let s = story(
        &events,
        (&h.faults, &h.reaps),
        row,
        (Duration::from_micros(saved.lease_us), saved.hold_transaction, saved.boundary_us()),
    );
    println!("job {job} in {} ({}):", summary.scenario, dir.display());
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
    Ok(ExitCode::Passed)
}
