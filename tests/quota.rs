//! The two remaining anti-starvation policies against a real PostgreSQL,
//! under starvation-strict's load (high 45/s, normal 15/s against at most
//! 50 jobs/s of shared workers): quotas per claim batch and separate worker
//! pools per class both keep the normal class from starving. The two
//! scenarios run one after the other (~35 s each), like the smoke gate runs
//! them: side by side each would change the other's capacity.

use crate::common;
use common::{queuebench, repo};

fn run(name: &str) -> common::Run {
    let s = repo(&format!("scenarios/{name}.toml"));
    let r = queuebench(&["run", s.to_str().unwrap(), "--quiet"]);
    r.assert_clean();
    r
}

#[test]
#[ignore = "about 75 s; CI runs both scenarios in its smoke gate, whose expectations assert the same direction; run with cargo test -- --ignored"]
fn quotas_and_pools_keep_normal_from_starving() {
    let quota = run("starvation-quota");
    let pools = run("starvation-pools");
    for (name, r) in [("quota", &quota), ("pools", &pools)] {
        assert_eq!(r.code, 0, "{name}\n{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.num("jobs.lost"), 0.0, "{name}");
        assert_eq!(r.num("executions.duplicate"), 0.0, "{name}");
        assert_eq!(r.check("starvation"), 0, "{name}: {}", r.summary()["checks"]);
        let normal = r.num("starvation.max_oldest_ready_age_s.normal");
        let high = r.num("starvation.max_oldest_ready_age_s.high");
        assert!(normal < 10.0, "{name}: normal waited {normal} s");
        // High is still served: it does not starve in normal's place.
        assert!(high < 10.0, "{name}: high waited {high} s");
        // Both classes got done, each counted in its own class (45/s and 15/s: ~1,190 and ~400).
        assert_eq!(r.num("jobs.completed"), r.num("jobs.enqueued"), "{name}: the run drains");
        let (h, n) = (r.num("jobs.completed_by_class.high"), r.num("jobs.completed_by_class.normal"));
        assert!(h > 1000.0 && n > 350.0, "{name}: high {h}, normal {n}");
        assert_eq!(h + n, r.num("jobs.completed"), "{name}");
    }
    // Quotas share the overload between the classes: their worst waits stay
    // within a couple of seconds of each other instead of one class taking it all.
    let gap =
        quota.num("starvation.max_oldest_ready_age_s.normal") - quota.num("starvation.max_oldest_ready_age_s.high");
    assert!(gap.abs() < 3.0, "quota: normal and high worst waits differ by {gap} s");
    // Pools isolate: with a pool sized for each class's peak, neither waits behind the other's backlog.
    assert!(
        pools.num("starvation.max_oldest_ready_age_s.normal") < quota.num("starvation.max_oldest_ready_age_s.normal"),
        "pools: normal waited longer than with quotas"
    );
}
