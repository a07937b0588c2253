//! End-to-end tests of `tessera verify`: a backend's run compared with the reference, the
//! verdict line and its exit code.

mod common;

use common::{assert_user_error, star_dir, stderr, stdout, tessera};

/// Multiply-adds and a sum of five neighbours in f32 with a reduction: non-exact CPU code
/// contracts and reassociates them, so its results differ from the reference in the last bits.
const CONTRACTED: &str = "grid [24, 40];\nsteps 6;\nfield u: f32 = f32(x * 7 + y * 13) * 0.01237;\nstage s over [1..23, 1..39] {\n    u = u * 0.3117 + 0.1931 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) * 1.0073;\n}\nreduce total = sum(u);\n";

/// A directory holding `contracted.tess`.
fn contracted_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("contracted.tess"), CONTRACTED).unwrap();
    dir
}

/// The last line of stdout: the verdict.
fn verdict(output: &std::process::Output) -> String {
    stdout(output)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn an_exact_cpu_run_from_an_input_file_is_bitwise() {
    let dir = star_dir();
    let output = tessera(
        dir.path(),
        &[
            "verify",
            "star.tess",
            "--backend",
            "cpu",
            "--exact",
            "--input",
            "u=u0.npy",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("field u") && text.contains("0 of 221"),
        "{text}"
    );
    assert!(
        verdict(&output).starts_with("bitwise: cpu ")
            && verdict(&output).ends_with("after 7 steps"),
        "{text}"
    );
}

#[test]
fn a_run_on_ranks_with_the_exchange_overlapped_is_bitwise() {
    let dir = contracted_dir();
    let args = [
        "verify",
        "contracted.tess",
        "--exact",
        "--ranks",
        "3",
        "--overlap",
        "on",
    ];
    let output = tessera(dir.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let line = verdict(&output);
    assert!(line.starts_with("bitwise: cpu "), "{line}");
    assert!(line.contains("on 3 ranks (3x1"), "{line}");
    assert!(line.contains("overlapped with compute"), "{line}");
}

#[test]
fn a_non_exact_run_agrees_within_the_default_tolerance() {
    let dir = contracted_dir();
    let output = tessera(
        dir.path(),
        &["verify", "contracted.tess", "--backend", "cpu"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        verdict(&output).starts_with("within rtol=1e-4 atol=1e-6: cpu "),
        "{}",
        stdout(&output)
    );
    assert!(
        stdout(&output).contains("reduction total"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_tolerance_of_zero_fails_a_non_exact_run_naming_the_worst_field() {
    let dir = contracted_dir();
    let output = tessera(
        dir.path(),
        &[
            "verify",
            "contracted.tess",
            "--backend",
            "cpu",
            "--rtol",
            "0",
            "--atol",
            "0",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let line = verdict(&output);
    assert!(
        line.starts_with("FAILED within rtol=0e0 atol=0e0: cpu ")
            && line.contains("worst: field `u`"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn the_reference_verifies_itself_bitwise_for_a_few_steps() {
    let dir = contracted_dir();
    let output = tessera(
        dir.path(),
        &[
            "verify",
            "contracted.tess",
            "--backend",
            "reference",
            "--steps",
            "2",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        verdict(&output).starts_with("bitwise: reference ")
            && stdout(&output).contains("steps: 2 (reference 2)"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn bad_flags_and_backends_are_user_errors() {
    let dir = contracted_dir();
    let output = tessera(dir.path(), &["verify", "contracted.tess", "--rtol=-1"]);
    assert_user_error(&output, "not a number of at least 0");
    let output = tessera(
        dir.path(),
        &["verify", "contracted.tess", "--backend", "refrence"],
    );
    assert_user_error(&output, "unknown backend `refrence`");
    let output = tessera(
        dir.path(),
        &["verify", "contracted.tess", "--input", "v=x.npy"],
    );
    assert_user_error(&output, "has no field `v`");
}
