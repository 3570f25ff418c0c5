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
//! - a fixed lease (`lease_fixed`), a reclaim counted by its UPDATE, `[result] successor` in a
//!   list-form fail, `[drive] isolation`, and validate's held-job observe and claim-only lock check.

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

    // explain follows the chain as the checks do: asked by the newest id of a job retried
    // twice, it tells the whole chain under the first id, and its re-runs as retries.
    let history = std::fs::read(r.out.join("evidence.json")).unwrap();
    let evidence: serde_json::Value = serde_json::from_slice(&history).unwrap();
    let links: Vec<(i64, i64)> = evidence["successors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l[0].as_i64().unwrap(), l[1].as_i64().unwrap()))
        .collect();
    let (first, second) = links.iter().find(|&&(_, new)| links.iter().any(|&(old, _)| old == new)).copied().unwrap();
    let newest = links.iter().find(|&&(old, _)| old == second).unwrap().1;
    let out = r.out.to_str().unwrap();
    let e = queuebench(&["explain", out, "--job", &newest.to_string()]);
    assert_eq!(e.code, 0, "{}\n{}", e.stdout, e.stderr);
    assert!(e.stdout.contains(&format!("job {first} in")), "told under the first id: {}", e.stdout);
    assert!(e.stdout.contains(&format!("{first} → {second} → {newest}")), "{}", e.stdout);
    assert!(e.stdout.contains("retry"), "{}", e.stdout);
    assert!(!e.stdout.contains("racing claim"), "{}", e.stdout);
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

/// The select-then-update queue whose lease is fixed at 30 s (`lease_fixed = true`).
fn fixed_lease(text: String) -> String {
    text.replacen("table = \"q\"\n", "table = \"q\"\nlease = \"30s\"\nlease_fixed = true\n", 1)
}

#[test]
fn a_fixed_lease_refuses_a_scenario_whose_lease_differs_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "select-then-update.toml", fixed_lease, "[jobs]\npreload = 10\n");
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "the scenario leaves the lease to the adapter: {}\n{}", r.stdout, r.stderr);
    let body = "[jobs]\npreload = 10\n[lease]\nduration = \"30s\"\n";
    let s = setup(dir.path(), "select-then-update.toml", fixed_lease, body);
    assert_eq!(queuebench(&["validate", &s]).code, 0, "the same lease, written out");
    let cases = [
        ("[jobs]\npreload = 10\n[lease]\nduration = \"10s\"\n", &["lease.duration", "`10s`", "lease = \"30s\""][..]),
        ("[jobs]\npreload = 10\n[run]\ntime_scale = 0.1\n", &["run.time_scale", "3s", "lease = \"30s\""][..]),
    ];
    for (body, needles) in cases {
        let s = setup(dir.path(), "select-then-update.toml", fixed_lease, body);
        let r = queuebench(&["validate", &s]);
        assert_eq!(r.code, 2, "{body}: {}\n{}", r.stdout, r.stderr);
        for needle in needles.iter().chain(&["select-then-update.toml", "lease_fixed = true"]) {
            assert!(r.stderr.contains(needle), "{body}: `{needle}` in {}", r.stderr);
        }
    }
    // lease_fixed needs the lease it fixes.
    let s = setup(
        dir.path(),
        "select-then-update.toml",
        |t| t.replacen("table = \"q\"\n", "table = \"q\"\nlease_fixed = true\n", 1),
        "[jobs]\npreload = 10\n",
    );
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("lease_fixed") && r.stderr.contains("no `lease"), "{}", r.stderr);
}

/// A reclaim of two statements: a SELECT of every row (done ones too, so it always returns
/// rows), then the UPDATE that takes back only the expired ones among them.
fn select_then_reclaim(text: String) -> String {
    let reclaim = "reclaim = [\n  \"SELECT id FROM q\",\n  \"UPDATE q SET state = 'ready' WHERE id = ANY(:prev.id) \
                   AND state = 'taken' AND locked_at < now() - make_interval(secs => :lease_secs)\",\n]\n";
    text.replacen("\n[result]", &format!("{reclaim}\n[result]"), 1)
}

#[test]
fn a_reclaim_counts_the_rows_its_update_took_back_not_the_rows_its_select_read() {
    let dir = tempfile::tempdir().unwrap();
    // 40 jobs; two crash their worker after the claim and come back after the 1 s lease.
    let body = "[jobs]\npreload = 40\n[workers]\ncount = 2\nwork = \"10ms\"\n\
                [lease]\nduration = \"1s\"\nreclaim = \"reaper\"\nreaper_interval = \"50ms\"\n\
                [run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n\
                [[faults]]\nkind = \"crash\"\npoint = \"after_claim\"\nevery = 20\nrespawn_after = \"10ms\"\n";
    let s = setup(dir.path(), "select-then-update.toml", select_then_reclaim, body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("took back nothing"), "the cycle counts the UPDATE: {}", r.stderr);
    let r = run(&s, &[]);
    let reaper = &r.summary()["reaper"];
    assert_eq!(r.num("jobs.completed"), 40.0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.num("faults.by_kind.crash") > 0.0);
    assert!(r.num("reaper.runs") > 0.0, "{reaper}");
    // Each pass's SELECT read all 40 rows; only the crashed jobs' leases were taken back.
    assert!(r.num("reaper.reclaimed") >= 1.0, "the crashed jobs came back by the UPDATE: {reaper}");
    assert!(r.num("reaper.reclaimed") < 40.0, "not the SELECT's rows: {reaper}");
}

/// The select-then-update queue whose observer calls a taken job `picked`, a status no
/// checker knows; it has no reclaim step.
fn picked(text: String) -> String {
    text.replace("WHEN 'taken' THEN 'running'", "WHEN 'taken' THEN 'picked'")
}

#[test]
fn validate_reads_a_held_jobs_status_without_a_reclaim_step() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "select-then-update.toml", picked, "[jobs]\npreload = 10\n");
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("`picked`") && r.stderr.contains("which no checker knows"), "{}", r.stderr);
    // With a reclaim step too (the held job is read before the reclaim takes it back).
    let s = setup(dir.path(), "select-then-update.toml", |t| picked(select_then_reclaim(t)), "[jobs]\npreload = 10\n");
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("`picked`"), "{}", r.stderr);
}

/// The retry under a new id written as a list: DELETE, then INSERT from its rows (`:prev`),
/// which returns the new id.
fn fail_as_list(text: String) -> String {
    let start = text.find("fail = \"\"\"").expect("the fixture's fail");
    let end = start + text[start..].find("RETURNING id AS new_id\"\"\"").expect("its end") + 26;
    let list = "fail = [\n  \"DELETE FROM q WHERE id = :id AND state = 'taken' RETURNING n, tries, max_tries\",\n  \
                \"\"\"INSERT INTO q (n, tries, max_tries, state, run_at)\n\
                SELECT n, tries, max_tries, CASE WHEN tries >= max_tries THEN 'dead' ELSE 'ready' END,\n\
                now() + make_interval(secs => :backoff_secs)\n\
                FROM unnest(:prev.n::bigint[], :prev.tries::int[], :prev.max_tries::int[]) AS old(n, tries, max_tries)\n\
                RETURNING id AS new_id\"\"\",\n]";
    format!("{}{list}{}", &text[..start], &text[end..])
}

#[test]
fn a_successor_returned_by_a_later_statement_of_a_list_fail_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "retry-new-id.toml", fail_as_list, RETRIES);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run(&s, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let jobs = &r.summary()["jobs"];
    assert_eq!(r.num("jobs.dead") + r.num("jobs.completed"), 50.0, "one end per logical job: {jobs}");
    assert!(r.num("jobs.retried") >= 5.0, "{jobs}");
    assert_eq!(r.num("jobs.lost"), 0.0, "{jobs}");
    assert_eq!(r.num("executions.distinct_jobs"), 50.0, "old and new ids are one job: {}", r.summary()["executions"]);

    // A successor column no statement returns is refused by validate, before a run.
    let s = setup(dir.path(), "retry-new-id.toml", |t| fail_as_list(t).replace("AS new_id", "AS fresh_id"), RETRIES);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("result.successor = \"new_id\""), "{}", r.stderr);
}

/// The select-then-update queue with a claim that locks nothing (one UPDATE of the first
/// ready row) and a completion that locks its row first with `FOR UPDATE`.
fn unlocked_claim_locking_complete(text: String) -> String {
    let claim_start = text.find("claim = [").expect("the fixture's claim");
    let claim_end = claim_start + text[claim_start..].find("\n]\n").expect("its end") + 3;
    let claim = "claim = \"UPDATE q SET state = 'taken', tries = tries + 1, locked_at = now() WHERE id IN \
                 (SELECT id FROM q WHERE state = 'ready' ORDER BY n LIMIT :batch) RETURNING id, tries\"\n";
    let text = format!("{}{claim}{}", &text[..claim_start], &text[claim_end..]);
    text.replace(
        "complete = \"UPDATE q SET state = 'done' WHERE id = :id AND state = 'taken'\"",
        "complete = \"UPDATE q SET state = 'done' WHERE id = (SELECT id FROM q WHERE id = :id AND state = 'taken' \
         FOR UPDATE)\"",
    )
}

#[test]
fn the_no_lock_warning_sees_only_the_claims_locks_not_a_prepared_completions() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), "select-then-update.toml", unlocked_claim_locking_complete, "[jobs]\npreload = 10\n");
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("the claim took no row lock"), "{}", r.stderr);
    // The fixture's own claim locks with FOR UPDATE SKIP LOCKED: no warning.
    let s = setup(dir.path(), "select-then-update.toml", same, "[jobs]\npreload = 10\n");
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("took no row lock"), "{}", r.stderr);
}

/// The select-then-update queue whose claim writes the transaction's isolation level into a
/// column that accepts only `repeatable read`, declared with `[drive] isolation`.
fn repeatable_read(text: String) -> String {
    let text = text
        .replace(
            "  locked_at timestamptz\n",
            "  locked_at timestamptz,\n  iso       text CHECK (iso IS NULL OR iso = 'repeatable read')\n",
        )
        .replace(
            "locked_at = now() WHERE id = ANY(:prev.id)",
            "locked_at = now(), iso = current_setting('transaction_isolation') WHERE id = ANY(:prev.id)",
        );
    // Two claims at repeatable read may meet a row the other just took: 40001, by design.
    format!("{text}\n[drive]\nisolation = \"repeatable read\"\nexpected_errors = [\"40001\"]\n")
}

#[test]
fn an_adapter_that_declares_repeatable_read_runs_its_workers_at_it() {
    let dir = tempfile::tempdir().unwrap();
    let body = "[jobs]\npreload = 60\n[workers]\ncount = 2\n[run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n";
    let s = setup(dir.path(), "select-then-update.toml", repeatable_read, body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "validate's cycle runs at the declared level: {}\n{}", r.stdout, r.stderr);
    let r = run(&s, &["--set", "run.timeout=30s"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.completed"), 60.0, "every claim ran at repeatable read: {}", r.summary()["jobs"]);

    // Without the declaration the claim runs at read committed and the column refuses it.
    let s = setup(dir.path(), "select-then-update.toml", |t| repeatable_read(t).replace("isolation = ", "# "), body);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("q_iso_check"), "{}", r.stderr);

    // An unknown level is refused by name.
    let s = setup(
        dir.path(),
        "select-then-update.toml",
        |t| repeatable_read(t).replace("\"repeatable read\"\n", "\"snapshot\"\n"),
        body,
    );
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    for needle in
        ["select-then-update.toml", "drive.isolation", "`snapshot`", "read committed, repeatable read, serializable"]
    {
        assert!(r.stderr.contains(needle), "`{needle}` in {}", r.stderr);
    }
}
