//! The ground floor: the vocabulary every stage shares. It imports no stage,
//! and every stage may import it.
//!
//! - `summary`: `RunSummary`, the one model every exporter reads;
//! - `metrics`: its metric names (dotted paths, `checks.<name>`);
//! - `check`: the checks (`Check`: every checker's name, `ALL`);
//! - `expect`: expectations (`[expect]`, `--expect`), their selectors, and the live values
//!   abort-on-fail judges while the run goes;
//! - `tolerance`: how much worse than a baseline a metric may get;
//! - `records`: what the run produces for later stages (final job rows, samples, spans);
//! - `evidence`: what the checkers read besides the history, saved as `evidence.json`;
//! - `protocol`: the lease protocol's choices (mode, fencing, reclaim);
//! - `rerun`: why a job ran again (`Rerun`: a race, a lease run out, a crash, after its
//!   completion, a retry), one cause for the checkers, `explain` and the summary;
//! - `reap`: what the reaper did to a job (`ReapEvent`: gave it back, failed it);
//! - `fault`: the fault kinds (`FaultKind`: names, who carries each out);
//! - `pooler`: a connection pooler's mode and size (`[postgres.pgbouncer]`);
//! - `transport`: what a worker's transport can do (`Capability`, `TransportKind`: each one's
//!   declaration), from which scenario validation derives its refusals;
//! - `words`: counted nouns (`1 job`, `2 jobs`).
//! - `fingerprint`: what makes two runs comparable (scenario, run shape, machine, server).
//! - `smoke`: the smoke gate's ledger (`QUEUEBENCH_SMOKE_LEDGER`): the shipped scenarios the
//!   test suite already ran as the gate would, written by the tests, read by `cargo xtask smoke`.

pub mod check;
pub mod errors;
pub(crate) mod evidence;
pub(crate) mod expect;
pub(crate) mod fault;
pub(crate) mod fingerprint;
pub(crate) mod metrics;
pub(crate) mod pg_version;
pub mod pooler;
pub(crate) mod protocol;
pub mod reap;
pub mod records;
pub mod rerun;
pub mod smoke;
pub mod summary;
pub(crate) mod tolerance;
pub mod transport;
pub mod words;

/// The version and the commit it was built from (`build.rs`): "0.1.0 (1e74cef)", with
/// `-dirty` for uncommitted changes, "(unknown)" outside a git checkout. `--version` prints it,
/// summary.json's `queuebench_version` holds it, and an agent compares it with its
/// coordinator's. On the ground floor, so every stage can name it without an upward import.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("QUEUEBENCH_COMMIT"), ")");
