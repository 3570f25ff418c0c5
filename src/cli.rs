//! Command-line definitions only (clap). Behaviour lives in `lib.rs`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "queuebench",
    version,
    about = "Load-testing and correctness harness for PostgreSQL job queues",
    after_help = "Exit codes: 0 every expectation met · 1 an expectation failed · 2 usage or scenario error · \
                  3 infrastructure error (database, cluster) · 130 interrupted"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios against a real PostgreSQL and check what happened.
    Run(RunArgs),
    /// Rebuild summary.csv, charts/ and report.html of a finished run from its files (no database).
    Report {
        /// A run folder (holding summary.json and timeseries.csv).
        dir: PathBuf,
    },
    /// Check scenario files without running them.
    Validate {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Print every SQL statement a scenario will execute (or a pgbench script of it).
    Sql {
        file: PathBuf,
        #[command(flatten)]
        overrides: Overrides,
        /// Print an equivalent pgbench script instead.
        #[arg(long)]
        pgbench: bool,
    },
    /// Create a scenario's schema and preload its jobs in a server, then stop (for pgbench comparisons).
    Prepare {
        file: PathBuf,
        #[command(flatten)]
        overrides: Overrides,
        #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
        database_url: String,
        /// Schema to create (it must not exist).
        #[arg(long)]
        schema: String,
    },
    /// Start an ephemeral cluster, run a command with DATABASE_URL pointing at it, then remove the cluster.
    Cluster {
        /// Apply this scenario's [postgres.settings] to the cluster.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// The command and its arguments (after --).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

#[derive(Debug, Clone, Default, Args)]
pub struct Overrides {
    /// Override a scenario key, e.g. --set workers.count=16 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// `--postgres`: where the run's PostgreSQL comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PostgresMode {
    Ephemeral,
    Docker,
    Url,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Scenario files; several run one after another.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    /// An existing server instead of an ephemeral cluster (the run gets its own schema there).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Where PostgreSQL comes from: ephemeral (a throwaway cluster from this machine's binaries;
    /// the default), docker (a throwaway container; needs the `docker` build feature and a Docker
    /// engine) or url (--database-url; implied by it).
    #[arg(long, value_enum)]
    pub postgres: Option<PostgresMode>,
    /// The image for --postgres docker, NAME:TAG.
    #[arg(long, default_value = crate::db::docker::DEFAULT_IMAGE)]
    pub postgres_image: String,
    /// The run's output folder (with several files: one subfolder per scenario).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed for every random choice (overrides the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the run's schema (URL mode) or the cluster's data dir (ephemeral) for inspection.
    #[arg(long)]
    pub keep: bool,
    /// Run against a --database-url host that is not local (loopback or a unix socket).
    #[arg(long)]
    pub yes: bool,
    /// Print only the verdict line.
    #[arg(long, short)]
    pub quiet: bool,
}
