//! Printing a parsed program and parsing the text again gives the same IR (spans aside).

mod common;

use common::{all_sources, parse_ok};

/// Parses `text` and asserts the printer round trip.
fn assert_round_trip(name: &str, text: &str) {
    common::assert_round_trip(name, text, &parse_ok(text));
}

#[test]
fn every_feature_program_round_trips() {
    let sources = all_sources();
    assert!(sources.len() >= 20, "feature programs missing");
    for (name, text) in sources {
        assert_round_trip(&name, &text);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Random valid programs round-trip through the printer.
    #[test]
    fn random_programs_round_trip(seed in proptest::prelude::any::<u64>()) {
        let text = common::generate::program(seed);
        assert_round_trip(&format!("seed {seed}:\n{text}"), &text);
    }
}

#[test]
fn error_cases_that_parse_round_trip() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/errors");
    let mut parsed = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "tess") {
            let text = std::fs::read_to_string(&path).unwrap();
            if let Ok(p) = tessera_lang::parse(&text, "case", &[]) {
                common::assert_round_trip(&path.display().to_string(), &text, &p.program);
                parsed += 1;
            }
        }
    }
    assert!(parsed >= 15, "only {parsed} error cases pass the parser");
}
