//! Command-line parsing (clap), logging, the panic hook, and dispatch to the subcommands.
//!
//! Exit codes: 0 success, 1 the user's error (bad program, flags or files, a backend that
//! cannot run the program, a failed `--check-finite` or `verify`, a bad `TESSERA_*` value or cache
//! directory), 2 an internal error, 130/143 interrupted by SIGINT/SIGTERM (temporary files
//! removed: see `signals`).

mod args;
mod bench;
mod cache;
mod check;
mod describe;
mod distributed;
mod emit;
mod explain;
mod finite;
mod json;
mod plan;
mod planning;
mod progress;
mod reductions;
mod run;
mod signals;
mod tune;
mod verify;

use std::io::IsTerminal;

use clap::Parser;
use tessera::Error;

use args::{Cli, Command};

/// Runs the tool on the process arguments; returns the exit code.
pub fn main() -> i32 {
    signals::install();
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
            if code != 0 {
                eprint!("{}", environment_note(&e.to_string()).unwrap_or_default());
            }
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
        Command::Verify(args) => verify::verify(&args),
        Command::Cache { action } => cache::cache(&action),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprint!("{}", error.render(std::io::stderr().is_terminal()));
            eprint!(
                "{}",
                environment_note(&error.to_string()).unwrap_or_default()
            );
            error.exit_code()
        }
    }
}

/// Options that can also be set by an environment variable: (variable, flag).
const ENVIRONMENT_OPTIONS: &[(&str, &str)] = &[
    ("TESSERA_BACKEND", "--backend"),
    ("TESSERA_TARGET_ISA", "--target-isa"),
];

/// A note naming the environment variable whose value an error `message` refuses, when the
/// value came from the environment rather than the command line.
fn environment_note(message: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    ENVIRONMENT_OPTIONS.iter().find_map(|(variable, flag)| {
        let value = std::env::var(variable).ok().filter(|v| !v.is_empty())?;
        let on_command_line = args
            .iter()
            .any(|arg| arg == flag || arg.starts_with(&format!("{flag}=")));
        let quoted = [format!("'{value}'"), format!("`{value}`")];
        (!on_command_line && quoted.iter().any(|q| message.contains(q.as_str()))).then(|| {
            format!(
                "note: `{value}` is the value of the environment variable {variable} (it stands \
                 for {flag}); set it to one of the accepted values or unset it\n"
            )
        })
    })
}

/// Panics become one "internal error" message and exit code 2. Output to a pipe whose reader
/// has gone (`tessera emit ... | head`) ends the process silently with 141, the status a
/// shell gives a process killed by SIGPIPE, as other command-line tools end there.
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
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
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
