//! `cargo xtask TASK …`: queuebench's own tasks, in Rust over the library's types. The smoke
//! gate CI runs, and the measurements whose tables the docs quote: every median is compare's
//! (`queuebench::stats`), every summary.json is read into `RunSummary`. docs/development.md
//! ("Scripts") lists them beside the few shell scripts left in scripts/.

mod error;
mod qb;
mod stats;
mod summary;
mod tasks;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "queuebench's own tasks: the smoke gate and the tables the docs quote")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

/// Every task builds (or finds) the binary it drives: the release build, or the one QUEUEBENCH
/// names (the smoke gate: the debug build as it is).
#[derive(Subcommand)]
enum Task {
    /// CI's smoke gate: every shipped scenario against its expectations, and `check` over each
    /// run folder agreeing with the run (the debug build; skips what QUEUEBENCH_SMOKE_LEDGER
    /// says the test suite already ran).
    Smoke {
        /// Where the run folders go.
        out: PathBuf,
    },
    /// Run-to-run noise of scenarios (docs/gating.md's default tolerances): a Markdown table.
    Noise {
        #[arg(long, default_value_t = 10)]
        runs: u32,
        /// Also write every run's values (scenario, run, metric, value) as CSV.
        #[arg(long)]
        raw: Option<PathBuf>,
        /// Default: scenarios/skip-locked.toml and scenarios/skip-locked-hold.toml.
        scenarios: Vec<PathBuf>,
    },
    /// The direct client against the sqlx pool at several sizes (docs/pool.md).
    PoolCurve {
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        #[arg(long, value_delimiter = ',', default_value = "2,4,8")]
        sizes: Vec<u32>,
    },
    /// FOR UPDATE against SKIP LOCKED with the transaction held while working.
    ConvoyRatio {
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// A pause past the lease under each fencing mode (docs/faults.md).
    FencingTable,
    /// Failover under load, asynchronous against synchronous replication (docs/failover.md).
    FailoverTable {
        #[arg(long, default_value_t = 3)]
        runs: u32,
    },
    /// What TLS costs (docs/production-postgres.md).
    TlsBench {
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        #[arg(long, value_delimiter = ',', default_value = "machine,ephemeral")]
        targets: Vec<String>,
        #[arg(long, value_delimiter = ',', default_value = "8,32")]
        workers: Vec<u32>,
    },
    /// What PgBouncer costs, and pool saturation (docs/production-postgres.md).
    PgbouncerBench {
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        #[arg(long, value_delimiter = ',', default_value = "8,32")]
        workers: Vec<u32>,
        #[arg(long, value_delimiter = ',', default_value = "4,8")]
        pools: Vec<u32>,
    },
    /// Every shipped adapter through PgBouncer's pool modes (docs/production-postgres.md).
    PgbouncerTable {
        #[arg(long, default_value = "session transaction")]
        modes: String,
    },
    /// Agents measured: one machine against 1, 2 and 4 agents (docs/agents.md).
    AgentsBench {
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        #[arg(long, default_value_t = 20_000)]
        jobs: u64,
        /// Jobs of the merge's run over 4 agents.
        #[arg(long, default_value_t = 1_000_000)]
        big: u64,
        #[arg(long)]
        no_big: bool,
        #[arg(long)]
        no_netns: bool,
    },
    /// The reference clients at full size (docs/clients.md).
    ClientsTable {
        #[arg(long, default_value_t = 5000)]
        jobs: u64,
        #[arg(long, default_value = "pg-boss,graphile-worker,procrastinate,pgqueuer")]
        only: String,
    },
}

fn main() {
    let cli = Cli::parse();
    use tasks::{repeats, smoke, tables};
    let result = match cli.task {
        Task::Smoke { out } => smoke::smoke(&out),
        Task::Noise { runs, raw, scenarios } => repeats::noise(runs, raw.as_deref(), &scenarios),
        Task::PoolCurve { rounds, sizes } => repeats::pool_curve(rounds, &sizes),
        Task::ConvoyRatio { rounds } => repeats::convoy_ratio(rounds),
        Task::FencingTable => tables::fencing_table(),
        Task::FailoverTable { runs } => tables::failover_table(runs),
        Task::TlsBench { rounds, targets, workers } => repeats::tls_bench(rounds, &targets, &workers),
        Task::PgbouncerBench { rounds, workers, pools } => repeats::pgbouncer_bench(rounds, &workers, &pools),
        Task::PgbouncerTable { modes } => tables::pgbouncer_table(&modes),
        Task::AgentsBench { rounds, jobs, big, no_big, no_netns } => {
            repeats::agents_bench(rounds, jobs, (!no_big).then_some(big), !no_netns)
        }
        Task::ClientsTable { jobs, only } => tables::clients_table(jobs, &only),
    };
    if let Err(e) = result {
        eprintln!("xtask: {e}");
        std::process::exit(e.exit_code());
    }
}
