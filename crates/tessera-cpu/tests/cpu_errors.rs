//! Bad input: unknown strategies, zero tiles, a missing or failing C compiler.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use tessera_analysis::BoundProgram;
use tessera_testkit::case;
use tessera_testkit::inputs::random_fields;

/// The 2D star on a 9x9 grid.
fn star(extents: &[usize]) -> BoundProgram {
    case("star2d1r").bind_extents(extents, &[])
}
use tessera_plan::{PlanError, PlanRequest, Strategy};
use tessera_runtime::{Backend, BackendError};

/// The error of a call that must fail.
fn refused<T>(result: Result<T, BackendError>) -> BackendError {
    match result {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    }
}

fn prepare_error(options: PlanRequest) -> BackendError {
    let bound = star(&[9, 9]);
    match backend().plan_and_prepare(&bound, &options) {
        Ok(_) => panic!("{options:?} was accepted"),
        Err(e) => e,
    }
}

#[test]
fn unknown_strategy_lists_the_strategies() {
    let e = prepare_error(PlanRequest {
        strategy: Some(Strategy::Tiled),
        ..PlanRequest::default()
    });
    assert!(
        matches!(e, BackendError::Plan(PlanError::UnknownStrategy { .. })),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "the cpu backend has no strategy `tiled`; choose one of: naive, parallel, blocked, overlapped, wavefront"
    );
}

#[test]
fn zero_tile_is_refused() {
    let e = prepare_error(PlanRequest {
        strategy: Some(Strategy::Blocked),
        tile: Some(vec![4, 0]),
        ..PlanRequest::default()
    });
    assert_eq!(
        e.to_string(),
        "a tile size is 0; every tile size must be at least 1"
    );
}

#[test]
fn tile_of_the_wrong_dimension_is_refused() {
    let e = prepare_error(PlanRequest {
        tile: Some(vec![4]),
        ..PlanRequest::default()
    });
    assert!(
        e.to_string()
            .starts_with("the tile has 1 sizes but the grid has 2 axes"),
        "{e}"
    );
}

#[test]
fn zero_time_tile_is_refused() {
    let e = prepare_error(PlanRequest {
        strategy: Some(Strategy::Overlapped),
        time_tile: Some(0),
        ..PlanRequest::default()
    });
    assert_eq!(
        e.to_string(),
        "the time tile is 0; fuse at least 1 step per tile"
    );
}

#[test]
fn zero_threads_are_refused() {
    let e = prepare_error(PlanRequest {
        threads: Some(0),
        ..PlanRequest::default()
    });
    assert_eq!(
        e.to_string(),
        "the thread count is 0; use at least 1 thread"
    );
}

#[test]
fn missing_compiler_is_unavailable() {
    let bound = star(&[9, 9]);
    let mut backend = backend();
    backend.compile.compiler = Some("/nonexistent/tessera-cc".into());
    let e = refused(backend.plan_and_prepare(&bound, &PlanRequest::default()));
    assert!(matches!(e, BackendError::Unavailable(_)), "{e:?}");
    assert!(e.to_string().contains("/nonexistent/tessera-cc"), "{e}");
}

/// Writes the shell script `body` to `dir/name`, executable; returns its path.
fn compiler_script(dir: &std::path::Path, name: &str, body: &str) -> std::path::PathBuf {
    let script = dir.join(name);
    let draft = dir.join(format!("{name}.draft"));
    std::fs::write(&draft, body).expect("write script");
    // Copied by `cp` so that this process never holds the script open for writing (a child
    // forked meanwhile by another test would inherit it, and running it would fail: ETXTBSY).
    let copied = std::process::Command::new("cp")
        .arg(&draft)
        .arg(&script)
        .status()
        .expect("cp");
    assert!(copied.success(), "cp: {copied}");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

/// The path in `source saved at PATH,` of a compile error, read.
fn saved_source(message: &str) -> String {
    let saved = message
        .split("source saved at ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .expect("names the source");
    std::fs::read_to_string(saved).expect("the saved source exists")
}

#[test]
fn a_compiler_that_builds_nothing_is_the_environment_with_the_saved_source_and_the_log() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let script = compiler_script(
        dir.path(),
        "broken-cc",
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo 'broken-cc 1.0'; exit 0; fi\necho 'kernel.c:1:1: error: this compiler refuses everything' >&2\nexit 1\n",
    );
    let bound = star(&[9, 9]);
    let mut backend = backend();
    backend.compile.compiler = Some(script.display().to_string());
    backend.compile.cache_dir = Some(dir.path().join("cache"));
    let e = refused(backend.plan_and_prepare(&bound, &PlanRequest::default()));
    assert!(matches!(e, BackendError::Unavailable(_)), "{e:?}");
    let message = e.to_string();
    assert!(
        message.contains("this compiler refuses everything")
            && message.contains("cannot build even a minimal OpenMP library"),
        "{message}"
    );
    assert!(
        saved_source(&message).contains("int tessera_run("),
        "{message}"
    );
}

#[test]
fn a_kernel_a_working_compiler_refuses_is_a_bug_of_tessera() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let script = compiler_script(
        dir.path(),
        "picky-cc",
        "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.c) src=$a;; esac; done\nif [ -n \"$src\" ] && grep -q 'int tessera_run(' \"$src\"; then echo 'kernel.c:1:1: error: picky' >&2; exit 1; fi\nexec cc \"$@\"\n",
    );
    let bound = star(&[9, 9]);
    let mut backend = backend();
    backend.compile.compiler = Some(script.display().to_string());
    backend.compile.cache_dir = Some(dir.path().join("cache"));
    let e = refused(backend.plan_and_prepare(&bound, &PlanRequest::default()));
    assert!(matches!(e, BackendError::Compile(_)), "{e:?}");
    assert!(
        saved_source(&e.to_string()).contains("int tessera_run("),
        "{e}"
    );
}

#[test]
fn fields_of_another_shape_are_refused() {
    let bound = star(&[9, 9]);
    let other = star(&[9, 10]);
    let mut exe = backend()
        .plan_and_prepare(&bound, &PlanRequest::default())
        .expect("prepares");
    let mut fields = random_fields(&other, 1);
    let e = refused(exe.run(&mut fields, 0, 1, &mut ()));
    assert!(e.to_string().contains("shape [9, 10]"), "{e}");
}
