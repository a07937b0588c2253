//! End-to-end tests of the refusals and reports that keep a run honest: no silent fallback,
//! checks before any allocation or compilation, memory estimates, non-finite `--set` values,
//! and the time of each phase in the summary.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{assert_user_error, star_dir, stderr, stdout, tessera};

/// Runs the binary in `dir` with `args` and the environment variables `env`.
fn tessera_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .current_dir(dir)
        .env_remove("TESSERA_BACKEND")
        .envs(env.iter().copied())
        .output()
        .expect("the tessera binary runs")
}

#[test]
fn without_a_c_compiler_the_default_backend_falls_back_visibly() {
    let dir = star_dir();
    let no_cc = [("TESSERA_CC", "/nonexistent/cc")];
    let run = ["run", "star.tess", "--steps", "2"];
    let fallback = tessera_with_env(dir.path(), &run, &no_cc);
    assert_eq!(fallback.status.code(), Some(0), "{}", stderr(&fallback));
    assert!(
        stdout(&fallback).contains("with reference/"),
        "{}",
        stdout(&fallback)
    );
    let warning = stderr(&fallback);
    assert!(
        warning.starts_with("warning: running on the `reference` interpreter")
            && warning.contains("/nonexistent/cc")
            && warning.matches("warning:").count() == 1,
        "{warning}"
    );
    let chosen = tessera_with_env(
        dir.path(),
        &[&run[..], &["--backend", "reference"]].concat(),
        &no_cc,
    );
    assert_eq!(stderr(&chosen), "");
    let explicit = tessera_with_env(
        dir.path(),
        &[&run[..], &["--backend", "cpu"]].concat(),
        &no_cc,
    );
    assert_user_error(&explicit, "C compiler `/nonexistent/cc` not found");
    assert_eq!(stdout(&explicit), "");
}
