//! Builds the runtime, installs the signal handlers, maps the outcome to an exit code.

use clap::Parser;
use queuebench::cli::{Cli, Command};
use tokio_util::sync::CancellationToken;

fn main() {
    let cli = Cli::parse();
    if prints_only(&cli.command) {
        // `queuebench explain DIR | head`: end quietly when the reader goes away, as cat does.
        // Not for commands that hold a cluster or a schema: those must get to their cleanup.
        // SAFETY: setting a signal's disposition to the default before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    // RUST_LOG / --log: diagnostics; without either nothing is installed (docs/diagnostics.md).
    if let Err(e) = queuebench::diag::init(cli.log.as_deref()) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code().code());
    }
    // QUEUEBENCH_THREADS: a value that is not a thread count is refused, not ignored.
    if let Err(e) = queuebench::run::lanes::threads_from_env() {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code().code());
    }
    let interrupt = CancellationToken::new();
    // Signals get a thread of their own, so a second Ctrl-C exits at once even while the run's
    // thread is busy with synchronous work (checkers over a million jobs, chart rendering).
    let watched = interrupt.clone();
    let quit_at_once = nothing_to_clean(&cli.command);
    let workers = matches!(cli.command, Command::Run(_) | Command::Sweep(_) | Command::Agent { .. });
    // The handlers are installed here, before the command starts: a signal that comes early
    // takes the same path as a late one, not the default action.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("signal runtime");
    let signals = rt.block_on(async { Signals::install() });
    std::thread::spawn(move || rt.block_on(watch_signals(signals, watched, (quit_at_once, workers))));
    let code = runtime().block_on(queuebench::main_with(cli, interrupt));
    if queuebench::db::tearing_down() {
        // The signal thread is removing the cluster and exits 130 when it is done.
        loop {
            std::thread::park();
        }
    }
    std::process::exit(code.code());
}

/// Commands that only read files and print: nothing to clean up if they are cut short.
fn prints_only(command: &Command) -> bool {
    matches!(command, Command::Check { .. } | Command::Explain { .. } | Command::Sql { .. })
}

/// Commands that hold no cluster, schema or child: a signal ends them at once (exit 130).
fn nothing_to_clean(command: &Command) -> bool {
    prints_only(command) || matches!(command, Command::Report { .. } | Command::Compare { .. })
}

/// The main thread's runtime: setup, the side tasks (sampler, producers, reaper, faults),
/// checks and reports. The workers run on threads of their own (`run::lanes`).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime")
}

/// SIGINT, SIGTERM and SIGHUP, each caught (None where the handler could not be installed).
struct Signals(Option<[tokio::signal::unix::Signal; 3]>);

impl Signals {
    fn install() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup())) {
            (Ok(int), Ok(term), Ok(hup)) => Signals(Some([int, term, hup])),
            _ => Signals(None),
        }
    }
}

/// The first SIGINT, SIGTERM or SIGHUP (a closed terminal): the command stops its work, writes
/// what it has and cleans up (`quit_at_once`: a command with nothing to clean up exits). The
/// second: exit at once, killing an ephemeral cluster and a child's process group.
/// `workers`: the command runs workers (the message says their evidence is written).
async fn watch_signals(signals: Signals, interrupt: CancellationToken, (quit_at_once, workers): (bool, bool)) {
    use queuebench::shutdown;
    use std::io::Write;
    let Signals(Some([mut int, mut term, mut hup])) = signals else { return };
    for n in 0.. {
        let sig = tokio::select! {
            _ = int.recv() => libc::SIGINT,
            _ = term.recv() => libc::SIGTERM,
            _ = hup.recv() => libc::SIGHUP,
        };
        if sig == libc::SIGHUP {
            away_from_a_closed_terminal();
        }
        let name = shutdown::name(sig);
        if n == 0 && quit_at_once {
            std::process::exit(130);
        } else if n == 0 {
            shutdown::note(sig);
            interrupt.cancel();
            let _ = writeln!(std::io::stderr(), "\n{}", queuebench::interrupt_message(name, workers));
        } else {
            let _ = writeln!(
                std::io::stderr(),
                "{name} again: exiting now (an ephemeral cluster is killed and removed); nothing more is written"
            );
            shutdown::kill_groups();
            queuebench::db::emergency_cleanup();
            std::process::exit(130);
        }
    }
}

/// SIGHUP: stdout and stderr that are a terminal go to /dev/null, as the terminal is likely
/// gone and a write to it would fail (and `eprintln!` panic) in the middle of the cleanup.
fn away_from_a_closed_terminal() {
    let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") else { return };
    for fd in [1, 2] {
        // SAFETY: isatty and dup2 on the process's own standard descriptors; `null` stays open
        // for the call. A terminal that hung up answers isatty with EIO, not ENOTTY.
        unsafe {
            let terminal = libc::isatty(fd) == 1
                || std::io::Error::last_os_error()
                    .raw_os_error()
                    .is_some_and(|e| e != libc::ENOTTY && e != libc::EBADF);
            if terminal {
                libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd);
            }
        }
    }
}
