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

#[test]
fn outputs_are_checked_before_inputs_are_read_and_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let four_axes = "grid [4, 5, 6, 7];\nsteps 1000000000;\nfield u: f32 = 1.0;\nstage s over [1..3, 1..4, 1..5, 1..6] { u = 0.5 * (u[0, 0, 0, 1] + u[0, 0, 0, -1]); }\n";
    std::fs::write(dir.path().join("g4.tess"), four_axes).unwrap();
    for (flag, message) in [
        (
            "--vti",
            "VTK image data has 1 to 3 axes and the grid is 4x5x6x7",
        ),
        ("--png", "a PNG shows one component"),
    ] {
        let target = if flag == "--png" {
            "u=u.png"
        } else {
            "u=u.vti"
        };
        // A vector field cannot be drawn: test the PNG check on a two-component field.
        let program = if flag == "--png" {
            std::fs::write(
                dir.path().join("v.tess"),
                "grid [4, 5];\nsteps 1000000000;\nfield u: f32x2;\nstage s { u.x = u.y; }\n",
            )
            .unwrap();
            "v.tess"
        } else {
            "g4.tess"
        };
        let output = tessera(
            dir.path(),
            &["run", program, "--input", "u=missing.npy", flag, target],
        );
        assert_user_error(&output, message);
        assert!(
            !stderr(&output).contains("missing.npy"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn a_plan_the_backend_refuses_is_refused_before_inputs_are_read() {
    let dir = star_dir();
    let plan = tessera(
        dir.path(),
        &[
            "plan",
            "star.tess",
            "--backend",
            "cpu",
            "--strategy",
            "wavefront",
            "--json",
        ],
    );
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let text = stdout(&plan);
    let at = text.find("\"time_tile\": ").unwrap() + "\"time_tile\": ".len();
    let digits = text[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
    let bad = format!("{}0{}", &text[..at], &text[at + digits..]);
    std::fs::write(dir.path().join("bad.json"), bad).unwrap();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "star.tess",
            "--plan",
            "bad.json",
            "--input",
            "u=missing.npy",
        ],
    );
    assert_user_error(&output, "plan field `cpu.time_tile` is 0");
}

#[test]
fn non_finite_set_values_need_a_nonfinite_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let program = |declared: &str| {
        format!(
            "param a: f32 = 0.5{declared};\ngrid [5, 6];\nsteps 2;\nfield u: f32 = 1.0;\nstage s {{ u = a * u; }}\n"
        )
    };
    std::fs::write(dir.path().join("plain.tess"), program("")).unwrap();
    std::fs::write(dir.path().join("open.tess"), program(" nonfinite")).unwrap();
    for (value, message) in [
        (
            "nan",
            "`nan` is not a finite number; parameter `a` takes finite values",
        ),
        ("-inf", "`-inf` is not a finite number"),
        ("1e39", "`1e39` is beyond the range of `f32`"),
    ] {
        let set = format!("a={value}");
        let refused = tessera(dir.path(), &["run", "plain.tess", "--set", &set]);
        assert_user_error(&refused, message);
        assert!(
            stderr(&refused).contains("param a: f32 = 0.5 nonfinite;"),
            "{}",
            stderr(&refused)
        );
        let accepted = tessera(
            dir.path(),
            &[
                "run",
                "open.tess",
                "--set",
                &set,
                "--check-finite",
                "--backend",
                "reference",
            ],
        );
        assert_eq!(accepted.status.code(), Some(1), "{}", stderr(&accepted));
        assert!(
            stderr(&accepted).contains("non-finite value: `u` is"),
            "{}",
            stderr(&accepted)
        );
    }
    let finite = tessera(dir.path(), &["run", "plain.tess", "--set", "a=3e38"]);
    assert_eq!(finite.status.code(), Some(0), "{}", stderr(&finite));
}

/// A 3D grid of 10^15 points: 4 PB of `f32`.
const HUGE: &str = "grid [100000, 100000, 100000];\nsteps 1;\nfield u: f32;\nstage s over [1..99999, 1..99999, 1..99999] { u = 0.5 * (u[0, 0, 1] + u[0, 0, -1]); }\n";

#[test]
fn a_run_that_cannot_fit_in_memory_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("huge.tess"), HUGE).unwrap();
    let check = tessera(dir.path(), &["check", "huge.tess"]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    assert!(
        stdout(&check).contains("memory: fields 4.00 PB on the host"),
        "{}",
        stdout(&check)
    );
    for backend in ["reference", "cpu"] {
        let explain = tessera(dir.path(), &["explain", "huge.tess", "--backend", backend]);
        assert_eq!(explain.status.code(), Some(0), "{}", stderr(&explain));
        let text = stdout(&explain);
        assert!(
            text.contains("memory: ") && text.contains("a run is refused: the run needs"),
            "{text}"
        );
        let run = tessera(dir.path(), &["run", "huge.tess", "--backend", backend]);
        assert_user_error(&run, "on the host (fields 4.00 PB");
        assert!(
            stderr(&run).contains("this process may still allocate"),
            "{}",
            stderr(&run)
        );
    }
}

#[test]
fn max_memory_limits_the_estimate() {
    let dir = star_dir();
    // 13x17 f32: 884 bytes of fields, and the interpreter's stage results.
    let limited = tessera(
        dir.path(),
        &[
            "run",
            "star.tess",
            "--backend",
            "reference",
            "--max-memory",
            "1k",
        ],
    );
    assert_user_error(&limited, "more than `--max-memory 1.00 kB` allows");
    let roomy = tessera(
        dir.path(),
        &[
            "run",
            "star.tess",
            "--backend",
            "reference",
            "--max-memory",
            "1MiB",
        ],
    );
    assert_eq!(roomy.status.code(), Some(0), "{}", stderr(&roomy));
    let bad = tessera(dir.path(), &["run", "star.tess", "--max-memory", "4Q"]);
    assert_user_error(&bad, "unknown unit `Q`");
}

#[test]
fn the_summary_shows_the_time_of_each_phase() {
    let dir = star_dir();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "star.tess",
            "--backend",
            "reference",
            "--output",
            "u=u.npy",
        ],
    );
    let line = stdout(&output);
    let phases = line
        .split("; compile ")
        .nth(1)
        .expect("phases after the summary");
    for phase in ["initialise ", "run ", "write "] {
        assert!(phases.contains(phase), "{phase}: {line}");
    }
}

#[test]
fn a_compiler_without_openmp_is_an_environment_error_with_its_message() {
    use std::os::unix::fs::PermissionsExt;
    let dir = star_dir();
    let compiler = dir.path().join("noompcc");
    std::fs::write(
        &compiler,
        "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --version) echo noompcc 1.0; exit 0;; -print-file-name=*) echo \"${a#-print-file-name=}\"; exit 0;; esac; done\necho 'kernel.c:1:10: fatal error: omp.h: No such file or directory' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&compiler, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = dir.path().join("cache");
    let output = tessera_with_env(
        dir.path(),
        &["run", "star.tess", "--backend", "cpu"],
        &[
            ("TESSERA_CC", compiler.to_str().unwrap()),
            ("TESSERA_CACHE_DIR", cache.to_str().unwrap()),
        ],
    );
    assert_user_error(&output, "cannot build even a minimal OpenMP library");
    assert!(
        stderr(&output).contains("fatal error: omp.h"),
        "{}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("bug in Tessera"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_address_space_limit_counts_as_the_memory_available() {
    let dir = tempfile::tempdir().unwrap();
    // 16384² f32: 1.07 GB of fields, over a 900 MB `ulimit -v`.
    let program = "param N: i64 = 16384;\ngrid [N, N];\nsteps 1;\nfield u: f32 = 1.0;\nstage s over [1..N-1, 1..N-1] { u = 0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]); }\n";
    std::fs::write(dir.path().join("g.tess"), program).unwrap();
    let command = format!(
        "ulimit -v 900000 && exec '{}' run g.tess --backend reference",
        env!("CARGO_BIN_EXE_tessera")
    );
    let output = Command::new("sh")
        .args(["-c", &command])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_user_error(&output, "this process may still allocate");
    assert!(
        stderr(&output).contains("fields 1.07 GB"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn output_to_a_closed_pipe_ends_silently_with_the_sigpipe_status() {
    let program = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/heat.tess");
    // The reader is gone before tessera writes a byte, as with `| head -c0`.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let output = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["emit", "--backend", "reference", program])
        .stdout(writer)
        .output()
        .expect("tessera runs");
    assert_eq!(output.status.code(), Some(141), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
}
