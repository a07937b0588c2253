//! Helpers shared by the test files: the example programs and span-free comparison.
#![allow(dead_code)]

pub mod generate;

use std::path::PathBuf;

use tessera_ir::{Program, Range, ReductionPlacement, Span, Statement, print_program};

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
