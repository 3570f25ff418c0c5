//! Builds the runtime, installs the signal handlers, maps the outcome to an exit code.

use clap::Parser;
use queuebench::cli::Cli;
use tokio_util::sync::CancellationToken;

fn main() {
    let cli = Cli::parse();
    // RUST_LOG / --log: diagnostics; without either nothing is installed (docs/diagnostics.md).
    if let Err(e) = queuebench::diag::init(cli.log.as_deref()) {
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
    std::process::exit(code.code());
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
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        if n == 0 {
            eprintln!("\ninterrupted: stopping workers and writing what was collected (Ctrl-C again to quit at once)");
            interrupt.cancel();
        } else {
            eprintln!(
                "interrupted again: exiting now (an ephemeral cluster is killed and removed); nothing more is written"
            );
            queuebench::db::emergency_cleanup();
            std::process::exit(130);
        }
    }
}
