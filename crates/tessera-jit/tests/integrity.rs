//! Damaged cache entries are detected, deleted and rebuilt, never trusted; concurrent
//! compilations of one kernel in threads share a single build.

use std::fs;
use std::path::Path;
use std::sync::Barrier;

use tempfile::TempDir;
use tessera_jit::{CompileInfo, CompileOptions, compile};

const SOURCE: &str = "long tessera_mul(long a, long b) { return a * b; }\n";

type MulFn = unsafe extern "C" fn(i64, i64) -> i64;

/// Compiles [`SOURCE`] in `cache`, checks the library works, returns what happened.
fn compile_and_check(cache: &TempDir) -> CompileInfo {
    let options = CompileOptions::default().with_cache_dir(cache.path());
    let (library, info) = compile(SOURCE, &options).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: `MulFn` matches `tessera_mul`.
    let product = unsafe { library.symbol::<MulFn>("tessera_mul").unwrap()(6, -7) };
    assert_eq!(product, -42);
    info
}

/// Replaces the file at `path` by `contents` through a new inode, as a crash or another tool
/// would, without touching pages of the old file that this process may have mapped.
fn replace_file(path: &Path, contents: &[u8]) {
    fs::remove_file(path).unwrap();
    fs::write(path, contents).unwrap();
}

/// Damages a fresh entry with `damage`, then checks that the next compilation rebuilds it and
/// the one after that trusts the rebuilt entry.
fn check_rebuilt_after(damage: impl FnOnce(&CompileInfo)) {
    let cache = TempDir::new().unwrap();
    let first = compile_and_check(&cache);
    assert!(!first.cache_hit);
    damage(&first);
    let rebuilt = compile_and_check(&cache);
    assert!(!rebuilt.cache_hit, "a damaged entry must not be reused");
    assert_eq!(rebuilt.key, first.key);
    let trusted = compile_and_check(&cache);
    assert!(trusted.cache_hit, "the rebuilt entry must be valid");
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(first.path.with_extension("json")).unwrap())
            .unwrap();
    let library = fs::read(&first.path).unwrap();
    assert_eq!(manifest["library_size"], library.len() as u64);
    assert_eq!(
        manifest["library_blake3"],
        blake3::hash(&library).to_hex().as_str()
    );
}

#[test]
fn truncated_library_is_rebuilt() {
    check_rebuilt_after(|info| {
        let bytes = fs::read(&info.path).unwrap();
        replace_file(&info.path, &bytes[..bytes.len() / 2]);
    });
}

#[test]
fn overwritten_library_of_the_same_size_is_rebuilt() {
    check_rebuilt_after(|info| {
        let mut bytes = fs::read(&info.path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        replace_file(&info.path, &bytes);
    });
}

#[test]
fn empty_library_is_rebuilt() {
    check_rebuilt_after(|info| replace_file(&info.path, b""));
}

#[test]
fn deleted_library_is_rebuilt() {
    check_rebuilt_after(|info| fs::remove_file(&info.path).unwrap());
}

#[test]
fn garbage_manifest_is_rebuilt() {
    check_rebuilt_after(|info| replace_file(&info.path.with_extension("json"), b"{ not json"));
}

#[test]
fn truncated_manifest_is_rebuilt() {
    check_rebuilt_after(|info| {
        let manifest = info.path.with_extension("json");
        let text = fs::read(&manifest).unwrap();
        replace_file(&manifest, &text[..text.len() - 10]);
    });
}

#[test]
fn deleted_manifest_is_rebuilt() {
    check_rebuilt_after(|info| fs::remove_file(info.path.with_extension("json")).unwrap());
}

#[test]
fn manifest_for_other_inputs_is_rebuilt() {
    check_rebuilt_after(|info| {
        let manifest = info.path.with_extension("json");
        let text = fs::read_to_string(&manifest).unwrap();
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        value["flags"] = serde_json::json!(["-O0"]);
        replace_file(&manifest, value.to_string().as_bytes());
    });
}

#[test]
fn deleted_source_is_restored_on_a_hit() {
    let cache = TempDir::new().unwrap();
    let first = compile_and_check(&cache);
    fs::remove_file(&first.source_path).unwrap();
    let second = compile_and_check(&cache);
    assert!(second.cache_hit);
    assert_eq!(fs::read_to_string(&second.source_path).unwrap(), SOURCE);
}

#[test]
fn threads_compiling_the_same_kernel_share_one_build() {
    let cache = TempDir::new().unwrap();
    let threads = 4;
    let barrier = Barrier::new(threads);
    let infos: Vec<CompileInfo> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    compile_and_check(&cache)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        infos.iter().filter(|info| !info.cache_hit).count(),
        1,
        "{infos:?}"
    );
    let mut files: Vec<String> = fs::read_dir(cache.path().join("v1"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let key = &infos[0].key;
    let expected: Vec<String> = ["c", "json", "lock", "log", "so"]
        .iter()
        .map(|ext| format!("{key}.{ext}"))
        .collect();
    assert_eq!(files, expected);
}

#[test]
fn temporaries_left_by_a_dead_builder_are_swept_on_rebuild() {
    let cache = TempDir::new().unwrap();
    let first = compile_and_check(&cache);
    let dir = first.path.parent().unwrap();
    let stale = dir.join(format!(".{}.so.999999-0.tmp", first.key));
    let other_key = dir.join(format!(".{}.so.999999-0.tmp", "0".repeat(64)));
    fs::write(&stale, b"half a library").unwrap();
    fs::write(&other_key, b"someone else's").unwrap();
    fs::remove_file(first.path.with_extension("json")).unwrap();
    assert!(!compile_and_check(&cache).cache_hit);
    assert!(
        !stale.exists(),
        "the stale temporary of this key is removed"
    );
    assert!(
        other_key.exists(),
        "temporaries of other keys are left to their builders"
    );
}

#[test]
fn a_cache_root_that_is_a_file_is_a_clear_error() {
    let dir = TempDir::new().unwrap();
    let not_a_directory = dir.path().join("file");
    fs::write(&not_a_directory, b"").unwrap();
    let options = CompileOptions::default().with_cache_dir(&not_a_directory);
    let error = compile(SOURCE, &options).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, tessera_jit::JitError::CacheNotADirectory { .. }),
        "{error:?}"
    );
    assert!(
        message.contains(&not_a_directory.display().to_string()),
        "{message}"
    );
    assert!(message.contains("TESSERA_CACHE_DIR"), "{message}");
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn the_cache_is_private() {
    let base = TempDir::new().unwrap();
    let root = base.path().join("new-cache");
    let options = CompileOptions::default().with_cache_dir(&root);
    let (_library, info) = compile(SOURCE, &options).unwrap();
    assert!(info.cached);
    assert_eq!(mode_of(&root), 0o700);
    assert_eq!(mode_of(info.path.parent().unwrap()), 0o700);
    assert_eq!(mode_of(&info.path), 0o700);
    for extension in ["json", "c", "log", "lock"] {
        assert_eq!(
            mode_of(&info.path.with_extension(extension)),
            0o600,
            "{extension}"
        );
    }
}

/// Compiles in a cache root of mode `mode`: the cache is not used, the kernel still works,
/// and nothing is left behind.
fn check_uncached_in_root_of_mode(mode: u32) {
    let cache = TempDir::new().unwrap();
    set_mode(cache.path(), mode);
    let info = compile_and_check(&cache);
    assert!(!info.cached, "a root of mode {mode:o} is not trusted");
    assert!(!info.cache_hit);
    assert!(
        !info.path.exists(),
        "the private temporary directory is deleted after loading"
    );
    assert!(!info.path.starts_with(cache.path()));
    assert_eq!(
        fs::read_dir(cache.path()).unwrap().count(),
        0,
        "nothing is written into an untrusted cache"
    );
}

#[test]
fn a_world_writable_cache_is_not_used() {
    check_uncached_in_root_of_mode(0o777);
}

#[test]
fn a_group_writable_cache_is_not_used() {
    check_uncached_in_root_of_mode(0o770);
}

#[test]
fn a_shared_layout_directory_is_not_used() {
    let cache = TempDir::new().unwrap();
    let layout = cache.path().join("v1");
    fs::create_dir(&layout).unwrap();
    set_mode(&layout, 0o777);
    let info = compile_and_check(&cache);
    assert!(!info.cached);
    assert_eq!(fs::read_dir(&layout).unwrap().count(), 0);
}

#[test]
fn a_group_writable_library_is_not_loaded_but_rebuilt() {
    check_rebuilt_after(|info| {
        // A planted library: owned by us, but writable by the group.
        replace_file(&info.path, b"not a library at all");
        set_mode(&info.path, 0o770);
    });
}

#[test]
fn a_world_writable_manifest_is_not_trusted() {
    check_rebuilt_after(|info| set_mode(&info.path.with_extension("json"), 0o666));
}

#[test]
fn an_entry_owned_by_another_user_is_not_trusted() {
    // Only root can give a file away; other users are covered by the unit test of `distrust`.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    check_rebuilt_after(|info| std::os::unix::fs::chown(&info.path, Some(4242), None).unwrap());
}

#[test]
fn an_entry_whose_source_hash_was_altered_is_rebuilt() {
    check_rebuilt_after(|info| {
        let path = info.path.with_extension("json");
        let mut manifest: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        manifest["source_blake3"] = serde_json::Value::String("0".repeat(64));
        replace_file(&path, manifest.to_string().as_bytes());
        set_mode(&path, 0o600);
    });
}

#[test]
fn an_unwritable_cache_root_runs_uncached() {
    // A path below a regular file can be neither created nor written, even by root.
    let base = TempDir::new().unwrap();
    fs::write(base.path().join("file"), b"").unwrap();
    let options = CompileOptions::default().with_cache_dir(base.path().join("file").join("cache"));
    let (library, info) = compile(SOURCE, &options).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: `MulFn` matches `tessera_mul`.
    assert_eq!(
        unsafe { library.symbol::<MulFn>("tessera_mul").unwrap()(3, 4) },
        12
    );
    assert!(!info.cached);
    assert!(!info.path.exists());
}
