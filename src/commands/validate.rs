//! `queuebench validate FILE…`: scenario files checked without running them.

use crate::error::{ExitCode, Result};
use crate::scenario;
use std::path::PathBuf;

pub fn validate(files: &[PathBuf], sets: &[String]) -> Result<ExitCode> {
    let mut worst = ExitCode::Passed;
    for f in files {
        match scenario::plan_from_file(f, sets, Some(0)) {
            Ok(p) => {
                println!(
                    "{}: ok ({} · {} workers · strategy {})",
                    f.display(),
                    p.name,
                    p.workers.count,
                    p.strategy.name
                )
            }
            Err(e) => {
                eprintln!("error: {e}");
                worst = worst.worst(e.exit_code());
            }
        }
    }
    Ok(worst)
}
