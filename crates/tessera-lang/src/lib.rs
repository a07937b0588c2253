//! The Tessera language front end: `.tess` text to [`tessera_ir::Program`].
//!
//! Pipeline: the lexer (`logos` tokens with byte spans) → a recursive-descent parser (syntax
//! tree, with error recovery) → lowering (name resolution into the IR). Type checking is the
//! next stage of the pipeline, `tessera_analysis::check`.
//! Every error is a [`tessera_ir::Diagnostic`] with a span, a message and a `help:`;
//! [`render`] prints them rustc-style. The language is specified in `docs/language.md`.
//!
//! ```
//! let text = "grid [8];\nfield u: f32 border clamp;\nstage blur { u = (u[-1] + u + u[1]) / 3; }\n";
//! let parsed = tessera_lang::parse(text, "blur", &[]).unwrap();
//! assert_eq!(parsed.program.name, "blur");
//! assert_eq!(parsed.program.stages.len(), 1);
//! ```

mod ast;
mod lexer;
mod lower;
mod parser;
mod render;

pub use render::render;

use tessera_ir::Diagnostic;

/// A parsed program and the type aliases that `--set` replaced.
#[derive(Clone, Debug)]
pub struct Parsed {
    /// The program, names resolved (not yet type-checked).
    pub program: tessera_ir::Program,
    /// Names of the `type` aliases replaced by a `--set NAME=TYPE`.
    pub type_overrides_used: Vec<String>,
}

/// Parses `text`. `default_name` names the program unless it says `program NAME;`. `sets` are
/// the CLI's `--set NAME=VALUE` pairs: those naming a `type` alias replace it (the value must
/// be a scalar type name, else a diagnostic); others are ignored here (they are value
/// parameters, bound later).
pub fn parse(
    text: &str,
    default_name: &str,
    sets: &[(String, String)],
) -> Result<Parsed, Vec<Diagnostic>> {
    let (tokens, mut errors) = lexer::lex(text);
    let (items, syntax_errors) = parser::parse_items(text, tokens);
    errors.extend(syntax_errors);
    if !errors.is_empty() {
        errors.sort_by_key(|d| d.primary_span().map(|s| (s.start, s.end)));
        errors.truncate(parser::MAX_ERRORS);
        return Err(errors);
    }
    let (program, type_overrides_used) = lower::lower(&items, default_name, sets)?;
    Ok(Parsed {
        program,
        type_overrides_used,
    })
}
