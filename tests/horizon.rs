//! Horizon blockers and vacuum evidence against a real PostgreSQL: dead
//! tuples are not removable while a blocker holds the horizon, and are
//! removed (or vacuumed away by autovacuum) after it ends.

use crate::common;
use common::{queuebench, repo};

#[test]
fn an_open_transaction_keeps_dead_tuples_until_it_ends() {
    let s = repo("scenarios/vacuum-blocker.toml");
    let r = queuebench(&["run", s.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let during = r.num("vacuum.during.not_removable");
    assert!(during >= 1000.0, "dead but not yet removable while the transaction is open: {during}");
    assert!(r.num("vacuum.during.removed") < 100.0, "only what died before the transaction began");
    assert!(r.num("vacuum.during.pgstattuple_dead") >= 1000.0, "pgstattuple counts them exactly");
    assert!(r.num("vacuum.after.removed") >= 1000.0, "removed once it ended");
    assert_eq!(r.num("vacuum.after.not_removable"), 0.0);
    r.assert_clean();
}

#[test]
fn repeatable_read_readers_pile_up_dead_tuples_and_autovacuum_catches_up_after() {
    let s = repo("scenarios/analytics-readers.toml");
    let r = queuebench(&[
        "run",
        s.to_str().unwrap(),
        "--set",
        "run.phases=[{ name = \"steady\", duration = \"14s\" }]",
        "--set",
        "blockers=[{ kind = \"repeatable_read\", sessions = 2, at = \"2s\", duration = \"5s\" }]",
        "--set",
        "expect={ \"jobs.lost\" = \"== 0\" }",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let peak = r.num("horizon.peak_dead_tuples");
    assert!(peak > 300.0, "dead tuples pile up behind the readers: peak {peak}");
    assert!(r.num("horizon.peak_xmin_age") > 0.0);
    assert_eq!(r.check("vacuum_caught_up"), 0, "autovacuum catches up once the readers commit");
    let catch_up = r.num("horizon.catch_up_s");
    assert!((0.0..10.0).contains(&catch_up), "caught up {catch_up} s after");
    assert!(r.num("probe.samples") > 5.0);
    r.assert_clean();
}
