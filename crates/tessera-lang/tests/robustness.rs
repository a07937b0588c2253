//! The front end never panics and every diagnostic points inside the text: random token
//! soups, random edits of valid programs, and pathological nesting.

mod common;

use std::sync::Arc;

use common::{VOCABULARY, assert_valid_spans, run_everything};

use proptest::prelude::*;

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(VOCABULARY),
            prop::sample::select(&[" ", "", "\n"][..]),
        ),
        0..80,
    )
    .prop_map(|tokens| {
        tokens
            .into_iter()
            .map(|(t, sep)| format!("{t}{sep}"))
            .collect()
    })
}

/// One edit of a text, on characters.
#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    Swap(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1..6usize).prop_map(|(at, len)| Edit::Delete(at, len)),
        (any::<usize>(), prop::sample::select(VOCABULARY))
            .prop_map(|(at, s)| Edit::Insert(at, s.to_string())),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let n = chars.len().max(1);
        match e {
            Edit::Delete(at, len) => {
                let start = at % n;
                let end = (start + len).min(chars.len());
                if start < end {
                    chars.drain(start..end);
                }
            }
            Edit::Insert(at, s) => {
                let at = at % (chars.len() + 1);
                chars.splice(at..at, s.chars());
            }
            Edit::Swap(a, b) => {
                let len = chars.len();
                if len > 0 {
                    chars.swap(a % len, b % len);
                }
            }
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn token_soups_never_panic(text in soup()) {
        run_everything(&text);
    }

    #[test]
    fn arbitrary_strings_never_panic(text in "\\PC{0,120}") {
        run_everything(&text);
    }

    #[test]
    fn edited_feature_programs_never_panic(index in any::<usize>(), edits in prop::collection::vec(edit(), 1..6)) {
        let sources = common::all_sources();
        let (_, text) = &sources[index % sources.len()];
        run_everything(&apply(text, &edits));
    }

    #[test]
    fn edited_random_programs_never_panic(seed in any::<u64>(), edits in prop::collection::vec(edit(), 0..4)) {
        run_everything(&apply(&common::generate::program(seed), &edits));
    }
}

fn codes(text: &str) -> Vec<&'static str> {
    match tessera_lang::parse(text, "deep", &[]) {
        Ok(_) => Vec::new(),
        Err(d) => {
            assert_valid_spans(text, &d);
            d.iter().map(|d| d.code).collect()
        }
    }
}

#[test]
fn deep_parentheses_are_an_error_not_a_stack_overflow() {
    let text = format!(
        "grid [4];\nfield u: f32 = {}1.0{};\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    assert_eq!(codes(&text), vec!["E0006"]);
}

#[test]
fn long_unary_chains_are_an_error() {
    let text = format!("grid [4];\nfield u: f32 = {}1.0;\n", "-!".repeat(50_000));
    assert_eq!(codes(&text), vec!["E0006"]);
}

#[test]
fn long_flat_sums_are_an_error_beyond_the_nesting_limit() {
    let terms = vec!["u[0]"; 20_000].join(" + ");
    let text = format!("grid [4];\nfield u: f32 border clamp;\nstage s {{ u = {terms}; }}\n");
    assert_eq!(codes(&text), vec!["E0006"]);
    // Just below the limit, parse, check and bind all cope (no stack overflow in a test thread).
    let terms = vec!["u[1]"; 250].join(" + ");
    let text = format!("grid [4];\nfield u: f32 border clamp;\nstage s {{ u = {terms}; }}\n");
    let checked = common::check(&text, "flat").expect("250 terms are fine");
    assert!(tessera_analysis::bind(Arc::new(checked), &[]).is_ok());
    let text = format!(
        "grid [4];\nfield u: f32 border clamp;\nstage s {{ u = {}u[1]{}; }}\n",
        "-(".repeat(120),
        ")".repeat(120)
    );
    assert!(
        common::check(&text, "nested").is_ok(),
        "240 levels are fine"
    );
}

#[test]
fn deep_conditionals_and_calls_are_an_error() {
    let text = format!(
        "grid [4];\nfield u: f32 = {}1.0;\n",
        "if true then 1.0 else ".repeat(10_000)
    );
    assert_eq!(codes(&text), vec!["E0006"]);
    let text = format!(
        "grid [4];\nfield u: f32 = {}1.0{};\n",
        "sqrt(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert_eq!(codes(&text), vec!["E0006"]);
    let text = format!(
        "grid [4];\nfield u: f32 border clamp;\nstage s {{ u = u[{}0{}]; }}\n",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert_eq!(codes(&text), vec!["E0006"]);
}

#[test]
fn many_errors_are_capped_and_terminate() {
    let text = "grid [4];\n".to_string() + &"field ;\n".repeat(10_000);
    let n = codes(&text).len();
    assert!((1..=60).contains(&n), "{n} errors");
    let text = ")".repeat(100_000);
    assert!(!codes(&text).is_empty());
    let text = "stage s { ".to_string() + &") ".repeat(100_000);
    assert!(!codes(&text).is_empty());
    for text in [
        "grid [4]; stage s { ".to_string() + &";".repeat(100_000),
        "@".repeat(100_000),
    ] {
        let n = codes(&text).len();
        assert!((1..=50).contains(&n), "{n} errors");
    }
}

#[test]
fn empty_and_comment_only_files_report_the_missing_grid() {
    for text in ["", "// nothing\n", "/* */"] {
        assert_eq!(codes(text), vec!["E0032"]);
    }
}
