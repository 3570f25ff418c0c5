//! Where a scenario's rule was broken: every check of `validate.rs` and `postgres.rs` reports
//! through `At`, so an error names the file and line of the key (or the `--set` that gave it).

use super::load::Source;
use super::units::parse_duration;
use crate::error::{Error, Invalid, Result};
use std::fmt::Display;
use std::time::Duration;

/// Turns a rule broken at `key` into an error naming the file and line (or the `--set`).
pub(super) struct At<'a>(pub(super) &'a Source);

impl At<'_> {
    pub(super) fn err(&self, key: &str, reason: impl Display) -> Error {
        self.0.error(key, reason)
    }

    /// A lower layer's verdict on the value under `key` (or under its own key below that).
    pub(super) fn invalid(&self, key: &str, e: Invalid) -> Error {
        match &e.key {
            Some(below) => self.0.error(&format!("{key}.{below}"), e.reason),
            None => self.0.error(key, e.reason),
        }
    }

    pub(super) fn duration(&self, key: &str, text: &str) -> Result<Duration> {
        parse_duration(text).map_err(|e| self.err(key, e))
    }

    /// A count between 1 and 100,000.
    pub(super) fn count(&self, key: &str, v: i64) -> Result<u32> {
        if v <= 0 || v > 100_000 {
            return Err(self.err(key, format!("must be between 1 and 100000, got {v}")));
        }
        Ok(v as u32)
    }
}
