//! The two remaining anti-starvation policies against a real PostgreSQL,
//! under starvation-strict's load (high 50/s, normal 20/s): quotas per claim
//! batch and separate worker pools per class both keep the normal class
//! from starving. Both scenarios run at once (their workers mostly sleep),
//! so the test takes one run's time.

mod common;
use common::{queuebench, repo};

fn run(name: &str) -> common::Run {
    let s = repo(&format!("scenarios/{name}.toml"));
    let r = queuebench(&["run", s.to_str().unwrap(), "--quiet"]);
    r.assert_clean();
    r
}

#[test]
#[ignore = "about 40 s; CI runs both scenarios in its smoke gate, whose expectations assert the same direction; run with cargo test -- --ignored"]
fn quotas_and_pools_keep_normal_from_starving() {
    let pools = std::thread::spawn(|| run("starvation-pools"));
    let quota = run("starvation-quota");
    let pools = pools.join().unwrap();
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
        // Both classes got done, each counted in its own class.
        let (h, n) = (r.num("jobs.completed_by_class.high"), r.num("jobs.completed_by_class.normal"));
        assert!(h > 1000.0 && n > 400.0, "{name}: high {h}, normal {n}");
        assert_eq!(h + n, r.num("jobs.completed"), "{name}");
    }
    // Quotas share the overload between the classes: their worst waits stay
    // within a couple of seconds of each other instead of one class taking it all.
    let gap =
        quota.num("starvation.max_oldest_ready_age_s.normal") - quota.num("starvation.max_oldest_ready_age_s.high");
    assert!(gap.abs() < 3.0, "quota: normal and high worst waits differ by {gap} s");
}
