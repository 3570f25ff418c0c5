//! `queuebench run`: scenario → plan → database → run → evidence → checks → summary →
//! exporters → exit code. [`run_files`] is the batch (every file, its repeats, the
//! baseline, the batch's own outputs); [`run_one`] is one scenario's stages, each a function
//! of its inputs.

mod batch;
mod database;
mod evidence;

pub use batch::{comparison_files, run_files};
pub use database::{
    check_target, connections_needed, ephemeral_settings, open as open_database, prepare as prepare_database, setup_of,
};

use crate::error::{Access, Error, Result};
use crate::model::summary::RunSummary;
use crate::options::RunOptions;
use crate::report::{self, export::Written};
use crate::run;
use crate::scenario::Plan;
use evidence::Finished;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// A finished run: its summary (the verdict), and how writing the run folder went. An `Err`
/// in `written` means `summary.json` itself could not be written (exit 3, verdict printed).
pub struct RunResult {
    pub summary: RunSummary,
    pub written: Result<Written>,
}

/// One scenario, start to finish. The database is torn down whatever happens; the results
/// folder is removed again if the run failed before anything was written into it.
/// `junit`: the run folder gets its own junit.xml (false when the batch writes one there).
pub async fn run_one(
    plan: &Plan,
    opts: &RunOptions,
    out_dir: &Path,
    interrupt: &CancellationToken,
    junit: bool,
) -> Result<RunResult> {
    let folder = ResultsFolder::create(out_dir)?;
    let finished = folder.keep_if_ok(run_on_database(plan, opts, interrupt).await)?;
    let written = report::export_run(out_dir, &finished.summary, &finished.files(plan), junit);
    Ok(RunResult { summary: finished.summary, written })
}

/// Opens the database, runs the stages, tears the database down whatever happened.
async fn run_on_database(plan: &Plan, opts: &RunOptions, interrupt: &CancellationToken) -> Result<Finished> {
    let run_id = run_id();
    let db = database::open(plan, &opts.database, &run_id).await?;
    let finished = stages(plan, &db, interrupt, opts.progress, run_id).await;
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
    progress: bool,
    run_id: String,
) -> Result<Finished> {
    let started_at = chrono::Utc::now().to_rfc3339();
    let prepared = database::prepare(plan, db).await?;
    let output = match plan.client {
        Some(_) => run::process::run(plan, db, interrupt, prepared.ids.clone()).await?,
        None => run::run(plan, db, interrupt, progress, prepared.ids.clone()).await?,
    };
    for f in &output.failures {
        eprintln!("warning: {f}");
    }
    let table = evidence::final_table(plan, db, prepared.client, &output).await?;
    let saved = evidence::saved_evidence(plan, &output, &table);
    let checked = evidence::check(plan, &output, &table, &saved);
    let produced = evidence::Produced { output, table, checked, saved };
    Ok(evidence::summarize(plan, run_id, started_at, prepared.facts, produced))
}

/// A run's id: its start (UTC, to the second) and four random hex digits.
pub fn run_id() -> String {
    format!("{}-{:04x}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), rand::random::<u16>())
}

/// The results folder of one run: created (and proved writable) before anything starts.
struct ResultsFolder<'a> {
    path: &'a Path,
    /// It did not exist before: remove it again if the run fails before writing.
    fresh: bool,
}

impl<'a> ResultsFolder<'a> {
    fn create(path: &'a Path) -> Result<Self> {
        let fresh = !path.exists();
        let unwritable = |e: std::io::Error| Error::path(Access::WriteInResultsFolder, path, e);
        std::fs::create_dir_all(path).map_err(|e| Error::path(Access::CreateResultsFolder, path, e))?;
        let probe = path.join(".queuebench-write-test");
        if let Err(e) = std::fs::write(&probe, b"") {
            if fresh {
                let _ = std::fs::remove_dir(path);
            }
            return Err(unwritable(e));
        }
        let _ = std::fs::remove_file(&probe);
        Ok(ResultsFolder { path, fresh })
    }

    /// Passes `result` through; on an error, leaves no empty folder behind (`remove_dir`
    /// removes only an empty one).
    fn keep_if_ok<T>(self, result: Result<T>) -> Result<T> {
        if result.is_err() && self.fresh {
            let _ = std::fs::remove_dir(self.path);
        }
        result
    }
}
