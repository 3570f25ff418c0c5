//! `queuebench cluster -- COMMAND`: an ephemeral cluster for one command's lifetime.
//!
//! COMMAND runs in a process group of its own (with the terminal handed to it when queuebench
//! had it, so an interactive psql reads and gets Ctrl-C as under a shell). A SIGINT, SIGTERM or
//! SIGHUP that reaches queuebench is passed to that group, which gets 5 s to exit before
//! SIGKILL; then the cluster is stopped and removed (exit 130). A second signal kills the
//! group and the cluster at once (`shutdown::kill_groups`): COMMAND never outlives its cluster.

use crate::db::Database;
use crate::error::{Error, ExitCode, Result};
use crate::{pipeline, scenario, shutdown};
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// From the signal passed on to SIGKILL of COMMAND's group.
const GRACE: Duration = Duration::from_secs(5);

/// `tls`: the cluster serves TLS and DATABASE_URL says verify-full against its CA (also when
/// the scenario sets `[postgres] tls`).
pub(crate) async fn cluster(
    scenario_file: Option<&Path>,
    tls: bool,
    version: Option<u32>,
    command: &[String],
    interrupt: &CancellationToken,
) -> Result<ExitCode> {
    let (settings, tls, version) = match scenario_file {
        Some(f) => {
            let plan = scenario::plan_from_file(f, &[], Some(0))?;
            (pipeline::ephemeral_settings(&plan)?, tls || plan.postgres.tls, version.or(plan.postgres.version))
        }
        None => (Vec::new(), tls, version),
    };
    let db = Database::open_ephemeral(&settings, "public".into(), false, tls, None, version).await?;
    let url = db.url_for_tools().expect("an ephemeral cluster has a socket");
    let mut cmd = tokio::process::Command::new(&command[0]);
    cmd.args(&command[1..]).env("DATABASE_URL", &url);
    let status = run_in_group(cmd, interrupt).await;
    db.teardown().await?;
    let status = status.map_err(|e| Error::Command { command: command[0].clone(), cause: e.to_string() })?;
    if interrupt.is_cancelled() {
        return Ok(ExitCode::Interrupted);
    }
    std::process::exit(status.code().unwrap_or(1));
}

/// Runs `cmd` in a process group of its own until it exits; a signal to queuebench is passed
/// to the group (SIGKILL after [`GRACE`]).
async fn run_in_group(mut cmd: tokio::process::Command, interrupt: &CancellationToken) -> std::io::Result<ExitStatus> {
    let terminal = Terminal::ours();
    let foreground = terminal.is_some();
    cmd.process_group(0);
    // COMMAND gets SIGTERM if queuebench is SIGKILLed (on Linux).
    shutdown::die_with_parent(cmd.as_std_mut(), libc::SIGTERM);
    // SAFETY: between fork and exec only async-signal-safe calls (sigprocmask, tcsetpgrp,
    // getpid). SIGTTOU is blocked around tcsetpgrp, as a shell does for a job it starts in the
    // foreground, and unblocked before exec.
    if foreground {
        unsafe {
            cmd.pre_exec(|| {
                Terminal::hand_to(libc::getpid());
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn()?;
    let pgid = child.id().map_or(0, |p| p as i32);
    shutdown::watch_group(pgid);
    let status = tokio::select! {
        status = child.wait() => status,
        () = interrupt.cancelled() => {
            let signal = shutdown::received().unwrap_or(libc::SIGTERM);
            // SAFETY: kill(2) on our own child's process group.
            unsafe { libc::kill(-pgid, signal) };
            match tokio::time::timeout(GRACE, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    eprintln!("`{}` did not exit within 5 s of {}: killed", cmd.as_std().get_program().to_string_lossy(), shutdown::name(signal));
                    // SAFETY: as above.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                    child.wait().await
                }
            }
        }
    };
    if interrupt.is_cancelled() {
        // What the group left running (a backgrounded child) would talk to a cluster that is
        // about to go. SAFETY: as above; ESRCH when the group is gone.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    shutdown::forget_group(pgid);
    if terminal.is_some() {
        // SAFETY: tcsetpgrp on our own terminal, SIGTTOU blocked around it.
        unsafe { Terminal::hand_to(libc::getpgrp()) };
    }
    status
}

/// The controlling terminal on stdin, when queuebench's process group has it (an interactive
/// shell's foreground job).
struct Terminal;

impl Terminal {
    fn ours() -> Option<Terminal> {
        // SAFETY: plain queries on file descriptor 0.
        let ours = unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() };
        ours.then_some(Terminal)
    }

    /// Makes `pgid` the terminal's foreground process group, with SIGTTOU blocked meanwhile
    /// (a process outside the foreground group gets it for tcsetpgrp).
    ///
    /// # Safety
    /// Async-signal-safe calls only: also called between fork and exec.
    unsafe fn hand_to(pgid: i32) {
        // SAFETY: sigset operations on a local set; sigprocmask on the calling thread.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTTOU);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            libc::tcsetpgrp(0, pgid);
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
    }
}
