//! Receivers from the command line: `--output NAME=FILE.npy|.csv`, points given with
//! `--input NAME=points.npy`, the `--json` report, checkpoints, and bad input refused with
//! exit code 1.

mod common;

use common::{assert_user_error, stderr, stdout, tessera};
use tessera_ir::ScalarType;
use tessera_runtime::Buffer;

/// After step `t`, `u = (t + 1) * (x + 10 y + 1)`: exact values to check.
const COUNT: &str = "grid [3, 4];\nfield u: i64;\nstage s { u = u + x + 10 * y + 1; }\nreceiver a = u at [[0, 0], [2, 3]] every 2;\nreceiver b = u at input;\n";

/// A directory with `count.tess` and `pts.npy` (the point [1, 2]).
fn count_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("count.tess"), COUNT).unwrap();
    write_points(dir.path(), "pts.npy", vec![1, 2]);
    dir
}

/// Writes `coords` as points of 2 coordinates (int64, shape (n, 2)).
fn write_points(dir: &std::path::Path, name: &str, coords: Vec<i64>) {
    let n = coords.len() / 2;
    tessera_io::write_npy(&dir.join(name), &Buffer::I64(coords.into()), &[n, 2]).unwrap();
}

#[test]
fn receivers_are_written_as_npy_and_csv_and_reported_in_json() {
    let dir = count_dir();
    let d = dir.path();
    let output = tessera(
        d,
        &[
            "run",
            "count.tess",
            "--steps",
            "5",
            "--input",
            "b=pts.npy",
            "--output",
            "a=a.npy",
            "--output",
            "b=b.csv",
            "--json",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let a = tessera_io::read_npy(&d.join("a.npy"), "a", ScalarType::I64, &[2, 2]).unwrap();
    assert_eq!(a, Buffer::from(vec![2i64, 48, 4, 96]));
    let csv = std::fs::read_to_string(d.join("b.csv")).unwrap();
    let expected: String = std::iter::once("step,point,y,x,value\n".to_string())
        .chain((0..5).map(|t| format!("{t},0,1,2,{}\n", 13 * (t + 1))))
        .collect();
    assert_eq!(csv, expected);
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        report["receivers"][0],
        serde_json::json!({"name": "a", "steps": [1, 3], "values": [[2, 48], [4, 96]]})
    );
    assert_eq!(
        report["receivers"][1]["steps"],
        serde_json::json!([0, 1, 2, 3, 4])
    );
}

#[test]
fn a_restarted_run_writes_the_whole_series() {
    let dir = count_dir();
    let d = dir.path();
    let run = |args: &str| {
        let mut all = vec!["run", "count.tess"];
        all.extend(args.split(' '));
        let output = tessera(d, &all);
        assert!(output.status.success(), "{}", stderr(&output));
    };
    run("--input b=pts.npy --steps 7 --output a=whole.npy --output b=whole.csv");
    run("--input b=pts.npy --steps 4 --checkpoint ck --checkpoint-every 2");
    // The restart takes the points, like the fields, from the checkpoint.
    run("--steps 7 --restart ck --output a=resumed.npy --output b=resumed.csv");
    for (whole, resumed) in [("whole.npy", "resumed.npy"), ("whole.csv", "resumed.csv")] {
        assert_eq!(
            std::fs::read(d.join(whole)).unwrap(),
            std::fs::read(d.join(resumed)).unwrap(),
            "{resumed}"
        );
    }
}

#[test]
fn bad_receiver_input_and_output_are_refused_before_running() {
    let dir = count_dir();
    let d = dir.path();
    write_points(d, "outside.npy", vec![1, 2, 3, 0]);
    tessera_io::write_npy(
        &d.join("float.npy"),
        &Buffer::F64(vec![1.0, 2.0].into()),
        &[1, 2],
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["run", "count.tess", "--steps", "2"];
        all.extend_from_slice(args);
        tessera(d, &all)
    };
    assert_user_error(
        &run(&[]),
        "the receiver `b` has no points: give them with `--input b=points.npy`",
    );
    assert_user_error(
        &run(&["--input", "b=outside.npy"]),
        "the receiver `b` has point 1 at [3, 0] outside the grid [3, 4]",
    );
    assert_user_error(
        &run(&["--input", "b=float.npy"]),
        "receiver `b` is an integer array of shape (n, 2)",
    );
    assert_user_error(
        &run(&["--input", "b=pts.npy", "--input", "a=pts.npy"]),
        "the receiver `a` records at the points the program gives",
    );
    assert_user_error(
        &run(&["--input", "b=pts.npy", "--output", "a=a.png"]),
        "cannot write the receiver `a` to a.png: give a .npy file",
    );
    assert!(!d.join("a.png").exists());
}
