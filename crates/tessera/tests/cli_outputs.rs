//! End-to-end tests of `tessera run`'s outputs: every reduction evaluation (`--reductions`,
//! `--json`, the summary line) and struct or vector fields in one `.npy` file.

mod common;

use common::{assert_user_error, stderr, stdout, tessera};

use tessera_ir::ScalarType;
use tessera_runtime::Buffer;

/// An integer and a float reduction every 2 steps on a 2x3 grid, 7 steps. After `k` steps
/// `n = 10^9 + x + 10 y + k` (sum `6 10^9 + 36 + 6 k`, more digits than a float's summary
/// shows) and `h = 0.5 (k + 1)` (sum `3 (k + 1)`); the reductions are computed after steps
/// `t` = 1, 3 and 5 (`k = t + 1`).
const COUNTS: &str = "grid [2, 3];\nsteps 7;\nfield n: i64 = i64(x + 10 * y) + 1000000000;\nfield h: f64 = 0.5;\nstage s {\n    n = n + 1;\n    h = h + 0.5;\n}\nreduce count = sum(n) every 2;\nreduce half = sum(h) every 2;\n";

/// The evaluations of `COUNTS`: step, name and value as written in the CSV file.
const EXPECTED_ROWS: [(u64, &str, &str); 6] = [
    (1, "count", "6000000048"),
    (1, "half", "9.0"),
    (3, "count", "6000000060"),
    (3, "half", "15.0"),
    (5, "count", "6000000072"),
    (5, "half", "21.0"),
];

/// A temporary directory holding `counts.tess`.
fn counts_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("counts.tess"), COUNTS).unwrap();
    dir
}

#[test]
fn reductions_csv_holds_every_evaluation_with_integers_as_integers() {
    let dir = counts_dir();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "counts.tess",
            "--backend",
            "reference",
            "--reductions",
            "r.csv",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    let expected: String = std::iter::once("step,name,value\n".to_string())
        .chain(
            EXPECTED_ROWS
                .iter()
                .map(|(step, name, value)| format!("{step},{name},{value}\n")),
        )
        .collect();
    assert_eq!(csv, expected);
    let summary = stdout(&output);
    assert!(
        summary.contains("; count = 6000000072 (step 5); half = 21 (step 5);"),
        "{summary}"
    );
}

#[test]
fn json_summary_carries_every_evaluation_and_the_run() {
    let dir = counts_dir();
    let output = tessera(
        dir.path(),
        &["run", "counts.tess", "--backend", "reference", "--json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["program"], "counts");
    assert_eq!(report["backend"], "reference");
    assert_eq!(report["size"], "2x3");
    assert_eq!(report["steps"], 7);
    assert_eq!(report["stopped_early"], false);
    for key in [
        "compile_seconds",
        "initialise_seconds",
        "seconds",
        "transfer_seconds",
        "write_seconds",
    ] {
        assert!(report[key].as_f64().is_some_and(|s| s >= 0.0), "{key}");
    }
    assert!(report.get("gcells_per_s").is_some() && report.get("plan").is_some());
    let records = report["reductions"].as_array().unwrap();
    assert_eq!(records.len(), EXPECTED_ROWS.len());
    for (record, (step, name, value)) in records.iter().zip(EXPECTED_ROWS) {
        assert_eq!(record["step"], step);
        assert_eq!(record["name"], name);
        let expected: serde_json::Value = serde_json::from_str(value).unwrap();
        assert_eq!(record["value"], expected, "{record}");
        assert_eq!(record["value"].is_i64(), name == "count", "{record}");
    }
}

#[test]
fn a_reductions_file_that_cannot_be_written_fails_before_running() {
    let dir = counts_dir();
    let output = tessera(
        dir.path(),
        &["run", "counts.tess", "--reductions", "no/such/dir/r.csv"],
    );
    assert_user_error(
        &output,
        "cannot write no/such/dir/r.csv: the directory no/such/dir does not exist",
    );
    assert_eq!(stdout(&output), "", "nothing ran");
    let output = tessera(dir.path(), &["run", "counts.tess", "--reductions", "."]);
    assert_user_error(&output, "cannot write .: it is a directory");
    assert_eq!(stdout(&output), "", "nothing ran");
}

/// A vector field on a 4x5 grid whose components mix each step, and a struct of two types.
const VECTORS: &str = "grid [4, 5];\nsteps 2;\nfield E: f32x3;\nfield S: {a: f32, b: i32};\nstage mix {\n    E.x = E.x + E.y;\n    E.y = E.y * E.z;\n    E.z = E.z - E.x;\n    S.a = S.a + 1.0;\n}\n";

/// The components of `E` at the start: three distinct ramps.
fn vector_components() -> [Vec<f32>; 3] {
    [1.0f32, -0.5, 0.25].map(|scale| (0..20).map(|i| scale * i as f32 + 1.0).collect())
}

/// A temporary directory holding `vectors.tess`, `e.npy` (E as one 4x5x3 array) and `e_x.npy`,
/// `e_y.npy`, `e_z.npy` (its components).
fn vectors_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("vectors.tess"), VECTORS).unwrap();
    let components = vector_components();
    let interleaved: Vec<f32> = (0..20)
        .flat_map(|i| components.iter().map(move |c| c[i]))
        .collect();
    tessera_io::write_npy(
        &dir.path().join("e.npy"),
        &Buffer::F32(interleaved.into()),
        &[4, 5, 3],
    )
    .unwrap();
    for (member, values) in ["x", "y", "z"].iter().zip(components) {
        tessera_io::write_npy(
            &dir.path().join(format!("e_{member}.npy")),
            &Buffer::F32(values.into()),
            &[4, 5],
        )
        .unwrap();
    }
    dir
}

/// Runs `vectors.tess` on the reference backend with `args` after it; asserts success.
fn run_vectors(dir: &std::path::Path, args: &[&str]) {
    let args = [&["run", "vectors.tess", "--backend", "reference"][..], args].concat();
    let output = tessera(dir, &args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        stderr(&output)
    );
}

/// Reads a `.npy` file of f32 values of `shape`.
fn read_f32(path: &std::path::Path, shape: &[usize]) -> Buffer {
    tessera_io::read_npy(path, "E", ScalarType::F32, shape).unwrap()
}

#[test]
fn a_vector_field_in_one_npy_file_equals_its_components_in_several() {
    let dir = vectors_dir();
    let d = dir.path();
    run_vectors(
        d,
        &[
            "--steps",
            "0",
            "--input",
            "E=e.npy",
            "--output",
            "E=same.npy",
        ],
    );
    assert_eq!(
        std::fs::read(d.join("same.npy")).unwrap(),
        std::fs::read(d.join("e.npy")).unwrap(),
        "zero steps give back the input file"
    );
    run_vectors(d, &["--input", "E=e.npy", "--output", "E=out.npy"]);
    run_vectors(
        d,
        &[
            "--input",
            "E.x=e_x.npy",
            "--input",
            "E.y=e_y.npy",
            "--input",
            "E.z=e_z.npy",
            "--output",
            "E.x=x.npy",
            "--output",
            "E.y=y.npy",
            "--output",
            "E.z=z.npy",
        ],
    );
    let members = ["x", "y", "z"].map(|m| read_f32(&d.join(format!("{m}.npy")), &[4, 5]));
    let one =
        tessera_io::read_npy_components(&d.join("out.npy"), "E", &[ScalarType::F32; 3], &[4, 5])
            .unwrap();
    assert_eq!(one, members);
    assert_ne!(
        members[0],
        read_f32(&d.join("e_x.npy"), &[4, 5]),
        "E changed"
    );
}

#[test]
fn a_wrong_component_axis_or_mixed_member_types_are_refused_naming_field_and_shapes() {
    let dir = vectors_dir();
    let d = dir.path();
    tessera_io::write_npy(
        &d.join("two.npy"),
        &Buffer::F32(vec![0.0; 40].into()),
        &[4, 5, 2],
    )
    .unwrap();
    let output = tessera(
        d,
        &[
            "run",
            "vectors.tess",
            "--input",
            "E=two.npy",
            "--output",
            "E=out.npy",
        ],
    );
    assert_user_error(
        &output,
        "two.npy has shape (4, 5, 2) and dtype float32, but field `E` has 3 f32 components on a 4x5 grid: shape (4, 5, 3)",
    );
    assert!(!d.join("out.npy").exists());
    let output = tessera(d, &["run", "vectors.tess", "--output", "S=s.npy"]);
    assert_user_error(
        &output,
        "`S` has components of different types (f32, i32) and s.npy would hold one dtype",
    );
    assert_eq!(stdout(&output), "", "refused before running");
}
