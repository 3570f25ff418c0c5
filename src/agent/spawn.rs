//! `--spawn-agents N`: N `queuebench agent` processes on this machine, the same code path as
//! agents on other hosts. Each is tied to this process (a process group of its own, killed on
//! drop and when queuebench dies), gets the server's URL in its environment (never on its
//! command line, where `ps` would show a password), and keeps the tail of its stderr for errors.
//! Agent k joins as number k (`--index`); with `--netns` it runs in host k's namespace
//! (`setns` before exec) and reaches the server through that host's forwarder. Their `TMPDIR`
//! is a folder of the coordinator's, removed with it: an agent SIGKILLed mid-run (a
//! `kill_agent` fault) leaves nothing behind.

use super::forward::Forwarder;
use super::netns::Hosts;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::options::AgentsOptions;
use crate::run::process::child::{keep_tail, tie_to_us};
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::process::{Child, Command};

/// The spawned agents.
pub(crate) struct Spawned {
    agents: Vec<(Child, Arc<Mutex<VecDeque<String>>>)>,
    /// The agents' TMPDIR (dropped after them: `agents` is dropped first).
    _tmp: tempfile::TempDir,
}

/// The child joins the network namespace in `file` before it execs (the fd is opened here and
/// kept by the closure until the command is dropped).
#[cfg(target_os = "linux")]
fn enter_namespace(cmd: &mut Command, file: &std::path::Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let ns = std::fs::File::open(file).map_err(|e| Error::io(crate::error::Access::Read, file, e))?;
    // SAFETY: setns is async-signal-safe; the fd stays open while the closure (which owns it) lives.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Network namespaces are Linux's: elsewhere `--netns` stops here, before any agent starts.
#[cfg(not(target_os = "linux"))]
fn enter_namespace(_cmd: &mut Command, file: &std::path::Path) -> Result<()> {
    let why = std::io::Error::new(std::io::ErrorKind::Unsupported, "network namespaces (--netns) exist on Linux only");
    Err(Error::io(crate::error::Access::Start, file, why))
}

/// How long agents have to exit after the run is done before they are killed.
const EXIT_GRACE: Duration = Duration::from_secs(30);

impl Spawned {
    /// Starts `opts.count` agents; `hosts`: each in its namespace, through its forwarder.
    pub(crate) fn start(
        db: &Database,
        run_id: &str,
        opts: &AgentsOptions,
        hosts: Option<(&Hosts, &[Forwarder])>,
    ) -> Result<Spawned> {
        let exe = std::env::current_exe().map_err(|e| Error::machine("finding queuebench's own binary", e))?;
        let tmp = tempfile::Builder::new()
            .prefix("queuebench-agents-")
            .tempdir()
            .map_err(|e| Error::machine("creating the agents' TMPDIR", e))?;
        let mut agents = Vec::new();
        for k in 1..=opts.count {
            let mut cmd = Command::new(&exe);
            let url = match hosts {
                Some((hosts, forwarders)) => {
                    let (Some(host), Some(fw)) = (hosts.of(k), forwarders.get(k as usize - 1)) else {
                        return Err(Error::machine(format!("starting agent {k}"), "it has no network namespace"));
                    };
                    enter_namespace(&mut cmd, &host.ns_file())?;
                    db.child_url_via(fw.addr)
                }
                None => db.run_url(),
            };
            let name = match hosts.and_then(|(h, _)| h.of(k)) {
                Some(host) => format!("spawned-{k}@{}", host.agent_ip),
                None => format!("spawned-{k}"),
            };
            cmd.args(["agent", "--run", run_id, "--name", &name, "--index", &k.to_string()])
                .arg("--wait")
                .arg(format!("{}s", opts.wait.as_secs().max(1)))
                .env("DATABASE_URL", &url)
                .env("TMPDIR", tmp.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            tie_to_us(&mut cmd);
            let mut child = cmd.spawn().map_err(|e| Error::machine(format!("starting agent {k}"), e))?;
            let tail = Arc::new(Mutex::new(VecDeque::new()));
            keep_tail(child.stderr.take(), tail.clone());
            agents.push((child, tail));
        }
        Ok(Spawned { agents, _tmp: tmp })
    }

    /// Each agent's process id, agent k's at `k - 1` (None once it was waited for).
    pub(crate) fn pids(&self) -> Vec<Option<u32>> {
        self.agents.iter().map(|(c, _)| c.id()).collect()
    }

    /// Has every spawned agent exited?
    pub(crate) fn all_exited(&mut self) -> bool {
        self.agents.iter_mut().all(|(c, _)| c.try_wait().ok().flatten().is_some())
    }

    /// The last lines the agents wrote, for an error message ("" when there are none).
    pub(crate) fn stderr_tail(&self) -> String {
        let mut out = String::new();
        for (k, (_, tail)) in self.agents.iter().enumerate() {
            let t = tail.lock().unwrap();
            if !t.is_empty() {
                out.push_str(&format!("\n  agent {}: {}", k + 1, t.iter().cloned().collect::<Vec<_>>().join("\n    ")));
            }
        }
        out
    }

    /// Waits up to `EXIT_GRACE` for every agent to exit, then kills the rest; warns about an
    /// agent that failed, with its last lines (not about those a `kill_agent` fault killed).
    pub(crate) async fn finish(&mut self, killed: &[u32]) {
        for (k, (child, tail)) in self.agents.iter_mut().enumerate() {
            if killed.contains(&(k as u32 + 1)) {
                let _ = child.wait().await;
                continue;
            }
            let status = match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
                Ok(Ok(status)) => Some(status),
                _ => {
                    let _ = child.kill().await;
                    None
                }
            };
            if status.is_none_or(|s| !s.success()) {
                let how = status.map_or("was killed after the run".to_string(), |s| format!("exited with {s}"));
                let t = tail.lock().unwrap().iter().cloned().collect::<Vec<_>>().join("\n    ");
                eprintln!("warning: agent {} {how}:\n    {t}", k + 1);
            }
        }
    }
}
