//! The scenario file exactly as written: a serde mirror of the TOML, with
//! `deny_unknown_fields` everywhere so a typo is an error, and no I/O or
//! validation. `plan.rs` turns this into a `Plan`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub seed: Option<u64>,
    #[serde(default)]
    pub jobs: RawJobs,
    #[serde(default)]
    pub workers: RawWorkers,
    #[serde(default)]
    pub lease: RawLease,
    #[serde(default)]
    pub run: RawRun,
    #[serde(default)]
    pub postgres: RawPostgres,
    #[serde(default)]
    pub strategies: BTreeMap<String, RawStrategy>,
    #[serde(default)]
    pub expect: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawJobs {
    #[serde(default)]
    pub preload: i64,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: i64,
}

impl Default for RawJobs {
    fn default() -> Self {
        RawJobs {
            preload: 0,
            max_attempts: default_max_attempts(),
        }
    }
}

fn default_max_attempts() -> i64 {
    5
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkers {
    #[serde(default = "one")]
    pub count: i64,
    #[serde(default = "default_strategy")]
    pub strategy: String,
    #[serde(default = "one")]
    pub batch: i64,
    #[serde(default)]
    pub mode: Mode,
    /// `"5ms"`, `{ p50 = "8ms", p99 = "70ms" }` or `{ min = "1ms", max = "5ms" }`.
    #[serde(default = "default_work")]
    pub work: toml::Value,
    pub max_claims: Option<i64>,
    #[serde(default = "default_idle_backoff")]
    pub idle_backoff: String,
}

impl Default for RawWorkers {
    fn default() -> Self {
        RawWorkers {
            count: 1,
            strategy: default_strategy(),
            batch: 1,
            mode: Mode::default(),
            work: default_work(),
            max_claims: None,
            idle_backoff: default_idle_backoff(),
        }
    }
}

fn one() -> i64 {
    1
}
fn default_strategy() -> String {
    "skip-locked".into()
}
fn default_work() -> toml::Value {
    toml::Value::String("0ms".into())
}
fn default_idle_backoff() -> String {
    "5ms".into()
}

/// How a claimed job relates to the claim's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The claim commits at once; work happens outside any transaction; the
    /// completion is a second short transaction guarded by the fencing mode.
    #[default]
    Lease,
    /// Claim, work and completion in one transaction (seed 001's option 1).
    HoldTransaction,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLease {
    #[serde(default = "default_lease")]
    pub duration: String,
    #[serde(default)]
    pub fencing: Fencing,
}

impl Default for RawLease {
    fn default() -> Self {
        RawLease {
            duration: default_lease(),
            fencing: Fencing::default(),
        }
    }
}

fn default_lease() -> String {
    "90s".into()
}

/// What a completion checks besides the job id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fencing {
    /// id only: a stale worker's completion always lands.
    None,
    /// id and `status = 'running'`.
    Status,
    /// id, status and the attempt number the claim returned (seed 001).
    Attempts,
    /// id, status and the `claim_token` the claim returned (seed 000).
    #[default]
    Token,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    #[serde(default = "default_stop")]
    pub stop: String,
    #[serde(default = "default_timeout")]
    pub timeout: String,
    #[serde(default = "yes")]
    pub effects_table: bool,
}

impl Default for RawRun {
    fn default() -> Self {
        RawRun {
            stop: default_stop(),
            timeout: default_timeout(),
            effects_table: true,
        }
    }
}

fn default_stop() -> String {
    "drained".into()
}
fn default_timeout() -> String {
    "10m".into()
}
fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPostgres {
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
}

/// A user's own claim strategy: the same shape as the built-ins.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawStrategy {
    #[serde(default)]
    pub description: String,
    /// Optional first statement returning `id`s; the claim then gets them as `:ids`.
    pub select: Option<String>,
    pub claim: String,
    pub complete: String,
    /// Does the claim lock the rows it picks (reported; the checkers do not trust it).
    #[serde(default)]
    pub locks_rows: bool,
}
