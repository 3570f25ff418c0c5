//! `cargo xtask TASK …`: queuebench's own tasks, in Rust over the library's types. The smoke
//! gate CI runs, and the measurements whose tables the docs quote: every median is compare's
//! (`queuebench::stats`), every summary.json is read into `RunSummary`. docs/development.md
//! ("Scripts") lists them beside the few shell scripts left in scripts/.

mod cluster;
mod error;
mod hog;
mod measure;
mod qb;
mod stats;
mod summary;
mod tasks;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "queuebench's own tasks: the smoke gate and the tables the docs quote"
)]
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
    /// The integration suite with each test's time: the slowest, and per module (CI's time).
    TestTimes {
        #[arg(long, default_value_t = 25)]
        top: usize,
        /// The raw output (default: a temporary file, named at the end).
        #[arg(long)]
        out: Option<PathBuf>,
        /// A test name filter, as cargo test takes it.
        #[arg(last = true)]
        filter: Vec<String>,
    },
    /// The benchmark suite: is the harness ever the bottleneck? (docs/performance.md; scripts/bench.sh)
    Bench {
        /// Every section small (~2 minutes): a check of the task, the figures mean nothing.
        #[arg(long)]
        quick: bool,
        /// Default: results/bench-<time>/.
        #[arg(long)]
        out: Option<PathBuf>,
        /// A comma-separated subset of pgbench,preload,verify,workers,sampler,history.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
    },
    /// The harness against pgbench, alternating (docs/performance.md; scripts/vs-pgbench.sh):
    /// `vs-pgbench SCENARIO [ROUNDS] [--set k=v …]`, or `vs-pgbench --grid [--jobs N] …`.
    VsPgbench {
        /// The overhead grid of bench/burn-down.toml: a row per mode × effects ledger × connections.
        #[arg(long, conflicts_with = "scenario")]
        grid: bool,
        #[arg(required_unless_present = "grid")]
        scenario: Option<PathBuf>,
        /// Rounds (default: 3, or 1 with --grid).
        rounds: Option<u32>,
        #[arg(long = "rounds", conflicts_with = "rounds")]
        rounds_flag: Option<u32>,
        #[arg(long = "set")]
        set: Vec<String>,
        #[arg(long, default_value_t = 100_000)]
        jobs: u64,
        /// Connection counts, separated by commas or spaces ("2 8 32").
        #[arg(long, default_value = "2,8,32")]
        conns: String,
        #[arg(long, default_value = "lease,hold-transaction")]
        modes: String,
        #[arg(long, default_value = "off,on")]
        effects: String,
    },
    /// The measured table of docs/adapters.md: every shipped adapter beside skip-locked, same load.
    AdaptersTable {
        /// 2,000 jobs, 1 round, 2 s leases: a check of the task (~4 minutes), the figures mean nothing.
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 2)]
        rounds: u32,
        /// Default: results/adapters-table-<time>/.
        #[arg(long)]
        out: Option<PathBuf>,
        /// A comma-separated subset of contention,crash,pause.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
    },
    /// Every client scenario N rounds beside a CPU hog: which pass every time (docs/clients.md).
    ClientsLoop {
        #[arg(long, default_value_t = 20)]
        rounds: u32,
        /// CPU workers of the hog (default: one per core).
        #[arg(long)]
        hog: Option<u32>,
        /// Only the scenario files whose name contains this.
        #[arg(long, default_value = "")]
        only: String,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// One long open-model run with the harness's memory sampled (docs/long-runs.md).
    Soak {
        #[arg(default_value = "30m")]
        duration: String,
        #[arg(default_value = "scenarios/open-model-overload.toml")]
        scenario: PathBuf,
        /// Times the classes' rates (0.5: 50 jobs/s, below what 2 workers drain).
        #[arg(long, default_value_t = 0.5)]
        rate: f64,
        /// Seconds between samples.
        #[arg(long, default_value_t = 10)]
        interval: u64,
        /// Default: results/soak-<time>/.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// How fast a schedule starts again: a template database against explore's reset (docs/explore.md).
    ExploreReset {
        /// A superuser's server.
        #[arg(default_value = "postgres://root@127.0.0.1:5432")]
        url: String,
        #[arg(default_value_t = 10)]
        rounds: u32,
    },
    /// explore's pace: schedules per second and the reduction factor, 2 and 3 sessions, with
    /// the liveness checks and with --safety-only (docs/explore.md).
    ExploreBench {
        /// Default: scenarios/gc-pause-fencing-token.toml (nothing to find).
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// Seconds of search a configuration.
        #[arg(long, default_value_t = 60)]
        seconds: u32,
        /// Session counts, separated by spaces or commas.
        #[arg(long, default_value = "2 3")]
        sessions: String,
        #[arg(long, default_value_t = 1)]
        crashes: u32,
    },
    /// explore against the pause table: every shipped adapter scenario (and SKIP LOCKED with a
    /// token), 2 sessions, 2 ticks; a Markdown table (docs/explore.md, docs/findings.md).
    ExploreAdapters {
        #[arg(long, default_value_t = 16)]
        depth: u32,
        /// Seconds of search a scenario at most.
        #[arg(long, default_value_t = 300)]
        seconds: u32,
        /// Crashes of a session in a schedule.
        #[arg(long, default_value_t = 0)]
        crashes: u32,
        /// Each counterexample's steps and psql script go to OUT/NAME/ (default: a new temporary folder, kept).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Only the scenarios whose name contains this.
        #[arg(long, default_value = "")]
        only: String,
    },
    /// The harness's cost per execution on each reference client, recording on and off
    /// (docs/clients.md); needs bash clients/install.sh.
    ClientsOverhead {
        #[arg(long, default_value_t = 3000)]
        jobs: u64,
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        /// Comma-separated client names (default: all four).
        #[arg(long, default_value = "")]
        only: String,
    },
    /// graphile-worker's own perfTest beside queuebench at the same settings (docs/clients.md):
    /// give a checkout of graphile-worker's repository (0.17.x); needs bash clients/install.sh.
    GraphileWorkerPerf {
        /// run.js's JOB_COUNT.
        #[arg(long, default_value_t = 200_000)]
        jobs: u64,
        /// A checkout of graphile-worker's repository (its perfTest/ is not in the npm package).
        checkout: PathBuf,
        /// (Internal) the perfTest part only, inside `queuebench cluster`, on this copy of perfTest/.
        #[arg(long, hide = true)]
        perf_dir: Option<PathBuf>,
    },
    /// Instructions per job, counted by callgrind (docs/performance.md); needs valgrind.
    Callgrind {
        #[arg(default_value_t = 5000)]
        jobs: u64,
        /// Only the worker threads (run::lanes::lane_main).
        #[arg(long)]
        hot: bool,
        /// Functions listed.
        #[arg(long, default_value_t = 25)]
        top: usize,
        /// Keep the callgrind files here.
        #[arg(long)]
        keep: Option<PathBuf>,
        /// --set key=value … added to both runs.
        #[arg(last = true)]
        extra: Vec<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    use tasks::{adapters, bench, clients, explore, gw_perf, loops, probes, repeats, smoke, suite, tables, vs_pgbench};
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
        Task::Bench { quick, out, only } => {
            let command = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
            bench::bench(quick, out.as_deref(), &only, &format!("cargo xtask {command}"))
        }
        Task::VsPgbench { grid, scenario, rounds, rounds_flag, set, jobs, conns, modes, effects } => {
            let rounds = rounds.or(rounds_flag);
            match scenario {
                Some(s) if !grid => vs_pgbench::single(&s, rounds.unwrap_or(3), &set),
                _ => vs_pgbench::Grid::parse(jobs, rounds.unwrap_or(1), &conns, &modes, &effects)
                    .and_then(|g| vs_pgbench::grid(&g))
                    .map(drop),
            }
        }
        Task::AdaptersTable { quick, rounds, out, only } => {
            let command = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
            adapters::adapters_table(quick, rounds, out.as_deref(), &only, &format!("cargo xtask {command}"))
        }
        Task::TestTimes { top, out, filter } => suite::test_times(top, out.as_deref(), &filter),
        Task::ClientsLoop { rounds, hog, only, out } => {
            loops::clients_loop(rounds, hog.unwrap_or_else(hog::cores), &only, out.as_deref())
        }
        Task::Soak { duration, scenario, rate, interval, out } => {
            loops::soak(&duration, &scenario, rate, interval, out.as_deref())
        }
        Task::ExploreReset { url, rounds } => probes::explore_reset(&url, rounds),
        Task::ExploreBench { scenario, seconds, sessions, crashes } => {
            explore::explore_bench(scenario.as_deref(), seconds, &sessions, crashes)
        }
        Task::ExploreAdapters { depth, seconds, crashes, out, only } => {
            explore::explore_adapters(depth, seconds, crashes, out.as_deref(), &only)
        }
        Task::ClientsOverhead { jobs, rounds, only } => clients::clients_overhead(jobs, rounds, &only),
        Task::GraphileWorkerPerf { jobs, checkout, perf_dir } => {
            gw_perf::graphile_worker_perf(jobs, &checkout, perf_dir.as_deref())
        }
        Task::Callgrind { jobs, hot, top, keep, extra } => probes::callgrind(jobs, &extra, hot, top, keep.as_deref()),
    };
    if let Err(e) = result {
        eprintln!("xtask: {e}");
        std::process::exit(e.exit_code());
    }
}
