//! Behaviour that involves several processes or the process environment: concurrent builds of
//! one kernel, `TESSERA_*` variables, and loading sanitizer builds under a preloaded ASan.
//!
//! The parent tests re-run this test binary with a filter selecting [`child`], which reads its
//! task from [`CHILD_TASK`] and prints a result line.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tessera_jit::{CompileOptions, SANITIZER_FLAGS, asan_runtime_path, compile};

/// Environment variable naming the task of a child process.
const CHILD_TASK: &str = "TESSERA_JIT_TEST_CHILD_TASK";
/// Environment variable naming the file whose appearance starts racing children.
const START_FILE: &str = "TESSERA_JIT_TEST_START_FILE";
/// Prefix of the line a child prints on success.
const RESULT_PREFIX: &str = "CHILD-RESULT:";

const ADD_SOURCE: &str = "int tessera_add(int a, int b) { return a + b; }\n";

type AddFn = unsafe extern "C" fn(i32, i32) -> i32;

/// Starts this test binary running only [`child`] with `task`, plus `env`.
fn spawn_child(task: &str, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_TASK, task);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// The result line of a finished child, failing the test with its output if it failed.
fn child_result(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "child failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    // The harness prints `test child ... ` without a newline before the child's own output.
    let line = stdout
        .lines()
        .find_map(|line| line.split_once(RESULT_PREFIX).map(|(_, result)| result));
    line.unwrap_or_else(|| panic!("child printed no result:\n{stdout}"))
        .trim()
        .to_string()
}

/// Calls `tessera_add` from a library built from [`ADD_SOURCE`] with `options`.
fn compile_and_add(options: &CompileOptions, a: i32, b: i32) -> (bool, i32) {
    let (library, info) = compile(ADD_SOURCE, options).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: `AddFn` matches `tessera_add`.
    let sum = unsafe { library.symbol::<AddFn>("tessera_add").unwrap()(a, b) };
    (info.cache_hit, sum)
}

/// Waits (at most a minute) for the file named by [`START_FILE`] to exist.
fn wait_for_start_signal() {
    let path = std::env::var(START_FILE).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !Path::new(&path).exists() {
        assert!(Instant::now() < deadline, "no start signal");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The work of a child process; does nothing when run directly.
#[test]
#[ignore = "helper run in child processes by the other tests of this file"]
fn child() {
    let Ok(task) = std::env::var(CHILD_TASK) else {
        return;
    };
    let result = match task.as_str() {
        "race" => {
            wait_for_start_signal();
            let (hit, sum) = compile_and_add(&CompileOptions::default(), 20, 22);
            format!("hit={hit} sum={sum}")
        }
        "environment" => {
            let flags = CompileOptions::default().flags().join(" ");
            let error = compile(ADD_SOURCE, &CompileOptions::default()).unwrap_err();
            format!("flags={flags} error={error}")
        }
        "sanitized" => {
            let mut options = CompileOptions::default();
            options
                .extra_flags
                .extend(SANITIZER_FLAGS.iter().map(|flag| flag.to_string()));
            let source = r#"
                #include <stdlib.h>
                int tessera_write_at(int index) {
                    int *data = malloc(4 * sizeof(int));
                    data[index] = index;
                    int value = data[index];
                    free(data);
                    return value;
                }
                int tessera_add(int a, int b) { return a + b; }
            "#;
            let (library, _) = compile(source, &options).unwrap_or_else(|e| panic!("{e}"));
            let index: i32 = std::env::var("TESSERA_JIT_TEST_INDEX")
                .unwrap()
                .parse()
                .unwrap();
            // SAFETY: the types match the prototypes above; out-of-bounds indices are the point
            // of the test and are caught by AddressSanitizer, which aborts the process.
            unsafe {
                let add = library.symbol::<AddFn>("tessera_add").unwrap();
                let write_at = library
                    .symbol::<unsafe extern "C" fn(i32) -> i32>("tessera_write_at")
                    .unwrap();
                format!("add={} write={}", add(i32::MAX, 1), write_at(index))
            }
        }
        other => panic!("unknown child task {other}"),
    };
    println!("{RESULT_PREFIX} {result}");
}

#[test]
fn processes_compiling_the_same_kernel_at_once_share_one_valid_entry() {
    let cache = TempDir::new().unwrap();
    let start = cache.path().join("start");
    let cache_dir = cache.path().join("cache");
    let env = [
        ("TESSERA_CACHE_DIR", cache_dir.to_str().unwrap()),
        (START_FILE, start.to_str().unwrap()),
    ];
    // Start every child first; they all wait for the start file, then compile together.
    let mut running: Vec<_> = (0..4)
        .map(|_| {
            spawn_child("race", &env)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(&start, "go").unwrap();
    let results: Vec<String> = running
        .drain(..)
        .map(|child| child_result(&child.wait_with_output().unwrap()))
        .collect();
    assert!(results.iter().all(|r| r.ends_with("sum=42")), "{results:?}");
    let builds = results
        .iter()
        .filter(|r| r.starts_with("hit=false"))
        .count();
    assert_eq!(
        builds, 1,
        "the per-key lock lets exactly one process build: {results:?}"
    );

    let options = CompileOptions::default().with_cache_dir(&cache_dir);
    assert_eq!(compile_and_add(&options, 1, 2), (true, 3));
    let mut files: Vec<String> = std::fs::read_dir(cache_dir.join("v1"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let extensions: Vec<&str> = files
        .iter()
        .map(|f| f.rsplit('.').next().unwrap())
        .collect();
    assert_eq!(extensions, ["c", "json", "lock", "log", "so"], "{files:?}");
}

#[test]
fn environment_chooses_compiler_and_flags() {
    let output = spawn_child(
        "environment",
        &[
            ("TESSERA_CC", "tessera-missing-cc"),
            ("TESSERA_CFLAGS", "  -O1   -g "),
            (
                "TESSERA_CACHE_DIR",
                TempDir::new().unwrap().path().to_str().unwrap(),
            ),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(
        child_result(&output),
        "flags=-O1 -g -std=c11 -fopenmp -fPIC -shared \
         error=C compiler `tessera-missing-cc` not found (from TESSERA_CC); install gcc or set TESSERA_CC"
    );
}

#[test]
fn sanitizer_builds_run_under_preloaded_asan_and_catch_errors() {
    let Ok(asan) = asan_runtime_path(&CompileOptions::default()) else {
        eprintln!("skipped: the C compiler ships no libasan.so");
        return;
    };
    let cache = TempDir::new().unwrap();
    let run = |index: &str| {
        spawn_child(
            "sanitized",
            &[
                ("LD_PRELOAD", asan.to_str().unwrap()),
                ("ASAN_OPTIONS", "detect_leaks=0"),
                ("TESSERA_CACHE_DIR", cache.path().to_str().unwrap()),
                ("TESSERA_JIT_TEST_INDEX", index),
            ],
        )
        .output()
        .unwrap()
    };
    let in_bounds = run("3");
    assert_eq!(
        child_result(&in_bounds),
        format!("add={} write=3", i32::MIN)
    );
    let stderr = String::from_utf8_lossy(&in_bounds.stderr);
    assert!(
        stderr.contains("signed integer overflow"),
        "UBSan must report the overflow:\n{stderr}"
    );

    let out_of_bounds = run("4");
    let stderr = String::from_utf8_lossy(&out_of_bounds.stderr);
    assert!(!out_of_bounds.status.success());
    assert!(
        stderr.contains("heap-buffer-overflow"),
        "ASan must report the overflow:\n{stderr}"
    );
}
