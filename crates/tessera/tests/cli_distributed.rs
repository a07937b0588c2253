//! `tessera run --ranks` and `mpirun -n K tessera run`: a run on a grid cut into ranks writes
//! the same fields and reduction records as the run of one process, bitwise in exact mode,
//! with every rank in one process or one rank per MPI process; a checkpoint continues under
//! another number of ranks; layouts the grid or program cannot have are refused with exit 1;
//! a killed rank ends the MPI job (no hang) and leaves the last checkpoint intact.

mod common;

use std::path::Path;
use std::process::Command;

use common::{assert_user_error, stderr, stdout, tessera};

/// A clamped f64 field with a point source, a mirrored f32 field on a sub-domain, reductions
/// every 3 and 5 steps, and an `until` that holds after step 57.
const PROGRAM: &str = "program spread;\nparam N: i64 = 29;\ngrid [N, 21];\n\
field u: f64 border clamp = sin(0.3 * f64(x)) + cos(0.7 * f64(y)) + 2.0;\n\
field v: f32 border mirror = f32(x % 5) * 0.25;\n\
stage a { u = 0.2 * (u + u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) + select(x == 4 && y == 17, 0.5, 0.0); }\n\
stage b over [2..N - 1, 1..20] { v = 0.5 * v + 0.125 * (v[-2, 0] + v[1, 0] + v[0, -1] + v[0, 1]) + f32(t % 3) + f32(u); }\n\
reduce total = sum(u) every 3;\nreduce peak = max(v) every 5;\nuntil peak > 160.0;\n";

fn program_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spread.tess"), PROGRAM).unwrap();
    dir
}

/// Runs `spread.tess` in `dir` in exact mode with `args`, writing both fields and the
/// reduction records under `tag`; expects success and returns stdout.
fn run(dir: &Path, tag: &str, args: &[&str]) -> String {
    let mut all: Vec<String> = ["run", "spread.tess", "--exact"].map(String::from).to_vec();
    all.extend(outputs(tag));
    all.extend(args.iter().map(|a| a.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let output = tessera(dir, &all);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{all:?}: {}",
        stderr(&output)
    );
    stdout(&output)
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

/// The files written under `tag`.
fn written(dir: &Path, tag: &str) -> Vec<Vec<u8>> {
    ["u.npy", "v.npy", "r.csv"]
        .iter()
        .map(|name| std::fs::read(dir.join(format!("{tag}.{name}"))).unwrap())
        .collect()
}

#[test]
fn ranks_in_one_process_give_the_single_process_answer() {
    let dir = program_dir();
    let path = dir.path();
    let single = run(path, "one", &["--steps", "80"]);
    assert!(
        single.contains("(step 57)") || single.contains("stopped"),
        "{single}"
    );
    let layouts: [&[&str]; 6] = [
        &["--ranks", "2"],
        &["--ranks", "3", "--overlap", "on"],
        &["--ranks", "3", "--exchange-every", "1"],
        &["--ranks", "4x1", "--exchange-every", "2"],
        &["--ranks", "3", "--backend", "reference"],
        &[
            "--ranks",
            "2",
            "--backend",
            "cpu",
            "--strategy",
            "overlapped",
            "--time-tile",
            "3",
        ],
    ];
    for (i, layout) in layouts.iter().enumerate() {
        let tag = format!("ranks{i}");
        let mut args = vec!["--steps", "80"];
        args.extend_from_slice(layout);
        let summary = run(path, &tag, &args);
        assert!(summary.contains(" ranks ("), "{layout:?}: {summary}");
        let overlap = layout.contains(&"on");
        assert_eq!(
            summary.contains("overlapped with compute"),
            overlap,
            "{summary}"
        );
        assert_eq!(written(path, "one"), written(path, &tag), "{layout:?}");
    }
}

/// `--ranks 3` on a grid scanned along z cuts y: the scan's lines stay whole in each rank.
#[test]
fn a_count_of_ranks_leaves_scanned_axes_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let program = "grid [12, 10, 9];\n\
        field u: f64 border clamp = f64((x + 2 * y + 3 * z) % 5);\nfield s: f64;\n\
        stage a { u = 0.5 * (u[-1, 0, 0] + u[1, 0, 0]) + 0.1 * u[0, 1, 0]; }\n\
        stage b { s = scan(sum, u, z); }\n";
    std::fs::write(path.join("scans.tess"), program).unwrap();
    let run = |tag: &str, extra: &[&str]| {
        let out = format!("s={tag}.npy");
        let mut args = vec![
            "run",
            "scans.tess",
            "--exact",
            "--steps",
            "5",
            "--output",
            &out,
        ];
        args.extend_from_slice(extra);
        let output = tessera(path, &args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        (
            stdout(&output),
            std::fs::read(path.join(format!("{tag}.npy"))).unwrap(),
        )
    };
    let (_, one) = run("one", &[]);
    let (summary, three) = run("three", &["--ranks", "3"]);
    assert!(summary.contains("on 3 ranks (1x3x1"), "{summary}");
    assert_eq!(one, three);
}

#[test]
fn bench_on_ranks_reports_each_ranks_times() {
    let dir = program_dir();
    let args = [
        "bench",
        "spread.tess",
        "--steps",
        "6",
        "--reps",
        "2",
        "--json",
        "--ranks",
        "3",
    ];
    let output = tessera(dir.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let ranks = report["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 3);
    assert!(
        ranks
            .iter()
            .all(|r| r["compute_seconds"].as_f64().unwrap() > 0.0)
    );
    assert!(report["strategy"].as_str().unwrap().contains("on 3 ranks"));
}

#[test]
fn a_checkpoint_continues_under_another_number_of_ranks() {
    let dir = program_dir();
    let path = dir.path();
    run(path, "one", &["--steps", "50"]);
    let first = [
        "--steps",
        "20",
        "--ranks",
        "2",
        "--checkpoint",
        "ck",
        "--checkpoint-every",
        "10",
    ];
    run(path, "first", &first);
    run(
        path,
        "rest",
        &["--steps", "50", "--ranks", "3", "--restart", "ck"],
    );
    assert_eq!(written(path, "one"), written(path, "rest"));
}

#[test]
fn layouts_the_grid_or_program_cannot_have_are_refused() {
    let dir = program_dir();
    let path = dir.path();
    let refused = |args: &[&str], message: &str| {
        let mut all = vec!["run", "spread.tess", "--steps", "4"];
        all.extend_from_slice(args);
        assert_user_error(&tessera(path, &all), message);
    };
    refused(
        &["--ranks", "40"],
        "40 ranks along axis 0, which has 29 points",
    );
    refused(&["--ranks", "2x2"], "the fastest axis cannot be cut");
    refused(&["--ranks", "3x1x1"], "3 rank counts for a grid of 2 axes");
    refused(
        &["--ranks", "9", "--exchange-every", "6"],
        "fewer than the halo",
    );
    refused(&["--ranks", "0"], "must be at least 1");
    std::fs::write(path.join("plan.json"), "{}").unwrap();
    refused(&["--ranks", "2", "--plan", "plan.json"], "drop `--plan`");
    refused(&["--overlap", "on"], "`--overlap` is for a run on ranks");
    refused(
        &["--exchange-every", "2"],
        "`--exchange-every` is for a run on ranks",
    );
}

#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_refuses_to_run_under_an_mpi_launcher() {
    let dir = program_dir();
    let output = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["run", "spread.tess", "--steps", "2"])
        .current_dir(dir.path())
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .output()
        .unwrap();
    assert_user_error(&output, "built without MPI");
}

/// `mpirun` on the path, or `None` (a failure under `CI=true`, where MPI must be tested).
#[cfg(feature = "mpi")]
fn mpirun() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join("mpirun"))
        .find(|p| p.is_file());
    if found.is_none() && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("mpirun is not installed (CI=true: the MPI tests cannot be skipped)");
    }
    found
}

/// `mpirun -n processes tessera ARGS` in `dir`, allowed as root, oversubscribing the cores.
#[cfg(feature = "mpi")]
fn mpi_command(mpirun: &Path, dir: &Path, processes: usize, args: &[String]) -> Command {
    let mut command = Command::new(mpirun);
    command
        .current_dir(dir)
        .args(["--oversubscribe", "-n", &processes.to_string()])
        .arg(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_mpi_yield_when_idle", "1");
    command
}

/// `mpirun -n processes tessera ARGS` in `dir`, run to its end.
#[cfg(feature = "mpi")]
fn mpi_output(mpirun: &Path, dir: &Path, processes: usize, args: &[&str]) -> std::process::Output {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    mpi_command(mpirun, dir, processes, &args).output().unwrap()
}

/// `mpirun -n processes tessera run spread.tess --exact --steps 80 EXTRA` writing under `tag`:
/// expects success, one summary line naming the ranks, and the files of the run of one process
/// (written under `one`); returns the summary.
#[cfg(feature = "mpi")]
fn mpi_run(mpirun: &Path, dir: &Path, processes: usize, tag: &str, extra: &[&str]) -> String {
    let mut args: Vec<String> = ["run", "spread.tess", "--exact", "--steps", "80"]
        .map(String::from)
        .to_vec();
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend(outputs(tag));
    let output = mpi_command(mpirun, dir, processes, &args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    let summary = stdout(&output);
    assert_eq!(summary.lines().count(), 1, "one summary line: {summary}");
    assert!(
        summary.contains(&format!("on {processes} MPI ranks")),
        "{summary}"
    );
    assert_eq!(written(dir, "one"), written(dir, tag), "{args:?}");
    summary
}

#[cfg(feature = "mpi")]
#[test]
fn mpi_ranks_give_the_single_process_answer() {
    let Some(mpirun) = mpirun() else { return };
    let dir = program_dir();
    let path = dir.path();
    run(path, "one", &["--steps", "80"]);
    for (processes, overlap) in [(2, "auto"), (3, "on"), (4, "off")] {
        let tag = format!("mpi{processes}");
        let summary = mpi_run(&mpirun, path, processes, &tag, &["--overlap", overlap]);
        assert_eq!(
            summary.contains("overlapped with compute"),
            overlap == "on",
            "{summary}"
        );
    }
    let bench = [
        "bench",
        "spread.tess",
        "--steps",
        "6",
        "--reps",
        "1",
        "--json",
    ];
    let output = mpi_output(&mpirun, path, 2, &bench);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["ranks"].as_array().unwrap().len(), 2, "{report}");
}

/// One GPU runtime per rank: OpenCL (PoCL on CI) in every process, the exchange overlapped.
#[cfg(all(feature = "mpi", feature = "opencl"))]
#[test]
fn mpi_ranks_on_opencl_give_the_single_process_answer() {
    let Some(mpirun) = mpirun() else { return };
    let dir = program_dir();
    let path = dir.path();
    run(path, "one", &["--steps", "80"]);
    let extra = ["--backend", "opencl", "--overlap", "on"];
    let summary = mpi_run(&mpirun, path, 2, "mpicl", &extra);
    assert!(summary.contains("opencl"), "{summary}");
}

/// Under MPI rank 0 holds the fields: a checkpoint written by 3 processes continues on 2,
/// and the non-finite check every few steps stops every rank alike.
#[cfg(feature = "mpi")]
#[test]
fn mpi_checkpoints_continue_and_checks_stop_every_rank() {
    let Some(mpirun) = mpirun() else { return };
    let dir = program_dir();
    let path = dir.path();
    run(path, "one", &["--steps", "80"]);
    let first = [
        "run",
        "spread.tess",
        "--exact",
        "--steps",
        "40",
        "--checkpoint",
        "ck",
    ];
    let output = mpi_output(
        &mpirun,
        path,
        3,
        &[&first[..], &["--checkpoint-every", "20"]].concat(),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    mpi_run(&mpirun, path, 2, "again", &["--restart", "ck"]);
    let blowing_up = "grid [12, 9];\nfield u: f64 border clamp = 2.0;\n\
        stage grow { u = u * 1e80 + u[1, 0]; }\n";
    std::fs::write(path.join("grow.tess"), blowing_up).unwrap();
    let checked = [
        "run",
        "grow.tess",
        "--steps",
        "30",
        "--check-finite",
        "--check-every",
        "2",
    ];
    let output = mpi_output(&mpirun, path, 2, &checked);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("non-finite value: `u`"),
        "{}",
        stderr(&output)
    );
}

/// An error every rank meets (here an undefined name) is reported once, by rank 0, which ends
/// the job.
#[cfg(feature = "mpi")]
#[test]
fn an_error_of_every_rank_is_reported_once() {
    let Some(mpirun) = mpirun() else { return };
    let dir = program_dir();
    let path = dir.path();
    std::fs::write(
        path.join("bad.tess"),
        "grid [8, 8];\nfield u: f32;\nstage s { u = w; }\n",
    )
    .unwrap();
    let output = mpi_output(&mpirun, path, 3, &["run", "bad.tess"]);
    assert!(!output.status.success());
    let text = stderr(&output);
    assert_eq!(text.matches("error[").count(), 1, "{text}");
    assert!(text.contains("rank 0: error["), "{text}");
    assert!(!text.contains("interrupted by"), "{text}");
}

#[cfg(feature = "mpi")]
#[test]
fn a_killed_rank_ends_the_job_and_leaves_the_last_checkpoint_intact() {
    let Some(mpirun) = mpirun() else { return };
    let dir = program_dir();
    let path = dir.path();
    // `spread.tess` stops by `until` within tens of steps: this one runs until it is killed.
    let endless = PROGRAM.replace("until peak > 160.0;\n", "");
    std::fs::write(path.join("endless.tess"), endless).unwrap();
    let args: Vec<String> = [
        "run",
        "endless.tess",
        "--exact",
        "--set",
        "N=600",
        "--steps",
        "1000000",
        "--checkpoint",
        "ck",
        "--checkpoint-every",
        "20",
    ]
    .map(String::from)
    .to_vec();
    let mut job = mpi_command(&mpirun, path, 2, &args).spawn().unwrap();
    let started = std::time::Instant::now();
    while !path.join("ck/LATEST").exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "no checkpoint was written"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let rank = ranks_of(job.id())
        .into_iter()
        .last()
        .expect("a rank process");
    Command::new("kill")
        .args(["-9", &rank.to_string()])
        .status()
        .unwrap();
    let killed = std::time::Instant::now();
    let status = loop {
        if let Some(status) = job.try_wait().unwrap() {
            break status;
        }
        if killed.elapsed() > std::time::Duration::from_secs(60) {
            let _ = job.kill();
            panic!("the job still runs 60 s after a rank was killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(!status.success());
    let latest = std::fs::read_to_string(path.join("ck/LATEST")).unwrap();
    let done: u64 = (latest.trim().strip_prefix("step-"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("LATEST names {latest:?}"));
    let steps = (done + 3).to_string();
    let restarted = tessera(
        path,
        &[
            "run",
            "endless.tess",
            "--exact",
            "--set",
            "N=600",
            "--restart",
            "ck",
            "--steps",
            &steps,
        ],
    );
    assert_eq!(restarted.status.code(), Some(0), "{}", stderr(&restarted));
}

/// The processes `mpirun` (process `parent`) started: its children running `tessera`.
#[cfg(feature = "mpi")]
fn ranks_of(parent: u32) -> Vec<u32> {
    let mut ranks = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let is_tessera = stat.contains("(tessera)");
        if is_tessera && fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            ranks.push(pid);
        }
    }
    ranks.sort();
    ranks
}
