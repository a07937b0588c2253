//! End-to-end tests of `tessera tune` and the tuning database: the stored plan is used by
//! `plan`, `run`, `bench` and `explain` (not with `--no-tuned`, nor when flags fix the plan,
//! nor for another key), processes tuning at once lose nothing, a first signal ends the search
//! with its report, damaged or stale entries are ignored with a note, and bad input is a
//! clear error with exit code 1.

use std::path::Path;
use std::process::{Command, Output};

mod common;

use common::{assert_user_error, star_dir, stderr, stdout};

/// Runs the binary in `dir` with the kernel cache and tuning database in `cache`.
fn tessera(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    command(dir, cache, args)
        .output()
        .expect("the tessera binary runs")
}

/// The command line of [`tessera`], not started.
fn command(dir: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tessera"));
    command
        .args(args)
        .current_dir(dir)
        .env("TESSERA_CACHE_DIR", cache)
        .env_remove("TESSERA_BACKEND")
        .env_remove("TESSERA_TARGET_ISA")
        .env_remove("TESSERA_LOG");
    command
}

/// Short runs on the cpu backend, with a budget no test spends.
const SHORT_RUNS: [&str; 8] = [
    "--backend",
    "cpu",
    "--steps",
    "2",
    "--reps",
    "1",
    "--budget",
    "10m",
];

/// With [`SHORT_RUNS`], a quick exact tuning: a few candidates.
const FEW_EXACT: [&str; 3] = ["--exact", "--max-candidates", "3"];

/// The arguments of a quick exact tuning of `program`.
fn quick(program: &str) -> Vec<&str> {
    [&["tune", program][..], &SHORT_RUNS, &FEW_EXACT].concat()
}

/// `tessera tune PROGRAM` with [`quick`] settings; asserts success.
fn tune(dir: &Path, cache: &Path, program: &str) -> Output {
    let output = tessera(dir, cache, &quick(program));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    output
}

/// What `tessera plan star.tess --backend cpu` with `flags` prints: stdout and stderr.
fn plan_star(dir: &Path, cache: &Path, flags: &[&str]) -> (String, String) {
    let args = [&["plan", "star.tess", "--backend", "cpu"][..], flags].concat();
    let output = tessera(dir, cache, &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    (stdout(&output), stderr(&output))
}

/// What `tessera explain star.tess --backend cpu --bandwidth 10` with `flags` prints.
fn explain_star(dir: &Path, cache: &Path, flags: &[&str]) -> String {
    let args = [
        &[
            "explain",
            "star.tess",
            "--backend",
            "cpu",
            "--bandwidth",
            "10",
        ][..],
        flags,
    ]
    .concat();
    let output = tessera(dir, cache, &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stdout(&output)
}

/// Whether `tessera plan star.tess --backend cpu` with `flags` uses the tuned plan.
fn plans_tuned(dir: &Path, cache: &Path, flags: &[&str]) -> bool {
    plan_star(dir, cache, flags).0.contains("(tuned)")
}

#[test]
fn a_tuned_plan_is_used_by_plan_run_bench_and_explain_unless_flags_fix_the_plan() {
    let (dir, cache) = (star_dir(), tempfile::tempdir().unwrap());
    let (dir, cache) = (dir.path(), cache.path());
    let table = stdout(&tune(dir, cache, "star.tess"));
    for part in [
        "candidates timed",
        "rank  GCells/s  vs model  plan",
        "model",
        "stored for star 13x17",
    ] {
        assert!(table.contains(part), "{part:?} in {table}");
    }
    assert!(plans_tuned(dir, cache, &["--exact"]));
    assert!(!plans_tuned(dir, cache, &["--exact", "--no-tuned"]));
    assert!(!plans_tuned(
        dir,
        cache,
        &["--exact", "--strategy", "parallel"]
    ));
    assert!(!plans_tuned(dir, cache, &["--exact", "--threads", "1"]));
    assert!(
        !plans_tuned(dir, cache, &[]),
        "relaxed arithmetic is another key"
    );

    let text = explain_star(dir, cache, &["--exact"]);
    for part in [
        "from: the tuning database",
        "runner-up",
        "the model's plan",
        "tuned/model",
    ] {
        assert!(text.contains(part), "{part:?} in {text}");
    }
    let text = explain_star(dir, cache, &[]);
    assert!(text.contains("from: the backend's model"), "{text}");

    let bench = tessera(
        dir,
        cache,
        &[
            "bench",
            "star.tess",
            "--backend",
            "cpu",
            "--exact",
            "--reps",
            "1",
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(stdout(&bench).trim()).unwrap();
    assert_eq!(report["tuned"], true, "{report}");

    let run = |flags: &[&str], out: &str| {
        let args = [
            &["run", "star.tess", "--input", "u=u0.npy", "--output", out][..],
            flags,
        ]
        .concat();
        let output = tessera(dir, cache, &args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let tuned = stdout(&output).contains("(tuned)");
        (
            std::fs::read(dir.join(out.trim_start_matches("u="))).unwrap(),
            tuned,
        )
    };
    let (tuned, says_tuned) = run(&["--backend", "cpu", "--exact"], "u=tuned.npy");
    assert!(says_tuned, "the summary line names a tuned plan");
    assert_eq!(
        tuned,
        run(&["--backend", "reference"], "u=reference.npy").0,
        "the tuned plan computes what the reference does"
    );

    let list = stdout(&tessera(dir, cache, &["tune", "--list"]));
    assert!(
        list.contains("1 tuned plan(s)") && list.contains("star 13x17 cpu exact"),
        "{list}"
    );
    let text = std::fs::read_to_string(dir.join("star.tess")).unwrap();
    std::fs::write(dir.join("star.tess"), text.replace("0.2 *", "0.25 *")).unwrap();
    assert!(
        !plans_tuned(dir, cache, &["--exact"]),
        "an entry for an older program text is never used"
    );
    let forget = tessera(dir, cache, &["tune", "--forget", "star.tess"]);
    assert!(
        stdout(&forget).contains("removed 1 tuned plan(s) of star"),
        "{}",
        stdout(&forget)
    );
    assert!(!plans_tuned(dir, cache, &["--exact"]));
}

#[test]
fn two_processes_tuning_at_once_lose_no_entry() {
    let (dir, cache) = (star_dir(), tempfile::tempdir().unwrap());
    let (dir, cache) = (dir.path(), cache.path());
    std::fs::copy(dir.join("star.tess"), dir.join("other.tess")).unwrap();
    let children: Vec<_> = ["star.tess", "other.tess"]
        .iter()
        .map(|program| command(dir, cache, &quick(program)).spawn().unwrap())
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0));
    }
    let list = stdout(&tessera(dir, cache, &["tune", "--list"]));
    assert!(
        list.contains("2 tuned plan(s)")
            && list.contains("star 13x17")
            && list.contains("other 13x17"),
        "{list}"
    );
}

/// Whether `dir` holds a file anywhere below it.
fn holds_a_file(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let path = entry.path();
            path.is_file() || holds_a_file(&path)
        })
    })
}

#[test]
fn a_first_signal_stops_the_search_and_reports_and_stores_the_best_so_far() {
    let (dir, cache) = (star_dir(), tempfile::tempdir().unwrap());
    let (dir, cache) = (dir.path(), cache.path());
    // A search that only a signal ends: no candidate limit worth the name, a long budget.
    let args = [&["tune", "star.tess"][..], &SHORT_RUNS].concat();
    let mut child = command(dir, cache, &args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first candidate compiled (its library in the kernel cache): the search has begun.
    let start = std::time::Instant::now();
    while !holds_a_file(cache) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "tune ended before a signal"
        );
        assert!(start.elapsed().as_secs() < 120, "no candidate was compiled");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill on the id of our own child, which has not been waited for yet.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("tessera: SIGINT: stopping after the candidate being timed"),
        "{}",
        stderr(&output)
    );
    let report = stdout(&output);
    for said in [
        "rank  GCells/s  vs model  plan",
        "stopped by a signal",
        "stored for star",
    ] {
        assert!(report.contains(said), "{said}: {report}");
    }
    let list = stdout(&tessera(dir, cache, &["tune", "--list"]));
    assert!(list.contains("1 tuned plan(s)"), "{list}");
}

#[test]
fn a_stored_plan_that_no_longer_fits_is_ignored_with_a_note() {
    let (dir, cache) = (star_dir(), tempfile::tempdir().unwrap());
    let (dir, cache) = (dir.path(), cache.path());
    tune(dir, cache, "star.tess");
    let path = cache.join("tuning").join("tuning-v1.json");
    let mut db: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    db["entries"][0]["plan"]["backend"]["cpu"]["tile"] = serde_json::json!([4, 4, 4]);
    std::fs::write(&path, db.to_string()).unwrap();
    let (out, err) = plan_star(dir, cache, &["--exact"]);
    assert!(err.contains("no longer fits the program"), "{err}");
    assert!(!out.contains("(tuned)"));
}

#[test]
fn a_damaged_database_gives_a_warning_and_is_rebuilt() {
    let (dir, cache) = (star_dir(), tempfile::tempdir().unwrap());
    let (dir, cache) = (dir.path(), cache.path());
    std::fs::create_dir_all(cache.join("tuning")).unwrap();
    std::fs::write(
        cache.join("tuning").join("tuning-v1.json"),
        "{ half a databa",
    )
    .unwrap();
    let (_, err) = plan_star(dir, cache, &["--exact"]);
    assert!(err.contains("is damaged"), "{err}");
    let output = tune(dir, cache, "star.tess");
    assert!(stderr(&output).contains("warning:"), "{}", stderr(&output));
    assert!(plans_tuned(dir, cache, &["--exact"]));
}

#[test]
fn bad_tune_input_is_a_clear_error() {
    let (dir, cache) = (star_dir(), tempfile::tempdir().unwrap());
    let (dir, cache) = (dir.path(), cache.path());
    let cases: [(&[&str], &str); 7] = [
        (&["tune", "star.tess", "--budget", "0s"], "no time at all"),
        (
            &["tune", "star.tess", "--budget", "soon"],
            "is not a duration",
        ),
        (
            &["tune", "star.tess", "--backend", "cpux"],
            "unknown backend `cpux`",
        ),
        (
            &["tune", "star.tess", "--backend", "reference"],
            "no plan choices to tune",
        ),
        (&["tune", "missing.tess"], "cannot read program"),
        (&["tune"], "required"),
        (&["tune", "star.tess", "--list"], "cannot be used with"),
    ];
    for (args, message) in cases {
        assert_user_error(&tessera(dir, cache, args), message);
    }
}
