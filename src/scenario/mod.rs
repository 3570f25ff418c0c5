//! Scenario files: the raw serde mirror (`raw`), reading and `--set`
//! overrides (`load`), durations (`units`), the typed `Plan` that every later
//! stage reads (`plan`), and the validation that builds it (`validate`).

mod at;
mod boundary;
pub(crate) mod ceiling;
pub(crate) mod client;
mod drive;
pub(crate) mod faults;
pub(crate) mod horizon;
pub(crate) mod load;
pub(crate) mod load_model;
pub(crate) mod name;
pub(crate) mod needs;
pub(crate) mod plan;
pub(crate) mod pool;
mod postgres;
pub(crate) mod raw;
pub(crate) mod scale;
pub(crate) mod units;
pub(crate) mod validate;
mod values;

pub(crate) use plan::{Plan, Stop, WorkModel};

use crate::error::Result;
use std::path::Path;

/// Reads, overrides and validates one scenario file.
pub(crate) fn plan_from_file(path: &Path, sets: &[String], seed: Option<u64>) -> Result<Plan> {
    let (raw, source) = load::load(path, sets)?;
    validate::validate(raw, source, seed)
}
