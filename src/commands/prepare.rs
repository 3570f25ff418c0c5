//! `queuebench prepare FILE --database-url URL --schema NAME`: a scenario's schema and preloaded
//! jobs in a server, for pgbench comparisons.

use crate::error::{ExitCode, Result};
use crate::options::{DatabaseOptions, Target};
use crate::{pipeline, scenario};
use std::path::Path;

pub(crate) async fn prepare(
    file: &Path,
    sets: &[String],
    target: Target,
    schema_name: String,
    reuse: bool,
) -> Result<ExitCode> {
    let plan = scenario::plan_from_file(file, sets, Some(0))?;
    // The schema stays (keep): pgbench runs in it next.
    let opts = DatabaseOptions::new(target, Some(schema_name), reuse, true)?;
    let db = pipeline::open_database(&plan, &opts, "").await?;
    let preload = match pipeline::prepare_database(&plan, &db).await {
        Ok(prepared) => prepared.facts.preload,
        Err(e) => {
            // Nothing half-built stays behind to block the retry.
            let _ = db.discard().await;
            return Err(e);
        }
    };
    println!(
        "{}: schema {} ready with {} (preload {:.3} s)",
        db.target,
        db.schema,
        crate::model::words::count(plan.jobs.preload, "job"),
        preload.as_secs_f64()
    );
    Ok(ExitCode::Passed)
}
