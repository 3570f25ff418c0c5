//! One shutdown path for SIGINT, SIGTERM and SIGHUP (docs/safety.md, "Interruption"). The
//! binary's signal thread notes the first signal here and cancels the command's interrupt
//! token; a command that runs a child of its own (`cluster -- CMD`) reads which signal came, to
//! pass the same one on, and lists the child's process group here, so that a second signal
//! (which exits at once) kills that group too instead of leaving it without a parent.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// The first signal received (0: none yet).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Process groups of children that must not outlive queuebench.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// The signals that end a command: Ctrl-C, `kill`, a closed terminal.
pub const SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A signal as the messages name it.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "Ctrl-C (SIGINT)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Notes the first signal (a later one does not replace it).
pub fn note(signal: i32) {
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

/// The first signal received, if one was.
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|s| *s != 0)
}

/// `pgid` is killed by [`kill_groups`] until [`forget_group`].
pub fn watch_group(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).push(pgid);
}

pub fn forget_group(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).retain(|g| *g != pgid);
}

/// The second signal: SIGKILL to every listed process group.
pub fn kill_groups() {
    for pgid in std::mem::take(&mut *GROUPS.lock().unwrap_or_else(|e| e.into_inner())) {
        // SAFETY: kill(2) on a process group of our own child; ESRCH when it is gone is fine.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// `cmd`'s process gets `signal` when the thread that spawned it ends: queuebench's runtime
/// threads live as long as queuebench, so the signal comes when queuebench dies, even by
/// SIGKILL, and no server or pooler outlives it (`PR_SET_PDEATHSIG`, Linux only). Elsewhere
/// the child has no such tie: queuebench stops it on every exit it sees (drop, the signal path
/// above), and only a SIGKILLed queuebench leaves it behind.
pub fn die_with_parent(cmd: &mut std::process::Command, signal: i32) {
    #[cfg(target_os = "linux")]
    use std::os::unix::process::CommandExt;
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (cmd, signal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_signal_is_kept_and_named() {
        assert_eq!(name(libc::SIGHUP), "SIGHUP");
        note(libc::SIGHUP);
        note(libc::SIGTERM);
        assert_eq!(received(), Some(libc::SIGHUP));
    }
}
