//! Priorities against a real PostgreSQL: the same overload (high 45/s,
//! normal 15/s against 10 workers of 200 ms, at most 50 jobs/s) under strict
//! priority starves the normal class, under priority aging it does not. The
//! two scenarios run one after the other (~35 s each): side by side on two
//! cores each would change the other's capacity.

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
fn strict_priority_starves_normal_and_aging_does_not() {
    let strict = run("starvation-strict");
    let aging = run("starvation-aging");
    for r in [&strict, &aging] {
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.num("jobs.lost"), 0.0);
        assert_eq!(r.num("jobs.completed"), r.num("jobs.enqueued"), "the run drains");
        let by_class = r.num("jobs.completed_by_class.high") + r.num("jobs.completed_by_class.normal");
        assert_eq!(by_class, r.num("jobs.completed"), "every done job is counted in its class");
        assert!(r.num("fifo.completions") > 1000.0);
    }
    let normal = |r: &common::Run| r.num("starvation.max_oldest_ready_age_s.normal");
    let high = |r: &common::Run| r.num("starvation.max_oldest_ready_age_s.high");

    // Strict: only normal starves, its head waiting past the 10 s threshold; high hardly waits.
    assert!(strict.check("starvation") >= 1);
    assert_eq!(strict.summary()["starvation"]["starving"], serde_json::json!(["normal"]));
    assert!(normal(&strict) > 10.0, "strict: normal waited only {} s", normal(&strict));
    assert!(high(&strict) < 2.0, "strict: high waited {} s", high(&strict));

    // Aging: nobody starves, and normal's worst wait is under half of strict's.
    assert_eq!(aging.check("starvation"), 0, "{}", aging.summary()["checks"]);
    assert!(normal(&aging) < 10.0, "aging: normal waited {} s", normal(&aging));
    assert!(normal(&aging) * 2.0 < normal(&strict), "aging {} s vs strict {} s", normal(&aging), normal(&strict));
    // The price: high waits longer than under strict priority.
    assert!(high(&aging) > high(&strict));
    // Strict priority reorders more: a normal job finishes hundreds of places late.
    assert!(strict.num("fifo.worst_displacement") > aging.num("fifo.worst_displacement"));
}
