//! User text made safe where it is shown or printed: in a terminal (diagnostics, error
//! messages) and in the comments of generated C, CUDA and OpenCL source. Both spell a character
//! they replace as `\u{HEX}`.

use std::fmt::Write as _;

/// `text` made safe inside a C, CUDA or OpenCL comment of either kind: printable ASCII is
/// kept, except that `*/`, `/*` and `??` (a trigraph's start) are broken by a `\`; every other
/// character (`\` itself, newlines, NUL, escape sequences, non-ASCII) becomes `\u{HEX}`, so
/// that no `\` of the result ends a line (a line splice). Every user string that a generated
/// comment quotes (program, stage, field and file names) goes through it.
pub fn comment_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('*', Some('/')) | ('/', Some('*')) | ('?', Some('?')) => {
                out.push(c);
                out.push('\\');
            }
            (' '..='~', _) if c != '\\' => out.push(c),
            _ => push_escaped(&mut out, c),
        }
    }
    out
}

/// `text` safe to print on a terminal, its lines kept: control characters other than newline,
/// tab and the `\r` of a `\r\n`, and the bidirectional overrides, become `\u{HEX}`.
pub fn terminal_text(text: &str) -> String {
    escape_for_terminal(text, true)
}

/// `text` safe to print on a terminal as one line: [`terminal_text`], newlines and tabs escaped
/// too (for names and file names quoted in a message).
pub fn terminal_line(text: &str) -> String {
    escape_for_terminal(text, false)
}

/// Whether [`terminal_text`] replaces `c` (followed by `next`), keeping lines when `lines`.
pub fn is_unsafe_on_terminal(c: char, next: Option<char>, lines: bool) -> bool {
    let layout = c == '\n' || c == '\t' || (c == '\r' && next == Some('\n'));
    let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    (c.is_control() && !(lines && layout)) || bidi
}

/// Appends `c` spelled `\u{HEX}`.
pub fn push_escaped(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
}

fn escape_for_terminal(text: &str, lines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_unsafe_on_terminal(c, chars.peek().copied(), lines) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_keep_no_terminator_splice_or_control() {
        let escaped = comment_text("a*/b/*c\\\n??/\0é\u{1b}[31m");
        assert_eq!(
            escaped,
            "a*\\/b/\\*c\\u{5c}\\u{a}?\\?/\\u{0}\\u{e9}\\u{1b}[31m"
        );
        assert!(escaped.chars().all(|c| (' '..='~').contains(&c)));
    }

    #[test]
    fn terminal_text_escapes_controls_but_keeps_lines() {
        assert_eq!(
            terminal_text("a\u{1b}[31m\tb\r\nc\rd\u{202e}"),
            "a\\u{1b}[31m\tb\r\nc\\u{d}d\\u{202e}"
        );
        assert_eq!(terminal_line("a\nb\tc"), "a\\u{a}b\\u{9}c");
    }
}
