//! Snapshots of rendered diagnostics, so their layout is reviewed.

use std::sync::Arc;

use tessera_ir::Diagnostic;

fn diagnostics(text: &str) -> Vec<Diagnostic> {
    let parsed = match tessera_lang::parse(text, "example", &[]) {
        Ok(parsed) => parsed,
        Err(d) => return d,
    };
    let checked = match tessera_analysis::check(&parsed.program) {
        Ok(checked) => checked,
        Err(d) => return d,
    };
    tessera_analysis::bind(Arc::new(checked), &[])
        .err()
        .unwrap_or_default()
}

fn rendered(text: &str) -> String {
    let d = diagnostics(text);
    assert!(!d.is_empty(), "the example must be rejected");
    tessera_lang::render(&d, "example.tess", text, false)
}

#[test]
fn undefined_name_with_suggestion() {
    insta::assert_snapshot!(rendered(
        "grid [16, 16];\nfield temp: f32 border clamp;\nstage s {\n    temp = 0.25 * (tmp[-1, 0] + temp[1, 0]);\n}\n"
    ));
}

#[test]
fn missing_semicolon_and_recovery() {
    insta::assert_snapshot!(rendered(
        "param N: i64 = 64\ngrid [N];\nfield u: f32 border periodic;\nstage s {\n    let a = u[-1] + u[1]\n    u = 0.5 * a;\n}\n"
    ));
}

#[test]
fn non_constant_offset() {
    insta::assert_snapshot!(rendered(
        "param N: i64 = 8;\ngrid [N, N];\nfield A: f64 border clamp;\nstage s { A = A[N, 0] + A[0, x - 1]; }\n"
    ));
}

#[test]
fn read_leaving_the_grid() {
    insta::assert_snapshot!(rendered(
        "param N: i64 = 32;\ngrid [N, N];\nfield u: f32;\nfield v: f32;\nstage smooth over [1..N-1, 0..N] {\n    v = u[0, -1] + u + u[0, 1];\n}\n"
    ));
}

#[test]
fn color_output_has_escape_codes_and_the_same_text() {
    let text = "grid [4];\nfield u: f32;\nstage s { u = v; }\n";
    let d = diagnostics(text);
    let plain = tessera_lang::render(&d, "c.tess", text, false);
    let color = tessera_lang::render(&d, "c.tess", text, true);
    assert!(!plain.contains('\u{1b}'));
    assert!(color.contains('\u{1b}'));
    let stripped: String = strip_ansi(&color);
    assert_eq!(stripped, plain);
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Terminal escape sequences and carriage returns of the source, the file name and the
/// messages are shown escaped; the carets stay under what they point at.
#[test]
fn control_characters_are_shown_escaped() {
    let text = "grid [8];\nfield u: f32;\nstage s { u = \u{1b}[31mred\rX + u; }\n";
    let d = diagnostics(text);
    assert!(!d.is_empty(), "the example must be rejected");
    let shown = tessera_lang::render(&d, "ex\u{1b}[2Jample\n.tess", text, false);
    assert!(
        !shown.chars().any(|c| c.is_control() && c != '\n'),
        "a raw control character in:\n{shown}"
    );
    assert!(shown.contains("ex\\u{1b}[2Jample\\u{a}.tess"), "{shown}");
    assert!(shown.contains("\\u{1b}[31mred\\u{d}X"), "{shown}");
    insta::assert_snapshot!(shown);
}
