//! Running the `tessera` binary from the end-to-end tests.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the binary in `dir` with `args` (no `TESSERA_BACKEND` from the environment).
pub fn tessera(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .current_dir(dir)
        .env_remove("TESSERA_BACKEND")
        .env_remove("TESSERA_LOG")
        .output()
        .expect("the tessera binary runs")
}

/// What the run printed on stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What the run printed on stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
