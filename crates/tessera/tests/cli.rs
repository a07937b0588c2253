//! End-to-end tests of the `tessera` binary: results against an independent computation,
//! files written, and every bad input giving one clear message and exit code 1.

use std::path::Path;
mod common;

use common::{assert_user_error, stderr, stdout, tessera};
use std::process::Command;

use tessera_ir::ScalarType;
use tessera_runtime::Buffer;

/// A Jacobi 5-point average on the interior of a 7x9 grid (prime-ish, not square).
const JACOBI: &str = "// Jacobi 5-point average\nparam alpha: f64 = 0.25;\ngrid [7, 9];\nsteps 3;\nfield u: f64;\nstage avg over [1..6, 1..8] {\n    u = alpha * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]);\n}\nreduce total = sum(u);\n";

/// A temporary directory holding `jacobi.tess` and a random input `u0.npy`; returns the input.
fn jacobi_dir() -> (tempfile::TempDir, Vec<f64>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jacobi.tess"), JACOBI).unwrap();
    let mut rng = tessera_runtime::random::SplitMix64::new(12345);
    let values: Vec<f64> = (0..63).map(|_| rng.next_f64()).collect();
    tessera_io::write_npy(
        &dir.path().join("u0.npy"),
        &Buffer::F64(values.clone().into()),
        &[7, 9],
    )
    .unwrap();
    (dir, values)
}

/// The Jacobi program computed directly: `steps` steps of double-buffered averaging.
fn jacobi_expected(mut u: Vec<f64>, steps: usize) -> Vec<f64> {
    for _ in 0..steps {
        let old = u.clone();
        for y in 1..6 {
            for x in 1..8 {
                let at = |yy: usize, xx: usize| old[yy * 9 + xx];
                u[y * 9 + x] = 0.25 * (at(y - 1, x) + at(y + 1, x) + at(y, x - 1) + at(y, x + 1));
            }
        }
    }
    u
}

#[test]
fn run_writes_the_outputs_of_an_independent_computation() {
    let (dir, input) = jacobi_dir();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "jacobi.tess",
            "--backend",
            "reference",
            "--input",
            "u=u0.npy",
            "--output",
            "u=u.npy",
            "--steps",
            "4",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result =
        tessera_io::read_npy(&dir.path().join("u.npy"), "u", ScalarType::F64, &[7, 9]).unwrap();
    let expected = jacobi_expected(input, 4);
    assert_eq!(result, Buffer::F64(expected.clone().into()));
    let summary = stdout(&output);
    assert!(
        summary.starts_with("jacobi: 4 steps on 7x9 (f64) with reference/"),
        "{summary}"
    );
    let total: f64 = expected.iter().sum();
    assert!(
        summary.contains("GCells/s")
            && summary.contains("total = ")
            && summary.contains("(step 3)"),
        "{summary}"
    );
    let printed: f64 = summary
        .split("total = ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (printed - total).abs() <= 1e-6 * total.abs(),
        "{printed} vs {total}"
    );
}

#[test]
fn the_cpu_backend_in_exact_mode_gives_the_same_file() {
    let (dir, input) = jacobi_dir();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "jacobi.tess",
            "--backend",
            "cpu",
            "--exact",
            "--input",
            "u=u0.npy",
            "--output",
            "u=u.npy",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result =
        tessera_io::read_npy(&dir.path().join("u.npy"), "u", ScalarType::F64, &[7, 9]).unwrap();
    assert_eq!(result, Buffer::F64(jacobi_expected(input, 3).into()));
}

#[test]
fn png_and_vti_outputs_are_valid_files_and_the_range_is_printed() {
    let (dir, _) = jacobi_dir();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "jacobi.tess",
            "--backend",
            "reference",
            "--input",
            "u=u0.npy",
            "--png",
            "u=u.png",
            "--vti",
            "u=u.vti",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let file = std::fs::File::open(dir.path().join("u.png")).unwrap();
    let reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap();
    assert_eq!(
        (
            reader.info().width,
            reader.info().height,
            reader.info().color_type
        ),
        (9, 7, png::ColorType::Rgb)
    );
    assert!(
        stdout(&output).contains("u.png: `u` from "),
        "{}",
        stdout(&output)
    );
    let vti = std::fs::read_to_string(dir.path().join("u.vti")).unwrap();
    assert!(
        vti.contains("WholeExtent=\"0 8 0 6 0 0\"") && vti.contains("Name=\"u\""),
        "{vti}"
    );
}

#[test]
fn png_without_a_field_name_draws_the_updated_field() {
    let (dir, _) = jacobi_dir();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "jacobi.tess",
            "--backend",
            "reference",
            "--png",
            "picture.png",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(dir.path().join("picture.png").is_file());
}

#[test]
fn check_prints_a_summary_and_emit_prints_a_program_that_checks_again() {
    let (dir, _) = jacobi_dir();
    let output = tessera(dir.path(), &["check", "jacobi.tess"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.starts_with("ok: jacobi: grid 7x9, 1 field, 1 stage, 1 reduction"),
        "{text}"
    );
    assert!(text.contains("stage avg: [1..6, 1..8] (35 points); reads u at 4 offsets within [-1..1, -1..1]; writes u"), "{text}");

    let emitted = tessera(dir.path(), &["emit", "jacobi.tess"]);
    assert_eq!(emitted.status.code(), Some(0), "{}", stderr(&emitted));
    std::fs::write(dir.path().join("again.tess"), stdout(&emitted)).unwrap();
    let again = tessera(dir.path(), &["check", "again.tess"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&emitted),
        stderr(&again)
    );
}

#[test]
fn emit_ir_prints_the_elaborated_program_whatever_the_backend_would_be() {
    let dir = tempfile::tempdir().unwrap();
    let program = "grid [6, 5];\nconst half = 0.5;\nfn avg(a, b) = half * (a + b);\n\
                   field u: f32 border clamp = f32(x);\n\
                   stage s { u = avg(u[0, -1], u[0, 1]); }\n";
    std::fs::write(dir.path().join("fns.tess"), program).unwrap();
    let emitted = tessera(dir.path(), &["emit", "fns.tess", "--ir"]);
    assert_eq!(emitted.status.code(), Some(0), "{}", stderr(&emitted));
    let ir = stdout(&emitted);
    assert!(!ir.contains("avg") && !ir.contains("half"), "{ir}");
    assert!(ir.contains("u[0, -1]") && ir.contains("u[0, 1]"), "{ir}");
    std::fs::write(dir.path().join("again.tess"), &ir).unwrap();
    let again = tessera(dir.path(), &["emit", "again.tess", "--ir"]);
    assert_eq!(stdout(&again), ir, "{}", stderr(&again));

    let refused = tessera(
        dir.path(),
        &["emit", "fns.tess", "--ir", "--backend", "cpu"],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("--backend"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn literals_that_lose_digits_are_warned_about_on_stderr_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let weights = [
        "0.19230769230769232",
        "0.2019230769230769",
        "0.21153846153846154",
    ];
    let program = format!(
        "grid [6, 5];\nfield u: f32 border clamp = f32(x);\n\
         stage s {{ u = {} * u[0, -1] + {} * u + {} * u[0, 1] + 0.25 * u[1, 0]; }}\n",
        weights[0], weights[1], weights[2]
    );
    std::fs::write(dir.path().join("w.tess"), &program).unwrap();
    let one = program
        .replace(weights[1], "0.2")
        .replace(weights[2], "0.2");
    std::fs::write(dir.path().join("one.tess"), one).unwrap();

    let output = tessera(dir.path(), &["check", "one.tess"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let warned = stderr(&output);
    assert!(
        warned
            .contains("warning[W0001]: the literal 0.19230769230769232 becomes 0.1923077 as `f32`"),
        "{warned}"
    );
    assert!(warned.contains("one.tess:3:"), "{warned}");

    let many = program.replace("0.25", "0.2500000000000001");
    std::fs::write(dir.path().join("many.tess"), many).unwrap();
    let output = tessera(dir.path(), &["run", "many.tess", "--backend", "reference"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let warned = stderr(&output);
    assert_eq!(warned.matches("warning[W0001]").count(), 3, "{warned}");
    assert!(
        warned.contains("warning: 1 more warning like these in many.tess"),
        "{warned}"
    );
}

#[test]
fn bench_json_reports_every_documented_key() {
    let (dir, _) = jacobi_dir();
    let output = tessera(
        dir.path(),
        &[
            "bench",
            "jacobi.tess",
            "--backend",
            "reference",
            "--reps",
            "2",
            "--bandwidth",
            "10",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    for key in [
        "gcells_per_s",
        "seconds",
        "strategy",
        "bandwidth_gb_s",
        "roofline_gcells_per_s",
        "fraction_of_roofline",
        "compile_seconds",
        "backend",
        "program",
        "size",
        "steps",
    ] {
        assert!(report.get(key).is_some(), "missing {key} in {report}");
    }
    assert_eq!(report["bytes_per_point"], 16);
    assert_eq!(report["roofline_gcells_per_s"], 10.0 / 16.0);
    assert_eq!(
        (
            report["program"].as_str(),
            report["size"].as_str(),
            report["steps"].as_u64()
        ),
        (Some("jacobi"), Some("7x9"), Some(3))
    );
}

#[test]
fn check_finite_reports_the_first_nan_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let text = "grid [3, 4];\nfield u: f32 = f32(x) - 2.0;\nstage s { u = sqrt(u); }\n";
    std::fs::write(dir.path().join("nan.tess"), text).unwrap();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "nan.tess",
            "--backend",
            "reference",
            "--steps",
            "2",
            "--check-finite",
        ],
    );
    assert_user_error(
        &output,
        "non-finite value: `u` is NaN at (y = 0, x = 0) after 2 steps",
    );
}

#[test]
fn bad_flags_are_user_errors_with_clear_messages() {
    let (dir, _) = jacobi_dir();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "jacobi.tess", "--backend", "gpu"],
            "unknown backend `gpu`; did you mean `cpu`? this build has reference, cpu",
        ),
        (
            &["run", "jacobi.tess", "--set", "alpa=0.5"],
            "the program has no parameter `alpa`",
        ),
        (
            &["run", "jacobi.tess", "--set", "alpa=0.5"],
            "did you mean `alpha`?",
        ),
        (
            &["run", "jacobi.tess", "--set", "alpha=fast"],
            "`fast` is not a valid `f64` for parameter `alpha`",
        ),
        (
            &["run", "jacobi.tess", "--set", "alpha"],
            "`alpha` is not of the form NAME=VALUE",
        ),
        (
            &["run", "jacobi.tess", "--steps", "abc"],
            "invalid value 'abc' for '--steps <N>'",
        ),
        (
            &["run", "jacobi.tess", "--tile", "0x4"],
            "invalid value '0x4' for '--tile <AxB>': must be at least 1",
        ),
        (
            &["run", "jacobi.tess", "--time-tile", "0"],
            "invalid value '0' for '--time-tile <T>': must be at least 1",
        ),
        (
            &["run", "jacobi.tess", "--threads", "0"],
            "must be at least 1",
        ),
        (
            &[
                "run",
                "jacobi.tess",
                "--backend",
                "cpu",
                "--plane-reads",
                "cache",
            ],
            "the cpu backend has no GPU planes to read; drop `--plane-reads`",
        ),
        (
            &["run", "jacobi.tess", "--plane-reads", "l1"],
            "invalid value 'l1' for '--plane-reads <R>'",
        ),
        (
            &["run", "missing.tess"],
            "cannot read program missing.tess: ",
        ),
        (
            &["run", "jacobi.tess", "--input", "v=u0.npy"],
            "program `jacobi` has no field `v`; did you mean `u`?",
        ),
        (
            &["run", "jacobi.tess", "--output", "uu=out.npy"],
            "program `jacobi` has no field `uu`; did you mean `u`?",
        ),
        (
            &["run", "jacobi.tess", "--input", "u0.npy"],
            "is not of the form FIELD=FILE",
        ),
        (
            &["run", "jacobi.tess", "--output", "u=out.txt"],
            "cannot tell the format of out.txt from its name; use a .npy, .png or .vti file",
        ),
        (
            &["run", "jacobi.tess", "--output", "u=no/such/dir/out.npy"],
            "cannot write no/such/dir/out.npy: the directory no/such/dir does not exist",
        ),
        (
            &["run", "jacobi.tess", "--input", "u=absent.npy"],
            "cannot read absent.npy: ",
        ),
        (
            &["bench", "jacobi.tess", "--bandwidth=-3"],
            "`-3` is not a positive number",
        ),
    ];
    for (args, message) in cases {
        let output = tessera(dir.path(), args);
        assert_user_error(&output, message);
    }
}

#[test]
fn input_files_of_the_wrong_shape_or_type_are_refused_before_running() {
    let (dir, _) = jacobi_dir();
    tessera_io::write_npy(
        &dir.path().join("small.npy"),
        &Buffer::F64(vec![0.0; 6 * 9].into()),
        &[6, 9],
    )
    .unwrap();
    tessera_io::write_npy(
        &dir.path().join("ints.npy"),
        &Buffer::I32(vec![0; 63].into()),
        &[7, 9],
    )
    .unwrap();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "jacobi.tess",
            "--input",
            "u=small.npy",
            "--output",
            "u=out.npy",
        ],
    );
    assert_user_error(
        &output,
        "small.npy has shape (6, 9) and dtype float64, but field `u` is f64 on a 7x9 grid",
    );
    let output = tessera(
        dir.path(),
        &[
            "run",
            "jacobi.tess",
            "--input",
            "u=ints.npy",
            "--output",
            "u=out.npy",
        ],
    );
    assert_user_error(
        &output,
        "ints.npy has shape (7, 9) and dtype int32, but field `u` is f64 on a 7x9 grid; convert it with",
    );
    assert!(!dir.path().join("out.npy").exists());
}

#[test]
fn a_syntax_error_is_rendered_with_its_span() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.tess"),
        "grid [8];\nfield u: f32 border clamp;\nstage s { u = u[-1] + ; }\n",
    )
    .unwrap();
    let output = tessera(dir.path(), &["run", "bad.tess"]);
    assert_user_error(&output, "error");
    let text = stderr(&output);
    assert!(text.contains("bad.tess:3:"), "{text}");
    assert!(text.contains('^'), "{text}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_output_write_leaves_no_file_and_exits_1() {
    let (dir, _) = jacobi_dir();
    // Nobody, not even root, can create files in /proc.
    let output = tessera(
        dir.path(),
        &[
            "run",
            "jacobi.tess",
            "--backend",
            "reference",
            "--output",
            "u=/proc/tessera-out.npy",
        ],
    );
    assert_user_error(&output, "cannot write /proc/tessera-out.npy: ");
    assert!(!Path::new("/proc/tessera-out.npy").exists());
}

#[test]
fn help_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let output = tessera(dir.path(), &["run", "--help"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).contains("--check-finite"));
}

#[test]
fn emit_writes_the_c_code_into_a_new_directory_and_cache_dir_follows_the_environment() {
    let (dir, _) = jacobi_dir();
    let output = tessera(
        dir.path(),
        &["emit", "jacobi.tess", "--backend", "cpu", "-o", "gen/c"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let code = std::fs::read_to_string(dir.path().join("gen/c/jacobi.c")).unwrap();
    assert!(
        code.contains("Tessera CPU kernel for program `jacobi`"),
        "{code}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["cache", "dir"])
        .env("TESSERA_CACHE_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(stdout(&output).trim(), dir.path().display().to_string());
}

#[test]
fn a_plan_printed_by_tessera_plan_replays_bitwise_on_the_reference_and_every_cpu_strategy() {
    let dir = common::star_dir();
    common::assert_plans_replay_bitwise(dir.path(), "reference", &[&[]]);
    common::assert_plans_replay_bitwise(
        dir.path(),
        "cpu",
        &[
            &[],
            &["--strategy", "naive"],
            &["--strategy", "parallel", "--threads", "2"],
            &["--strategy", "blocked", "--tile", "4x5"],
            &[
                "--strategy",
                "overlapped",
                "--tile",
                "4x5",
                "--time-tile",
                "3",
            ],
            &[
                "--strategy",
                "wavefront",
                "--tile",
                "13x6",
                "--time-tile",
                "4",
            ],
        ],
    );
}

#[test]
fn plans_that_do_not_fit_are_refused_before_running_naming_the_field() {
    let dir = common::star_dir();
    let output = tessera(
        dir.path(),
        &[
            "plan",
            "star.tess",
            "--backend",
            "cpu",
            "--strategy",
            "overlapped",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let plan = stdout(&output);
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    let tile = plan
        .split("\"tile\": [")
        .nth(1)
        .and_then(|rest| rest.split(']').next());
    write(
        "wide.json",
        &plan.replacen(
            tile.expect("a tile"),
            "\n        4,\n        1000\n      ",
            1,
        ),
    );
    write("typo.json", &plan.replace("\"strategy\"", "\"stratgy\""));
    write(
        "other.json",
        &plan.replace("\"program\": \"star\"", "\"program\": \"heat\""),
    );
    let run = |file: &str, extra: &[&str]| {
        let args = [
            &["run", "star.tess", "--output", "u=out.npy", "--plan", file][..],
            extra,
        ]
        .concat();
        tessera(dir.path(), &args)
    };
    assert_user_error(
        &run("wide.json", &[]),
        "plan field `cpu.tile[1]` is 1000, but a tile holds 1 to 17 points along axis 1",
    );
    assert_user_error(&run("typo.json", &[]), "unknown field `stratgy`");
    assert_user_error(
        &run("other.json", &[]),
        "plan field `program` is `heat`, but this run is of program `star`",
    );
    assert_user_error(&run("missing.json", &[]), "cannot use plan missing.json");
    assert_user_error(
        &run("wide.json", &["--backend", "reference"]),
        "is for the cpu backend, not `reference`",
    );
    let both = tessera(
        dir.path(),
        &["run", "star.tess", "--plan", "wide.json", "--tile", "4x4"],
    );
    assert_eq!(both.status.code(), Some(1));
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
    assert!(!dir.path().join("out.npy").exists());
    let output = tessera(dir.path(), &["plan", "star.tess", "--strategy", "tiled"]);
    assert_user_error(
        &output,
        "the cpu backend has no strategy `tiled`; choose one of: naive, parallel, blocked, overlapped, wavefront",
    );
}

#[test]
fn bench_compile_only_reports_the_compile_and_the_source_size_and_runs_nothing() {
    let (dir, _) = jacobi_dir();
    let cache = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args([
            "bench",
            "jacobi.tess",
            "--backend",
            "cpu",
            "--exact",
            "--compile-only",
            "--json",
        ])
        .current_dir(dir.path())
        .env("TESSERA_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["program"], "jacobi");
    assert_eq!(report["exact"], true);
    assert!(
        report["compile_seconds"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(report["source_bytes"].as_u64().unwrap() > 1000, "{report}");
    assert!(report.get("gcells_per_s").is_none(), "{report}");
}

/// Terminal escape sequences in a program, its file name and a missing file's name reach
/// stderr escaped (`\u{1b}`), never raw, with exit code 1.
#[test]
fn control_characters_in_errors_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let name = "red\u{1b}[31m\r.tess";
    std::fs::write(
        dir.path().join(name),
        "grid [8];\nfield u: f32;\nstage s { u = \u{1b}[2J; }\n",
    )
    .unwrap();
    for args in [["check", name], ["check", "gone\u{1b}[2J.tess"]] {
        let output = tessera(dir.path(), &args);
        let shown = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{shown}");
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\r'),
            "{shown:?}"
        );
        assert!(shown.contains("\\u{1b}["), "{shown}");
    }
}
