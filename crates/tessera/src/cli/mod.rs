//! Command-line parsing (clap), logging, the panic hook, and dispatch to the subcommands.
//!
//! Exit codes: 0 success, 1 the user's error (bad program, flags or files, a backend that
//! cannot run the program, a failed `--check-finite`), 2 an internal error.

mod args;
mod bench;
mod cache;
mod check;
mod describe;
mod emit;
mod explain;
mod finite;
mod plan;
mod planning;
mod progress;
mod run;
mod tune;

use std::io::IsTerminal;

use clap::Parser;
use tessera::Error;

use args::{Cli, Command};

/// Runs the tool on the process arguments; returns the exit code.
pub fn main() -> i32 {
    install_panic_hook();
    install_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => 1,
            };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Check(args) => check::check(&args),
        Command::Emit(args) => emit::emit(&args),
        Command::Plan(args) => plan::plan(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Explain(args) => explain::explain(&args),
        Command::Tune(args) => tune::tune(&args),
        Command::Cache { action } => cache::cache(&action),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprint!("{}", error.render(std::io::stderr().is_terminal()));
            error.exit_code()
        }
    }
}

/// Panics become one "internal error" message and exit code 2.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        eprintln!(
            "internal error: {message}{location}\nthis is a bug in Tessera; please report it with the program and the command line"
        );
        std::process::exit(2);
    }));
}

/// Logs go to stderr, filtered by `TESSERA_LOG` (e.g. `TESSERA_LOG=tessera_cpu=debug`).
fn install_logging() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("TESSERA_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// The error for a malformed flag value.
fn usage(message: impl Into<String>) -> Error {
    Error::Usage(message.into())
}
