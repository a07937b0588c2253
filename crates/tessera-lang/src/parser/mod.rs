//! Recursive-descent parser from tokens to the syntax tree, with error recovery: an error skips
//! to the next `;`, `}` or item keyword, so one pass reports several independent errors.

mod expr;
mod items;

use tessera_ir::diagnostic::did_you_mean;
use tessera_ir::{Diagnostic, Span};

use crate::ast::{Ident, Item};
use crate::lexer::Token;

/// Deepest nesting of expressions (and of the parser's recursion) accepted.
pub const MAX_NESTING: usize = 256;

/// Most syntax errors reported before the parser gives up.
pub const MAX_ERRORS: usize = 50;

/// Parsing failed at a point already reported in the parser's errors.
#[derive(Debug)]
pub struct Failed;

/// Result of a parsing step.
pub type PResult<T> = Result<T, Failed>;

/// Parses a whole token stream (ending with [`Token::Eof`]) into items and syntax errors.
pub fn parse_items(text: &str, tokens: Vec<(Token, Span)>) -> (Vec<Item>, Vec<Diagnostic>) {
    let mut parser = Parser {
        text,
        tokens,
        pos: 0,
        errors: Vec::new(),
        depth: 0,
    };
    let mut items = Vec::new();
    while parser.peek() != Token::Eof && parser.errors.len() < MAX_ERRORS {
        if parser.peek().starts_item() {
            match parser.item() {
                Ok(item) => items.push(item),
                Err(Failed) => parser.recover_item(),
            }
        } else {
            parser.error_expected("an item (`param`, `grid`, `field`, `stage`, ...)");
            parser.recover_item();
        }
    }
    (items, parser.errors)
}

/// Cursor over the tokens plus the errors found so far.
struct Parser<'t> {
    text: &'t str,
    tokens: Vec<(Token, Span)>,
    pos: usize,
    errors: Vec<Diagnostic>,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Token {
        self.tokens[self.pos].0
    }

    fn peek_span(&self) -> Span {
        self.tokens[self.pos].1
    }

    fn nth(&self, n: usize) -> Token {
        self.tokens[(self.pos + n).min(self.tokens.len() - 1)].0
    }

    /// The source text of a span.
    fn slice(&self, span: Span) -> &str {
        &self.text[span.range()]
    }

    /// Consumes the current token (never past the end) and returns its span.
    fn bump(&mut self) -> Span {
        let span = self.peek_span();
        if self.peek() != Token::Eof {
            self.pos += 1;
        }
        span
    }

    fn eat(&mut self, token: Token) -> Option<Span> {
        (self.peek() == token).then(|| self.bump())
    }

    /// Consumes the identifier `word` (a contextual keyword, not reserved) when it is next.
    fn eat_word(&mut self, word: &str) -> Option<Span> {
        (self.peek() == Token::Ident && self.slice(self.peek_span()) == word).then(|| self.bump())
    }

    /// Where the previous token ended (0 at the start).
    fn prev_end(&self) -> u32 {
        if self.pos == 0 {
            0
        } else {
            self.tokens[self.pos - 1].1.end
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            Token::Ident | Token::Number | Token::BadNumber => {
                format!("`{}`", self.slice(self.peek_span()))
            }
            other => other.describe().to_string(),
        }
    }

    /// Reports "expected WHAT, found ..." at the current token.
    fn error_expected(&mut self, what: &str) -> Failed {
        let found = self.found();
        let mut d = Diagnostic::error("E0004", format!("expected {what}, found {found}"))
            .with_primary(self.peek_span(), format!("expected {what}"));
        d = match self.peek() {
            t if is_keyword(t) => d.with_help(format!("{found} is a keyword and cannot be used here; if it is meant as a name, choose another one")),
            Token::Ident => match did_you_mean(self.slice(self.peek_span()), KEYWORDS) {
                Some(keyword) => d.with_help(format!("did you mean the keyword `{keyword}`?")),
                None => d.with_help(format!("write {what} here")),
            },
            Token::Eof => d.with_help(format!("the file ends too early: add {what}")),
            _ => d.with_help(format!("write {what} here")),
        };
        self.errors.push(d);
        Failed
    }

    fn expect(&mut self, token: Token) -> PResult<Span> {
        match self.eat(token) {
            Some(span) => Ok(span),
            None => Err(self.error_expected(token.describe())),
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        if self.peek() == Token::Ident {
            let span = self.bump();
            Ok(Ident {
                name: self.slice(span).to_string(),
                span,
            })
        } else {
            Err(self.error_expected(what))
        }
    }

    /// Expects the `;` ending a declaration or statement. A `;` missing at the end of a line
    /// is reported at the place it belongs and parsing goes on as if it were there.
    fn semicolon(&mut self) -> PResult<()> {
        if self.eat(Token::Semi).is_some() {
            return Ok(());
        }
        let end = self.prev_end() as usize;
        let next = self.peek();
        if self.line_break_before()
            || next == Token::Eof
            || next == Token::RBrace
            || next.starts_item()
            || next == Token::Let
        {
            self.errors.push(
                Diagnostic::error("E0005", format!("missing `;` before {}", self.found()))
                    .with_primary(Span::new(end, end), "expected `;` here")
                    .with_help("end each declaration and statement with `;`"),
            );
            Ok(())
        } else {
            Err(self.error_expected("`;`"))
        }
    }

    /// Whether a line ends between the previous token and the current one.
    fn line_break_before(&self) -> bool {
        self.text[self.prev_end() as usize..self.peek_span().start as usize].contains('\n')
    }

    /// Enters one level of nesting; fails (with a diagnostic) beyond [`MAX_NESTING`].
    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_NESTING {
            self.errors.push(
                Diagnostic::error(
                    "E0006",
                    format!("expression nested more than {MAX_NESTING} levels deep"),
                )
                .with_primary(self.peek_span(), "too deep here")
                .with_help("split the expression with `let` bindings"),
            );
            return Err(Failed);
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Skips the rest of a broken item: to just after its `;` or its closing `}`, or to the next item keyword.
    fn recover_item(&mut self) {
        let mut braces = 0usize;
        // An item keyword on the line of the error is part of the broken item (`field stage: f32;`).
        if self.peek().starts_item() && !self.line_break_before() {
            self.bump();
        }
        loop {
            match self.peek() {
                Token::Eof => return,
                Token::Semi if braces == 0 => {
                    self.bump();
                    return;
                }
                Token::LBrace => braces += 1,
                Token::RBrace => {
                    self.bump();
                    if braces <= 1 {
                        return;
                    }
                    braces -= 1;
                    continue;
                }
                t if braces == 0 && t.starts_item() => return,
                _ => {}
            }
            self.bump();
        }
    }

    /// Skips the rest of a broken statement: to just after its `;`, or to a `}` or keyword that starts the next one.
    fn recover_statement(&mut self) {
        loop {
            match self.peek() {
                Token::Semi => {
                    self.bump();
                    return;
                }
                Token::RBrace | Token::Eof | Token::Let | Token::For => return,
                t if t.starts_item() => return,
                _ => {
                    self.bump();
                }
            }
        }
    }
}

/// The reserved words, for "did you mean" hints on misspelled keywords.
const KEYWORDS: [&str; 27] = [
    "program", "param", "type", "grid", "steps", "field", "readonly", "border", "stage", "over",
    "let", "reduce", "every", "until", "by", "all", "if", "then", "else", "true", "false", "const",
    "fn", "for", "in", "table", "receiver",
];

/// Whether the token is a reserved word.
fn is_keyword(token: Token) -> bool {
    token.describe().starts_with('`')
        && token.describe()[1..].starts_with(|c: char| c.is_ascii_alphabetic())
}
