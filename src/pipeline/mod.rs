//! `queuebench run`: scenario → plan → database → run → evidence → checks → summary →
//! exporters → exit code. [`run_files`] is the batch (every file, its repeats, the
//! baseline, the batch's own outputs); [`run_one`] is one scenario's stages, each a function
//! of its inputs.

mod batch;
mod database;
mod evidence;
mod folder;
mod limits;
mod versions;

pub(crate) use batch::{comparison_files, run_files};
pub(crate) use database::{
    check_free_connections, check_target, connections_needed, ephemeral_settings, open as open_database,
    prepare as prepare_database, setup_of,
};
pub(crate) use folder::check_output_folder;
pub(crate) use limits::check as check_limits;

use crate::agent;
use crate::error::Result;
use crate::model::summary::RunSummary;
use crate::options::RunOptions;
use crate::report::{self, export::Written};
use crate::run;
use crate::scenario::Plan;
use evidence::Finished;
use folder::ResultsFolder;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// A finished run: its summary (the verdict), and how writing the run folder went. An `Err`
/// in `written` means `summary.json` itself could not be written (exit 3, verdict printed).
pub(crate) struct RunResult {
    pub summary: RunSummary,
    pub written: Result<Written>,
}

/// Where a run goes: its folder, and its run id (its schema, summary.json's run_id, and the
/// default folder's name).
pub(crate) struct RunPlace<'a> {
    pub dir: &'a Path,
    pub run_id: String,
}

/// One scenario, start to finish. The database is torn down whatever happens; the results
/// folder is removed again if the run failed before anything was written into it.
/// `junit`: the run folder gets its own junit.xml (false when the batch writes one there).
pub(crate) async fn run_one(
    plan: &Plan,
    opts: &RunOptions,
    place: RunPlace<'_>,
    interrupt: &CancellationToken,
    junit: bool,
) -> Result<RunResult> {
    let RunPlace { dir: out_dir, run_id } = place;
    match &opts.agents {
        Some(agents) => agent::coordinator::check_plan(plan, agents)?,
        None => agent::coordinator::check_local(plan)?,
    }
    let folder = ResultsFolder::create(out_dir, &run_id)?;
    let finished = folder.keep_if_ok(run_on_database(plan, opts, run_id, interrupt).await)?;
    let written = report::export_run(out_dir, &finished.summary, &finished.files(plan), junit);
    folder.finish(written.as_ref().ok().map(|w| w.not_written.as_slice()));
    Ok(RunResult { summary: finished.summary, written })
}

/// Opens the database, runs the stages, tears the database down whatever happened.
async fn run_on_database(
    plan: &Plan,
    opts: &RunOptions,
    run_id: String,
    interrupt: &CancellationToken,
) -> Result<Finished> {
    let db = database::open(plan, &opts.database, &run_id).await?;
    let finished = stages(plan, &db, interrupt, opts, run_id).await;
    let teardown = db.teardown().await;
    let finished = finished?;
    teardown?;
    Ok(finished)
}

/// The stages between an open database and a summary.
async fn stages(
    plan: &Plan,
    db: &crate::db::Database,
    interrupt: &CancellationToken,
    opts: &RunOptions,
    run_id: String,
) -> Result<Finished> {
    let started_at = chrono::Utc::now().to_rfc3339();
    let prepared = database::prepare(plan, db).await?;
    let ids = prepared.ids.clone();
    let output = match (&opts.agents, &plan.client) {
        (Some(opts), _) => {
            let lead = agent::coordinator::Coordinated { plan, db, run_id: &run_id, ids, opts };
            agent::coordinator::run(lead, interrupt).await?
        }
        (None, Some(_)) => run::process::run(plan, db, interrupt, ids).await?,
        (None, None) => run::run(plan, db, interrupt, opts.progress, ids).await?,
    };
    for f in &output.failures {
        eprintln!("warning: {f}");
    }
    let table = evidence::final_table(plan, db, prepared.client, &output).await?;
    let saved = evidence::saved_evidence(plan, &output, &table, &prepared.facts.settings);
    let checked = evidence::check(plan, &output, &table, &saved);
    let produced = evidence::Produced { output, table, checked, saved };
    Ok(evidence::summarize(plan, run_id, started_at, prepared.facts, produced))
}

/// A run's id: its start (UTC, to the second) and four random hex digits.
pub(crate) fn run_id() -> String {
    format!("{}-{:04x}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), rand::random::<u16>())
}
