//! Checkers checked: an independent, deliberately simple reference checker written from the
//! checkers' documented semantics (not from `src/verify`), one hand-built history per cause with
//! its known answer (asserted against both the reference and `queuebench::verify::verify`), and a
//! seeded property test that the two agree on thousands of random histories.
//!
//! Replay one generated history: `CHECKERS_SEED=<seed> cargo test --test suite checkers::property -- --nocapture`
//! (prints the history and both answers). More histories: `CHECKERS_CASES=<n>`.

mod durability;
mod history;
mod known;
mod known_faults;
mod numbers;
mod property;
mod reference;

pub(crate) use durability::*;
pub(crate) use history::*;
pub(crate) use known::*;
pub(crate) use numbers::*;
pub(crate) use reference::*;

pub(crate) use queuebench::collect::EventKind::{self, *};
pub(crate) use queuebench::collect::{Arrival, Event, FaultEvent, FaultKind};
pub(crate) use queuebench::model::records::{FailoverRecord, JobRow, Status};
pub(crate) use queuebench::verify::{Evidence, Verification, starvation, verify};
pub(crate) use rand::rngs::StdRng;
pub(crate) use rand::seq::SliceRandom;
pub(crate) use rand::{RngExt, SeedableRng};
pub(crate) use std::collections::{BTreeSet, HashSet};
pub(crate) use std::fmt::Write as _;
pub(crate) use std::time::{Duration, Instant};

pub(crate) const MS: u64 = 1_000;
pub(crate) const LEASE_US: u64 = 1_000 * MS;
pub(crate) const LEASE: Duration = Duration::from_micros(LEASE_US);
/// The clock tolerance at a computed lease end: min(lease / 4, 50 ms).
pub(crate) const TOLERANCE_US: u64 = if LEASE_US / 4 < 50 * MS { LEASE_US / 4 } else { 50 * MS };

pub(crate) const fn ms(x: u64) -> u64 {
    x * MS
}
