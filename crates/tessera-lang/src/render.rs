//! rustc-style rendering of diagnostics with `codespan-reporting`.

use codespan_reporting::diagnostic::{
    Diagnostic as Report, Label as ReportLabel, Severity as ReportSeverity,
};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::termcolor::Ansi;
use codespan_reporting::term::{self, Chars, Config, Styles, StylesWriter};
use tessera_ir::escape::{is_unsafe_on_terminal, push_escaped, terminal_line, terminal_text};
use tessera_ir::{Diagnostic, Severity};

/// Renders `diagnostics` against the source `text` of `file_name`: header with code and
/// message, `file:line:col`, the source lines with `^^^` under primary spans and `---` under
/// secondary ones, then `= help: ...` and `= note: ...`. `color` adds ANSI colours.
/// Control characters of the text, the file name and the messages are shown escaped
/// (`\u{1b}`), the spans moved to match, so that nothing the user wrote reaches the terminal
/// raw.
pub fn render(diagnostics: &[Diagnostic], file_name: &str, text: &str, color: bool) -> String {
    let shown = ShownSource::new(text);
    let file = SimpleFile::new(terminal_line(file_name), shown.text.as_str());
    let config = Config {
        chars: Chars::ascii(),
        ..Config::default()
    };
    let styles = Styles::default();
    let mut out = String::new();
    for diagnostic in diagnostics {
        let report = to_report(diagnostic, text, &shown);
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
                diagnostic.code,
                terminal_line(&diagnostic.message)
            )),
        }
    }
    out
}

/// The codespan form of a diagnostic, spans clamped into the text and moved into the shown
/// text, messages escaped.
fn to_report(diagnostic: &Diagnostic, text: &str, shown: &ShownSource) -> Report<()> {
    let severity = match diagnostic.severity {
        Severity::Error => ReportSeverity::Error,
        Severity::Warning => ReportSeverity::Warning,
    };
    let labels = diagnostic
        .labels
        .iter()
        .map(|label| {
            let range = shown.range(clamp(label.span.range(), text));
            let base = if label.primary {
                ReportLabel::primary((), range)
            } else {
                ReportLabel::secondary((), range)
            };
            base.with_message(terminal_line(&label.message))
        })
        .collect();
    let mut notes: Vec<String> = diagnostic
        .help
        .iter()
        .map(|h| format!("help: {}", terminal_text(h)))
        .collect();
    notes.extend((diagnostic.notes.iter()).map(|n| format!("note: {}", terminal_text(n))));
    Report::new(severity)
        .with_code(diagnostic.code)
        .with_message(terminal_line(&diagnostic.message))
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

/// The source as the terminal is shown it: [`terminal_text`] of it, with where each escape
/// moved the bytes after it, so that spans still point at what they pointed at.
struct ShownSource {
    text: String,
    /// For each escaped character: the byte offset just after it in the source, and how many
    /// bytes longer the shown text is from there on.
    shifts: Vec<(usize, usize)>,
}

impl ShownSource {
    fn new(source: &str) -> ShownSource {
        let mut text = String::with_capacity(source.len());
        let mut shifts = Vec::new();
        let mut chars = source.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if is_unsafe_on_terminal(c, chars.peek().map(|&(_, next)| next), true) {
                push_escaped(&mut text, c);
                let end = at + c.len_utf8();
                shifts.push((end, text.len() - end));
            } else {
                text.push(c);
            }
        }
        ShownSource { text, shifts }
    }

    /// `range` of the source (on character boundaries) in the shown text.
    fn range(&self, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
        self.offset(range.start)..self.offset(range.end)
    }

    fn offset(&self, offset: usize) -> usize {
        let before = self.shifts.partition_point(|&(end, _)| end <= offset);
        offset + before.checked_sub(1).map_or(0, |i| self.shifts[i].1)
    }
}
