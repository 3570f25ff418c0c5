//! The adapter contract, round two (`docs/adapters.md`): queue shapes the first contract could
//! not express without a workaround, each a small adapter file in `tests/fixtures/contract/`
//! run against a real PostgreSQL:
//!
//! - select-then-update in one transaction: the UPDATE reads the SELECT's ids as `:prev.id`;
//! - a row lock held for the job (`drive.mode = "hold-transaction"`): run in that mode, and a
//!   lease-mode run is refused with exit 2 (without the declaration it passes `validate` and
//!   reports racing duplicates of a correct queue);
//! - a session lease (advisory locks, `drive.lease = "session"`): a crash's re-run is a lease
//!   expiry, not a race (without the declaration, a race);
//! - whole-second timestamps (`drive.time_resolution = "1s"`): an expiry a second early is an
//!   expiry, not a race (without the declaration, a race);
//! - a timestamptz token renewed by each heartbeat: the completion binds the newest.

use crate::common;
use common::{Run, queuebench};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> String {
    let path = common::repo(&format!("tests/fixtures/contract/{name}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture `name` (edited by `edit`) beside a scenario of `body`; the scenario's path.
fn setup(dir: &Path, name: &str, edit: impl Fn(String) -> String, body: &str) -> String {
    std::fs::write(dir.join(name), edit(fixture(name))).unwrap();
    let scenario: PathBuf = dir.join("s.toml");
    let text = format!("name = \"contract\"\nadapter = \"{name}\"\n{body}");
    std::fs::write(&scenario, text).unwrap();
    scenario.to_string_lossy().into_owned()
}

fn run(scenario: &str, extra: &[&str]) -> Run {
    let mut args = vec!["run", scenario, "--quiet"];
    args.extend_from_slice(extra);
    queuebench(&args)
}

fn same(text: String) -> String {
    text
}

fn without_drive(text: String) -> String {
    text[..text.find("[drive]").expect("the fixture declares [drive]")].to_string()
}

#[test]
fn select_then_update_in_one_transaction_hands_the_locked_ids_on() {
    let dir = tempfile::tempdir().unwrap();
    let body =
        "[jobs]\npreload = 300\n[workers]\ncount = 4\nbatch = 5\n[run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n";
    let s = setup(dir.path(), "select-then-update.toml", same, body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run(&s, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.completed"), 300.0, "the UPDATE took exactly the rows the SELECT locked");
    assert_eq!(r.num("executions.duplicate"), 0.0);
    assert_eq!(r.num("completions.rejected"), 0.0);
    r.assert_clean();
}

#[test]
fn a_prev_column_the_statement_before_does_not_return_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let body = "[jobs]\npreload = 10\n";
    let s = setup(dir.path(), "select-then-update.toml", |t| t.replace("ANY(:prev.id)", "ANY(:prev.job_id)"), body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(":prev.job_id") && r.stderr.contains("it returns: id"), "{}", r.stderr);
    // `:prev` in a step's first statement has no statement before it.
    let s = setup(
        dir.path(),
        "select-then-update.toml",
        |t| t.replace("LIMIT :batch FOR", "LIMIT :batch + cardinality(:prev.id) FOR"),
        body,
    );
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("select-then-update.toml") && r.stderr.contains("second or a later statement"),
        "{}",
        r.stderr
    );
}

const HELD: &str = "[jobs]\npreload = 200\n[workers]\ncount = 4\nwork = \"2ms\"\n[run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n";

#[test]
fn a_queue_whose_row_lock_is_the_claim_runs_in_hold_transaction_mode_and_refuses_lease_mode() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "row-lock-held.toml", same, HELD);
    // The scenario names no mode: the adapter's is used.
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run(&s, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["mode"], "hold-transaction", "{}", r.summary());
    assert_eq!(r.num("jobs.completed"), 200.0);
    assert_eq!(r.num("executions.duplicate"), 0.0, "no false racing duplicates");

    // Asked for lease mode: refused before anything runs, by validate and by run.
    for cmd in ["validate", "run"] {
        let r = queuebench(&[cmd, &s, "--set", "workers.mode=lease"]);
        assert_eq!(r.code, 2, "{cmd}: {}\n{}", r.stdout, r.stderr);
        for needle in [
            "workers.mode",
            "row-lock-held.toml",
            "drive.mode = \"hold-transaction\"",
            "accepted: \"hold-transaction\"",
        ] {
            assert!(r.stderr.contains(needle), "{cmd}: `{needle}` in {}", r.stderr);
        }
    }
}

#[test]
fn without_the_driving_mode_a_lease_run_of_a_held_lock_queue_reports_racing_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "row-lock-held.toml", without_drive, HELD);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "validate cannot tell without the declaration: {}", r.stderr);
    let r = run(&s, &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.num("executions.duplicate_race") > 0.0,
        "the lock went with the claim's commit: {}",
        r.summary()["executions"]
    );
}

const CRASHES: &str = "[jobs]\npreload = 200\n[workers]\ncount = 4\n[lease]\nduration = \"30s\"\n\
[run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n\
[[faults]]\nkind = \"crash\"\npoint = \"after_effect\"\nevery = 20\nrespawn_after = \"10ms\"\n";

#[test]
fn a_session_lease_ends_with_the_crashed_connection_not_the_lease() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "advisory-session.toml", same, CRASHES);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run(&s, &[]);
    let x = &r.summary()["executions"];
    assert_eq!(r.num("jobs.completed"), 200.0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.lost"), 0.0);
    assert!(r.num("executions.duplicate_lease_expired") > 0.0, "a crash after the effect runs the job again: {x}");
    assert_eq!(r.num("executions.duplicate_race"), 0.0, "the lock died with the connection: {x}");
    assert_eq!(r.check("ownership_overlap"), 0, "{x}");

    // The same run without `lease = "session"`: each re-run comes well inside the 30 s lease.
    let s = setup(dir.path(), "advisory-session.toml", without_drive, CRASHES);
    let r = run(&s, &[]);
    assert!(r.num("executions.duplicate_race") > 0.0, "{}", r.summary()["executions"]);
}

const EARLY_EXPIRY: &str = "[jobs]\npreload = 4\n[workers]\ncount = 8\nwork = \"600ms\"\nidle_backoff = \"10ms\"\n\
[lease]\nduration = \"1s\"\nreclaim = \"reaper\"\nreaper_interval = \"50ms\"\n\
[run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n";

#[test]
fn whole_second_timestamps_widen_the_boundary_between_a_race_and_an_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "whole-seconds.toml", same, EARLY_EXPIRY);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run(&s, &[]);
    let x = &r.summary()["executions"];
    assert_eq!(r.num("jobs.completed"), 4.0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.num("executions.duplicate_lease_expired") > 0.0, "every lease ran out mid-work: {x}");
    assert_eq!(r.num("executions.duplicate_race"), 0.0, "{x}");

    // Without the declaration the same early expiries are counted as racing claims.
    let s = setup(dir.path(), "whole-seconds.toml", without_drive, EARLY_EXPIRY);
    let r = run(&s, &[]);
    assert!(r.num("executions.duplicate_race") > 0.0, "{}", r.summary()["executions"]);
}

#[test]
fn a_timestamptz_token_renewed_by_each_heartbeat_fences_the_completion() {
    let dir = tempfile::tempdir().unwrap();
    let body = "[jobs]\npreload = 40\n[workers]\ncount = 4\nwork = \"50ms\"\n[lease]\nduration = \"5s\"\nheartbeat = \"10ms\"\n\
                [run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n";
    let s = setup(dir.path(), "timestamp-fence.toml", same, body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("heartbeat"), "{}", r.stdout);
    let r = run(&s, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.num("stale.heartbeats_accepted") >= 40.0, "several heartbeats a job: {}", r.summary()["stale"]);
    assert_eq!(r.num("stale.heartbeats_rejected"), 0.0, "each heartbeat bound the token the one before returned");
    assert_eq!(r.num("completions.accepted"), 40.0, "each completion bound the newest token");
    assert_eq!(r.num("completions.rejected"), 0.0);
    r.assert_clean();
}

const RETRIES: &str = "[jobs]\npreload = 50\nmax_attempts = 3\n\
[[jobs.types]]\nname = \"always-fails\"\ncount = 5\nfail_probability = 1.0\nfail_code = \"PERMANENT\"\n\
[[jobs.types]]\nname = \"flaky\"\ncount = 10\nfail_probability = 0.5\nfail_code = \"RATE_LIMIT\"\n\
[workers]\ncount = 3\n[retry]\nbase = \"30ms\"\ncap = \"60ms\"\njitter = false\n\
[run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n\
[expect]\n\"jobs.lost\" = \"== 0\"\n\"checks.exactly_once\" = \"== 0\"\n";

#[test]
fn a_retry_under_a_new_id_is_followed_to_its_successor() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "retry-new-id.toml", same, RETRIES);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run(&s, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let jobs = &r.summary()["jobs"];
    assert_eq!(r.num("jobs.enqueued"), 50.0, "{jobs}");
    // The 5 always-failing jobs end dead after 3 attempts under 3 ids (a flaky one may too).
    assert!(r.num("jobs.dead") >= 5.0, "{jobs}");
    assert_eq!(r.num("jobs.dead") + r.num("jobs.completed"), 50.0, "one end per logical job: {jobs}");
    assert!(r.num("jobs.retried") >= 5.0, "{jobs}");
    assert_eq!(r.num("jobs.lost"), 0.0, "{jobs}");
    assert_eq!(r.check("attempts_within_budget"), 0, "{jobs}");
    assert_eq!(r.num("executions.distinct_jobs"), 50.0, "old and new ids are one job: {}", r.summary()["executions"]);
    assert_eq!(r.num("executions.duplicate_race"), 0.0);
    // The runs under each new id are retries after an accepted failure, not duplicates.
    assert!(r.num("executions.retries") >= 10.0, "{}", r.summary()["executions"]);
    r.assert_clean();
}

/// The select-then-update queue with a reaper whose staleness is a duration constant, and a
/// claim that reads an array constant.
fn with_constants(text: String) -> String {
    let text = text.replace("WHERE state = 'ready' ORDER BY", "WHERE state = ANY(:ready_states) ORDER BY");
    let reclaim =
        "reclaim = \"UPDATE q SET state = 'ready' WHERE state = 'taken' AND locked_at < now() - :stale_after\"\n";
    let text = text.replacen("\n[result]", &format!("{reclaim}\n[result]"), 1);
    format!("{text}\n[constants]\nready_states = [\"ready\", \"retry\"]\nstale_after = {{ duration = \"100s\" }}\n")
}

#[test]
fn constants_hold_arrays_and_durations_that_the_time_scale_scales() {
    let dir = tempfile::tempdir().unwrap();
    // At 0.01 the reaper takes back a crashed worker's job after 1 s, not 100 s: the run drains
    // long before its (unscaled) 30 s timeout only if the constant was scaled too.
    let body = "[jobs]\npreload = 40\n[workers]\ncount = 2\n[lease]\nreclaim = \"reaper\"\nreaper_interval = \"1s\"\n\
                [run]\ntime_scale = 0.01\ntimeout = \"30s\"\nsample_interval = \"off\"\n\
                [[faults]]\nkind = \"crash\"\npoint = \"after_claim\"\nevery = 10\nrespawn_after = \"1s\"\n";
    let s = setup(dir.path(), "select-then-update.toml", with_constants, body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run(&s, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["timed_out"], false);
    assert_eq!(r.num("jobs.completed"), 40.0, "the array constant matched the ready jobs");
    assert!(r.num("faults.by_kind.crash") > 0.0);
    assert!(r.num("reaper.reclaimed") > 0.0, "{}", r.summary()["reaper"]);

    // A mixed array and an unknown table are refused by name.
    let s = setup(dir.path(), "select-then-update.toml", |t| with_constants(t).replace("\"retry\"]", "2]"), body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("constants.ready_states") && r.stderr.contains("all strings"), "{}", r.stderr);
    let s =
        setup(dir.path(), "select-then-update.toml", |t| with_constants(t).replace("{ duration", "{ seconds"), body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("constants.stale_after") && r.stderr.contains("{ duration = \"10s\" }"), "{}", r.stderr);
}

#[test]
fn drive_errors_name_the_file_the_key_and_the_accepted_values() {
    let dir = tempfile::tempdir().unwrap();
    let body =
        "[jobs]\npreload = 10\n[[faults]]\nkind = \"crash\"\npoint = \"after_claim\"\nevery = 5\nidentity = \"same\"\n";
    let cases = [
        ("mode = \"hold-transaction\"", "mode = \"held\"", "drive.mode", "accepted: lease, hold-transaction"),
        ("mode = \"hold-transaction\"", "lease = \"forever\"", "drive.lease", "accepted: time, session"),
        ("mode = \"hold-transaction\"", "time_resolution = \"0s\"", "drive.time_resolution", "between 1us and 1h"),
        ("mode = \"hold-transaction\"", "mood = \"lease\"", "mood", "mode"),
        // The queue's workers come back under a new name; the fault asks for the same one.
        (
            "mode = \"hold-transaction\"",
            "identity_after_crash = \"new\"",
            "drive.identity_after_crash = \"new\"",
            "accepted: \"new\"",
        ),
    ];
    for (old, new, key, accepted) in cases {
        let s = setup(dir.path(), "row-lock-held.toml", |t| t.replace(old, new), body);
        let r = queuebench(&["validate", &s]);
        assert_eq!(r.code, 2, "{new}: {}\n{}", r.stdout, r.stderr);
        for needle in ["row-lock-held.toml", key, accepted] {
            assert!(r.stderr.contains(needle), "{new}: `{needle}` in {}", r.stderr);
        }
    }
}
