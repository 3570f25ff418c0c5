//! The conformance matrix, in the shape of River's driver test suite: one table of shipped
//! scenarios (rows) run over every transport the worker round has (columns). In each cell the
//! run either passes its scenario's expectations and `queuebench check`, re-verifying the
//! saved history, agrees with it, or the transport lacks a capability the scenario needs and
//! the scenario is refused before anything starts (exit 2), naming the capability. Across a
//! row, every transport that ran passes and fails the same checks.
//!
//! A new transport: implement `run::worker::transport::Transport`, declare its capabilities
//! (`model::transport`), and add a column to [`COLUMNS`].
//!
//! Each scenario is kept small with `--set`, so a cell takes seconds. Run the matrix alone:
//! `cargo test --test suite conformance::`.

use crate::common::{bin, queuebench, repo};
use queuebench::model::pooler::PoolMode;
use queuebench::model::transport::{Capability, TransportKind};
use serde_json::Value;

/// A column: a transport, how a scenario is put on it, and what it declares.
struct Column {
    name: &'static str,
    sets: &'static [&'static str],
    kind: TransportKind,
    /// The pooler between the transport and PostgreSQL, which takes capabilities away from its
    /// declaration (`PoolMode::withholds`): in transaction pooling no worker has a backend of
    /// its own.
    pooler: Option<PoolMode>,
    /// What the summary shows of it (the run really went over this transport).
    shows: fn(&Value) -> Result<(), String>,
}

const COLUMNS: [Column; 3] = [
    Column { name: "direct", sets: &[], kind: TransportKind::Direct, pooler: None, shows: direct },
    Column {
        name: "direct through PgBouncer (transaction pooling)",
        sets: &["postgres.pgbouncer={ pool_mode = \"transaction\" }"],
        kind: TransportKind::Direct,
        pooler: Some(PoolMode::Transaction),
        shows: through_pgbouncer,
    },
    Column {
        name: "sqlx pool",
        sets: &["workers.pool={ size = 2, acquire_timeout = \"10s\" }"],
        kind: TransportKind::Pool,
        pooler: None,
        shows: pooled,
    },
];

fn acquires(s: &Value) -> u64 {
    s["latency_ms"]["acquire"]["count"].as_u64().unwrap_or(0)
}

fn direct(s: &Value) -> Result<(), String> {
    match (acquires(s), &s["fingerprint"]["pooler"]) {
        (0, Value::Null) => Ok(()),
        (n, p) => Err(format!("a direct run with {n} acquires and pooler {p}")),
    }
}

fn through_pgbouncer(s: &Value) -> Result<(), String> {
    match (acquires(s), s["fingerprint"]["pooler"].as_str()) {
        (0, Some("pgbouncer transaction")) => Ok(()),
        (n, p) => Err(format!("through PgBouncer, yet {n} acquires and pooler {p:?}")),
    }
}

fn pooled(s: &Value) -> Result<(), String> {
    match (acquires(s), &s["fingerprint"]["pooler"]) {
        (n, Value::Null) if n > 0 => Ok(()),
        (n, p) => Err(format!("on the sqlx pool, yet {n} acquires and pooler {p}")),
    }
}

/// A row: a shipped scenario, the overrides that keep it small, and what it needs of its
/// transport.
struct Row {
    scenario: &'static str,
    sets: &'static [&'static str],
    needs: &'static [Capability],
}

/// The cell's verdict: it ran (its checks: name and whether it found nothing), or it was
/// refused naming this capability.
#[derive(Debug)]
enum Cell {
    Ran(Vec<(String, bool)>),
    Refused(Capability),
}

fn command(args: &[&str]) -> (i32, String, String) {
    let o = bin().args(args).env_remove("DATABASE_URL").output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// One cell: the row's scenario over the column's transport.
fn cell(row: &Row, col: &Column) -> Cell {
    let scenario = repo(row.scenario);
    let mut args = vec!["run", scenario.to_str().unwrap(), "--quiet"];
    for set in row.sets.iter().chain(col.sets) {
        args.extend(["--set", set]);
    }
    let at = format!("{} over {}", row.scenario, col.name);
    let withheld = col.pooler.map_or(&[][..], PoolMode::withholds);
    let lacking = row.needs.iter().find(|c| !col.kind.can(**c) || withheld.contains(c));
    if let Some(&lacks) = lacking {
        // Refused up front, by `validate` and `run` alike, naming the capability.
        let mut validate = args.clone();
        validate[0] = "validate";
        validate.retain(|a| *a != "--quiet");
        for a in [validate, args] {
            let (code, out, err) = command(&a);
            assert_eq!(code, 2, "{at}: {} must be refused (exit 2)\n{out}\n{err}", a[0]);
            let named = format!("capability `{}`", lacks.name());
            assert!(err.contains(&named), "{at}: the refusal names {named}:\n{err}");
        }
        return Cell::Refused(lacks);
    }
    let r = queuebench(&args);
    assert_eq!(r.code, 0, "{at}: the scenario's expectations hold\n{}\n{}", r.stdout, r.stderr);
    let summary = r.summary();
    if let Err(e) = (col.shows)(&summary) {
        panic!("{at}: {e}");
    }
    // `check` re-verifies the saved history and agrees with the run.
    let dir = r.out.to_str().unwrap();
    let (code, out, err) = command(&["check", dir, "--json"]);
    assert_eq!(code, r.code, "{at}: check exits as the run did\n{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{at}: {e}\n{out}\n{err}"));
    assert_eq!(v["agrees_with_run"], true, "{at}: {out}");
    assert_eq!(v["checks"], summary["checks"], "{at}: the same checks, counts and examples");
    r.assert_clean();
    let checks = summary["checks"].as_array().unwrap_or_else(|| panic!("{at}: no checks"));
    Cell::Ran(
        checks.iter().map(|c| (c["name"].as_str().unwrap().to_string(), c["violations"].as_u64() == Some(0))).collect(),
    )
}

/// The row over every column: each cell as the declarations say, and the same checks passing
/// wherever it ran.
fn row(row: Row) {
    // A cell the row's needs say runs fails if validation refuses it, and one they say is
    // refused fails if it runs: the test's list of needs is checked against validation's.
    let cells: Vec<(&Column, Cell)> = COLUMNS.iter().map(|c| (c, cell(&row, c))).collect();
    let ran: Vec<&(&Column, Cell)> = cells.iter().filter(|(_, c)| matches!(c, Cell::Ran(_))).collect();
    assert!(!ran.is_empty(), "{}: no transport ran it", row.scenario);
    let Cell::Ran(first) = &ran[0].1 else { unreachable!() };
    for (col, cell) in &ran[1..] {
        let Cell::Ran(checks) = cell else { unreachable!() };
        assert_eq!(checks, first, "{}: the same checks pass over {} as over {}", row.scenario, col.name, ran[0].0.name);
    }
    let table: Vec<String> = cells
        .iter()
        .map(|(col, c)| match c {
            Cell::Ran(_) => format!("{}: ran", col.name),
            Cell::Refused(cap) => format!("{}: refused ({})", col.name, cap.name()),
        })
        .collect();
    eprintln!("{}: {}", row.scenario, table.join(" · "));
}

#[test]
fn crash() {
    row(Row {
        scenario: "scenarios/crash-recovery.toml",
        sets: &[
            "jobs.preload=600",
            "expect={ \"faults.by_kind.crash\" = \"> 0\", \"jobs.completed\" = \"== 600\", \"jobs.lost\" = \"== 0\", \
             \"executions.duplicate\" = \"== 0\", \"checks.attempts_within_budget\" = \"== 0\" }",
        ],
        needs: &[],
    });
}

#[test]
fn pause() {
    row(Row { scenario: "scenarios/gc-pause-fencing-token.toml", sets: &[], needs: &[] });
}

#[test]
fn lock_hold() {
    row(Row { scenario: "scenarios/lock-hold-for-update.toml", sets: &[], needs: &[] });
}

#[test]
fn cancel() {
    row(Row { scenario: "scenarios/cancel-waiting-jobs.toml", sets: &[], needs: &[] });
}

#[test]
fn burn_down() {
    row(Row {
        scenario: "scenarios/skip-locked.toml",
        sets: &[
            "jobs.preload=1000",
            "expect={ \"jobs.completed\" = \"== 1000\", \"executions.duplicate\" = \"== 0\", \"jobs.lost\" = \"== 0\" }",
        ],
        needs: &[],
    });
}

#[test]
fn open_model() {
    row(Row {
        scenario: "scenarios/open-model-overload.toml",
        sets: &[
            "run.phases=[{ name = \"steady\", duration = \"2s\" }, { name = \"overload\", duration = \"2s\", rate = 3.0 }]",
            // The shipped queue-wait floors need the full 16 s of phases; the rest hold here.
            "expect={ \"producer.unsent\" = \"== 0\", \"jobs.lost\" = \"== 0\", \"executions.duplicate\" = \"== 0\" }",
        ],
        needs: &[],
    });
}

/// Hold-transaction keeps a transaction through the work: PgBouncer's transaction pooling
/// carries it, the pool does not hold one.
#[test]
fn burn_down_holding_the_transaction() {
    row(Row {
        scenario: "scenarios/skip-locked-hold.toml",
        sets: &[
            "jobs.preload=300",
            "expect={ \"jobs.completed\" = \"== 300\", \"executions.duplicate\" = \"== 0\", \"jobs.lost\" = \"== 0\" }",
        ],
        needs: &[Capability::HoldTransaction],
    });
}

/// `kill_backend` terminates a worker's own backend: only the direct transport without a
/// transaction pooler has one.
#[test]
fn killed_backends() {
    row(Row { scenario: "scenarios/backend-kill.toml", sets: &[], needs: &[Capability::OwnBackend] });
}

/// The matrix's columns are every transport there is: a transport kind without a column is a
/// transport the matrix does not prove.
#[test]
fn every_transport_has_a_column() {
    for kind in TransportKind::ALL {
        assert!(COLUMNS.iter().any(|c| c.kind == kind), "no column runs the {} transport", kind.name());
    }
    // The pool's refusals are what it does not declare; each row's needs are capabilities.
    assert!(TransportKind::Pool.lacks().any(|c| c == Capability::HoldTransaction));
}
