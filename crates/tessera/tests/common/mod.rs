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

/// Asserts a user error: exit code 1 and `message` in stderr.
#[allow(dead_code)]
pub fn assert_user_error(output: &Output, message: &str) {
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(output));
    assert!(
        stderr(output).contains(message),
        "expected {message:?} in stderr:\n{}",
        stderr(output)
    );
    assert!(!stderr(output).contains("panicked"), "{}", stderr(output));
}

/// A 5-point star on the interior of a 13x17 f32 grid, 7 steps, no reductions (so that every
/// strategy fuses steps), with a random input `u0.npy`.
#[allow(dead_code)]
pub fn star_dir() -> tempfile::TempDir {
    const STAR: &str = "grid [13, 17];\nsteps 7;\nfield u: f32;\nstage s over [1..12, 1..16] {\n    u = 0.2 * (u + u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]);\n}\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("star.tess"), STAR).unwrap();
    let mut rng = tessera_runtime::random::SplitMix64::new(7);
    let values: Vec<f32> = (0..13 * 17).map(|_| rng.next_f64() as f32).collect();
    tessera_io::write_npy(
        &dir.path().join("u0.npy"),
        &tessera_runtime::Buffer::F32(values.into()),
        &[13, 17],
    )
    .unwrap();
    dir
}

/// For each of `plans` (flags after `--backend BACKEND --exact`): `tessera plan --json` into a
/// file, then `tessera run --plan` of that file, writes bitwise the output of a run with the
/// flags themselves and of the reference backend.
#[allow(dead_code)]
pub fn assert_plans_replay_bitwise(dir: &Path, backend: &str, plans: &[&[&str]]) {
    let run = |extra: &[&str], out: &str| {
        let args = [
            &["run", "star.tess", "--input", "u=u0.npy", "--output"][..],
            &[out],
            extra,
        ]
        .concat();
        let output = tessera(dir, &args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        std::fs::read(dir.join(out.trim_start_matches("u="))).unwrap()
    };
    let expected = run(&["--backend", "reference"], "u=reference.npy");
    for flags in plans {
        let planning = [
            &[
                "plan",
                "star.tess",
                "--backend",
                backend,
                "--exact",
                "--json",
            ][..],
            flags,
        ]
        .concat();
        let output = tessera(dir, &planning);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{planning:?}: {}",
            stderr(&output)
        );
        std::fs::write(dir.join("plan.json"), &output.stdout).unwrap();
        let direct = [&["--backend", backend, "--exact"][..], flags].concat();
        assert_eq!(
            run(&direct, "u=direct.npy"),
            expected,
            "{backend} {flags:?}"
        );
        assert_eq!(
            run(&["--plan", "plan.json"], "u=replayed.npy"),
            expected,
            "{backend} {flags:?} from its plan"
        );
    }
}
