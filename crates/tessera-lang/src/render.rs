//! rustc-style rendering of diagnostics with `codespan-reporting`.

use codespan_reporting::diagnostic::{
    Diagnostic as Report, Label as ReportLabel, Severity as ReportSeverity,
};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::termcolor::Ansi;
use codespan_reporting::term::{self, Chars, Config, Styles, StylesWriter};
use tessera_ir::{Diagnostic, Severity};

/// Renders `diagnostics` against the source `text` of `file_name`: header with code and
/// message, `file:line:col`, the source lines with `^^^` under primary spans and `---` under
/// secondary ones, then `= help: ...` and `= note: ...`. `color` adds ANSI colours.
pub fn render(diagnostics: &[Diagnostic], file_name: &str, text: &str, color: bool) -> String {
    let file = SimpleFile::new(file_name, text);
    let config = Config {
        chars: Chars::ascii(),
        ..Config::default()
    };
    let styles = Styles::default();
    let mut out = String::new();
    for diagnostic in diagnostics {
        let report = to_report(diagnostic, text);
        let rendered = if color {
            let mut ansi = Ansi::new(Vec::new());
            term::emit_to_write_style(
                &mut StylesWriter::new(&mut ansi, &styles),
                &config,
                &file,
                &report,
            )
            .map(|()| String::from_utf8_lossy(&ansi.into_inner()).into_owned())
        } else {
            term::emit_into_string(&config, &file, &report)
        };
        match rendered {
            Ok(text) => out.push_str(&text),
            // A span outside the text: fall back to the message alone.
            Err(_) => out.push_str(&format!(
                "error[{}]: {}\n",
                diagnostic.code, diagnostic.message
            )),
        }
    }
    out
}

/// The codespan form of a diagnostic, spans clamped into the text.
fn to_report(diagnostic: &Diagnostic, text: &str) -> Report<()> {
    let severity = match diagnostic.severity {
        Severity::Error => ReportSeverity::Error,
        Severity::Warning => ReportSeverity::Warning,
    };
    let labels = diagnostic
        .labels
        .iter()
        .map(|label| {
            let range = clamp(label.span.range(), text);
            let base = if label.primary {
                ReportLabel::primary((), range)
            } else {
                ReportLabel::secondary((), range)
            };
            base.with_message(label.message.clone())
        })
        .collect();
    let mut notes: Vec<String> = diagnostic
        .help
        .iter()
        .map(|h| format!("help: {h}"))
        .collect();
    notes.extend(diagnostic.notes.iter().map(|n| format!("note: {n}")));
    Report::new(severity)
        .with_code(diagnostic.code)
        .with_message(diagnostic.message.clone())
        .with_labels(labels)
        .with_notes(notes)
}

/// `range` limited to `text` and moved onto character boundaries.
fn clamp(range: std::ops::Range<usize>, text: &str) -> std::ops::Range<usize> {
    let floor = |mut i: usize| {
        i = i.min(text.len());
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(range.start);
    start..floor(range.end).max(start)
}
