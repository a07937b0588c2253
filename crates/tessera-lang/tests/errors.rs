//! Bad input kept as data: `tests/errors/NAME.tess` with `NAME.expected` listing the phase
//! that rejects it (`parse`, `check` or `bind` with the parameter defaults), the diagnostic's
//! code, its exact message, the exact text under its primary span (`at: LINE:COL` where the
//! span is empty), a substring of its `help:`, optionally `set: NAME=VALUE` (CLI overrides)
//! and `count: N` (the exact number of diagnostics, for error recovery).

use std::path::PathBuf;
use std::sync::Arc;

use tessera_ir::Diagnostic;

/// One `.expected` file.
#[derive(Default)]
struct Expected {
    phase: String,
    code: String,
    message: String,
    span: String,
    at: Option<String>,
    help: String,
    sets: Vec<(String, String)>,
    count: Option<usize>,
}

fn read_expected(text: &str) -> Result<Expected, String> {
    let mut e = Expected::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line
            .split_once(':')
            .ok_or(format!("no `key:` in {line:?}"))?;
        let value = value
            .strip_prefix(' ')
            .unwrap_or(value)
            .replace("\\n", "\n");
        match key {
            "phase" => e.phase = value,
            "code" => e.code = value,
            "message" => e.message = value,
            "span" => e.span = value,
            "at" => e.at = Some(value),
            "help" => e.help = value,
            "set" => {
                let (n, v) = value.split_once('=').ok_or("set: NAME=VALUE")?;
                e.sets.push((n.to_string(), v.to_string()));
            }
            "count" => e.count = Some(value.parse().map_err(|_| "count: N")?),
            other => return Err(format!("unknown key {other:?}")),
        }
    }
    if e.phase.is_empty() || e.code.is_empty() || e.message.is_empty() || e.help.is_empty() {
        return Err("phase, code, message and help are required".into());
    }
    Ok(e)
}

/// Runs parse, check and bind; returns the phase that failed and its diagnostics.
fn run(text: &str, sets: &[(String, String)]) -> Option<(&'static str, Vec<Diagnostic>)> {
    let parsed = match tessera_lang::parse(text, "case", sets) {
        Ok(parsed) => parsed,
        Err(d) => return Some(("parse", d)),
    };
    let checked = match tessera_analysis::check(&parsed.program) {
        Ok(checked) => checked,
        Err(d) => return Some(("check", d)),
    };
    tessera_analysis::bind(Arc::new(checked), &[])
        .err()
        .map(|d| ("bind", d))
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_col(text: &str, offset: usize) -> String {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!("{line}:{col}")
}

fn check_case(text: &str, expected: &Expected) -> Result<(), String> {
    let Some((phase, diagnostics)) = run(text, &expected.sets) else {
        return Err("accepted, but it must be rejected".into());
    };
    let rendered = tessera_lang::render(&diagnostics, "case.tess", text, false);
    if phase != expected.phase {
        return Err(format!(
            "rejected by {phase}, expected {}:\n{rendered}",
            expected.phase
        ));
    }
    if let Some(count) = expected.count.filter(|c| *c != diagnostics.len()) {
        return Err(format!(
            "{} diagnostics, expected {count}:\n{rendered}",
            diagnostics.len()
        ));
    }
    let Some(d) = diagnostics.iter().find(|d| d.code == expected.code) else {
        return Err(format!("no {} among:\n{rendered}", expected.code));
    };
    let span = d.primary_span().ok_or("no primary span")?;
    let underlined = text.get(span.range()).ok_or("span outside the text")?;
    let mut problems = Vec::new();
    if d.message != expected.message {
        problems.push(format!(
            "message {:?}, expected {:?}",
            d.message, expected.message
        ));
    }
    if underlined != expected.span {
        problems.push(format!(
            "underlined {underlined:?}, expected {:?}",
            expected.span
        ));
    }
    if let Some(at) = &expected.at {
        let got = line_col(text, span.start as usize);
        if got != *at {
            problems.push(format!("at {got}, expected {at}"));
        }
    }
    match &d.help {
        Some(help) if help.contains(&expected.help) => {}
        other => problems.push(format!(
            "help {other:?} does not contain {:?}",
            expected.help
        )),
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n{rendered}", problems.join("\n")))
    }
}

#[test]
fn every_error_case_reports_its_diagnostic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/errors");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tess"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_stem().unwrap().to_string_lossy();
        let text = std::fs::read_to_string(case).unwrap();
        let expected = std::fs::read_to_string(case.with_extension("expected"))
            .map_err(|e| e.to_string())
            .and_then(|t| read_expected(&t));
        let result = expected.and_then(|expected| check_case(&text, &expected));
        if let Err(problem) = result {
            failures.push(format!("--- {name}: {problem}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
