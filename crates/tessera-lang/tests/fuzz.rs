//! Bounded-time fuzzing of the front end (`TESSERA_FUZZ_SECONDS`, default 10; see
//! `tessera-fuzzkit`): mutated example, corpus and feature programs go through parse, check
//! and bind without a panic or a hang, every diagnostic inside the text, every parsed program
//! printing back to itself. Inputs it once found are replayed first.

mod common;

use std::path::{Path, PathBuf};

use tessera_fuzzkit::{Budget, Target, fuzz};

/// Every `.tess` file of the repository's examples, the test kit's corpus and the feature
/// programs.
fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dirs = [
        root.join("examples"),
        root.join("crates/tessera-testkit/corpus"),
        common::programs_dir(),
    ];
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).expect("a corpus folder"))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "tess"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| std::fs::read(path).expect("a corpus file"))
        .collect()
}

/// The check of one input: its text (invalid UTF-8 replaced) through the whole front end.
fn check(input: &[u8]) {
    common::run_everything(&String::from_utf8_lossy(input));
}

#[test]
fn mutated_programs_never_panic_or_hang() {
    let dictionary: Vec<&[u8]> = common::VOCABULARY.iter().map(|w| w.as_bytes()).collect();
    let target = Target {
        name: "parse-check-bind",
        corpus: corpus(),
        dictionary: &dictionary,
    };
    let outcome = fuzz(target, Budget::from_env(), check);
    println!(
        "parse-check-bind: {} inputs in {:.1} s",
        outcome.inputs, outcome.seconds
    );
    assert!(outcome.inputs > 0);
}
