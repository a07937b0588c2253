//! Compiling, calling, caching and error reporting, each test in its own cache directory.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tempfile::TempDir;
use tessera_jit::{
    CompileInfo, CompileOptions, CompiledLibrary, JitError, clear_cache_in, compile,
};

const ADD_SOURCE: &str = "int tessera_add(int a, int b) { return a + b; }\n";

type AddFn = unsafe extern "C" fn(i32, i32) -> i32;

/// Options with a private cache directory.
fn options_in(dir: &TempDir) -> CompileOptions {
    CompileOptions::default().with_cache_dir(dir.path())
}

/// Calls `tessera_add` of a library built from [`ADD_SOURCE`].
fn call_add(library: &CompiledLibrary, a: i32, b: i32) -> i32 {
    // SAFETY: `AddFn` matches `tessera_add` in ADD_SOURCE.
    unsafe { library.symbol::<AddFn>("tessera_add").unwrap()(a, b) }
}

fn compile_ok(source: &str, options: &CompileOptions) -> (CompiledLibrary, CompileInfo) {
    compile(source, options).unwrap_or_else(|e| panic!("compilation failed: {e}"))
}

/// The files of the cache entry directory, sorted.
fn entry_files(cache: &TempDir) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(cache.path().join("v1"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn compiles_and_calls_a_function() {
    let cache = TempDir::new().unwrap();
    let (library, info) = compile_ok(ADD_SOURCE, &options_in(&cache));
    assert!(!info.cache_hit);
    assert_eq!(call_add(&library, 2, 40), 42);
    assert_eq!(call_add(&library, i32::MAX, 1), i32::MIN);
    assert_eq!(
        info.path,
        cache.path().join("v1").join(format!("{}.so", info.key))
    );
    assert_eq!(fs::read_to_string(&info.source_path).unwrap(), ADD_SOURCE);
    assert_eq!(library.path(), info.path);
}

#[test]
fn openmp_and_libm_are_available() {
    let cache = TempDir::new().unwrap();
    let source = r#"
        #include <math.h>
        #include <omp.h>
        double tessera_sum_sqrt(long n) {
            double total = 0.0;
            #pragma omp parallel for reduction(+:total) num_threads(2)
            for (long i = 0; i < n; i++) total += sqrt((double)i * i);
            return total;
        }
        int tessera_team(void) {
            int team = 0;
            #pragma omp parallel num_threads(2)
            {
                #pragma omp single
                team = omp_get_num_threads();
            }
            return team;
        }
    "#;
    let (library, _) = compile_ok(source, &options_in(&cache));
    // SAFETY: the types match the prototypes above.
    let (total, team) = unsafe {
        let sum = library
            .symbol::<unsafe extern "C" fn(i64) -> f64>("tessera_sum_sqrt")
            .unwrap();
        let team = library
            .symbol::<unsafe extern "C" fn() -> i32>("tessera_team")
            .unwrap();
        (sum(1000), team())
    };
    assert_eq!(total, 999.0 * 1000.0 / 2.0);
    assert!(team >= 1);
}

#[test]
fn second_compile_is_a_cache_hit() {
    let cache = TempDir::new().unwrap();
    let options = options_in(&cache);
    let (_, first) = compile_ok(ADD_SOURCE, &options);
    let (library, second) = compile_ok(ADD_SOURCE, &options);
    assert!(!first.cache_hit);
    assert!(second.cache_hit);
    assert_eq!(first.key, second.key);
    assert_eq!(first.path, second.path);
    assert_eq!(call_add(&library, 1, 2), 3);
}

#[test]
fn changed_source_or_flags_miss_the_cache() {
    let cache = TempDir::new().unwrap();
    let options = options_in(&cache);
    let (_, base) = compile_ok(ADD_SOURCE, &options);
    let variants = [
        (format!("{ADD_SOURCE}// changed\n"), options.clone()),
        (
            ADD_SOURCE.to_string(),
            options.clone().with_flag("-DTESSERA_VARIANT=1"),
        ),
        (
            ADD_SOURCE.to_string(),
            CompileOptions {
                exact: true,
                ..options.clone()
            },
        ),
        (
            ADD_SOURCE.to_string(),
            CompileOptions {
                optimization_flags: Some(vec!["-O1".to_string()]),
                ..options.clone()
            },
        ),
    ];
    let mut keys = vec![base.key];
    for (source, variant) in &variants {
        let (library, info) = compile_ok(source, variant);
        assert!(!info.cache_hit, "{variant:?} should not reuse the entry");
        assert_eq!(call_add(&library, 5, 6), 11);
        assert!(!keys.contains(&info.key));
        keys.push(info.key);
    }
    assert_eq!(
        entry_files(&cache)
            .iter()
            .filter(|f| f.ends_with(".json"))
            .count(),
        5
    );
}

#[test]
fn exact_mode_adds_the_exact_flags_last_before_extras() {
    let flags = CompileOptions {
        exact: true,
        optimization_flags: Some(vec!["-O2".to_string(), "-ffast-math".to_string()]),
        ..CompileOptions::default()
    }
    .with_flag("-DX=1")
    .flags();
    assert_eq!(
        flags,
        [
            "-O2",
            "-ffast-math",
            "-std=c11",
            "-fopenmp",
            "-fPIC",
            "-shared",
            "-ffp-contract=off",
            "-fno-fast-math",
            "-DX=1"
        ]
    );
}

/// Writes an executable shell script `name` in `dir` that forwards to the real compiler but
/// answers `--version` with `version`. The script is copied into place by `cp`, so this
/// process never holds it open for writing: a child that another test forks meanwhile would
/// inherit such a descriptor, and running the script would then fail with ETXTBSY.
fn wrapper_compiler(dir: &Path, name: &str, version: &str) -> PathBuf {
    let path = dir.join(name);
    let draft = dir.join(format!("{name}.draft"));
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; exit 0; fi\nexec cc \"$@\"\n"
    );
    fs::write(&draft, script).unwrap();
    let copied = std::process::Command::new("cp")
        .arg(&draft)
        .arg(&path)
        .status()
        .unwrap();
    assert!(copied.success(), "cp {draft:?} {path:?}: {copied}");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn another_compiler_identity_misses_the_cache() {
    let cache = TempDir::new().unwrap();
    let tools = TempDir::new().unwrap();
    let first = wrapper_compiler(tools.path(), "cc-a", "wrapper cc 1.0");
    let second = wrapper_compiler(tools.path(), "cc-b", "wrapper cc 2.0");
    let with = |compiler: &Path| options_in(&cache).with_compiler(compiler.to_string_lossy());
    let (_, a) = compile_ok(ADD_SOURCE, &with(&first));
    let (_, a_again) = compile_ok(ADD_SOURCE, &with(&first));
    let (library, b) = compile_ok(ADD_SOURCE, &with(&second));
    assert!(!a.cache_hit && a_again.cache_hit && !b.cache_hit);
    assert_ne!(a.key, b.key);
    assert_eq!(call_add(&library, -3, 3), 0);
    let manifest = fs::read_to_string(b.path.with_extension("json")).unwrap();
    assert!(manifest.contains("wrapper cc 2.0"), "{manifest}");
}

#[test]
fn missing_compiler_is_reported_with_its_origin() {
    let cache = TempDir::new().unwrap();
    let options = options_in(&cache).with_compiler("tessera-no-such-compiler");
    let error = compile(ADD_SOURCE, &options).unwrap_err();
    assert!(
        matches!(error, JitError::CompilerNotFound { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "C compiler `tessera-no-such-compiler` not found (from CompileOptions); install gcc or set TESSERA_CC"
    );
}

#[test]
fn failed_compilation_names_the_saved_source_and_quotes_the_compiler() {
    let cache = TempDir::new().unwrap();
    let source = "int tessera_broken(void) { return undeclared_variable_xyz; }\n";
    let error = compile(source, &options_in(&cache)).unwrap_err();
    let JitError::CompileFailed {
        source_path,
        log_path,
        ..
    } = &error
    else {
        panic!("expected a compilation failure, got {error:?}");
    };
    let message = error.to_string();
    assert!(
        message.contains(&source_path.display().to_string()),
        "{message}"
    );
    assert!(message.contains("undeclared_variable_xyz"), "{message}");
    assert!(message.contains("error"), "{message}");
    assert_eq!(fs::read_to_string(source_path).unwrap(), source);
    assert!(
        fs::read_to_string(log_path)
            .unwrap()
            .contains("undeclared_variable_xyz")
    );
    // No library or manifest is left behind, and no temporary file either.
    let files = entry_files(&cache);
    assert!(
        files
            .iter()
            .all(|f| !f.ends_with(".so") && !f.ends_with(".json") && !f.ends_with(".tmp")),
        "{files:?}"
    );
}

#[test]
fn missing_symbols_are_reported() {
    let cache = TempDir::new().unwrap();
    let (library, _) = compile_ok(ADD_SOURCE, &options_in(&cache));
    // SAFETY: the symbol is never called.
    let error = unsafe { library.symbol::<AddFn>("tessera_absent") }.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("symbol `tessera_absent` not found"),
        "{error}"
    );
}

#[test]
fn clearing_removes_entries_and_nothing_else() {
    let cache = TempDir::new().unwrap();
    let options = options_in(&cache);
    compile_ok(ADD_SOURCE, &options);
    compile_ok(&format!("{ADD_SOURCE}// second\n"), &options);
    let unrelated = cache.path().join("v1").join("notes.txt");
    fs::write(&unrelated, "keep me").unwrap();
    assert_eq!(clear_cache_in(cache.path()).unwrap(), 2);
    assert_eq!(entry_files(&cache), ["notes.txt"]);
    assert_eq!(clear_cache_in(cache.path()).unwrap(), 0);
    let (_, info) = compile_ok(ADD_SOURCE, &options);
    assert!(!info.cache_hit);
    assert_eq!(clear_cache_in(&cache.path().join("absent")).unwrap(), 0);
}

#[test]
fn compilers_resolve_to_absolute_paths_with_a_version_identity() {
    let tools = TempDir::new().unwrap();
    let wrapper = wrapper_compiler(tools.path(), "cc-identity", "wrapper cc 3.1");
    let compiler = tessera_jit::Compiler::named(wrapper.to_str().unwrap()).unwrap();
    assert_eq!(compiler.path(), wrapper);
    assert_eq!(
        compiler.identity(),
        format!("{} | wrapper cc 3.1", wrapper.display())
    );
    assert_eq!(
        compiler.runtime_library("libtessera-does-not-exist.so"),
        None
    );

    let system = CompileOptions::default().resolve_compiler().unwrap();
    assert!(system.path().is_absolute(), "{:?}", system.path());

    let not_executable = tools.path().join("plain-file");
    fs::write(&not_executable, "").unwrap();
    let error = tessera_jit::Compiler::named(not_executable.to_str().unwrap()).unwrap_err();
    assert!(
        matches!(error, JitError::CompilerNotFound { .. }),
        "{error:?}"
    );
}
