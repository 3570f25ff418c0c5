//! One worker process of a client (`clients/<name>/run work`): started in a process group of
//! its own with `PR_SET_PDEATHSIG` = SIGKILL (so it dies with queuebench, even a SIGKILLed
//! one) and `kill_on_drop` (so a run that returns early, by an error or Ctrl-C, leaves none
//! behind); its stdout read as contract event lines, the tail of its stderr kept for errors.

use crate::error::{Error, Result};
use crate::scenario::client::ClientPlan;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// An event line (`{"ev":"start","job":"…","n":7,"worker":"p3","t":…}`).
#[derive(Debug, Clone, serde::Deserialize)]
pub(crate) struct ClientEvent {
    pub ev: String,
    pub job: String,
    pub worker: String,
    pub t: f64,
}

/// What a process's environment needs from the run.
pub(crate) struct Env<'a> {
    pub url: &'a str,
    pub schema: &'a str,
    pub queue: &'a str,
}

pub(crate) struct Proc {
    /// The worker's number: `QUEUEBENCH_WORKER=p<identity>`.
    pub identity: u32,
    child: Child,
    pub paused: bool,
    pub events: Arc<Mutex<Vec<ClientEvent>>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// Reads the event lines (anything else on stdout is ignored).
fn read_events(out: Option<tokio::process::ChildStdout>, events: Arc<Mutex<Vec<ClientEvent>>>) {
    let Some(out) = out else { return };
    tokio::spawn(async move {
        let mut lines = BufReader::new(out).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(e) = serde_json::from_str::<ClientEvent>(&line) {
                events.lock().unwrap().push(e);
            }
        }
    });
}

/// Keeps the last 12 lines of stderr.
/// Makes `cmd` a process group of its own that is killed when dropped and dies with
/// queuebench, even a SIGKILLed one (`PR_SET_PDEATHSIG` = SIGKILL).
pub(crate) fn tie_to_us(cmd: &mut Command) {
    cmd.kill_on_drop(true).process_group(0);
    crate::shutdown::die_with_parent(cmd.as_std_mut(), libc::SIGKILL);
}

/// Keeps the last 40 lines `err` writes in `tail` (a stack trace fits).
pub(crate) fn keep_tail(err: Option<tokio::process::ChildStderr>, tail: Arc<Mutex<VecDeque<String>>>) {
    let Some(err) = err else { return };
    tokio::spawn(async move {
        let mut lines = BufReader::new(err).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut t = tail.lock().unwrap();
            t.push_back(line);
            if t.len() > 40 {
                t.pop_front();
            }
        }
    });
}

/// `clients/x/run work`, as errors show it.
pub(crate) fn shown(client: &ClientPlan) -> String {
    format!("{} work", client.program.display())
}

impl Proc {
    pub(crate) fn spawn(client: &ClientPlan, env: &Env, identity: u32) -> Result<Proc> {
        let mut cmd = Command::new(&client.program);
        cmd.arg("work")
            .current_dir(&client.dir)
            .env("QUEUEBENCH_DATABASE_URL", env.url)
            .env("QUEUEBENCH_SCHEMA", env.schema)
            .env("QUEUEBENCH_QUEUE", env.queue)
            .env("QUEUEBENCH_WORKER", format!("p{identity}"))
            .env("QUEUEBENCH_CONCURRENCY", client.concurrency.to_string())
            .env("QUEUEBENCH_EVENTS", "1")
            .env_remove("QUEUEBENCH_APPLICATION_NAME")
            .env_remove("QUEUEBENCH_CLIENT_BUG")
            .env_remove("QUEUEBENCH_POLL_MS")
            .env_remove("QUEUEBENCH_BATCH")
            .env_remove("QUEUEBENCH_RECORD")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        tie_to_us(&mut cmd);
        if let Some(bug) = &client.bug {
            cmd.env("QUEUEBENCH_CLIENT_BUG", bug);
        }
        if let Some(ms) = client.poll_ms {
            cmd.env("QUEUEBENCH_POLL_MS", ms.to_string());
        }
        if let Some(b) = client.batch {
            cmd.env("QUEUEBENCH_BATCH", b.to_string());
        }
        let mut child = cmd.spawn().map_err(|e| Error::Machine {
            action: format!("starting the client's worker `{}`", shown(client)),
            cause: format!("{e} (a client folder needs an executable `run`: see clients/CONTRACT.md)"),
        })?;
        let events = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        read_events(child.stdout.take(), events.clone());
        keep_tail(child.stderr.take(), stderr.clone());
        Ok(Proc { identity, child, paused: false, events, stderr })
    }

    pub(crate) fn pid(&self) -> Option<i32> {
        self.child.id().map(|p| p as i32)
    }

    /// Sends `sig` to the process's group (the worker and anything it started).
    pub(crate) fn signal(&self, sig: i32) {
        if let Some(pid) = self.pid() {
            // SAFETY: plain kill(2) on our own child's process group.
            unsafe { libc::kill(-pid, sig) };
        }
    }

    /// The exit status if it has exited (reaped).
    pub(crate) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGKILL and reap.
    pub(crate) async fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.kill().await;
    }

    /// SIGTERM (SIGCONT first if paused), then up to `grace` for the exit; SIGKILL after it.
    /// Returns the exit status, or None when it had to be killed.
    pub(crate) async fn stop(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        if let Some(status) = self.exited() {
            return Some(status);
        }
        self.signal(libc::SIGTERM);
        if self.paused {
            self.signal(libc::SIGCONT);
        }
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                self.kill().await;
                None
            }
        }
    }

    /// The last lines it wrote on stderr, for an error message.
    pub(crate) fn stderr_tail(&self) -> String {
        let t = self.stderr.lock().unwrap();
        if t.is_empty() { "(nothing on stderr)".into() } else { t.iter().cloned().collect::<Vec<_>>().join("\n  ") }
    }
}
