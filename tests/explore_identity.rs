//! `queuebench explore` on queues that keep what a run takes for granted in other shapes: times
//! as integer epoch seconds (the virtual clock starts near the present, not in 2100), job ids as
//! text that reads as a number, and a column holding the claiming backend's pid (a state names
//! a session, not its pid of the moment).

use crate::common::pg::ScratchDb;
use crate::common::{bin, repo};

fn explore(args: &[&str]) -> (i32, String, String) {
    let o = bin().arg("explore").args(args).args(["--progress", "off"]).env_remove("DATABASE_URL").output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// The timestamp-fence fixture, edited by `edit`, beside a one-job scenario; the scenario's path.
fn fence_queue(dir: &std::path::Path, edit: impl Fn(String) -> String) -> std::path::PathBuf {
    let text = std::fs::read_to_string(repo("tests/fixtures/contract/timestamp-fence.toml")).unwrap();
    std::fs::write(dir.join("queue.toml"), edit(text)).unwrap();
    let file = dir.join("s.toml");
    let body = "name = \"shapes\"\nadapter = \"queue.toml\"\n[jobs]\npreload = 1\n[lease]\nduration = \"5s\"\n";
    std::fs::write(&file, body).unwrap();
    file
}

#[test]
fn epoch_seconds_in_an_integer_and_text_ids_are_followed() {
    let db = ScratchDb::new("explore_shapes");
    // The lease's time as integer epoch seconds: in 2100 the claim's cast overflowed (22003).
    let dir = tempfile::tempdir().unwrap();
    let epoch = fence_queue(dir.path(), |t| {
        t.replace("locked_at timestamptz", "locked_at integer")
            .replace("locked_at = clock_timestamp()", "locked_at = extract(epoch FROM clock_timestamp())::integer")
    });
    let args = ["--database-url", &db.url, "--depth", "6", "--crashes", "0"];
    let (code, stdout, stderr) = explore(&[&[epoch.to_str().unwrap()][..], &args[..]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample") && !stdout.contains("QUEUE ERROR"), "{stdout}");
    // Ids kept as text that read as numbers ('1'): the completion binds '1', the observer reads '1'.
    let dir = tempfile::tempdir().unwrap();
    let text = fence_queue(dir.path(), |t| {
        t.replace("id        bigserial   PRIMARY KEY", "id        text        PRIMARY KEY")
            .replace("INSERT INTO q (n) VALUES (:n)", "INSERT INTO q (id, n) VALUES (:n::text, :n)")
            .replace("INSERT INTO q (n) SELECT g FROM", "INSERT INTO q (id, n) SELECT g::text, g FROM")
    });
    let (code, stdout, stderr) = explore(&[&[text.to_str().unwrap()][..], &args[..]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample") && !stdout.contains("missing from the table"), "{stdout}");
}

/// A claim that writes its backend's pid into the row (`pg_backend_pid()`, as session-lock
/// queues name their holder): a session reconnects after a crash with another pid, and the
/// states that differ only in it are one. The search meets as many distinct states as with
/// the worker's name in that column.
#[test]
fn a_column_holding_the_backend_pid_names_the_session_in_a_state() {
    let db = ScratchDb::new("explore_pids");
    let dir = tempfile::tempdir().unwrap();
    let named = dir.path().join("named.toml");
    let text = r#"name = "explore-pids"
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
complete = "UPDATE jobs SET status = 'done' WHERE id = :id {fence}"
"#;
    std::fs::write(&named, text).unwrap();
    let pids = dir.path().join("pids.toml");
    std::fs::write(&pids, text.replace("locked_by = :worker", "locked_by = pg_backend_pid()::text")).unwrap();
    let states = |file: &std::path::Path| {
        let (code, stdout, stderr) = explore(&[file.to_str().unwrap(), "--database-url", &db.url, "--depth", "5"]);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        let tally = stdout.lines().find(|l| l.contains("distinct states")).unwrap_or_else(|| panic!("{stdout}"));
        let before = tally.split(" distinct states").next().unwrap();
        before.rsplit(' ').next().unwrap().parse::<u64>().unwrap_or_else(|_| panic!("{tally}"))
    };
    let (by_name, by_pid) = (states(&named), states(&pids));
    assert!(by_name > 0);
    assert_eq!(by_pid, by_name, "a pid names a session: the same states as the worker's name");
}
