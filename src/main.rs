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
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("signal runtime");
        rt.block_on(watch_signals(watched));
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

/// The main thread's runtime: setup, the side tasks (sampler, producers, reaper, faults),
/// checks and reports. The workers run on threads of their own (`run::lanes`).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime")
}

/// First Ctrl-C or SIGTERM: stop workers, write evidence, clean up. Second: exit at once.
async fn watch_signals(interrupt: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        return;
    };
    for n in 0.. {
        let name = tokio::select! {
            _ = int.recv() => "Ctrl-C (SIGINT)",
            _ = term.recv() => "SIGTERM",
        };
        if n == 0 {
            eprintln!("\n{}", queuebench::interrupt_message(name));
            interrupt.cancel();
        } else {
            eprintln!(
                "{name} again: exiting now (an ephemeral cluster is killed and removed); nothing more is written"
            );
            queuebench::db::emergency_cleanup();
            std::process::exit(130);
        }
    }
}
