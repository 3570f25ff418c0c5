//! The lease protocol's choices every stage names: how a claimed job relates
//! to the claim's transaction (`Mode`), what a completion checks besides the
//! id (`Fencing`), and how expired leases come back (`Reclaim`).

use serde::{Deserialize, Serialize};

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

/// How jobs whose lease expired become claimable again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reclaim {
    /// Never: an abandoned job stays `running`.
    #[default]
    Off,
    /// A reaper loop runs the strategy's reclaim statement every `reaper_interval`.
    Reaper,
    /// The claim itself takes expired leases (skip-locked-inline-reclaim).
    Inline,
}
