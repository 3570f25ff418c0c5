//! `queuebench explore`: it finds the naive claims' duplicates in the shortest schedules (4 and
//! 6 steps), its printed psql script replayed on two real connections hands the job out twice
//! again, it finds nothing in SKIP LOCKED or in two adapters within a small bound, and it
//! refuses bounds it does not search.

use crate::common::pg::ScratchDb;
use crate::common::{bin, repo};
use std::time::Duration;

fn explore(args: &[&str]) -> (i32, String, String) {
    let o = bin().arg("explore").args(args).env_remove("DATABASE_URL").output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// A crash step's text in `steps`: `replay` terminates the window's backend.
const CRASH: &str = "-- crash\n";

/// The script's steps: (window, text, the step it returns after when it waits).
fn steps(script: &str) -> Vec<(String, String, Option<usize>)> {
    let mut out: Vec<(String, String, Option<usize>)> = Vec::new();
    for line in script.lines() {
        if let Some(head) = line.strip_prefix("-- step ") {
            let Some((_, rest)) = head.split_once(", window ") else {
                // The clock: its new time is already written into the statements after it.
                assert!(line.contains("the clock moves"), "only a tick has no window here: {line}");
                continue;
            };
            let window = rest.split([' ', ':']).next().unwrap().to_string();
            let after = rest.split_once("returns after step ").map(|(_, n)| n.trim_end_matches(')').parse().unwrap());
            // A crash: the window is closed (its backend terminated, as explore did).
            let text = if rest.contains("close the window") { CRASH.to_string() } else { String::new() };
            out.push((window, text, after));
        } else if !line.starts_with("-- ") && !line.is_empty() {
            let last = out.last_mut().expect("a statement under a step");
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    out
}

/// Plays the script on one connection per window, in order, a waiting step kept pending until
/// the step it returns after; returns every id each window's statements returned.
fn replay(url: &str, schema: &str, script: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (monitor, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        let mut pids = std::collections::BTreeMap::new();
        let mut conns = std::collections::BTreeMap::new();
        let mut got: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        let mut pending: Vec<(usize, String, tokio::task::JoinHandle<Vec<tokio_postgres::SimpleQueryMessage>>)> =
            Vec::new();
        for (n, (window, sql, after)) in steps(script).into_iter().enumerate() {
            if !conns.contains_key(&window) {
                let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(conn);
                c.batch_execute(&format!("SET search_path = {schema}")).await.unwrap();
                let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0);
                pids.insert(window.clone(), pid);
                conns.insert(window.clone(), std::sync::Arc::new(c));
            }
            if sql == CRASH {
                let pid = pids[&window];
                monitor.execute("SELECT pg_terminate_backend($1)", &[&pid]).await.unwrap();
                continue;
            }
            let c = conns[&window].clone();
            let task = tokio::spawn(async move { c.simple_query(&sql).await.expect("a step of the script") });
            match after {
                Some(k) => {
                    // As by hand: the next step goes once this one hangs on the other's lock.
                    let pid = pids[&window];
                    let blocked = "SELECT cardinality(pg_blocking_pids($1)) > 0";
                    let mut waited = 0;
                    while !monitor.query_one(blocked, &[&pid]).await.unwrap().get::<_, bool>(0) {
                        waited += 1;
                        assert!(waited < 2000, "step {} never waited on a lock", n + 1);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    pending.push((k - 1, window, task))
                }
                None => {
                    let rows = tokio::time::timeout(Duration::from_secs(20), task)
                        .await
                        .expect("a step that does not wait")
                        .unwrap();
                    got.entry(window).or_default().extend(ids(&rows));
                }
            }
            for (k, w, t) in std::mem::take(&mut pending) {
                if k == n {
                    let rows = tokio::time::timeout(Duration::from_secs(20), t)
                        .await
                        .expect("the waiting step returns")
                        .unwrap();
                    got.entry(w).or_default().extend(ids(&rows));
                } else {
                    pending.push((k, w, t));
                }
            }
        }
        assert!(pending.is_empty(), "every waiting step returned");
        got
    })
}

/// The ids a step's rows returned, then `changed:N` for each statement that changed N rows.
fn ids(messages: &[tokio_postgres::SimpleQueryMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) if r.columns().first().is_some_and(|c| c.name() == "id") => {
                r.get(0).map(String::from)
            }
            tokio_postgres::SimpleQueryMessage::CommandComplete(n) if *n > 0 => Some(format!("changed:{n}")),
            _ => None,
        })
        .collect()
}

/// Explores a duplicate-prone claim, then replays its script in a schema `prepare` made.
fn shortest_duplicate_replays(scenario: &str, steps_expected: usize) {
    let db = ScratchDb::new("explore");
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("found");
    let file = repo(scenario);
    let args = ["--database-url", &db.url, "--depth", "8", "--time", "240", "--out", dir.to_str().unwrap()];
    let (code, stdout, stderr) = explore(&[&[file.to_str().unwrap()], &args[..]].concat());
    assert_eq!(code, 1, "a counterexample exits 1: {stdout}\n{stderr}");
    assert!(stdout.contains(&format!(", {steps_expected} steps):")), "the shortest schedule: {stdout}");
    assert!(stdout.contains("exactly_once: a job was handed out twice"), "{stdout}");
    assert_eq!(db.harness_schemas(""), "", "explore drops its schema");
    assert!(stdout.contains("cause: racing claim"), "explain's cause for the job: {stdout}");
    let svg = std::fs::read_to_string(dir.join("counterexample.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("w2"), "the job's swimlane, both sessions' lanes: {svg}");
    let script = std::fs::read_to_string(dir.join("counterexample.sql")).unwrap();
    let got = replay_prepared(&db, &file, &[], "qb_explore", &script);
    let (a, b) = (&got["A"], &got["B"]);
    assert!(
        !a.is_empty() && a.iter().any(|id| b.contains(id)),
        "the replayed script hands one job to A and B: {got:?}"
    );
}

#[test]
fn the_naive_claim_duplicates_in_four_steps_and_its_script_does_it_again() {
    shortest_duplicate_replays("scenarios/naive-duplicates.toml", 4);
}

#[test]
fn select_then_update_duplicates_in_six_steps_and_its_script_does_it_again() {
    shortest_duplicate_replays("scenarios/naive-select-update.toml", 6);
}

#[test]
fn a_late_completion_lands_without_a_fence_and_not_with_a_token() {
    let db = ScratchDb::new("explore_stale");
    let file = repo("scenarios/gc-pause-fencing-none.toml");
    let base = [file.to_str().unwrap(), "--database-url", &db.url, "--crashes", "0", "--depth", "7", "--time", "240"];
    let inline = ["--set", "workers.strategy=skip-locked-inline-reclaim"];
    let (code, stdout, stderr) = explore(&[&base[..], &inline[..]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains(", 7 steps):") && stdout.contains("stale_completions_accepted:"), "{stdout}");
    assert!(stdout.contains("cause: stale completion landed"), "{stdout}");
    // Its script, replayed: B claims the job after the lease ran out, and A's completion,
    // sent after that, still changes the row.
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("found");
    let with_out = ["--out", dir.to_str().unwrap()];
    let (code, _, _) = explore(&[&base[..], &inline[..], &with_out[..]].concat());
    assert_eq!(code, 1);
    let script = std::fs::read_to_string(dir.join("counterexample.sql")).unwrap();
    let got = replay_prepared(&db, &file, &["workers.strategy=skip-locked-inline-reclaim"], "qb_explore", &script);
    let claimed = |w: &str| got[w].iter().find(|i| !i.starts_with("changed:")).cloned();
    assert!(claimed("A").is_some() && claimed("A") == claimed("B"), "both claimed the job: {got:?}");
    // A's claim changed the row, and so did its late completion (a fence would leave it at 1).
    let changes = got["A"].iter().filter(|i| i.starts_with("changed:")).count();
    assert_eq!(changes, 2, "A's claim and A's late completion both changed the row: {got:?}");
    let fenced = ["--set", "lease.fencing=token"];
    let (code, stdout, stderr) = explore(&[&base[..], &inline[..], &fenced[..]].concat());
    assert_eq!(code, 0, "the token fence turns the late completion away: {stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample up to depth 7") || stdout.contains("in the whole space"), "{stdout}");
}

#[test]
fn skip_locked_and_two_adapters_hold_within_a_small_bound() {
    let db = ScratchDb::new("explore_ok");
    for f in ["scenarios/skip-locked.toml", "scenarios/adapters/river.toml", "scenarios/adapters/que.toml"] {
        let file = repo(f);
        let args =
            [file.to_str().unwrap(), "--database-url", &db.url, "--depth", "5", "--time", "240", "--crashes", "0"];
        let (code, stdout, stderr) = explore(&args);
        assert_eq!(code, 0, "{f}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("no counterexample up to depth 5")
                || stdout.contains("no counterexample in the whole space"),
            "{f}: {stdout}"
        );
        assert!(stdout.contains("schedules run"), "{f}: the tally: {stdout}");
    }
}

#[test]
fn every_other_built_in_holds_and_a_search_that_claims_nothing_says_so() {
    let db = ScratchDb::new("explore_builtins");
    let file = repo("scenarios/skip-locked.toml");
    for strategy in ["for-update", "skip-locked-inline-reclaim", "priority", "priority-aging", "deadline-first"] {
        let set = format!("workers.strategy={strategy}");
        let args = [file.to_str().unwrap(), "--set", &set, "--database-url", &db.url, "--depth", "6", "--crashes", "0"];
        let (code, stdout, stderr) = explore(&args);
        assert_eq!(code, 0, "{strategy}: {stdout}\n{stderr}");
        assert!(stdout.contains("no counterexample") && !stdout.contains("VACUOUS"), "{strategy}: {stdout}");
    }
    // A canceller: select-then-update claims the job it selected after the cancel committed
    // (its update re-checks only the id); SKIP LOCKED's claim re-checks the status.
    let select = repo("scenarios/naive-select-update.toml");
    let cancel = ["--cancel", "--database-url", &db.url, "--depth", "6", "--crashes", "0"];
    let out = tempfile::tempdir().unwrap();
    let found = out.path().join("cancelled");
    let (code, stdout, stderr) =
        explore(&[&[select.to_str().unwrap()][..], &cancel[..], &["--out", found.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("cancelled_jobs_not_run:") && stdout.contains(", 5 steps):"), "{stdout}");
    // Its script, replayed: X's cancel changes the row, then A's claim takes the job anyway.
    let script = std::fs::read_to_string(found.join("counterexample.sql")).unwrap();
    let got = replay_prepared(&db, &select, &[], "qb_cancel", &script);
    assert!(got["X"].contains(&"changed:1".to_string()), "the cancel landed: {got:?}");
    assert!(got["A"].iter().any(|i| !i.starts_with("changed:")), "A's claim returned the cancelled job: {got:?}");
    let (code, stdout, stderr) = explore(&[&[file.to_str().unwrap()][..], &cancel[..]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // A producer's job among the preloaded one: SKIP LOCKED still hands each out once.
    let producer = ["--producer", "--database-url", &db.url, "--depth", "5", "--crashes", "0"];
    let (code, stdout, stderr) = explore(&[&[file.to_str().unwrap()][..], &producer[..]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("and a producer"), "{stdout}");
    // Pools claim their own class: explore's jobs are of the first session's pool, and a
    // quota claim's classes are taken in turn.
    for f in ["scenarios/starvation-pools.toml", "scenarios/starvation-quota.toml"] {
        let file = repo(f);
        let args = [file.to_str().unwrap(), "--database-url", &db.url, "--depth", "5", "--jobs", "2", "--crashes", "0"];
        let (code, stdout, stderr) = explore(&args);
        assert_eq!(code, 0, "{f}: {stdout}\n{stderr}");
        assert!(stdout.contains("no counterexample") && !stdout.contains("VACUOUS"), "{f}: {stdout}");
    }
    // A claim that matches nothing: a search that tested nothing is no pass (and the job left
    // waiting is not called a progress counterexample: nothing was ever claimed).
    let dir = tempfile::tempdir().unwrap();
    let never = custom_queue(dir.path(), r#"complete = "UPDATE jobs SET status = 'done' WHERE id = :id {fence}""#);
    let text = std::fs::read_to_string(&never).unwrap().replace("status = 'queued' AND", "status = 'ready' AND");
    std::fs::write(&never, text).unwrap();
    let (code, stdout, stderr) = explore(&[never.to_str().unwrap(), "--database-url", &db.url, "--depth", "5"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("VACUOUS: no session claimed a job") && !stdout.contains("COUNTEREXAMPLE"), "{stdout}");
}

#[test]
fn bounds_it_does_not_search_are_refused_before_any_database() {
    let file = repo("scenarios/skip-locked.toml");
    let (code, _, stderr) =
        explore(&[file.to_str().unwrap(), "--sessions", "4", "--database-url", "postgres://nobody@127.0.0.1:1/x"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--sessions") && stderr.contains("2 or 3"), "{stderr}");
    let (code, _, stderr) = explore(&[file.to_str().unwrap(), "--depth", "0"]);
    assert_eq!(code, 2, "{stderr}");
}

/// A scenario of one custom strategy (1 job, 2 workers, a 30 s lease and a token fence):
/// `extra` is more of the strategy's TOML (its complete, its reclaim).
fn custom_queue(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let file = dir.join("queue.toml");
    let text = format!(
        r#"name = "explore-liveness"
[jobs]
preload = 1
[workers]
count = 2
strategy = "mine"
[lease]
duration = "30s"
fencing = "token"
[strategies.mine]
claim = """
UPDATE jobs SET status = 'running', attempts = attempts + 1, claim_token = gen_random_uuid(), locked_by = :worker,
       locked_until = now() + make_interval(secs => :lease_secs)
WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' AND locked_by IS NULL ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED)
RETURNING id, attempts, claim_token"""
{extra}
"#
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// Makes a schema with `file`'s table and one waiting job (`prepare`, `sets` on top), then
/// replays the script there.
pub(crate) fn replay_prepared(
    db: &ScratchDb,
    file: &std::path::Path,
    sets: &[&str],
    schema: &str,
    script: &str,
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut cmd = bin();
    cmd.args(["prepare", file.to_str().unwrap(), "--set", "jobs.preload=1", "--set", "workers.batch=1"]);
    for set in sets {
        cmd.args(["--set", set]);
    }
    let o = cmd.args(["--database-url", &db.url, "--schema", schema]).output().unwrap();
    assert!(o.status.success(), "prepare: {}", String::from_utf8_lossy(&o.stderr));
    replay(&db.url, schema, script)
}

/// Replays a counterexample's script in a schema `prepare` made from `file`, and returns the
/// job's status where the script left it.
fn status_after_replay(db: &ScratchDb, file: &std::path::Path, script: &str, schema: &str) -> String {
    replay_prepared(db, file, &[], schema, script);
    let sql = format!("SELECT string_agg(status, ',' ORDER BY id) FROM {schema}.jobs");
    let out = std::process::Command::new("psql").args([db.url.as_str(), "-XAtc", &sql]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_queue_that_stops_finishing_jobs_is_caught_left_to_itself() {
    let db = ScratchDb::new("explore_live");
    let dir = tempfile::tempdir().unwrap();
    let url = db.url.as_str();
    let complete = r#"complete = "UPDATE jobs SET status = 'done' WHERE id = :id AND status = 'nowhere' {fence}""#;
    // A completion that never lands: refused to its own holder, no fault needed.
    let never = custom_queue(dir.path(), complete);
    let (code, stdout, stderr) =
        explore(&[never.to_str().unwrap(), "--database-url", url, "--crashes", "0", "--depth", "6"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains(", 4 steps):") && stdout.contains("completions_refused_unexplained:"), "{stdout}");

    // No reaper: a crash after the claim committed leaves the job running for good.
    let skip = repo("scenarios/skip-locked.toml");
    let found = dir.path().join("abandoned");
    let args = [skip.to_str().unwrap(), "--database-url", url, "--no-reaper", "--depth", "6"];
    let (code, stdout, stderr) = explore(&[&args[..], &["--out", found.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains(", 3 steps, then left to itself):"), "{stdout}");
    assert!(stdout.contains("jobs_left_abandoned: left to itself") && stdout.contains("faults_recovered:"), "{stdout}");
    assert!(stdout.contains("-- from here on, left to itself"), "{stdout}");
    let script = std::fs::read_to_string(found.join("counterexample.sql")).unwrap();
    assert_eq!(
        status_after_replay(&db, &skip, &script, "qb_abandoned"),
        "running",
        "the replay leaves the job running:\n{script}"
    );
    // With the reaper, the same crash comes back: nothing to find.
    let (code, stdout, stderr) = explore(&[skip.to_str().unwrap(), "--database-url", url, "--depth", "6"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample"), "{stdout}");
    // Unless the budget is one attempt: the reaper's reclaim spends it, and the job ends dead.
    let one = ["--set", "jobs.max_attempts=1"];
    let (code, stdout, stderr) =
        explore(&[skip.to_str().unwrap(), "--database-url", url, "--depth", "6", one[0], one[1]]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(", 3 steps, then left to itself):") && stdout.contains("dead_after_one_fault:"),
        "{stdout}"
    );

    // A reaper that requeues the job but forgets the holder's name, which the claim requires
    // empty: the job waits for ever.
    let dir2 = tempfile::tempdir().unwrap();
    let forgets = format!(
        "{}\nreclaim = \"UPDATE jobs SET status = 'queued', locked_until = NULL, claim_token = NULL \
         WHERE status = 'running' AND locked_until < now() RETURNING id, status\"",
        r#"complete = "UPDATE jobs SET status = 'done', locked_until = NULL WHERE id = :id {fence}""#
    );
    let forgetful = custom_queue(dir2.path(), &forgets);
    let found = dir2.path().join("waiting");
    let args = [forgetful.to_str().unwrap(), "--database-url", url, "--depth", "6", "--out", found.to_str().unwrap()];
    let (code, stdout, stderr) = explore(&args);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains(", 3 steps, then left to itself):"), "{stdout}");
    assert!(stdout.contains("progress: left to itself") && stdout.contains("1 waiting job never finished"), "{stdout}");
    let script = std::fs::read_to_string(found.join("counterexample.sql")).unwrap();
    assert_eq!(
        status_after_replay(&db, &forgetful, &script, "qb_waiting"),
        "queued",
        "the replay leaves it queued:\n{script}"
    );
    // --safety-only judges the history alone: that crash breaks nothing there.
    let (code, stdout, stderr) = explore(&[&args[..5], &["--safety-only"][..]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

/// An adapter whose tables reference each other (procrastinate's events reference its jobs),
/// explored on an ephemeral cluster, where the scenario's SQL runs as a role that is no superuser:
/// the snapshot is put back before every schedule, parents first, with the schema's triggers off.
#[test]
fn a_schema_with_foreign_keys_is_restored_as_a_role_that_is_no_superuser() {
    let file = repo("scenarios/adapters/procrastinate.toml");
    let args = [file.to_str().unwrap(), "--depth", "3", "--time", "120", "--crashes", "0"];
    let (code, stdout, stderr) = explore(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample up to depth 3"), "{stdout}\n{stderr}");
    assert!(!stderr.contains("restoring the schema's snapshot"), "{stderr}");
}

/// A check the scenario excuses (`"checks.dead_after_one_fault" = ">= 0"`: Solid Queue fails a
/// pruned process's job for good, by design) is no counterexample, as in a run; without the
/// expectation the same search finds it. The last words say what was searched, and no more.
#[test]
fn a_check_the_scenario_excuses_is_no_counterexample_and_the_answer_says_what_it_searched() {
    let db = ScratchDb::new("explore_scope");
    let dir = tempfile::tempdir().unwrap();
    let corpus = repo("corpus/solid_queue-589");
    std::fs::copy(corpus.join("fixed.toml"), dir.path().join("fixed.toml")).unwrap();
    let text = std::fs::read_to_string(corpus.join("scenario.toml")).unwrap().replace("buggy.toml", "fixed.toml");
    let excused = dir.path().join("excused.toml");
    std::fs::write(&excused, &text).unwrap();
    let strict = dir.path().join("strict.toml");
    std::fs::write(&strict, text.replace("\"checks.dead_after_one_fault\" = \">= 0\"", "")).unwrap();
    let args = ["--database-url", &db.url, "--depth", "4", "--time", "120"];
    let (code, stdout, stderr) = explore(&[&[excused.to_str().unwrap()][..], &args[..]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("excused, as a run judges them") && stdout.contains("dead_after_one_fault >= 0"),
        "{stdout}"
    );
    assert!(stdout.contains("no counterexample up to depth 4"), "{stdout}");
    assert!(!stdout.contains("at any depth"), "explore steps whole statements: {stdout}");
    for said in ["searched: whole statements", "a race inside one statement is out of its reach", "2 worker sessions"] {
        assert!(stdout.contains(said), "{said}: {stdout}");
    }
    assert!(stdout.contains("depth 4 reached") && stdout.contains("≤ 1 crash(es)"), "{stdout}");
    let (code, stdout, stderr) = explore(&[&[strict.to_str().unwrap()][..], &args[..]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(", 3 steps, then left to itself):") && stdout.contains("dead_after_one_fault:"),
        "{stdout}"
    );
}

/// A claim the server refuses (division by zero: SQLSTATE 22012) is the queue's error, with
/// its statement and SQLSTATE, not a search that merely tested nothing.
#[test]
fn a_claim_that_errors_is_reported_as_the_queues_error() {
    let db = ScratchDb::new("explore_claim_error");
    let dir = tempfile::tempdir().unwrap();
    let file = custom_queue(dir.path(), r#"complete = "UPDATE jobs SET status = 'done' WHERE id = :id {fence}""#);
    let text =
        std::fs::read_to_string(&file).unwrap().replace("ORDER BY id LIMIT", "AND 1 / attempts = 1 ORDER BY id LIMIT");
    std::fs::write(&file, text).unwrap();
    let (code, stdout, stderr) = explore(&[file.to_str().unwrap(), "--database-url", &db.url, "--depth", "3"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("QUEUE ERROR: the queue's claim failed"), "{stdout}");
    assert!(stdout.contains("22012") && stdout.contains("division by zero"), "{stdout}");
    assert!(stdout.contains("1 / attempts = 1"), "the statement: {stdout}");
    assert!(!stdout.contains("VACUOUS"), "{stdout}");
}

/// With a heartbeat that renews the fence (a timestamptz token it hands back), the completion
/// binds the newest token, as a run's does: no refused completion, no job left running.
#[test]
fn a_heartbeat_that_renews_the_token_hands_it_to_the_completion() {
    let db = ScratchDb::new("explore_heartbeat");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo("tests/fixtures/contract/timestamp-fence.toml"), dir.path().join("timestamp-fence.toml"))
        .unwrap();
    let file = dir.path().join("s.toml");
    let body = "name = \"renewing\"\nadapter = \"timestamp-fence.toml\"\n[jobs]\npreload = 1\n[lease]\nduration = \"5s\"\nheartbeat = \"1s\"\n";
    std::fs::write(&file, body).unwrap();
    let args =
        [file.to_str().unwrap(), "--database-url", &db.url, "--heartbeats", "1", "--crashes", "0", "--depth", "7"];
    let (code, stdout, stderr) = explore(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample") && stdout.contains("≤ 1 heartbeat(s)"), "{stdout}");
}

/// `--all` goes on past the first counterexample, for the shortest of each check broken, each
/// written with explore.json; `--ignore` sets a check aside so the search looks past it.
#[test]
fn all_finds_each_check_and_ignore_looks_past_one() {
    let db = ScratchDb::new("explore_all");
    let dir = tempfile::tempdir().unwrap();
    // A completion that never lands (4 steps), and a crash that leaves the job dead (3 steps).
    let complete = r#"complete = "UPDATE jobs SET status = 'done' WHERE id = :id AND status = 'nowhere' {fence}""#;
    let never = custom_queue(dir.path(), complete);
    let out = dir.path().join("found");
    let args = [never.to_str().unwrap(), "--database-url", &db.url, "--depth", "5"];
    let (code, stdout, stderr) = explore(&[&args[..], &["--all", "--out", out.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("2 counterexamples found: dead_after_one_fault, completions_refused_unexplained"),
        "{stdout}"
    );
    for f in ["counterexample-dead_after_one_fault.sql", "counterexample-completions_refused_unexplained.txt"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("explore.json")).unwrap()).unwrap();
    assert_eq!((json["sessions"].as_u64(), json["jobs"].as_u64()), (Some(2), Some(1)), "{json}");
    assert!(json["depth"].as_u64() >= Some(4) && json["schedules"].as_u64() > Some(0), "{json}");
    assert!(json["distinct_states"].is_u64() && json["naive_schedules"].is_number() && json["seconds"].is_number());
    let own: Vec<(&str, u64, &str)> = json["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["beside"] == false)
        .map(|v| (v["check"].as_str().unwrap(), v["steps"].as_u64().unwrap(), v["script"].as_str().unwrap()))
        .collect();
    assert_eq!(
        own,
        [
            ("dead_after_one_fault", 3, "counterexample-dead_after_one_fault.sql"),
            ("completions_refused_unexplained", 4, "counterexample-completions_refused_unexplained.sql")
        ],
        "{json}"
    );
    // The crash's dead job set aside: the refused completion is the answer.
    let (code, stdout, stderr) = explore(&[&args[..], &["--ignore", "dead_after_one_fault"]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("set aside (--ignore): dead_after_one_fault"), "{stdout}");
    assert!(stdout.contains("(mine, 4 steps):") && stdout.contains("completions_refused_unexplained:"), "{stdout}");
    let (code, _, stderr) = explore(&[&args[..], &["--ignore", "no_such_check"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--ignore") && stderr.contains("no_such_check"), "{stderr}");
}

/// While it searches, a whole line on stderr every `--progress` (10 s by default): the depth,
/// the schedules, the states, the pace. `off` is silent.
#[test]
fn the_search_says_how_far_it_got_on_stderr() {
    let db = ScratchDb::new("explore_progress");
    let file = repo("scenarios/skip-locked.toml");
    let args = [file.to_str().unwrap(), "--database-url", &db.url, "--depth", "2", "--crashes", "0"];
    let (code, stdout, stderr) = explore(&[&args[..], &["--progress", "1ms"]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let line = stderr.lines().find(|l| l.starts_with("explore: ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains(", depth 1,") && line.contains("schedules run") && line.ends_with("schedules/s"), "{line}");
    let (code, stdout, stderr) = explore(&[&args[..], &["--progress", "off"]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(!stderr.contains("schedules/s"), "{stderr}");
    let (code, _, stderr) = explore(&[&args[..], &["--progress", "soon"]].concat());
    assert_eq!(code, 2, "{stderr}");
}

/// An adapter that declares an exclusion key (procrastinate 0.2.1's lock, every job of one lock
/// here) is judged by `mutual_exclusion` too: the buggy fetch's second claim of a held lock is
/// refused by the lock table's primary key (23505) in 3 steps; the fixed fetch skips the job.
#[test]
fn a_queue_with_an_exclusion_key_is_judged_by_mutual_exclusion() {
    let db = ScratchDb::new("explore_exclusion");
    let dir = tempfile::tempdir().unwrap();
    for f in ["scenario.toml", "buggy.toml", "fixed.toml"] {
        let text = std::fs::read_to_string(repo("corpus/procrastinate-103").join(f)).unwrap();
        std::fs::write(dir.path().join(f), text.replace("locks = 4", "locks = 1")).unwrap();
    }
    let file = dir.path().join("scenario.toml");
    let args = [file.to_str().unwrap(), "--database-url", &db.url, "--jobs", "2", "--crashes", "0", "--ticks", "0"];
    let (code, stdout, stderr) = explore(&[&args[..], &["--depth", "4"]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("judged by:") && stdout.contains(", mutual_exclusion"), "{stdout}");
    assert!(
        stdout.contains(", 3 steps):") && stdout.contains("mutual_exclusion: ") && stdout.contains("23505"),
        "{stdout}"
    );
    let (code, stdout, stderr) = explore(&[&args[..], &["--depth", "6", "--set", "adapter=fixed.toml"]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // Where no key is declared, the header does not name the check.
    let skip = repo("scenarios/skip-locked.toml");
    let (_, stdout, _) =
        explore(&[skip.to_str().unwrap(), "--database-url", &db.url, "--depth", "1", "--crashes", "0"]);
    assert!(stdout.contains("judged by:") && !stdout.contains("mutual_exclusion"), "{stdout}");
}
