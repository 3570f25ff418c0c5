//! An adapter's `[drive]` against the scenario that runs it: the mode the queue must be run in
//! becomes the scenario's when it names none and refuses another; a worker's identity after a
//! crash follows the queue's declaration, and a crash fault asking for the other one is refused.
//! Each refusal names the scenario key, the adapter file, its `drive.*` key and what is accepted.

use super::at::At;
use super::faults::{Fault, Kind};
use super::plan::WorkerSettings;
use super::raw::RawScenario;
use super::units::format_duration;
use crate::adapter::drive::Drive;
use crate::adapter::{Adapter, Origin};
use crate::error::Result;
use std::time::Duration;

/// An adapter whose lease is fixed (`lease_fixed = true`): the scenario's lease must be that
/// one, unscaled, or the run would judge leases the queue does not keep.
pub(super) fn fixed_lease(at: &At, adapter: &Adapter, lease: Duration, time_scale: f64) -> Result<()> {
    let Some(fixed) = adapter.default_lease.filter(|_| adapter.lease_fixed) else { return Ok(()) };
    let declared = format!(
        "the adapter {} declares lease = \"{}\" with lease_fixed = true (the queue's lease cannot be set)",
        file_of(adapter),
        format_duration(fixed)
    );
    if lease != fixed {
        return Err(at.err(
            "lease.duration",
            format!(
                "`{}`, but {declared}; accepted: \"{}\", or leave lease.duration out",
                format_duration(lease),
                format_duration(fixed)
            ),
        ));
    }
    if time_scale != 1.0 {
        return Err(at.err(
            "run.time_scale",
            format!(
                "{time_scale} would make the lease {}, but {declared}; accepted: 1, or leave run.time_scale out",
                format_duration(fixed.mul_f64(time_scale))
            ),
        ));
    }
    Ok(())
}

fn file_of(adapter: &Adapter) -> String {
    match &adapter.origin {
        Origin::File(p) => p.display().to_string(),
        _ => format!("`{}`", adapter.name),
    }
}

/// Applies the adapter's declarations to the workers and the crash faults, or refuses the run.
pub(super) fn apply(
    raw: &RawScenario,
    at: &At,
    adapter: &Adapter,
    workers: &mut WorkerSettings,
    faults: &mut [Fault],
) -> Result<()> {
    let d = &adapter.drive;
    let file = file_of(adapter);
    if let Some(mode) = d.mode {
        if at.0.gives("workers.mode") && workers.mode != mode {
            let why = match mode {
                crate::model::protocol::Mode::HoldTransaction => {
                    "the queue holds its job by a lock that lives as long as the claim's transaction: \
                     committed at once, the lock is gone and another worker takes the same job"
                }
                crate::model::protocol::Mode::Lease => {
                    "the queue commits its claim and completes in a transaction of its own"
                }
            };
            return Err(at.err(
                "workers.mode",
                format!(
                    "`{}`, but the adapter {file} declares drive.mode = \"{}\" ({why}); accepted: \"{1}\", or leave \
                     workers.mode out",
                    Drive::mode_name(workers.mode),
                    Drive::mode_name(mode),
                ),
            ));
        }
        workers.mode = mode;
    }
    if let Some(new) = d.new_identity_after_crash {
        let declared = if new { "new" } else { "same" };
        for (i, (f, rf)) in faults.iter_mut().zip(&raw.faults).enumerate() {
            let Kind::Crash { new_identity, .. } = &mut f.kind else { continue };
            if rf.identity.as_deref().is_some_and(|asked| asked != declared) {
                return Err(at.err(
                    "faults",
                    format!(
                        "[[faults]] #{} (kind = \"crash\"): identity = \"{}\", but the adapter {file} declares \
                         drive.identity_after_crash = \"{declared}\" (its workers come back that way); accepted: \
                         \"{declared}\", or leave identity out",
                        i + 1,
                        rf.identity.as_deref().unwrap_or_default(),
                    ),
                ));
            }
            *new_identity = new;
        }
    }
    Ok(())
}
