//! Invariants shared by the fuzz targets.

use tessera_ir::Diagnostic;

/// Every diagnostic has a help and a primary label; every label lies within `text` on
/// character boundaries; rendering succeeds.
pub fn assert_valid_diagnostics(text: &str, diagnostics: &[Diagnostic]) {
    assert!(!diagnostics.is_empty(), "a rejection without diagnostics");
    for d in diagnostics {
        assert!(d.primary_span().is_some(), "{} has no primary span", d.code);
        assert!(d.help.is_some(), "{} has no help", d.code);
        for label in &d.labels {
            let (start, end) = (label.span.start as usize, label.span.end as usize);
            assert!(start <= end && end <= text.len(), "{}: span {start}..{end} outside the text", d.code);
            assert!(text.is_char_boundary(start) && text.is_char_boundary(end), "{}: span splits a character", d.code);
        }
    }
    let _ = tessera_lang::render(diagnostics, "fuzz.tess", text, true);
}
