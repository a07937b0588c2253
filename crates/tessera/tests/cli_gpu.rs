//! End-to-end tests of `tessera explain` and `tessera bench` with the GPU backends (builds with
//! the `opencl` or `cuda` feature): the per-kernel report against independently computed
//! numbers, and device compute time reported apart from host<->device transfers.
#![cfg(any(feature = "opencl", feature = "cuda"))]

mod common;

use common::{stderr, stdout, tessera};

/// A 5-point Jacobi update of the interior of a 66x130 f32 grid.
const JACOBI: &str = "grid [66, 130];\nsteps 3;\nfield u: f32;\nstage avg over [1..65, 1..129] {\n    u = 0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]);\n}\n";

fn jacobi_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jacobi.tess"), JACOBI).unwrap();
    dir
}

/// The number after `before` in `text`.
fn number_after(text: &str, before: &str) -> f64 {
    let rest = text
        .split(before)
        .nth(1)
        .unwrap_or_else(|| panic!("no {before:?} in:\n{text}"));
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|_| panic!("no number after {before:?} in:\n{text}"))
}

/// The explanation of the tiled plan with a 32x8 block: the numbers of the tile computed here.
fn check_tiled_explanation(backend: &str) {
    let dir = jacobi_dir();
    let output = tessera(
        dir.path(),
        &[
            "explain",
            "jacobi.tess",
            "--backend",
            backend,
            "--strategy",
            "tiled",
            "--tile",
            "8x32",
            "--bandwidth",
            "900",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(&format!("plan: {backend}/tiled block=32x8x1")),
        "{text}"
    );
    assert!(
        text.contains("kernel ts_jacobi_s0_avg_tiled (tiled):"),
        "{text}"
    );
    // 64 rows x 128 columns in 8x32 tiles: 4x8 blocks; the tile and its halo of 1 in f32.
    assert!(
        text.contains("block 32x8x1 (256 threads), grid 4x8x1 blocks"),
        "{text}"
    );
    let shared = (32 + 2) * (8 + 2) * 4;
    assert!(
        text.contains(&format!("shared memory {shared} B per block")),
        "{text}"
    );
    assert!(text.contains("registers: "), "{text}");
    assert!(
        text.contains("launches: steps are recorded once and replayed"),
        "{text}"
    );
    let occupancy = number_after(&text, "occupancy: ");
    assert!(occupancy > 0.0 && occupancy <= 100.0, "{text}");
    // Loads: the staged tile with its halo per point; stores: one f32.
    let loads = 4.0 * 340.0 / 256.0;
    assert_eq!(
        number_after(&text, "traffic: "),
        (loads * 100.0_f64).round() / 100.0
    );
    assert_eq!(
        number_after(&text, "B loaded per point ("),
        ((loads - 4.0) * 100.0_f64).round() / 100.0
    );
    assert!(text.contains("4.00 B stored, over 8192 points"), "{text}");
    assert!(
        text.contains("redundant work: 0.0% of the points"),
        "{text}"
    );
    let total = number_after(&text, "traffic model: ");
    assert_eq!(total, ((loads + 4.0) * 100.0_f64).round() / 100.0, "{text}");
    let roofline = number_after(&text, "roofline: ");
    assert!(
        (roofline - 900.0 / (loads + 4.0)).abs() < 1e-3,
        "{roofline} vs {}",
        900.0 / (loads + 4.0)
    );
}

#[cfg(feature = "cuda")]
#[test]
fn explain_cuda_reports_every_kernel_of_the_plan() {
    check_tiled_explanation("cuda");
}

#[cfg(feature = "opencl")]
#[test]
fn explain_opencl_reports_every_kernel_of_the_plan() {
    check_tiled_explanation("opencl");
}

/// Whether the `CI` environment variable is set (to anything but `false` or `0`).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

#[cfg(feature = "opencl")]
#[test]
fn bench_opencl_reports_transfers_apart_and_speed_from_the_device_time() {
    let dir = jacobi_dir();
    let args = [
        "bench",
        "jacobi.tess",
        "--backend",
        "opencl",
        "--reps",
        "3",
        "--bandwidth",
        "50",
    ];
    let output = tessera(dir.path(), &[&args[..], &["--json"]].concat());
    if output.status.code() == Some(1) && stderr(&output).contains("OpenCL") && !in_ci() {
        eprintln!("skipped: no OpenCL device: {}", stderr(&output));
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let seconds = report["seconds"].as_f64().unwrap();
    let transfers = report["transfer_seconds"].as_f64().unwrap();
    assert!(seconds > 0.0 && transfers > 0.0, "{report}");
    assert_eq!(report["transfer_seconds_all"].as_array().unwrap().len(), 3);
    let gcells = report["gcells_per_s"].as_f64().unwrap();
    let expected = 64.0 * 128.0 * 3.0 / seconds / 1e9;
    assert!((gcells - expected).abs() <= 1e-9 * expected, "{report}");
    assert_eq!(report["backend"], "opencl", "{report}");
    assert!(
        report["strategy"].as_str().unwrap().starts_with("naive "),
        "{report}"
    );

    let output = tessera(dir.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("  time loop: median "), "{text}");
    assert!(text.contains("  transfers: median "), "{text}");
    assert!(text.contains("GCells/s (from the time loop)"), "{text}");
}

#[test]
#[cfg(feature = "opencl")]
fn a_plan_printed_by_tessera_plan_replays_bitwise_on_every_opencl_strategy() {
    let dir = common::star_dir();
    let probe = tessera(dir.path(), &["plan", "star.tess", "--backend", "opencl"]);
    if probe.status.code() == Some(1) && !in_ci() {
        eprintln!("skipped: no OpenCL device: {}", stderr(&probe));
        return;
    }
    common::assert_plans_replay_bitwise(
        dir.path(),
        "opencl",
        &[
            &[],
            &["--strategy", "naive", "--tile", "4x8"],
            &["--strategy", "tiled", "--tile", "4x8"],
            &["--strategy", "streaming", "--tile", "8"],
            &["--time-tile", "3"],
            &[
                "--strategy",
                "overlapped",
                "--tile",
                "4x8",
                "--time-tile",
                "2",
            ],
        ],
    );
    // A block over the device's thread limit is refused before anything runs.
    let output = tessera(
        dir.path(),
        &["plan", "star.tess", "--backend", "opencl", "--json"],
    );
    let plan = stdout(&output).replace("\"block\": [\n        32,", "\"block\": [\n        65536,");
    std::fs::write(dir.path().join("huge.json"), plan).unwrap();
    let output = tessera(
        dir.path(),
        &[
            "run",
            "star.tess",
            "--plan",
            "huge.json",
            "--output",
            "u=out.npy",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("threads"), "{}", stderr(&output));
    assert!(!dir.path().join("out.npy").exists());
}

#[test]
#[cfg(feature = "opencl")]
fn explain_opencl_reports_the_fused_pass_of_overlapped_tiling() {
    let dir = jacobi_dir();
    let output = tessera(
        dir.path(),
        &[
            "explain",
            "jacobi.tess",
            "--backend",
            "opencl",
            "--time-tile",
            "4",
            "--bandwidth",
            "900",
        ],
    );
    if output.status.code() == Some(1) && !in_ci() {
        eprintln!("skipped: no OpenCL device: {}", stderr(&output));
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("plan: opencl/overlapped"), "{text}");
    assert!(
        text.contains("kernel ts_jacobi_overlapped (overlapped, once per pass of up to 4 steps):"),
        "{text}"
    );
    // A 32x32 tile computes regions of 38², 36², 34² and 32² points in its 4 steps (the stage
    // keeps the boundary, so its old values stay needed): (38² + 36² + 34² + 32²) / (4 · 32²)
    // - 1 = 20.1% recomputed. It loads the 40x40 input region (4 B each) once per 4 steps.
    let redundant = number_after(&text, "redundant work: ");
    assert!((redundant - 20.1).abs() < 0.05, "{redundant}\n{text}");
    let loaded = number_after(&text, "traffic: ");
    let expected = 40.0 * 40.0 * 4.0 / (32.0 * 32.0 * 4.0);
    assert!((loaded - expected).abs() < 0.01, "{loaded}\n{text}");
    assert!(text.contains("passes of 4 steps in one launch"), "{text}");
    assert!(
        text.contains("launches: fused passes are recorded once per depth and replayed"),
        "{text}"
    );
}

#[cfg(feature = "opencl")]
#[test]
fn a_plan_tuned_on_opencl_is_used_by_plan_and_explain() {
    let dir = jacobi_dir();
    let cache = tempfile::tempdir().unwrap();
    let tessera = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(args)
            .current_dir(dir.path())
            .env("TESSERA_CACHE_DIR", cache.path())
            .env_remove("TESSERA_BACKEND")
            .output()
            .unwrap()
    };
    let output = tessera(&[
        "tune",
        "jacobi.tess",
        "--backend",
        "opencl",
        "--exact",
        "--max-candidates",
        "4",
        "--steps",
        "2",
        "--reps",
        "1",
    ]);
    if output.status.code() == Some(1) && stderr(&output).contains("OpenCL") && !in_ci() {
        eprintln!("skipped: no OpenCL device: {}", stderr(&output));
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("stored for jacobi 66x130"));
    let plan = tessera(&["plan", "jacobi.tess", "--backend", "opencl", "--exact"]);
    assert!(stdout(&plan).contains("(tuned)"), "{}", stdout(&plan));
    let explain = tessera(&["explain", "jacobi.tess", "--backend", "opencl", "--exact"]);
    let text = stdout(&explain);
    assert!(text.contains("from: the tuning database"), "{text}");
}

#[test]
#[cfg(feature = "opencl")]
fn explain_shows_how_each_kernel_is_built_and_refuses_prefetching_without_time_tiles() {
    let dir = jacobi_dir();
    let explain = |flags: &[&str]| {
        let mut args = vec![
            "explain",
            "jacobi.tess",
            "--backend",
            "opencl",
            "--device",
            "h200",
        ];
        args.extend_from_slice(flags);
        tessera(dir.path(), &args)
    };
    let output = explain(&[
        "--strategy",
        "streaming",
        "--time-tile",
        "2",
        "--prefetch",
        "4",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("plane=cache prefetch=4 T=2"), "{text}");
    // 4 planes ahead round down to 3, a divisor of the sweep's unrolling.
    assert!(
        text.contains("form: up to 2 steps of every stage in flight along y")
            && text.contains("input planes loaded 3 iteration(s) ahead"),
        "{text}"
    );
    let output = explain(&["--strategy", "naive", "--prefetch", "2"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output).contains(
            "prefetching 2 plane(s) ahead needs streaming time tiles (`--strategy streaming --time-tile 2` or deeper); this plan is `naive` at a time tile of 1"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
#[cfg(feature = "opencl")]
fn explain_plans_for_a_built_in_gpu_table_that_no_run_can_use() {
    let dir = jacobi_dir();
    let explain = |device: &str| {
        tessera(
            dir.path(),
            &[
                "explain",
                "jacobi.tess",
                "--backend",
                "opencl",
                "--device",
                device,
                "--time-tile",
                "2",
            ],
        )
    };
    let output = explain("H200");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("for NVIDIA H200 SXM 141GB (built-in table)"),
        "{text}"
    );
    assert!(text.contains("bandwidth: 4800.0 GB/s"), "{text}");
    // The model's prediction for this plan, and every candidate it weighs, with its bound.
    assert!(text.contains("prediction (cost model): "), "{text}");
    assert!(text.contains("x the copy roofline"), "{text}");
    assert!(
        text.contains("candidates the cost model weighs when the strategy is left open"),
        "{text}"
    );
    for other in [
        "naive block=",
        "tiled block=",
        "streaming block=",
        "T=4: ",
        "T=8: ",
        "wavefront block=",
    ] {
        assert!(text.contains(other), "{other}: {text}");
    }
    for said in ["x this plan), bound by ", "measured on an H200"] {
        assert!(text.contains(said), "{said}: {text}");
    }
    let output = tessera(
        dir.path(),
        &[
            "run",
            "jacobi.tess",
            "--backend",
            "opencl",
            "--device",
            "h200",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(explain("no-such-gpu").status.code(), Some(1));
}

#[test]
#[cfg(feature = "cuda")]
fn emit_checks_a_plan_against_the_device_it_was_made_for() {
    let dir = tempfile::tempdir().unwrap();
    let program = "grid [512, 512, 512];\nfield u: f32 border clamp;\nstage s {\n    u = 0.4 * u + 0.1 * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]);\n}\n";
    std::fs::write(dir.path().join("j3d.tess"), program).unwrap();
    let emit = |device: Option<&str>| {
        let mut args = vec![
            "emit",
            "j3d.tess",
            "--backend",
            "cuda",
            "--strategy",
            "streaming",
            "--time-tile",
            "4",
        ];
        args.extend(device.iter().flat_map(|d| ["--device", *d]));
        tessera(dir.path(), &args)
    };
    // Its 32x32 tiles' shared rings (74 kB per block) fit an H100's 227 KiB: the plan keeps
    // them and emit checks them against the H100; a typical GPU's 48 KiB halves the tile.
    let h100 = emit(Some("h100"));
    assert_eq!(h100.status.code(), Some(0), "{}", stderr(&h100));
    assert!(
        stdout(&h100).contains("streaming block=32x8x1 E=4 chunk=64 plane=cache T=4"),
        "{}",
        stdout(&h100)
    );
    let typical = emit(None);
    assert_eq!(typical.status.code(), Some(0), "{}", stderr(&typical));
    assert!(
        stdout(&typical).contains("streaming block=32x4x1 E=4"),
        "{}",
        stdout(&typical)
    );
}

#[cfg(feature = "opencl")]
#[test]
fn explain_says_why_steps_are_launched_one_by_one() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tessera-testkit/corpus");
    let output = tessera(
        &corpus,
        &["explain", "fdtd_ricker.tess", "--backend", "opencl"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    // The source stage reads `t`: its launch differs from step to step.
    assert!(
        text.contains(
            "launches: steps are launched one by one: `ts_fdtd_ricker_s0_source_naive` takes the step counter"
        ),
        "{text}"
    );
}
