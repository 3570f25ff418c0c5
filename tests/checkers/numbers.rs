//! The numbers compared: what the reference and `verify` each say about a history.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Numbers {
    pub(crate) total: u64,
    pub(crate) duplicate: u64,
    pub(crate) duplicate_race: u64,
    pub(crate) duplicate_lease_expired: u64,
    pub(crate) duplicate_after_crash: u64,
    pub(crate) duplicate_after_completion: u64,
    pub(crate) retries: u64,
    /// Jobs a claim handed out again after a completion of theirs landed.
    pub(crate) run_after_completion: u64,
    pub(crate) distinct_jobs: u64,
    pub(crate) jobs_duplicated: u64,
    pub(crate) max_per_job: u64,
    pub(crate) accepted: u64,
    pub(crate) rejected: u64,
    pub(crate) stale_accepted: u64,
    pub(crate) stale_rejected: u64,
    pub(crate) fails_accepted: u64,
    pub(crate) fails_rejected: u64,
    pub(crate) fail_stale_accepted: u64,
    pub(crate) fail_stale_rejected: u64,
    pub(crate) heartbeats_accepted: u64,
    pub(crate) heartbeats_rejected: u64,
    pub(crate) heartbeat_stale_accepted: u64,
    pub(crate) overlapping_jobs: u64,
    pub(crate) claims_during_lease: u64,
    pub(crate) lost: u64,
    pub(crate) exactly_once: bool,
    pub(crate) no_lost_jobs: bool,
    pub(crate) stale_completions_accepted: bool,
    pub(crate) ownership_overlap: bool,
    /// The liveness checks' violation counts (None: the check was not reported).
    pub(crate) refused_unexplained: u64,
    pub(crate) left_abandoned: u64,
    pub(crate) stalls: u64,
    pub(crate) unrecovered_faults: Option<u64>,
    pub(crate) dead_after_one_fault: Option<u64>,
}

/// Nothing happened and every check passed.
pub(crate) const CLEAN: Numbers = Numbers {
    total: 0,
    duplicate: 0,
    duplicate_race: 0,
    duplicate_lease_expired: 0,
    duplicate_after_crash: 0,
    duplicate_after_completion: 0,
    retries: 0,
    run_after_completion: 0,
    distinct_jobs: 0,
    jobs_duplicated: 0,
    max_per_job: 0,
    accepted: 0,
    rejected: 0,
    stale_accepted: 0,
    stale_rejected: 0,
    fails_accepted: 0,
    fails_rejected: 0,
    fail_stale_accepted: 0,
    fail_stale_rejected: 0,
    heartbeats_accepted: 0,
    heartbeats_rejected: 0,
    heartbeat_stale_accepted: 0,
    overlapping_jobs: 0,
    claims_during_lease: 0,
    lost: 0,
    exactly_once: true,
    no_lost_jobs: true,
    stale_completions_accepted: true,
    ownership_overlap: true,
    refused_unexplained: 0,
    left_abandoned: 0,
    stalls: 0,
    unrecovered_faults: None,
    dead_after_one_fault: None,
};

impl Numbers {
    pub(crate) fn fields(&self) -> [(&'static str, u64); 34] {
        let reported = |o: Option<u64>| o.unwrap_or(u64::MAX);
        [
            ("executions.total", self.total),
            ("executions.duplicate", self.duplicate),
            ("executions.duplicate_race", self.duplicate_race),
            ("executions.duplicate_lease_expired", self.duplicate_lease_expired),
            ("executions.duplicate_after_crash", self.duplicate_after_crash),
            ("executions.duplicate_after_completion", self.duplicate_after_completion),
            ("executions.retries", self.retries),
            ("checks.run_after_completion", self.run_after_completion),
            ("executions.distinct_jobs", self.distinct_jobs),
            ("executions.jobs_duplicated", self.jobs_duplicated),
            ("executions.max_per_job", self.max_per_job),
            ("completions.accepted", self.accepted),
            ("completions.rejected", self.rejected),
            ("completions.stale_accepted", self.stale_accepted),
            ("completions.stale_rejected", self.stale_rejected),
            ("stale.fails_accepted", self.fails_accepted),
            ("stale.fails_rejected", self.fails_rejected),
            ("stale.fail_stale_accepted", self.fail_stale_accepted),
            ("stale.fail_stale_rejected", self.fail_stale_rejected),
            ("stale.heartbeats_accepted", self.heartbeats_accepted),
            ("stale.heartbeats_rejected", self.heartbeats_rejected),
            ("stale.heartbeat_stale_accepted", self.heartbeat_stale_accepted),
            ("ownership.overlapping_jobs", self.overlapping_jobs),
            ("ownership.claims_during_lease", self.claims_during_lease),
            ("jobs.lost", self.lost),
            ("checks.exactly_once.passed", u64::from(self.exactly_once)),
            ("checks.no_lost_jobs.passed", u64::from(self.no_lost_jobs)),
            ("checks.stale_completions_accepted.passed", u64::from(self.stale_completions_accepted)),
            ("checks.ownership_overlap.passed", u64::from(self.ownership_overlap)),
            ("checks.completions_refused_unexplained", self.refused_unexplained),
            ("checks.jobs_left_abandoned", self.left_abandoned),
            ("checks.progress", self.stalls),
            ("checks.faults_recovered (MAX: not reported)", reported(self.unrecovered_faults)),
            ("checks.dead_after_one_fault (MAX: not reported)", reported(self.dead_after_one_fault)),
        ]
    }

    /// The fields that differ, "name: self vs other", one a line; empty when they agree.
    pub(crate) fn diff(&self, other: &Numbers) -> String {
        let mut s = String::new();
        for ((name, a), (_, b)) in self.fields().into_iter().zip(other.fields()) {
            if a != b {
                let _ = writeln!(s, "  {name}: {a} vs {b}");
            }
        }
        s
    }
}

pub(crate) fn check<'a>(v: &'a Verification, name: &str) -> &'a queuebench::model::summary::CheckResult {
    v.checks.iter().find(|c| c.name.name() == name).unwrap_or_else(|| panic!("no check {name}: {:?}", v.checks))
}

/// What `verify` says, in the same shape.
pub(crate) fn observed(h: &History) -> Numbers {
    let v = verify(&h.evidence());
    for c in &v.checks {
        assert_eq!(c.passed, c.violations == 0, "{c:?}");
    }
    let (x, c, s, o) = (&v.executions, &v.completions, &v.stale, &v.ownership);
    Numbers {
        total: x.total,
        duplicate: x.duplicate,
        duplicate_race: x.duplicate_race,
        duplicate_lease_expired: x.duplicate_lease_expired,
        duplicate_after_crash: x.duplicate_after_crash,
        duplicate_after_completion: x.duplicate_after_completion,
        retries: x.retries,
        run_after_completion: check(&v, "run_after_completion").violations,
        distinct_jobs: x.distinct_jobs,
        jobs_duplicated: x.jobs_duplicated,
        max_per_job: x.max_per_job,
        accepted: c.accepted,
        rejected: c.rejected,
        stale_accepted: c.stale_accepted,
        stale_rejected: c.stale_rejected,
        fails_accepted: s.fails_accepted,
        fails_rejected: s.fails_rejected,
        fail_stale_accepted: s.fail_stale_accepted,
        fail_stale_rejected: s.fail_stale_rejected,
        heartbeats_accepted: s.heartbeats_accepted,
        heartbeats_rejected: s.heartbeats_rejected,
        heartbeat_stale_accepted: s.heartbeat_stale_accepted,
        overlapping_jobs: o.overlapping_jobs,
        claims_during_lease: o.claims_during_lease,
        lost: v.jobs.lost,
        exactly_once: check(&v, "exactly_once").passed,
        no_lost_jobs: check(&v, "no_lost_jobs").passed,
        stale_completions_accepted: check(&v, "stale_completions_accepted").passed,
        ownership_overlap: check(&v, "ownership_overlap").passed,
        refused_unexplained: check(&v, "completions_refused_unexplained").violations,
        left_abandoned: check(&v, "jobs_left_abandoned").violations,
        stalls: check(&v, "progress").violations,
        unrecovered_faults: v.checks.iter().find(|c| c.name.name() == "faults_recovered").map(|c| c.violations),
        dead_after_one_fault: v.checks.iter().find(|c| c.name.name() == "dead_after_one_fault").map(|c| c.violations),
    }
}
