//! End-to-end tests of the hardening of the kernel cache, the tuning database, the `TESSERA_*`
//! variables and SIGINT/SIGTERM: an untrusted or unusable cache runs uncached with one
//! warning and the right result; bad environment values exit 1 naming the variable; an
//! interrupted run leaves no temporary file and no half-written output.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A 5-point average on the interior of a 7x9 grid, with a sum.
const JACOBI: &str = "param alpha: f64 = 0.25;\ngrid [7, 9];\nsteps 3;\nfield u: f64;\nstage avg over [1..6, 1..8] {\n    u = alpha * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]);\n}\nreduce total = sum(u);\n";

/// Heat diffusion on an N x N grid whose initial state is computed (no input file).
const HEAT: &str = "param N: i64 = 64;\ngrid [N, N];\nsteps 10;\nfield u: f32 = f64((x * 7 + y * 13) % 17) / 17.0;\nstage diffuse over [1..N-1, 1..N-1] {\n    u = u + 0.2 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u);\n}\n";

/// A test directory: the programs, an input, a cache root and a private temporary directory
/// (`TMPDIR` of the runs, so that uncached builds can be checked for leftovers).
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("jacobi.tess"), JACOBI).unwrap();
        fs::write(dir.path().join("heat.tess"), HEAT).unwrap();
        let values: Vec<f64> = (0..63).map(|i| f64::from(i * 37 % 11) / 11.0).collect();
        tessera_io::write_npy(
            &dir.path().join("u0.npy"),
            &tessera_runtime::Buffer::F64(values.into()),
            &[7, 9],
        )
        .unwrap();
        fs::create_dir(dir.path().join("tmp")).unwrap();
        Setup { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn cache(&self) -> PathBuf {
        self.path().join("cache")
    }

    fn tmp(&self) -> PathBuf {
        self.path().join("tmp")
    }

    /// The command for the binary with `args`, the cache in [`Setup::cache`] unless `env`
    /// says otherwise.
    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tessera"));
        command
            .args(args)
            .current_dir(self.path())
            .env_remove("TESSERA_BACKEND")
            .env_remove("TESSERA_LOG")
            .env_remove("TESSERA_TARGET_ISA")
            .env_remove("TESSERA_CFLAGS")
            .env("TESSERA_CACHE_DIR", self.cache())
            .env("TMPDIR", self.tmp());
        for (name, value) in env {
            command.env(name, value);
        }
        command
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args, env).output().unwrap()
    }

    /// Runs the Jacobi program exactly on `backend`, writing `out`; returns the process output
    /// and the bytes written.
    fn jacobi(&self, backend: &str, out: &str, env: &[(&str, &str)]) -> (Output, Vec<u8>) {
        let output = self.run(
            &[
                "run",
                "jacobi.tess",
                "--backend",
                backend,
                "--exact",
                "--input",
                "u=u0.npy",
                "--output",
                &format!("u={out}"),
            ],
            env,
        );
        let written = fs::read(self.path().join(out)).unwrap_or_default();
        (output, written)
    }

    /// The output of the reference backend, against which the CPU runs are compared.
    fn expected(&self) -> Vec<u8> {
        let (output, written) = self.jacobi("reference", "reference.npy", &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        written
    }

    /// The names of leftover temporaries under the output directory, the cache and `TMPDIR`.
    fn leftovers(&self) -> Vec<String> {
        let mut found = Vec::new();
        for dir in [
            self.path().to_path_buf(),
            self.cache().join("v1"),
            self.tmp(),
        ] {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(".tmp") || name.starts_with("tessera-kernel-") {
                    found.push(format!("{}/{name}", dir.display()));
                }
            }
        }
        found
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `warning:` lines of a run.
fn warnings(output: &Output) -> Vec<String> {
    stderr(output)
        .lines()
        .filter(|line| line.starts_with("warning:"))
        .map(str::to_string)
        .collect()
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Asserts a successful run with the reference's output and exactly one warning containing
/// every one of `needles`.
fn assert_one_warning(output: &Output, written: &[u8], expected: &[u8], needles: &[&str]) {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    assert!(written == expected, "the result differs from the reference");
    let warnings = warnings(output);
    assert_eq!(warnings.len(), 1, "exactly one warning: {warnings:#?}");
    for needle in needles {
        assert!(
            warnings[0].contains(needle),
            "{needle:?} in {}",
            warnings[0]
        );
    }
}

/// The library and manifest of the one entry in the cache.
fn entry_files(setup: &Setup) -> (PathBuf, PathBuf) {
    let library = fs::read_dir(setup.cache().join("v1"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "so"))
        .expect("a cached library");
    let manifest = library.with_extension("json");
    (library, manifest)
}

#[test]
fn a_shared_cache_directory_runs_uncached_with_one_warning() {
    for mode in [0o777, 0o770] {
        let setup = Setup::new();
        let expected = setup.expected();
        fs::create_dir(setup.cache()).unwrap();
        set_mode(&setup.cache(), mode);
        let (output, written) = setup.jacobi("cpu", "u.npy", &[]);
        assert_one_warning(
            &output,
            &written,
            &expected,
            &[
                "is not used",
                "writable by its group",
                "compiles them again",
                "chmod 700",
            ],
        );
        let in_cache: Vec<_> = fs::read_dir(setup.cache()).unwrap().collect();
        assert!(in_cache.is_empty(), "nothing written into it: {in_cache:?}");
        assert_eq!(setup.leftovers(), Vec::<String>::new());
    }
}

#[test]
fn a_new_cache_is_private() {
    let setup = Setup::new();
    let (output, _) = setup.jacobi("cpu", "u.npy", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(warnings(&output).is_empty(), "{}", stderr(&output));
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&setup.cache()), 0o700);
    assert_eq!(mode(&setup.cache().join("v1")), 0o700);
    let (library, manifest) = entry_files(&setup);
    assert_eq!(mode(&library), 0o700);
    assert_eq!(mode(&manifest), 0o600);
}

#[test]
fn a_planted_group_writable_library_is_not_loaded() {
    let setup = Setup::new();
    let expected = setup.expected();
    let (output, _) = setup.jacobi("cpu", "u.npy", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (library, _) = entry_files(&setup);
    // Planted: owned by us (the test), but its group can write it.
    fs::remove_file(&library).unwrap();
    fs::write(&library, b"\x7fELF not a kernel").unwrap();
    set_mode(&library, 0o775);
    let (output, written) = setup.jacobi("cpu", "u.npy", &[]);
    assert_one_warning(
        &output,
        &written,
        &expected,
        &[
            "is not loaded",
            "is not trusted",
            "writable by its group",
            "compiled again",
        ],
    );
    // The rebuilt entry is trusted: no warning any more.
    let (output, written) = setup.jacobi("cpu", "u.npy", &[]);
    assert_eq!(output.status.code(), Some(0));
    assert!(warnings(&output).is_empty(), "{}", stderr(&output));
    assert!(written == expected);
}

#[test]
fn an_entry_whose_source_hash_was_altered_is_rebuilt() {
    let setup = Setup::new();
    let expected = setup.expected();
    let (output, _) = setup.jacobi("cpu", "u.npy", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (_, manifest_path) = entry_files(&setup);
    let mut manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["source_blake3"] = serde_json::Value::String("f".repeat(64));
    fs::write(&manifest_path, manifest.to_string()).unwrap();
    let (output, written) = setup.jacobi("cpu", "u.npy", &[]);
    assert_one_warning(
        &output,
        &written,
        &expected,
        &[
            "recorded source hash",
            "is not the hash of the kernel's source",
        ],
    );
}

#[test]
fn an_unwritable_cache_runs_uncached_with_one_warning() {
    let setup = Setup::new();
    let expected = setup.expected();
    // Below a regular file nothing can be created, whoever runs the test (root included).
    fs::write(setup.path().join("a-file"), b"").unwrap();
    let below_a_file = setup.path().join("a-file").join("cache");
    let env = [("TESSERA_CACHE_DIR", below_a_file.to_str().unwrap())];
    let (output, written) = setup.jacobi("cpu", "u.npy", &env);
    assert_one_warning(
        &output,
        &written,
        &expected,
        &["is not used", "compiles them again"],
    );
    assert_eq!(setup.leftovers(), Vec::<String>::new());

    // A read-only directory (only meaningful when not root: root writes anyway).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        fs::create_dir(setup.cache()).unwrap();
        set_mode(&setup.cache(), 0o500);
        let (output, written) = setup.jacobi("cpu", "u.npy", &[]);
        set_mode(&setup.cache(), 0o700);
        assert_one_warning(&output, &written, &expected, &["is not used"]);
    }
}

#[test]
fn an_untrusted_tuning_database_is_not_used_with_one_warning() {
    let setup = Setup::new();
    let expected = setup.expected();
    let tuning = setup.cache().join("tuning");
    fs::create_dir_all(&tuning).unwrap();
    set_mode(&setup.cache(), 0o700);
    set_mode(&tuning, 0o777);
    let (output, written) = setup.jacobi("cpu", "u.npy", &[]);
    assert_one_warning(
        &output,
        &written,
        &expected,
        &["tuning database", "is not used", "writable by"],
    );
    // `tessera tune` still searches, prints and exits 0, but stores nothing.
    let output = setup.run(
        &[
            "tune",
            "heat.tess",
            "--backend",
            "cpu",
            "--budget",
            "2s",
            "--max-candidates",
            "2",
            "--reps",
            "1",
            "--steps",
            "1",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // (A busy machine adds a warning of its own.)
    let about_the_database = warnings(&output)
        .into_iter()
        .filter(|w| w.contains("tuning database") || w.contains("not stored"))
        .count();
    assert_eq!(about_the_database, 1, "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("not stored"));
    assert!(!tuning.join("tuning-v1.json").exists());

    // When the whole cache is shared, the kernel cache and the database share one warning.
    set_mode(&setup.cache(), 0o777);
    let (output, written) = setup.jacobi("cpu", "u.npy", &[]);
    assert_one_warning(
        &output,
        &written,
        &expected,
        &["tuned plans are neither read nor saved"],
    );
}

#[test]
fn a_cache_dir_that_is_a_file_is_a_user_error_naming_the_variable() {
    let setup = Setup::new();
    fs::write(setup.path().join("a-file"), b"").unwrap();
    let file = setup.path().join("a-file");
    let env = [("TESSERA_CACHE_DIR", file.to_str().unwrap())];
    let (output, written) = setup.jacobi("cpu", "u.npy", &env);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("TESSERA_CACHE_DIR"), "{message}");
    assert!(message.contains(file.to_str().unwrap()), "{message}");
    assert!(message.contains("is not a directory"), "{message}");
    assert!(!message.contains("bug in Tessera"), "{message}");
    assert!(written.is_empty());
}

#[test]
fn bad_environment_values_are_user_errors_naming_the_variable() {
    let setup = Setup::new();
    let cases: [(&str, &str, &str); 3] = [
        ("TESSERA_TARGET_ISA", "avx9000", "possible values"),
        ("TESSERA_BACKEND", "quantum", "this build has"),
        (
            "TESSERA_CFLAGS",
            "-fno-such-flag-anywhere",
            "-O2 -march=native",
        ),
    ];
    for (variable, value, accepted) in cases {
        let output = setup.run(
            &["run", "heat.tess", "--output", "u=u.npy"],
            &[(variable, value)],
        );
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{variable}: {message}");
        assert!(message.contains(variable), "{variable}: {message}");
        assert!(message.contains(value), "{variable}: {message}");
        assert!(message.contains(accepted), "{variable}: {message}");
        assert!(!message.contains("bug in Tessera"), "{variable}: {message}");
        assert!(!setup.path().join("u.npy").exists());
    }
}

/// Starts a run of the heat program at size `n` for `steps` steps writing `u.npy`.
fn start_heat(setup: &Setup, n: usize, steps: usize) -> Child {
    setup
        .command(
            &[
                "run",
                "heat.tess",
                "--backend",
                "cpu",
                "--set",
                &format!("N={n}"),
                "--steps",
                &steps.to_string(),
                "--output",
                "u=u.npy",
            ],
            &[],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `ready` holds or the child exits; returns whether `ready` held.
fn wait_for(child: &mut Child, ready: impl Fn() -> bool, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

fn send(child: &Child, signal: libc::c_int) {
    // SAFETY: kill on the id of our own child, which has not been waited for yet.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// Whether a file named like a temporary (`.tmp`) is in `dir`.
fn has_temporary(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
    })
}

/// The output is absent, or a whole `.npy` file of `n` x `n` f32.
fn assert_whole_or_absent(setup: &Setup, n: usize) {
    let path = setup.path().join("u.npy");
    if path.exists() {
        let read = tessera_io::read_npy(&path, "u", tessera_ir::ScalarType::F32, &[n, n]);
        assert!(read.is_ok(), "a half-written output: {read:?}");
    }
}

/// Interrupts a long run with `signal` once it is computing; checks the exit status and that
/// no temporary is left.
fn check_interrupted_run(signal: libc::c_int, code: i32) {
    let setup = Setup::new();
    let mut child = start_heat(&setup, 512, 1_000_000);
    let library_built = || {
        fs::read_dir(setup.cache().join("v1")).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".json"))
        })
    };
    assert!(
        wait_for(&mut child, library_built, Duration::from_secs(120)),
        "the run starts computing"
    );
    std::thread::sleep(Duration::from_millis(300));
    send(&child, signal);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(code), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("interrupted"),
        "{}",
        stderr(&output)
    );
    assert!(
        !setup.path().join("u.npy").exists(),
        "the run never finished"
    );
    assert_eq!(setup.leftovers(), Vec::<String>::new());
}

#[test]
fn sigint_during_a_run_exits_130_and_leaves_nothing() {
    check_interrupted_run(libc::SIGINT, 130);
}

#[test]
fn sigterm_during_a_run_exits_143_and_leaves_nothing() {
    check_interrupted_run(libc::SIGTERM, 143);
}

#[test]
fn sigint_while_the_output_is_written_leaves_it_whole_or_absent() {
    // A large output (8192^2 f32: 256 MiB) after a single step: the interrupt is sent as soon
    // as the temporary output file appears, while it is being written.
    let n = 8192;
    let setup = Setup::new();
    let mut caught = 0;
    for _attempt in 0..3 {
        let _ = fs::remove_file(setup.path().join("u.npy"));
        let mut child = start_heat(&setup, n, 1);
        let writing = || has_temporary(setup.path());
        let during_write = wait_for(&mut child, writing, Duration::from_secs(300));
        if during_write {
            send(&child, libc::SIGINT);
        }
        let output = child.wait_with_output().unwrap();
        let code = output.status.code();
        assert!(
            code == Some(130) || code == Some(0),
            "{code:?}: {}",
            stderr(&output)
        );
        if code == Some(130) {
            caught += 1;
        }
        assert_whole_or_absent(&setup, n);
        assert_eq!(setup.leftovers(), Vec::<String>::new());
        if caught > 0 {
            break;
        }
    }
    assert!(caught > 0, "the write was never interrupted");
}

#[test]
fn sigint_during_compilation_leaves_no_temporary_in_the_cache() {
    let setup = Setup::new();
    let mut child = start_heat(&setup, 256, 1_000_000);
    let compiling = || has_temporary(&setup.cache().join("v1"));
    // When the compilation is too quick to catch, the run is interrupted instead.
    let during_compilation = wait_for(&mut child, compiling, Duration::from_secs(120));
    send(&child, libc::SIGINT);
    eprintln!("interrupted during the compilation: {during_compilation}");
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    // The compiler is terminated with Tessera; give it a moment to remove its own files.
    let start = Instant::now();
    while !setup.leftovers().is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(setup.leftovers(), Vec::<String>::new());
    assert!(!setup.path().join("u.npy").exists());
}
