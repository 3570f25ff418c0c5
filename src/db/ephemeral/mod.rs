//! An ephemeral PostgreSQL cluster the harness starts itself: `initdb` into
//! a short temp dir, `postgres` listening only on a unix socket in that dir,
//! stopped and deleted at the end (also on error, Ctrl-C and panic).
//!
//! Facts this code is built on (measured on the development machine):
//! initdb takes about 0.8 s and start about 50 ms; initdb refuses to run as
//! root, so as root the cluster runs as the `postgres` system user; a socket
//! file appearing does not mean the server accepts connections (57P03 is
//! seen), so readiness is a real connection; `PR_SET_PDEATHSIG` stops the
//! postmaster if the harness is SIGKILLed; unix socket paths must stay under
//! 107 bytes, hence a short dir directly under /tmp.

mod folder;

pub(crate) use folder::{LeftoverCluster, leftover_clusters, remove_leftover};
use folder::{make_dir, note_leftover_clusters};

use crate::error::{Access, Error, Missing, Result};
use crate::model::records::Replication;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The port in the socket's name; nothing listens on TCP (except with `--tls`, which takes a
/// free port on localhost).
pub(crate) const PORT: u16 = 5432;

/// The ephemeral cluster's TLS files (`--tls`), in its directory: a throw-away CA and a
/// server certificate for `localhost` and 127.0.0.1 that it signed.
#[derive(Debug, Clone)]
pub(crate) struct TlsFiles {
    /// The CA certificate: the root the run's connections verify against (verify-full), and
    /// the root the server checks the run's client certificate against.
    pub ca: PathBuf,
    pub cert: PathBuf,
    /// The server's private key: mode 0600, owned by the user the cluster runs as.
    pub key: PathBuf,
    /// The run's client certificate (CN `postgres`) and key (mode 0600, the harness's own):
    /// over TCP the cluster lets in only a holder of it (`hostssl … cert`), never `trust`.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

/// The cluster's pg_hba.conf with `--tls`: its own socket (in a folder only its user and the
/// harness can enter) as before, and over TCP (localhost only) TLS with the run's client
/// certificate. Other users of the machine can reach the port but not log in. The certificate
/// (CN `postgres`) logs in as `postgres` or as the run role (`TLS_IDENT`, src/db/role.rs).
const TLS_HBA: &str = "# queuebench --tls: the socket as initdb made it; TCP only with TLS and the run's client certificate\n\
local all all trust\n\
hostssl all all 127.0.0.1/32 cert map=queuebench\n\
hostssl all all ::1/128 cert map=queuebench\n";

/// The user map of `TLS_HBA`: the run's client certificate may log in as the superuser (the
/// harness) or as the run role (the scenario's SQL).
const TLS_IDENT: &str = "# queuebench --tls: the run's client certificate\n\
queuebench postgres postgres\n\
queuebench postgres queuebench_run\n";

/// Clusters alive in this process, for the second-Ctrl-C emergency exit.
pub(super) static LIVE: Mutex<Vec<(i32, PathBuf)>> = Mutex::new(Vec::new());

pub(crate) struct Cluster {
    pub dir: PathBuf,
    pub bindir: PathBuf,
    postmaster: Arc<Postmaster>,
    /// The streaming standby (`[postgres] standby`), in `standby/` beside `data/`, on port
    /// [`PORT`] + 1 in the same socket folder.
    standby: Option<Standby>,
    keep: bool,
    tls: Option<TlsFiles>,
}

/// The ephemeral cluster's standby and how it replicates.
#[derive(Clone)]
pub struct Standby {
    pub server: Arc<Postmaster>,
    pub replication: Replication,
}

/// The servers a run's faults act on: the primary (`postgres_restart`, `failover`) and the
/// standby a `failover` promotes.
#[derive(Clone)]
pub struct Servers {
    pub primary: Arc<Postmaster>,
    pub standby: Option<Standby>,
}

/// The running server process and what it takes to start it again: shared
/// with the `postgres_restart` fault, which stops it and starts it mid-run.
pub struct Postmaster {
    /// The socket folder (the cluster's directory).
    pub(super) dir: PathBuf,
    /// The data directory (`data/`, or `standby/` for the standby).
    pub(super) data: PathBuf,
    /// Its log file, appended to across restarts.
    log: PathBuf,
    pub(super) bindir: PathBuf,
    settings: Vec<(String, String)>,
    pub(super) owner: Option<(u32, u32)>,
    port: u16,
    pub(super) child: Mutex<Option<Child>>,
}

/// Why `Postmaster::stop` did not stop the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StopError {
    #[error("the server is not running")]
    NotRunning,
    #[error("postgres (pid {pid}) did not exit within 30 s of signal {signal}")]
    StillRunning { pid: i32, signal: i32 },
}

impl Cluster {
    /// The directory holding the socket (the `host` to connect to).
    pub(crate) fn socket_dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The port: in the socket's name, and on localhost with `--tls`.
    pub(crate) fn port(&self) -> u16 {
        self.postmaster.port
    }

    /// The TLS files when the cluster serves TLS (`--tls`).
    pub(crate) fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// initdb + start. Readiness is checked by the caller with a real connection. `tls`: the
    /// cluster also listens on localhost (a free port) with ssl=on and a certificate of a CA made
    /// for it (see [`TlsFiles`]).
    /// `standby`: the cluster has a streaming standby, made from it and started by
    /// `db::standby::start` once the primary is up. `version`: the binaries of this major
    /// (`--pg-version`, `db::versions::find`) instead of the machine's default.
    pub(crate) fn start(
        settings: &[(String, String)],
        keep: bool,
        tls: bool,
        standby: Option<Replication>,
        version: Option<u32>,
    ) -> Result<Cluster> {
        note_leftover_clusters();
        let bindir = match version.and_then(|m| crate::model::pg_version::PINS.iter().find(|p| p.major == m)) {
            Some(pin) => crate::db::versions::find(pin)?.bindir,
            None => find_bindir()?,
        };
        if standby.is_some() && !bindir.join("pg_basebackup").is_file() {
            let why = "the scenario has a standby (`[postgres] standby`), made from the primary with pg_basebackup";
            return Err(Error::Missing(Missing::Tool { tool: "pg_basebackup", bindir, why }));
        }
        let owner = cluster_owner()?;
        if let Some((uid, gid)) = owner
            && let Some(blocked) = crate::db::versions::closed_to(uid, gid, &bindir)
        {
            return Err(Error::Missing(Missing::Unreachable { bindir, blocked }));
        }
        let dir = make_dir(owner)?;
        let mut settings = settings.to_vec();
        let (port, files) = if tls {
            let files = write_tls_files(&dir, owner)?;
            settings.push(("listen_addresses".into(), "localhost".into()));
            settings.push(("ssl".into(), "on".into()));
            settings.push(("ssl_cert_file".into(), files.cert.display().to_string()));
            settings.push(("ssl_key_file".into(), files.key.display().to_string()));
            settings.push(("ssl_ca_file".into(), files.ca.display().to_string()));
            (free_port(&dir)?, Some(files))
        } else {
            (PORT, None)
        };
        // The standby runs with the scenario's settings; only the primary waits for it.
        let mut standby_settings = settings.clone();
        // A standby whose primary died retries its WAL sources every wal_retrieve_retry_interval
        // (5 s by default), and a promotion that lands in that wait was seen to take the whole 5 s.
        standby_settings.push(("wal_retrieve_retry_interval".into(), "100ms".into()));
        if standby == Some(Replication::Sync) {
            settings.push(("synchronous_standby_names".into(), "*".into()));
            settings.push(("synchronous_commit".into(), "on".into()));
        }
        let server = |name: &str, settings: Vec<(String, String)>, port: u16| Postmaster {
            dir: dir.clone(),
            data: dir.join(name),
            log: dir.join(if name == "data" { "postgres.log".into() } else { format!("{name}.log") }),
            bindir: bindir.clone(),
            settings,
            owner,
            port,
            child: Mutex::new(None),
        };
        let postmaster = Arc::new(server("data", settings, port));
        let standby = standby.map(|replication| Standby {
            server: Arc::new(server("standby", standby_settings, PORT + 1)),
            replication,
        });
        let mut cluster =
            Cluster { dir: dir.clone(), bindir: bindir.clone(), postmaster, standby: None, keep, tls: files };
        cluster.initdb(owner)?;
        if cluster.tls.is_some() {
            let hba = cluster.data_dir().join("pg_hba.conf");
            std::fs::write(&hba, TLS_HBA).map_err(|e| Error::io(Access::Write, &hba, e))?;
            let ident = cluster.data_dir().join("pg_ident.conf");
            std::fs::write(&ident, TLS_IDENT).map_err(|e| Error::io(Access::Write, &ident, e))?;
        }
        cluster.postmaster.spawn()?;
        // Made and started once the primary accepts connections (`db::standby::start`).
        cluster.standby = standby;
        Ok(cluster)
    }

    /// The standby, when the cluster has one.
    pub(crate) fn standby(&self) -> Option<&Standby> {
        self.standby.as_ref()
    }

    /// The servers, for the faults that stop, kill or promote them.
    pub(crate) fn servers(&self) -> Servers {
        Servers { primary: self.postmaster.clone(), standby: self.standby.clone() }
    }

    fn initdb(&self, owner: Option<(u32, u32)>) -> Result<()> {
        let mut cmd = Command::new(self.bindir.join("initdb"));
        cmd.arg("-D").arg(self.data_dir());
        cmd.args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"]);
        cmd.current_dir(&self.dir).stdin(Stdio::null());
        as_owner(&mut cmd, owner);
        let out = cmd.output().map_err(|e| Error::io(Access::Run, self.bindir.join("initdb"), e))?;
        if !out.status.success() {
            return Err(Error::Process {
                program: "initdb".into(),
                status: out.status.to_string(),
                output: format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
            });
        }
        Ok(())
    }

    /// If the postmaster has exited, its log tail says why.
    pub(crate) fn exited(&mut self) -> Option<String> {
        let mut guard = self.postmaster.child.lock().unwrap();
        let child = guard.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(format!("postgres exited ({status}); its log ends with:\n{}", self.log_tail())),
            _ => None,
        }
    }

    pub(crate) fn log_tail(&self) -> String {
        log_tail(&self.dir.join("postgres.log"))
    }

    /// Fast shutdown, escalating to immediate, then SIGKILL (the standby first); then the dir goes.
    pub(crate) fn stop(&mut self) {
        if let Some(standby) = &self.standby {
            halt(&standby.server);
        }
        halt(&self.postmaster);
        self.remove_or_keep();
    }

    fn remove_or_keep(&self) {
        if self.keep {
            eprintln!(
                "kept the cluster's data in {} (start it with: {} -D {} -k {})",
                self.dir.display(),
                self.bindir.join("postgres").display(),
                self.data_dir().display(),
                self.dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Fast shutdown of one server, escalating to immediate, then SIGKILL.
fn halt(server: &Postmaster) {
    let child = server.child.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(mut child) = child {
        let pid = child.id() as i32;
        for (signal, wait) in [(libc::SIGINT, 10), (libc::SIGQUIT, 5), (libc::SIGKILL, 5)] {
            // SAFETY: plain kill(2) on our own child.
            unsafe { libc::kill(pid, signal) };
            let until = Instant::now() + Duration::from_secs(wait);
            while Instant::now() < until {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
        }
        LIVE.lock().unwrap().retain(|(p, _)| *p != pid);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let standby = self.standby.as_ref().is_some_and(|s| s.server.child.lock().is_ok_and(|c| c.is_some()));
        let running = standby || self.postmaster.child.lock().is_ok_and(|c| c.is_some());
        if running || (!self.keep && self.dir.exists()) {
            self.stop();
        }
    }
}

impl Postmaster {
    pub(super) fn spawn(&self) -> Result<()> {
        let owner = self.owner;
        // Appended to, so the log of a restarted server keeps what came before. One handle for
        // stdout, one for stderr.
        let log_path = self.log.clone();
        let (log, log_too) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .and_then(|log| Ok((log.try_clone()?, log)))
            .map_err(|e| Error::io(Access::Create, &log_path, e))?;
        if let Some((uid, gid)) = owner {
            let _ = std::os::unix::fs::chown(&log_path, Some(uid), Some(gid));
        }
        let mut cmd = Command::new(self.bindir.join("postgres"));
        cmd.arg("-D").arg(&self.data).arg("-k").arg(&self.dir);
        cmd.args(["-p", &self.port.to_string(), "-c", "listen_addresses="]);
        for (k, v) in &self.settings {
            cmd.arg("-c").arg(format!("{k}={v}"));
        }
        cmd.current_dir(&self.dir).stdin(Stdio::null()).stdout(log).stderr(log_too);
        // Own process group: a terminal's Ctrl-C reaches only the harness,
        // which then stops the cluster in order.
        cmd.process_group(0);
        as_owner(&mut cmd, owner);
        crate::shutdown::die_with_parent(&mut cmd, libc::SIGQUIT);
        let child = cmd.spawn().map_err(|e| Error::io(Access::Start, self.bindir.join("postgres"), e))?;
        LIVE.lock().unwrap().push((child.id() as i32, self.dir.clone()));
        *self.child.lock().unwrap() = Some(child);
        Ok(())
    }

    /// Stops the server as `pg_ctl stop -m immediate` (SIGQUIT: no checkpoint, crash recovery on
    /// the next start) or `-m fast` (SIGINT) would, and waits for it to exit. Returns its pid.
    pub async fn stop(&self, immediate: bool) -> std::result::Result<i32, StopError> {
        let signal = if immediate { libc::SIGQUIT } else { libc::SIGINT };
        let pid = match self.child.lock().unwrap().as_ref() {
            Some(c) => c.id() as i32,
            None => return Err(StopError::NotRunning),
        };
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(pid, signal) };
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let exited = self.child.lock().unwrap().as_mut().is_none_or(|c| matches!(c.try_wait(), Ok(Some(_))));
            if exited {
                self.child.lock().unwrap().take();
                LIVE.lock().unwrap().retain(|(p, _)| *p != pid);
                return Ok(pid);
            }
            if Instant::now() > until {
                return Err(StopError::StillRunning { pid, signal });
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Starts the server again on the same data directory (crash recovery replays the WAL).
    /// Call it from a thread that lives as long as the run (a runtime worker, not a blocking
    /// thread): `PR_SET_PDEATHSIG` fires when the spawning thread exits.
    pub fn start(&self) -> Result<()> {
        self.spawn()
    }

    /// Connection settings that reach this server alone (its socket and port), as the
    /// cluster's superuser: for the failover's own look at the primary and the standby.
    pub fn direct_config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config.host_path(&self.dir).port(self.port).user("postgres").dbname("postgres");
        config
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Is the server process running (started and not yet exited)?
    pub fn running(&self) -> bool {
        self.child.lock().unwrap().as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Second Ctrl-C: no time for order. Kill every cluster of this process (immediate
/// shutdown, SIGKILL after 2 s), wait for it to exit, remove its dir.
pub(crate) fn emergency_cleanup() {
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for (pid, dir) in live {
        // SAFETY: kill(2) on a child we started.
        unsafe { libc::kill(pid, libc::SIGQUIT) };
        let until = Instant::now() + Duration::from_secs(2);
        // SAFETY: waitpid on our own child; WNOHANG never blocks.
        while unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) } == 0 {
            if Instant::now() > until {
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                // SAFETY: as above; the process is being killed, so this returns soon.
                unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A TCP port nothing listens on now, on localhost (the kernel's choice).
pub(super) fn free_port(dir: &Path) -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io(Access::Prepare, dir, e))?;
    Ok(listener.local_addr().map_err(|e| Error::io(Access::Prepare, dir, e))?.port())
}

/// A throw-away CA and a server certificate for `localhost` and 127.0.0.1 signed by it, written
/// into the cluster's directory; the key is 0600 and owned by the cluster's user.
fn write_tls_files(dir: &Path, owner: Option<(u32, u32)>) -> Result<TlsFiles> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let failed = |e: rcgen::Error| Error::machine("making the ephemeral cluster's TLS certificates", e);
    let ca_key = KeyPair::generate().map_err(failed)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    ca.distinguished_name.push(DnType::CommonName, "queuebench ephemeral cluster CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).map_err(failed)?;
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let server_key = KeyPair::generate().map_err(failed)?;
    let mut server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).map_err(failed)?;
    server.distinguished_name.push(DnType::CommonName, "localhost");
    let server_cert = server.signed_by(&server_key, &issuer).map_err(failed)?;
    let client_key = KeyPair::generate().map_err(failed)?;
    let mut client = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    client.distinguished_name.push(DnType::CommonName, "postgres");
    let client_cert = client.signed_by(&client_key, &issuer).map_err(failed)?;
    let files = TlsFiles {
        ca: dir.join("ca.crt"),
        cert: dir.join("server.crt"),
        key: dir.join("server.key"),
        client_cert: dir.join("client.crt"),
        client_key: dir.join("client.key"),
    };
    let write = |path: &Path, text: &str, mode: u32, owner: Option<(u32, u32)>| -> Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
            .map_err(|e| Error::io(Access::Create, path, e))?;
        f.write_all(text.as_bytes()).map_err(|e| Error::io(Access::Write, path, e))?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|e| Error::io(Access::Prepare, path, e))?;
        }
        Ok(())
    };
    write(&files.ca, &ca_cert.pem(), 0o644, owner)?;
    write(&files.cert, &server_cert.pem(), 0o644, owner)?;
    write(&files.key, &server_key.serialize_pem(), 0o600, owner)?;
    // The client's key stays the harness's: its workers and clients present it, the server never reads it.
    write(&files.client_cert, &client_cert.pem(), 0o644, None)?;
    write(&files.client_key, &client_key.serialize_pem(), 0o600, None)?;
    Ok(files)
}

pub(super) fn as_owner(cmd: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid);
    }
}

/// The folder above `bindir` that the user the cluster runs as (as root: `postgres`) cannot
/// enter, if any: a cluster from these binaries would be refused.
pub(crate) fn closed_to_cluster(bindir: &Path) -> Option<PathBuf> {
    let (uid, gid) = cluster_owner().ok()??;
    crate::db::versions::closed_to(uid, gid, bindir)
}

/// As root, the `postgres` system user runs the cluster; otherwise we do.
pub(super) fn cluster_owner() -> Result<Option<(u32, u32)>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    // SAFETY: getpwnam with a valid C string; fields copied out at once.
    let pw = unsafe { libc::getpwnam(c"postgres".as_ptr()) };
    if pw.is_null() {
        return Err(Error::Missing(Missing::PostgresUser));
    }
    // SAFETY: pw is non-null and points at libc's static passwd record.
    Ok(Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) }))
}

/// Finds the directory holding `initdb` and `postgres`: `QUEUEBENCH_PG_BINDIR` when set
/// (and only there), else `pg_config --bindir`, then `PATH`, then the newest
/// `/usr/lib/postgresql/*/bin`.
pub(crate) fn find_bindir() -> Result<PathBuf> {
    let has_both = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("QUEUEBENCH_PG_BINDIR").map(PathBuf::from) {
        return if has_both(&dir) { Ok(dir) } else { Err(Error::Missing(Missing::BinDir(dir))) };
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    let mut versioned: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .collect();
    versioned.sort();
    candidates.extend(versioned.into_iter().rev().map(|(_, p)| p));
    candidates.into_iter().find(|d| has_both(d)).ok_or(Error::Missing(Missing::ServerBinaries))
}
