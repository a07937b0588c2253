//! Checkpoint and restart: a run continued from a checkpoint is bitwise the run that was never
//! stopped (fields, every reduction record, the step `until` stops at), on the reference and
//! every CPU strategy; a checkpoint of another program, grid or format is refused.

mod common;

use std::path::Path;

use common::{assert_user_error, stderr, stdout, tessera};

/// Two fields (f64 periodic, f32 clamped on a sub-domain), reductions every 3 and 7 steps, and
/// an `until` that holds after step 76.
const PROGRAM: &str = "program ckpt;\nparam N: i64 = 23;\ngrid [N, 19];\n\
field u: f64 border periodic = sin(0.3 * f64(x)) + cos(0.7 * f64(y)) + 2.0;\n\
field v: f32 border clamp = f32(x % 5) * 0.25;\n\
stage a { u = 0.2 * (u + u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) + 0.01 * f64(v); }\n\
stage b over [1..N - 1, 1..18] { v = 0.5 * v + 0.125 * (v[-1, 0] + v[1, 0] + v[0, -1] + v[0, 1]) + f32(t % 3); }\n\
reduce total = sum(u) every 3;\nreduce peak = max(v) every 7;\nuntil peak > 70.0;\n";

/// Runs `ckpt.tess` in `dir` with `args`, expecting success; returns stdout.
fn run(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["run", "ckpt.tess", "--exact"];
    all.extend_from_slice(args);
    let output = tessera(dir, &all);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{all:?}: {}",
        stderr(&output)
    );
    stdout(&output)
}

/// The files a run wrote with [`outputs`], as bytes.
fn written(dir: &Path, tag: &str) -> Vec<Vec<u8>> {
    ["u", "v", "r"]
        .iter()
        .map(|name| {
            let ext = if *name == "r" { "csv" } else { "npy" };
            std::fs::read(dir.join(format!("{tag}.{name}.{ext}"))).unwrap()
        })
        .collect()
}

/// The output flags that write both fields and the reduction records under `tag`.
fn outputs(tag: &str) -> Vec<String> {
    vec![
        "--output".into(),
        format!("u={tag}.u.npy"),
        "--output".into(),
        format!("v={tag}.v.npy"),
        "--reductions".into(),
        format!("{tag}.r.csv"),
    ]
}

fn program_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ckpt.tess"), PROGRAM).unwrap();
    dir
}

#[test]
fn a_run_continued_from_a_checkpoint_is_bitwise_the_run_never_stopped() {
    let plans: [&[&str]; 4] = [
        &["--backend", "reference"],
        &["--backend", "cpu", "--strategy", "parallel"],
        &["--backend", "cpu", "--strategy", "blocked"],
        &[
            "--backend",
            "cpu",
            "--strategy",
            "overlapped",
            "--time-tile",
            "4",
        ],
    ];
    for plan in plans {
        let dir = program_dir();
        let path = dir.path();
        let with = |extra: &[&str], tag: &str| {
            let mut args: Vec<String> = plan.iter().map(|s| s.to_string()).collect();
            args.extend(extra.iter().map(|s| s.to_string()));
            args.extend(outputs(tag));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run(path, &args)
        };
        let whole = with(&["--steps", "100"], "whole");
        assert!(
            whole.contains("stopped by `until` after 77 steps"),
            "{whole}"
        );
        // Halfway, checkpoints every 10 steps (the newest, after 50, is kept), then on to 100.
        with(
            &[
                "--steps",
                "50",
                "--checkpoint",
                "cp",
                "--checkpoint-every",
                "10",
            ],
            "first",
        );
        let names: Vec<String> = std::fs::read_dir(path.join("cp"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "LATEST and one checkpoint: {names:?}");
        let resumed = with(&["--steps", "100", "--restart", "cp"], "resumed");
        assert!(resumed.contains("stopped by `until`"), "{resumed}");
        assert_eq!(
            written(path, "whole"),
            written(path, "resumed"),
            "{plan:?}: the continued run differs"
        );
    }
}

#[test]
fn a_restart_from_a_middle_checkpoint_continues_past_later_ones() {
    let dir = program_dir();
    let path = dir.path();
    let plan = ["--backend", "cpu", "--steps", "60"];
    run(
        path,
        &[
            &plan[..],
            &["--checkpoint", "cp", "--checkpoint-every", "25"],
        ]
        .concat(),
    );
    assert_eq!(
        std::fs::read_to_string(path.join("cp/LATEST"))
            .unwrap()
            .trim(),
        "step-000000000050"
    );
    // A continued run that checkpoints itself keeps the directory's newest checkpoint valid.
    let out = run(
        path,
        &[
            "--backend",
            "reference",
            "--steps",
            "70",
            "--restart",
            "cp",
            "--checkpoint",
            "cp",
            "--checkpoint-every",
            "5",
        ],
    );
    assert!(out.contains("20 steps"), "{out}");
    assert_eq!(
        std::fs::read_to_string(path.join("cp/LATEST"))
            .unwrap()
            .trim(),
        "step-000000000070"
    );
}

#[test]
fn a_checkpoint_of_another_program_size_or_format_is_refused() {
    let dir = program_dir();
    let path = dir.path();
    run(
        path,
        &[
            "--steps",
            "10",
            "--checkpoint",
            "cp",
            "--checkpoint-every",
            "5",
        ],
    );
    let restart = |extra: &[&str]| {
        let mut args = vec!["run", "ckpt.tess", "--steps", "20", "--restart", "cp"];
        args.extend_from_slice(extra);
        tessera(path, &args)
    };
    assert_user_error(
        &restart(&["--set", "N=24"]),
        "its grid is [23, 19], this run's is [24, 19]",
    );
    std::fs::write(
        path.join("other.tess"),
        PROGRAM.replace("0.01 * f64(v)", "0.02 * f64(v)"),
    )
    .unwrap();
    let other = tessera(
        path,
        &["run", "other.tess", "--steps", "20", "--restart", "cp"],
    );
    assert_user_error(&other, "written by another program");
    let fewer = tessera(
        path,
        &["run", "ckpt.tess", "--steps", "5", "--restart", "cp"],
    );
    assert_user_error(&fewer, "has done 10 steps, more than the 5");
    let manifest = path.join("cp/step-000000000010/manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("tessera-checkpoint-1", "tessera-checkpoint-0"),
    )
    .unwrap();
    assert_user_error(&restart(&[]), "its format is \"tessera-checkpoint-0\"");
    std::fs::write(&manifest, "{").unwrap();
    assert_user_error(&restart(&[]), "is not a checkpoint manifest");
    let empty = tessera(path, &["run", "ckpt.tess", "--restart", "nowhere"]);
    assert_user_error(&empty, "no complete checkpoint");
    let both = tessera(
        path,
        &["run", "ckpt.tess", "--restart", "cp", "--input", "u=u.npy"],
    );
    assert_eq!(both.status.code(), Some(1), "{}", stderr(&both));
}
