//! The ground floor: the vocabulary every stage shares. It imports no stage,
//! and every stage may import it.
//!
//! - `summary`: `RunSummary`, the one model every exporter reads;
//! - `metrics`: its metric names (dotted paths, `checks.<name>`);
//! - `expect`: expectations (`[expect]`, `--expect`), their selectors, and the live values
//!   abort-on-fail judges while the run goes;
//! - `tolerance`: how much worse than a baseline a metric may get;
//! - `records`: what the run produces for later stages (final job rows, samples, spans);
//! - `evidence`: what the checkers read besides the history, saved as `evidence.json`;
//! - `protocol`: the lease protocol's choices (mode, fencing, reclaim);
//! - `words`: counted nouns (`1 job`, `2 jobs`).
//! - `fingerprint`: what makes two runs comparable (scenario, run shape, machine, server).

pub mod evidence;
pub mod expect;
pub mod fingerprint;
pub mod metrics;
pub mod protocol;
pub mod records;
pub mod summary;
pub mod tolerance;
pub mod words;
