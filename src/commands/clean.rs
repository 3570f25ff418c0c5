//! `queuebench clean`: lists and removes what earlier runs left behind: ephemeral cluster
//! folders (`$TMPDIR/queuebench-<pid>-*`) whose harness and postmaster are gone, with their
//! size, and, with `--database-url`, the `queuebench_<run id>` (and `queuebench_validate_*`)
//! schemas no live run is using. On a terminal it asks first; `--yes` skips the question;
//! without a terminal and without `--yes` it only lists, and says so. Nothing else is touched:
//! only folders with queuebench's prefix and its `harness.pid`, only schemas with its names
//! *and* its mark (the comment it wrote when it created them, naming the process that owns
//! them, `db::schema::Mark`) whose owner is gone. A look-alike without the mark is listed as
//! not queuebench's and left alone: a name is no proof.

use crate::db::Database;
use crate::db::ephemeral::{self, LeftoverCluster};
use crate::db::schema::Mark;
use crate::db::statements::LEFTOVER_SCHEMAS;
use crate::error::{Error, ExitCode, Result};
use crate::options::Target;
use std::io::{BufRead, IsTerminal, Write};

/// A schema named like an earlier run's, the bytes of its tables, and whose it is.
struct LeftoverSchema {
    name: String,
    bytes: i64,
    whose: Whose,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Whose {
    /// queuebench's mark, its process gone: removable.
    Gone,
    /// queuebench's mark, its process still running here: left alone.
    Running(i32),
    /// No mark: not queuebench's, whatever its name. Left alone.
    NotOurs,
}

fn whose(comment: &str) -> Whose {
    match Mark::parse(comment) {
        Some(m) if m.owner_alive() => Whose::Running(m.pid),
        Some(_) => Whose::Gone,
        None => Whose::NotOurs,
    }
}

/// `target`: the --database-url server whose schemas are also cleaned (an ephemeral target:
/// cluster folders only). `yes`: remove without asking.
pub(crate) async fn clean(target: &Target, yes: bool) -> Result<ExitCode> {
    let clusters = ephemeral::leftover_clusters();
    let db = match target {
        Target::Url { url, allow_remote } => {
            Some(Database::open(Some(url), &[], String::new(), false, *allow_remote).await?)
        }
        Target::Ephemeral | Target::Docker { .. } => None,
    };
    let (schemas, kept): (Vec<_>, Vec<_>) = match &db {
        Some(db) => leftover_schemas(db).await?.into_iter().partition(|s| s.whose == Whose::Gone),
        None => (Vec::new(), Vec::new()),
    };
    let where_ = db.as_ref().map(|d| d.shown().to_string());
    list_kept(&kept, where_.as_deref());
    if clusters.is_empty() && schemas.is_empty() {
        let also = where_.as_ref().map_or(String::new(), |w| format!(", no queuebench schemas of earlier runs in {w}"));
        println!("nothing to clean: no cluster folders of gone queuebench runs{also}");
        return Ok(ExitCode::Passed);
    }
    list(&clusters, &schemas, where_.as_deref());
    if !decide(yes, clusters.len() + schemas.len()) {
        return Ok(ExitCode::Passed);
    }
    let mut failed = 0;
    for c in &clusters {
        match ephemeral::remove_leftover(c) {
            Ok(()) => println!("removed {}", c.path.display()),
            Err(e) => {
                failed += 1;
                eprintln!("warning: {} was not removed: {e}", c.path.display());
            }
        }
    }
    if let Some(db) = &db {
        failed += drop_schemas(db, &schemas).await?;
    }
    Ok(if failed == 0 { ExitCode::Passed } else { ExitCode::Infrastructure })
}

/// Look-alikes and schemas whose run still runs: named, never removed.
fn list_kept(kept: &[LeftoverSchema], where_: Option<&str>) {
    for s in kept {
        let why = match s.whose {
            Whose::Running(pid) => format!("its run, pid {pid}, is still running"),
            _ => "not ours: it has a queuebench name but not the mark queuebench writes on the schemas it creates"
                .to_string(),
        };
        println!("left alone: schema {} in {} ({why})", s.name, where_.unwrap_or_default());
    }
}

fn list(clusters: &[LeftoverCluster], schemas: &[LeftoverSchema], where_: Option<&str>) {
    println!("left by earlier queuebench runs:");
    for c in clusters {
        println!(
            "  cluster folder {} ({}; its harness, pid {}, and its postmaster are gone)",
            c.path.display(),
            mb(c.bytes),
            c.harness_pid
        );
    }
    for s in schemas {
        println!("  schema {} in {} ({})", s.name, where_.unwrap_or_default(), mb(s.bytes.max(0) as u64));
    }
}

/// Whether to remove: `--yes`, or a yes on the terminal; else list only, saying so.
fn decide(yes: bool, n: usize) -> bool {
    if yes {
        return true;
    }
    if !std::io::stdin().is_terminal() {
        println!(
            "not removed: no terminal to ask on; run `queuebench clean --yes` (with the same options) to remove them"
        );
        return false;
    }
    print!("remove {}? [y/N] ", if n == 1 { "it".to_string() } else { format!("these {n}") });
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    let go = matches!(answer.trim().to_lowercase().as_str(), "y" | "yes");
    if !go {
        println!("nothing removed");
    }
    go
}

async fn leftover_schemas(db: &Database) -> Result<Vec<LeftoverSchema>> {
    let client = db.connect_admin().await?;
    let rows = client.query(LEFTOVER_SCHEMAS, &[&""]).await.map_err(|e| db_error("listing leftover schemas", &e))?;
    Ok(rows.iter().map(|r| LeftoverSchema { name: r.get(0), bytes: r.get(1), whose: whose(r.get(2)) }).collect())
}

/// Drops each schema (CASCADE: what a run made lives in it); returns how many failed.
async fn drop_schemas(db: &Database, schemas: &[LeftoverSchema]) -> Result<usize> {
    let client = db.connect_admin().await?;
    let mut failed = 0;
    for s in schemas {
        // The names matched queuebench's own patterns (letters, digits, _); quoted all the same.
        let sql = format!("DROP SCHEMA {} CASCADE", crate::quote::ident(&s.name));
        match client.batch_execute(&sql).await {
            Ok(()) => println!("dropped schema {}", s.name),
            Err(e) => {
                failed += 1;
                eprintln!("warning: schema {} was not dropped: {}", s.name, crate::db::error_text(&e));
            }
        }
    }
    Ok(failed)
}

fn db_error(action: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: action.to_string(), target: None, sql: crate::db::sql(e), hint: None }
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::{Whose, whose};
    use crate::db::schema::Mark;

    #[test]
    fn only_a_marked_schema_whose_run_is_gone_is_removable() {
        assert_eq!(whose(""), Whose::NotOurs);
        assert_eq!(whose("the app's archive"), Whose::NotOurs);
        assert_eq!(whose("queuebench"), Whose::NotOurs);
        assert_eq!(whose(&Mark::ours().text()), Whose::Running(std::process::id() as i32));
        let gone = Mark { pid: i32::MAX - 7, host: Mark::ours().host };
        assert_eq!(whose(&gone.text()), Whose::Gone);
        assert_eq!(Mark::parse(&gone.text()), Some(gone));
    }

    #[test]
    fn sizes_read_in_megabytes() {
        assert_eq!(super::mb(41_200_000), "41.2 MB");
    }
}
