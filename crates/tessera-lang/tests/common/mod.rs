//! Helpers shared by the test files: the example programs and span-free comparison.
#![allow(dead_code)]

pub mod generate;

use std::path::PathBuf;
use std::sync::Arc;

use tessera_ir::{Diagnostic, Program, Range, ReductionPlacement, Span, Statement, print_program};

/// The directory of the feature programs.
pub fn programs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

/// The text of `tests/programs/NAME.tess`.
pub fn source(name: &str) -> String {
    let path = programs_dir().join(format!("{name}.tess"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every feature program, by name, in name order.
pub fn all_sources() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(programs_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tess"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Parses a program that must be valid, printing the diagnostics otherwise.
pub fn parse_ok(text: &str) -> Program {
    match tessera_lang::parse(text, "test", &[]) {
        Ok(parsed) => parsed.program,
        Err(d) => panic!(
            "unexpected errors:\n{}",
            tessera_lang::render(&d, "test.tess", text, false)
        ),
    }
}

/// A copy of `program` with every span set to `Span::NONE`.
pub fn without_spans(program: &Program) -> Program {
    let mut p = program.clone();
    p.grid_span = Span::NONE;
    for id in p.params.ids() {
        p.params[id].span = Span::NONE;
    }
    for id in p.fields.ids() {
        p.fields[id].span = Span::NONE;
    }
    for id in p.groups.ids() {
        p.groups[id].span = Span::NONE;
    }
    for id in p.tables.ids() {
        p.tables[id].span = Span::NONE;
    }
    for id in p.receivers.ids() {
        p.receivers[id].span = Span::NONE;
    }
    for id in p.exprs.ids() {
        p.exprs[id].span = Span::NONE;
    }
    for id in p.stages.ids() {
        let stage = &mut p.stages[id];
        stage.span = Span::NONE;
        if let Some(region) = &mut stage.region {
            region.span = Span::NONE;
        }
        for local in stage.locals.ids() {
            stage.locals[local].span = Span::NONE;
        }
        for statement in &mut stage.body {
            if let Statement::Assign { span, .. } = statement {
                *span = Span::NONE;
            }
        }
    }
    for id in p.reductions.ids() {
        let reduction = &mut p.reductions[id];
        reduction.span = Span::NONE;
        if let ReductionPlacement::AfterStep {
            region: Some(region),
        } = &mut reduction.placement
        {
            region.span = Span::NONE;
        }
    }
    if let Some(until) = &mut p.until {
        until.span = Span::NONE;
    }
    p
}

/// Whether a range is the whole axis.
pub fn is_all(range: &Range) -> bool {
    *range == Range::all()
}

/// Asserts `parse(print(p)) == p` modulo spans and that printing is a fixed point; returns `p`.
pub fn assert_round_trip<'p>(name: &str, text: &str, first: &'p Program) -> &'p Program {
    let printed = print_program(first);
    let second = match tessera_lang::parse(&printed, "test", &[]) {
        Ok(parsed) => parsed.program,
        Err(d) => panic!(
            "{name}: the printed text does not parse.\nsource:\n{text}\nprinted:\n{printed}\n{}",
            tessera_lang::render(&d, "printed.tess", &printed, false)
        ),
    };
    assert_eq!(
        without_spans(first),
        without_spans(&second),
        "{name}: the IR differs after printing:\n{printed}"
    );
    assert_eq!(
        print_program(&second),
        printed,
        "{name}: printing is not a fixed point"
    );
    first
}

/// Parses and checks `text` (named `name` unless it says otherwise).
pub fn check(
    text: &str,
    name: &str,
) -> Result<tessera_analysis::CheckedProgram, Vec<tessera_ir::Diagnostic>> {
    let parsed = tessera_lang::parse(text, name, &[])?;
    tessera_analysis::check(&parsed.program)
}

/// Asserts every label lies within `text` on character boundaries and rendering works.
pub fn assert_valid_spans(text: &str, diagnostics: &[Diagnostic]) {
    assert!(
        !diagnostics.is_empty(),
        "a rejection comes with at least one diagnostic"
    );
    for d in diagnostics {
        assert!(d.primary_span().is_some(), "{} has no primary span", d.code);
        assert!(d.help.is_some(), "{} ({}) has no help", d.code, d.message);
        for label in &d.labels {
            let (start, end) = (label.span.start as usize, label.span.end as usize);
            assert!(
                start <= end && end <= text.len(),
                "{}: span {start}..{end} outside 0..{}",
                d.code,
                text.len()
            );
            assert!(
                text.is_char_boundary(start) && text.is_char_boundary(end),
                "{}: span {start}..{end} splits a character",
                d.code
            );
        }
    }
    let rendered = tessera_lang::render(diagnostics, "fuzz.tess", text, false);
    assert!(rendered.contains(diagnostics[0].code));
}

/// Runs parse, check and bind (with defaults) and checks every diagnostic produced and the
/// round trip of every program parsed.
pub fn run_everything(text: &str) {
    let sets = [("real".to_string(), "f64".to_string())];
    match tessera_lang::parse(text, "fuzz", &sets) {
        Err(d) => assert_valid_spans(text, &d),
        Ok(parsed) => {
            match tessera_analysis::check(assert_round_trip("fuzz", text, &parsed.program)) {
                Err(d) => assert_valid_spans(text, &d),
                Ok(checked) => {
                    if let Err(d) = tessera_analysis::bind(Arc::new(checked), &[]) {
                        assert_valid_spans(text, &d);
                    }
                }
            }
        }
    }
}

/// Words of the language and awkward characters, spliced into texts by the fuzzers.
pub const VOCABULARY: &[&str] = &[
    "program",
    "param",
    "type",
    "grid",
    "steps",
    "field",
    "readonly",
    "border",
    "stage",
    "over",
    "let",
    "reduce",
    "every",
    "until",
    "by",
    "all",
    "if",
    "then",
    "else",
    "true",
    "false",
    "const",
    "fn",
    "1.5f32",
    "7u8",
    "constant",
    "clamp",
    "periodic",
    "mirror",
    "sum",
    "max",
    "min",
    "sqrt",
    "select",
    "f32",
    "f64",
    "i32",
    "i64",
    "u8",
    "f32x4",
    "real",
    "u",
    "v",
    "E",
    "ex",
    "N",
    "x",
    "y",
    "t",
    "0",
    "1",
    "-1",
    "2.5",
    "1e-6",
    "99999999999999999999999",
    "1e999",
    "12ab",
    ";",
    ":",
    ",",
    ".",
    "..",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "=",
    "+=",
    "-=",
    "*=",
    "/=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "&&",
    "||",
    "!",
    "?",
    "//c\n",
    "/*",
    "*/",
    "@",
    "é",
    "\u{1F600}",
    "\"",
    "#",
    "\t",
    "\n",
];
