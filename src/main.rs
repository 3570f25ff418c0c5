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
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("signal runtime");
        rt.block_on(watch_signals(watched, quit_at_once));
    });
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

/// The first SIGINT, SIGTERM or SIGHUP (a closed terminal): the command stops its work, writes
/// what it has and cleans up (`quit_at_once`: a command with nothing to clean up exits). The
/// second: exit at once, killing an ephemeral cluster and a child's process group.
async fn watch_signals(interrupt: CancellationToken, quit_at_once: bool) {
    use queuebench::shutdown;
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()))
    else {
        return;
    };
    for n in 0.. {
        let sig = tokio::select! {
            _ = int.recv() => libc::SIGINT,
            _ = term.recv() => libc::SIGTERM,
            _ = hup.recv() => libc::SIGHUP,
        };
        let name = shutdown::name(sig);
        if n == 0 && quit_at_once {
            std::process::exit(130);
        } else if n == 0 {
            shutdown::note(sig);
            eprintln!("\n{}", queuebench::interrupt_message(name));
            interrupt.cancel();
        } else {
            eprintln!(
                "{name} again: exiting now (an ephemeral cluster is killed and removed); nothing more is written"
            );
            shutdown::kill_groups();
            queuebench::db::emergency_cleanup();
            std::process::exit(130);
        }
    }
}
