//! Enqueues through an adapter: the open-model producers send through the adapter's own
//! `enqueue` step and never pass a run with arrivals they could not send; an adapter whose
//! enqueue dedupes (`[result] unique_key`) has its refused enqueues counted as deduplicated,
//! not as jobs, and `unique_enqueue` fails when two enqueues of one key both land
//! (docs/adapters.md, "Deduplicating enqueues"). Fixtures: tests/fixtures/enqueue/.

use crate::common::{queuebench, repo};

fn fixture(name: &str) -> String {
    repo(&format!("tests/fixtures/enqueue/{name}")).to_str().unwrap().to_string()
}

fn failed_checks(summary: &serde_json::Value) -> Vec<String> {
    summary["failed_checks"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect()
}

/// A shipped adapter whose setup has no business_rows table: every planned arrival is sent
/// through its enqueue, becomes a job and is done.
#[test]
fn an_open_model_over_shipped_adapters_sends_every_arrival() {
    for adapter in ["pgmq", "pg-boss"] {
        let run = queuebench(&["run", &fixture("open.toml"), "--quiet", "--set", &format!("adapter={adapter}")]);
        assert_eq!(run.code, 0, "{adapter}: {}\n{}", run.stdout, run.stderr);
        assert!(!run.stderr.contains("could not prepare"), "{adapter}: {}", run.stderr);
        let planned = run.num("producer.planned");
        assert!(planned > 0.0, "{adapter}: nothing planned");
        assert_eq!(run.num("producer.sent"), planned, "{adapter}: every planned arrival sent");
        assert_eq!((run.num("producer.unsent"), run.num("producer.errors")), (0.0, 0.0), "{adapter}");
        assert_eq!(run.num("jobs.enqueued"), planned, "{adapter}: each arrival a job");
        assert_eq!(run.num("jobs.completed"), planned, "{adapter}: each job done");
    }
}

/// An enqueue the server refuses now and then: the producer's errors are the queue's
/// statements failing, and `unexpected_errors` fails the run.
#[test]
fn a_producer_whose_enqueue_fails_does_not_pass() {
    let run = queuebench(&["run", &fixture("open.toml"), "--quiet", "--set", "adapter=failing.toml"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    assert!(failed_checks(&s).contains(&"unexpected_errors".to_string()), "{:?}", s["failed_checks"]);
    assert!(s["errors"]["by_statement"]["enqueue:23514"].as_u64().unwrap() > 0, "{}", s["errors"]);
    assert!(run.num("producer.errors") > 0.0);
    assert!(run.stdout.contains("enqueue 23514"), "{}", run.stdout);
}

/// An enqueue the server cannot prepare stops the run before the clock starts (exit 3),
/// naming the statement and the SQLSTATE, instead of passing with nothing sent.
#[test]
fn an_enqueue_that_cannot_be_prepared_is_an_error_not_a_pass() {
    let run = queuebench(&["run", &fixture("open.toml"), "--set", "adapter=missing.toml"]);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("preparing the enqueue statement") && run.stderr.contains("42P01"), "{}", run.stderr);
}

/// Four concurrent enqueues of one key each tick: a unique index lets one land and the rest are
/// deduplicated (not jobs, not lost); a check-then-insert without a lock lets several land.
#[test]
fn unique_enqueue_passes_a_unique_index_and_fails_a_check_then_insert() {
    let correct = queuebench(&["run", &fixture("unique.toml"), "--quiet"]);
    assert_eq!(correct.code, 0, "{}\n{}", correct.stdout, correct.stderr);
    assert_eq!(correct.check("unique_enqueue"), 0);
    let deduplicated = correct.num("jobs.deduplicated");
    assert!(deduplicated > 0.0, "the producers' enqueues of one key were deduplicated");
    assert_eq!(correct.num("jobs.lost"), 0.0);
    assert_eq!(correct.num("producer.sent"), correct.num("producer.planned"));
    assert_eq!(correct.num("jobs.enqueued") + deduplicated, correct.num("producer.sent"));

    let racy = queuebench(&["run", &fixture("unique.toml"), "--quiet", "--set", "adapter=racy.toml"]);
    assert_eq!(racy.code, 1, "{}\n{}", racy.stdout, racy.stderr);
    let s = racy.summary();
    assert_eq!(failed_checks(&s), ["unique_enqueue"], "only the dedupe race fails");
    let check = s["checks"].as_array().unwrap().iter().find(|c| c["name"] == "unique_enqueue").unwrap().clone();
    assert!(check["violations"].as_u64().unwrap() > 0);
    assert!(check["detail"].as_str().unwrap().contains("the first: key "), "{}", check["detail"]);
    assert!(!check["examples"].as_array().unwrap().is_empty());
}

/// `[drive] unique_states` names the states a job keeps its key in; a word it does not know,
/// a rule without a key, or an enqueue that does not return the key is refused naming the
/// adapter file and the key.
#[test]
fn the_dedupe_rule_is_checked_when_the_adapter_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("dedupe.toml")).unwrap();
    let scenario = std::fs::read_to_string(fixture("unique.toml")).unwrap();
    std::fs::write(dir.path().join("unique.toml"), scenario).unwrap();
    let write =
        |extra: &str, text: &str| std::fs::write(dir.path().join("dedupe.toml"), format!("{text}{extra}")).unwrap();
    let validate = || queuebench(&["validate", dir.path().join("unique.toml").to_str().unwrap()]);
    write("\n[drive]\nunique_states = [\"queued\", \"running\", \"finished\"]\n", &text);
    let run = validate();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("dedupe.toml")
            && run.stderr.contains("drive.unique_states")
            && run.stderr.contains("`finished`"),
        "{}",
        run.stderr
    );
    write("\n[drive]\nunique_states = [\"queued\", \"done\"]\n", &text);
    let run = validate();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("must include \"queued\" and \"running\""), "{}", run.stderr);
    write("\n[drive]\nunique_period = \"60s\"\n", &text.replace("unique_key = \"k\"\n", ""));
    let run = validate();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("[result] unique_key"), "{}", run.stderr);
    // An enqueue that does not return the key: refused when its statements are prepared.
    write("", &text.replace("RETURNING id, k", "RETURNING id"));
    let run = validate();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unique_key = \"k\", but the enqueue returns no column `k` (it returns: id)"),
        "{}",
        run.stderr
    );
}
