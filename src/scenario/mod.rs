//! Scenario files: the raw serde mirror (`raw`), reading and `--set`
//! overrides (`load`), durations (`units`), the typed `Plan` that every later
//! stage reads (`plan`), and the validation that builds it (`validate`).

mod at;
mod boundary;
pub mod ceiling;
pub mod client;
mod drive;
pub mod faults;
pub mod horizon;
pub mod load;
pub mod load_model;
pub mod name;
pub mod plan;
pub mod pool;
mod postgres;
pub mod raw;
pub mod scale;
pub mod units;
pub mod validate;
mod values;

pub use plan::{Plan, Stop, WorkModel};

use crate::error::Result;
use std::path::Path;

/// Reads, overrides and validates one scenario file.
pub fn plan_from_file(path: &Path, sets: &[String], seed: Option<u64>) -> Result<Plan> {
    let (raw, source) = load::load(path, sets)?;
    validate::validate(raw, source, seed)
}
