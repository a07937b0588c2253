//! Printing a parsed program and parsing the text again gives the same IR (spans aside).

mod common;

use common::{all_sources, parse_ok, without_spans};
use tessera_ir::print_program;

/// Asserts `parse(print(p)) == p` modulo spans, and that printing is a fixed point.
fn assert_round_trip(name: &str, text: &str) {
    let first = parse_ok(text);
    let printed = print_program(&first);
    let second = match tessera_lang::parse(&printed, "test", &[]) {
        Ok(parsed) => parsed.program,
        Err(d) => panic!(
            "{name}: printed text does not parse:\n{printed}\n{}",
            tessera_lang::render(&d, "printed.tess", &printed, false)
        ),
    };
    assert_eq!(
        without_spans(&first),
        without_spans(&second),
        "{name}: IR differs after printing:\n{printed}"
    );
    assert_eq!(
        print_program(&second),
        printed,
        "{name}: printing is not a fixed point"
    );
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
