//! Builds the runtime, installs the signal handlers, maps the outcome to an exit code.

use clap::Parser;
use queuebench::cli::Cli;
use tokio_util::sync::CancellationToken;

fn main() {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let code = runtime.block_on(async {
        let interrupt = CancellationToken::new();
        tokio::spawn(watch_signals(interrupt.clone()));
        queuebench::main_with(cli, interrupt).await
    });
    std::process::exit(code.code());
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
            queuebench::db::ephemeral::emergency_cleanup();
            std::process::exit(130);
        }
    }
}
