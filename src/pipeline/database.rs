//! The database stage: open the target the options name (with what the plan needs of it),
//! check the run fits (connection budget, faults the target can take), record what the
//! server is, and install the run's schema with its preloaded jobs.

use crate::adapter::keys::Interner;
use crate::db::schema::{self, Setup};
use crate::db::{Database, Kind};
use crate::error::{Error, Result, Unfit};
use crate::model::pooler::PoolMode;
use crate::model::protocol::Reclaim;
use crate::model::summary::{DatabaseInfo, Environment, PoolerInfo, TlsInfo};
use crate::options::{DatabaseOptions, Target};
use crate::scenario::Plan;
use crate::scenario::plan::Wakeup;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::Client;

/// Opens the run's database: an ephemeral cluster sized for the plan, the server of
/// `--database-url`, or a container; the run's schema is `--schema` or `queuebench_<run id>`.
pub(crate) async fn open(plan: &Plan, opts: &DatabaseOptions, run_id: &str) -> Result<Database> {
    let schema = match &opts.schema {
        Some(name) => name.clone(),
        None => format!("queuebench_{}", run_id.replace(['-', 'T'], "_").to_lowercase()),
    };
    let settings = &plan.postgres.settings;
    // Also for the commands that open a plan's database without `check_target` (validate,
    // repro, explore, prepare).
    version_fits(plan, &opts.target)?;
    let db = match &opts.target {
        Target::Url { url, allow_remote } => {
            let mut db = Database::open(Some(url), settings, schema, opts.keep, *allow_remote).await?;
            if let Some((pooler, mode)) = &opts.pooler {
                db.use_pooler(pooler, *mode)?;
                db.probe_pool_mode().await?;
            }
            Ok(db)
        }
        Target::Ephemeral => {
            let tls = opts.tls || plan.postgres.tls;
            if plan.postgres.pgbouncer.is_some() {
                // Before the cluster starts: a missing pgbouncer changes nothing.
                crate::db::pgbouncer::find_program()?;
            }
            let standby = plan.postgres.standby;
            let version = plan.postgres.version;
            let mut db =
                Database::open_ephemeral(&ephemeral_settings(plan)?, schema, opts.keep, tls, standby, version).await?;
            if plan.postgres.superuser_sql {
                eprintln!(
                    "note: [postgres] superuser_sql = true: the scenario's SQL runs as the cluster's superuser \
                     (docs/safety.md, \"Who runs what\")"
                );
            } else {
                db.least_privilege().await?;
            }
            if let Some(bouncer) = plan.postgres.pgbouncer {
                // Dropping `db` on an error stops the cluster (and a half-started pooler).
                db.start_pooler(bouncer, connections_needed(plan) as u32).await?;
            }
            Ok(db)
        }
        Target::Docker { image } => Database::open_docker(image, settings, schema, opts.keep).await,
    }?;
    Ok(db.reusing(opts.reuse).bounding_statements(plan.run.timeout))
}

/// A PostgreSQL major (`--pg-version`, `[postgres] version`) is chosen for queuebench's own
/// ephemeral cluster only: any other server runs the version it runs (exit 2).
fn version_fits(plan: &Plan, target: &Target) -> Result<()> {
    match plan.postgres.version {
        Some(major) if *target != Target::Ephemeral => {
            Err(Error::Unfit { target: target.given_by().to_string(), problem: Unfit::VersionNeedsEphemeral { major } })
        }
        _ => Ok(()),
    }
}

/// Faults the chosen database cannot take: a `postgres_restart` stops and starts the server,
/// which queuebench does only to its own ephemeral cluster; a standby (and the `failover` that
/// promotes it) is one queuebench starts beside that cluster; nor does it start PgBouncer in
/// front of any other server.
pub(crate) fn check_target(plan: &Plan, target: &Target) -> Result<()> {
    version_fits(plan, target)?;
    if plan.postgres.standby.is_some() && *target != Target::Ephemeral {
        return Err(Error::Unfit {
            target: target.given_by().to_string(),
            problem: Unfit::StandbyNeedsEphemeral { file: plan.source.path.clone() },
        });
    }
    if plan.postgres.pgbouncer.is_some() && *target != Target::Ephemeral {
        return Err(Error::Unfit {
            target: target.given_by().to_string(),
            problem: Unfit::PoolerNeedsEphemeral { file: plan.source.path.clone() },
        });
    }
    if plan.restarts_server() && *target != Target::Ephemeral {
        return Err(Error::Unfit {
            target: target.given_by().to_string(),
            problem: Unfit::RestartNeedsEphemeral { file: plan.source.path.clone() },
        });
    }
    Ok(())
}

/// `--pooler-url`'s declared pool mode gets the refusals `[postgres.pgbouncer]`'s does
/// (`model::pooler::refusal`): kill_backend outside session pooling, hold-transaction under
/// statement pooling. Exit 2, before anything is created.
pub(crate) fn check_pooler(plan: &Plan, opts: &DatabaseOptions) -> Result<()> {
    let Some((_, mode)) = &opts.pooler else { return Ok(()) };
    let holds = plan.workers.mode == crate::model::protocol::Mode::HoldTransaction;
    let set = |m: crate::model::pooler::PoolMode| format!("a pooler in {} pooling (?pool_mode={})", m.name(), m.name());
    match crate::model::pooler::refusal(*mode, plan.kills_backends(), holds, set) {
        Some(reason) => Err(Error::Flag {
            flag: "--pooler-url".into(),
            reason: format!(
                "declares pool_mode={} and {} asks what that mode cannot give: {reason}",
                mode.name(),
                plan.source.path.display()
            ),
        }),
        None => Ok(()),
    }
}

/// What the database stage hands on: the setup connection (kept through the run), what the
/// server is, and the numbering of the queue's job ids (filled by the preload and the run).
pub(crate) struct Prepared {
    pub client: Client,
    pub facts: ServerFacts,
    pub ids: Arc<Interner>,
}

/// The server and machine, recorded once per run, and how long the preload took.
pub(crate) struct ServerFacts {
    pub database: DatabaseInfo,
    pub environment: Environment,
    /// The settings the fingerprint records (`model::fingerprint::SETTINGS`).
    pub settings: std::collections::BTreeMap<String, String>,
    pub preload: Duration,
}

/// Checks the connection budget, records the server, installs the schema and preloads.
pub(crate) async fn prepare(plan: &Plan, db: &Database) -> Result<Prepared> {
    let setup = db.connect_admin().await?;
    check_connections(plan, db, &setup).await?;
    let server_version = schema::server_version(&setup).await;
    let database = DatabaseInfo {
        kind: db.kind.name().into(),
        server_major: crate::model::pg_version::major_of(&server_version),
        target: db.target.clone(),
        url: db.url.clone(),
        schema: db.schema.clone(),
        server_version,
        settings_applied: match db.kind {
            Kind::Ephemeral | Kind::Docker => plan.postgres.settings.iter().cloned().collect(),
            Kind::Url => Default::default(),
        },
        settings_reported: match db.kind {
            Kind::Url => schema::report_settings(&setup, &plan.postgres.settings).await,
            Kind::Ephemeral | Kind::Docker => Default::default(),
        },
        tls: tls_info(db, &setup).await,
        pooler: pooler_info(db),
        sql_role: String::new(),
        superuser: None,
    };
    let environment = schema::environment(&setup).await;
    let settings = schema::comparable_settings(&setup).await;
    drop(setup);
    let client =
        schema::install(db, setup_of(plan).as_setup(), &plan.adapter.table, &plan.postgres.table_settings).await?;
    // The install connection is the scenario's: its role is the one the scenario's SQL runs as.
    let (sql_role, superuser) = crate::db::role::current(&client).await;
    let database = DatabaseInfo { sql_role, superuser, ..database };
    db.check_pooler_search_path().await?;
    let ids = Arc::new(Interner::default());
    let (client, preload) = match &plan.client {
        Some(c) => {
            let took = crate::run::process::preload(&client, plan, c, &db.schema, &ids).await?;
            (client, took)
        }
        None => crate::run::preload::preload_resuming(db, client, plan, &ids).await?,
    };
    Ok(Prepared { client, facts: ServerFacts { database, environment, settings, preload }, ids })
}

/// The pooler summary.json records: queuebench's PgBouncer, or `--pooler-url`'s (size unknown: 0).
fn pooler_info(db: &Database) -> Option<PoolerInfo> {
    let info = |kind: &str, mode: crate::model::pooler::PoolMode, size| PoolerInfo {
        kind: kind.into(),
        pool_mode: mode.name().into(),
        pool_size: size,
        unnamed_statements: !mode.keeps_session(),
    };
    match (db.pooler(), db.external_pool_mode()) {
        (Some(p), _) => Some(info("pgbouncer", p.mode, p.size)),
        (None, Some(mode)) => Some(info("external", mode, 0)),
        (None, None) => None,
    }
}

/// The run's TLS as summary.json records it: the settings and what the server says of the
/// setup connection.
pub(super) async fn tls_info(db: &Database, setup: &Client) -> TlsInfo {
    let (used, version, cipher) = schema::tls_in_use(setup).await;
    let tls = &db.tls;
    TlsInfo {
        used,
        sslmode: tls.effective_mode().name().into(),
        checks: tls.checks.name().into(),
        root_cert: tls.root_path().map(|p| p.display().to_string()).unwrap_or_default(),
        client_cert: tls.client.as_ref().map(|(c, _)| c.display().to_string()).unwrap_or_default(),
        version,
        cipher,
    }
}

/// How the plan's queue gets its tables (an owned form of `schema::Setup`).
pub(crate) enum SetupOf {
    Own { notify: bool },
    Sql(String),
    Command(Vec<String>),
}

impl SetupOf {
    pub(crate) fn as_setup(&self) -> Setup<'_> {
        match self {
            SetupOf::Own { notify } => Setup::OwnTable { notify: *notify },
            SetupOf::Sql(s) => Setup::Sql(s),
            SetupOf::Command(c) => Setup::Command(c),
        }
    }
}

/// The plan's setup: queuebench's table, the adapter's setup command, or its SQL.
pub(crate) fn setup_of(plan: &Plan) -> SetupOf {
    match (&plan.setup_command, plan.adapter.setup_sql()) {
        (Some(command), _) => SetupOf::Command(command.clone()),
        (None, Some(sql)) => SetupOf::Sql(sql),
        (None, None) => SetupOf::Own { notify: plan.workers.idle.wakeup == Wakeup::Listen },
    }
}

/// `validate --database-url`: the same connection budget as a run's, on a connection that
/// creates nothing (no schema). Other targets are sized for the plan by queuebench.
pub(crate) async fn check_free_connections(plan: &Plan, target: &Target) -> Result<()> {
    let Target::Url { url, allow_remote } = target else { return Ok(()) };
    let db = Database::open(Some(url), &[], String::new(), false, *allow_remote).await?;
    let client = db.connect_admin().await?;
    check_connections(plan, &db, &client).await
}

/// More workers than the server has free connections is a usage error, before anything is created.
async fn check_connections(plan: &Plan, db: &Database, setup: &Client) -> Result<()> {
    let need = match (db.pooler(), db.external_pool_mode()) {
        (Some(p), _) => server_connections_behind(plan, p.mode, Some(p.size)),
        (None, Some(mode)) => server_connections_behind(plan, mode, None),
        (None, None) => connections_needed(plan),
    };
    let slots = schema::connection_slots(setup).await?;
    if need <= slots {
        return Ok(());
    }
    Err(Error::Unfit {
        target: db.shown().to_string(),
        problem: Unfit::TooFewConnections { workers: plan.workers.count, need, slots, own_server: db.kind.owned() },
    })
}

/// Connections a run opens at once: one per worker (the pool's size with `workers.pool`), plus the setup connection held through
/// the run, the sampler, one per producer class, fault injector, blocker session and vacuum
/// step, the reaper, the claim-plan probe and the server watch, and two for reconnects and the LISTEN probe.
pub(crate) fn connections_needed(plan: &Plan) -> i64 {
    let (direct, pooled) = connection_split(plan);
    direct + pooled
}

/// (connections that go straight to the server, connections a pooler would carry: the
/// workers' and the producers').
fn connection_split(plan: &Plan) -> (i64, i64) {
    let faults = plan.faults.iter().filter(|f| !f.per_job()).count();
    let blockers: u32 = plan.blockers.iter().map(|b| b.sessions).sum();
    let reaper = usize::from(plan.lease.reclaim == Reclaim::Reaper);
    let probe = usize::from(plan.run.plan_probe.is_some());
    let side = 3 + faults + plan.vacuum.len() + reaper + probe + 2;
    // The sqlx client (`workers.pool`) holds its pool's connections, not one per worker.
    let workers = plan.workers.pool.map_or(plan.workers.count, |p| p.size);
    (i64::from(blockers) + side as i64, i64::from(workers) + plan.load.classes.len() as i64)
}

/// Server connections a run takes with its workers and producers behind a pooler of `mode`:
/// the direct ones, the pool's server connections (`size`, when known: a `--pooler-url`'s is
/// the pooler's own budget, not counted here), and outside session pooling the short direct
/// connections that describe the statements (`run::conn::DESCRIBERS` at once).
pub(crate) fn server_connections_behind(plan: &Plan, mode: PoolMode, size: Option<u32>) -> i64 {
    let (direct, pooled) = connection_split(plan);
    let describers = if mode.keeps_session() { 0 } else { crate::run::conn::DESCRIBERS as i64 };
    direct + size.map_or(0, |n| pooled.min(i64::from(n))) + describers
}

/// Connections the ephemeral cluster allows beyond the run's own for backends still exiting.
const EXITING_SLACK: i64 = 2;

/// The ephemeral cluster's settings: the scenario's, with max_connections raised to what the
/// run needs when the scenario leaves it out (refused before starting when it sets too few).
pub(crate) fn ephemeral_settings(plan: &Plan) -> Result<Vec<(String, String)>> {
    let mut settings = plan.postgres.settings.clone();
    // Slots a superuser may use, plus the 3 superuser_reserved_connections (the cluster's default).
    // Behind queuebench's PgBouncer the workers and producers take only the pool's connections.
    let need = match plan.postgres.pgbouncer {
        Some(b) => server_connections_behind(plan, b.mode, Some(b.size)),
        None => connections_needed(plan),
    } + 3;
    match settings.iter().find(|(k, _)| k == "max_connections") {
        Some((_, v)) => match v.parse::<i64>() {
            Ok(n) if n < need => {
                return Err(Error::Unfit {
                    target: "the ephemeral cluster".into(),
                    problem: Unfit::MaxConnectionsTooLow {
                        file: plan.source.path.clone(),
                        setting: n,
                        workers: plan.workers.count,
                        need,
                    },
                });
            }
            _ => {}
        },
        // Chosen here: with room for backends of closed connections that have not exited yet
        // (a loaded machine showed one still counted when the budget was checked).
        None => settings.push(("max_connections".into(), (need + EXITING_SLACK).max(200).to_string())),
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ExitCode;
    use crate::scenario;

    fn plan(text: &str) -> Plan {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        scenario::plan_from_file(&path, &[], Some(1)).unwrap()
    }

    fn max_connections(settings: &[(String, String)]) -> i64 {
        settings.iter().find(|(k, _)| k == "max_connections").unwrap().1.parse().unwrap()
    }

    #[test]
    fn behind_a_pooler_the_workers_count_as_the_pool() {
        let p = plan("name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 300\n");
        let all = connections_needed(&p);
        let session = server_connections_behind(&p, PoolMode::Session, Some(8));
        assert_eq!(session, all - 300 + 8, "the workers take the pool's 8 server connections");
        let transaction = server_connections_behind(&p, PoolMode::Transaction, Some(8));
        assert_eq!(transaction, session + crate::run::conn::DESCRIBERS as i64, "plus the describers");
        let external = server_connections_behind(&p, PoolMode::Transaction, None);
        assert_eq!(external, transaction - 8, "a pooler of your own: its pool is its own budget");
        let pooled = plan(
            "name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 300\n[postgres.settings]\nmax_connections = 40\n\
             [postgres.pgbouncer]\npool_mode = \"session\"\npool_size = 8\n",
        );
        assert_eq!(max_connections(&ephemeral_settings(&pooled).unwrap()), 40, "fits behind the pool");
    }

    #[test]
    fn the_ephemeral_cluster_gets_the_connections_the_run_needs() {
        let small = plan("name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 8\n");
        assert_eq!(max_connections(&ephemeral_settings(&small).unwrap()), 200, "at least the old default");
        let big = plan("name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 400\n");
        let need = connections_needed(&big);
        assert!(need > 400);
        assert_eq!(
            max_connections(&ephemeral_settings(&big).unwrap()),
            need + 3 + EXITING_SLACK,
            "plus the reserved slots"
        );
        let set = plan(
            "name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 400\n[postgres.settings]\nmax_connections = 1000\n",
        );
        assert_eq!(max_connections(&ephemeral_settings(&set).unwrap()), 1000, "the scenario's own value stays");
        let low = plan(
            "name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 400\n[postgres.settings]\nmax_connections = 100\n",
        );
        let e = ephemeral_settings(&low).unwrap_err();
        assert_eq!(e.exit_code(), ExitCode::Usage);
        assert!(e.to_string().contains(&format!("raise it to at least {}", need + 3)), "{e}");
    }

    #[test]
    fn side_connections_are_counted() {
        let base = connections_needed(&plan("name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 4\n"));
        let blockers = plan(
            "name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 4\n\
             [[blockers]]\nkind = \"idle_in_transaction\"\nat = \"1s\"\nduration = \"1s\"\nsessions = 3\n",
        );
        assert_eq!(connections_needed(&blockers), base + 3);
    }
}
