//! `queuebench prepare FILE --database-url URL --schema NAME`: a scenario's schema and preloaded
//! jobs in a server, for pgbench comparisons.

use crate::db::{self, Database, schema};
use crate::error::{ExitCode, Result};
use crate::scenario;
use std::path::Path;

pub async fn prepare(file: &Path, sets: &[String], url: &str, schema_name: String, reuse: bool) -> Result<ExitCode> {
    let plan = scenario::plan_from_file(file, sets, Some(0))?;
    db::check_schema_name(&schema_name)?;
    let db = Database::open(Some(url), &[], schema_name, true, true).await?.reusing(reuse);
    let notify = plan.workers.idle.wakeup == scenario::plan::Wakeup::Listen;
    let preload =
        match schema::install(&db, plan.jobs.preload, plan.jobs.max_attempts, &plan.postgres.table_settings, notify)
            .await
        {
            Ok((_, preload)) => preload,
            Err(e) => {
                // Nothing half-built stays behind to block the retry.
                let _ = db.discard().await;
                return Err(e);
            }
        };
    println!(
        "{}: schema {} ready with {} jobs (preload {:.3} s)",
        db.target,
        db.schema,
        plan.jobs.preload,
        preload.as_secs_f64()
    );
    Ok(ExitCode::Passed)
}
