//! Tokens of the language and the lexer (`logos`), with byte spans and lexical diagnostics.

use logos::Logos;
use tessera_ir::{Diagnostic, Span};

/// One token kind. Identifiers, numbers and bad numbers carry no text: read it from the span.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
pub enum Token {
    /// `/* ... */`; `false` when the end of the text came before `*/`.
    #[token("/*", block_comment)]
    BlockComment(bool),
    /// A well-formed number: `3`, `0.5`, `1e-6`, `2.5e3`, with an optional type suffix
    /// (`1.5f32`, `3i64`, `7u8`).
    #[regex(
        r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?(f32|f64|i32|i64|u8)?",
        priority = 5
    )]
    Number,
    /// Digits run into letters (`12ab`, `1e`, `0x10`): reported as a bad number.
    #[regex(r"[0-9][0-9A-Za-z_]*(\.[0-9A-Za-z_]+)?", priority = 3)]
    BadNumber,
    /// A name (keywords excluded).
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Ident,
    /// `program`
    #[token("program")]
    Program,
    /// `param`
    #[token("param")]
    Param,
    /// `type`
    #[token("type")]
    Type,
    /// `grid`
    #[token("grid")]
    Grid,
    /// `steps`
    #[token("steps")]
    Steps,
    /// `field`
    #[token("field")]
    Field,
    /// `table`
    #[token("table")]
    Table,
    /// `receiver`
    #[token("receiver")]
    Receiver,
    /// `readonly`
    #[token("readonly")]
    Readonly,
    /// `border`
    #[token("border")]
    Border,
    /// `stage`
    #[token("stage")]
    Stage,
    /// `const`
    #[token("const")]
    Const,
    /// `fn`
    #[token("fn")]
    Fn,
    /// `over`
    #[token("over")]
    Over,
    /// `for`
    #[token("for")]
    For,
    /// `in`
    #[token("in")]
    In,
    /// `let`
    #[token("let")]
    Let,
    /// `reduce`
    #[token("reduce")]
    Reduce,
    /// `every`
    #[token("every")]
    Every,
    /// `until`
    #[token("until")]
    Until,
    /// `by`
    #[token("by")]
    By,
    /// `all`
    #[token("all")]
    All,
    /// `if`
    #[token("if")]
    If,
    /// `then`
    #[token("then")]
    Then,
    /// `else`
    #[token("else")]
    Else,
    /// `true`
    #[token("true")]
    True,
    /// `false`
    #[token("false")]
    False,
    /// `;`
    #[token(";")]
    Semi,
    /// `:`
    #[token(":")]
    Colon,
    /// `,`
    #[token(",")]
    Comma,
    /// `.`
    #[token(".")]
    Dot,
    /// `..`
    #[token("..")]
    DotDot,
    /// `(`
    #[token("(")]
    LParen,
    /// `)`
    #[token(")")]
    RParen,
    /// `[`
    #[token("[")]
    LBracket,
    /// `]`
    #[token("]")]
    RBracket,
    /// `{`
    #[token("{")]
    LBrace,
    /// `}`
    #[token("}")]
    RBrace,
    /// `=`
    #[token("=")]
    Assign,
    /// `+=`
    #[token("+=")]
    PlusAssign,
    /// `-=`
    #[token("-=")]
    MinusAssign,
    /// `*=`
    #[token("*=")]
    StarAssign,
    /// `/=`
    #[token("/=")]
    SlashAssign,
    /// `+`
    #[token("+")]
    Plus,
    /// `-`
    #[token("-")]
    Minus,
    /// `*`
    #[token("*")]
    Star,
    /// `/`
    #[token("/")]
    Slash,
    /// `%`
    #[token("%")]
    Percent,
    /// `==`
    #[token("==")]
    EqEq,
    /// `!=`
    #[token("!=")]
    NotEq,
    /// `<`
    #[token("<")]
    Lt,
    /// `<=`
    #[token("<=")]
    Le,
    /// `>`
    #[token(">")]
    Gt,
    /// `>=`
    #[token(">=")]
    Ge,
    /// `&&`
    #[token("&&")]
    AndAnd,
    /// `||`
    #[token("||")]
    OrOr,
    /// `!`
    #[token("!")]
    Bang,
    /// `?`
    #[token("?")]
    Question,
    /// End of the text (added by [`lex`], never produced by the lexer itself).
    Eof,
}

/// Skips to the end of a block comment; `false` when it is not closed.
fn block_comment(lex: &mut logos::Lexer<Token>) -> bool {
    match lex.remainder().find("*/") {
        Some(end) => {
            lex.bump(end + 2);
            true
        }
        None => {
            lex.bump(lex.remainder().len());
            false
        }
    }
}

impl Token {
    /// How the token is named in "expected ..., found ..." messages.
    pub fn describe(self) -> &'static str {
        match self {
            Token::BlockComment(_) => "a comment",
            Token::Number | Token::BadNumber => "a number",
            Token::Ident => "a name",
            Token::Eof => "the end of the file",
            Token::Program => "`program`",
            Token::Param => "`param`",
            Token::Type => "`type`",
            Token::Grid => "`grid`",
            Token::Steps => "`steps`",
            Token::Field => "`field`",
            Token::Table => "`table`",
            Token::Receiver => "`receiver`",
            Token::Readonly => "`readonly`",
            Token::Border => "`border`",
            Token::Stage => "`stage`",
            Token::Const => "`const`",
            Token::Fn => "`fn`",
            Token::Over => "`over`",
            Token::For => "`for`",
            Token::In => "`in`",
            Token::Let => "`let`",
            Token::Reduce => "`reduce`",
            Token::Every => "`every`",
            Token::Until => "`until`",
            Token::By => "`by`",
            Token::All => "`all`",
            Token::If => "`if`",
            Token::Then => "`then`",
            Token::Else => "`else`",
            Token::True => "`true`",
            Token::False => "`false`",
            Token::Semi => "`;`",
            Token::Colon => "`:`",
            Token::Comma => "`,`",
            Token::Dot => "`.`",
            Token::DotDot => "`..`",
            Token::LParen => "`(`",
            Token::RParen => "`)`",
            Token::LBracket => "`[`",
            Token::RBracket => "`]`",
            Token::LBrace => "`{`",
            Token::RBrace => "`}`",
            Token::Assign => "`=`",
            Token::PlusAssign => "`+=`",
            Token::MinusAssign => "`-=`",
            Token::StarAssign => "`*=`",
            Token::SlashAssign => "`/=`",
            Token::Plus => "`+`",
            Token::Minus => "`-`",
            Token::Star => "`*`",
            Token::Slash => "`/`",
            Token::Percent => "`%`",
            Token::EqEq => "`==`",
            Token::NotEq => "`!=`",
            Token::Lt => "`<`",
            Token::Le => "`<=`",
            Token::Gt => "`>`",
            Token::Ge => "`>=`",
            Token::AndAnd => "`&&`",
            Token::OrOr => "`||`",
            Token::Bang => "`!`",
            Token::Question => "`?`",
        }
    }

    /// Whether the token starts a top-level item (a safe place to resume after an error).
    pub fn starts_item(self) -> bool {
        matches!(
            self,
            Token::Program
                | Token::Param
                | Token::Type
                | Token::Grid
                | Token::Steps
                | Token::Field
                | Token::Table
                | Token::Receiver
                | Token::Stage
                | Token::Const
                | Token::Fn
                | Token::Reduce
                | Token::Until
        )
    }
}

/// The tokens of `text` (comments and white space removed, [`Token::Eof`] appended) and the
/// lexical errors found: unexpected characters, unterminated comments, malformed numbers.
pub fn lex(text: &str) -> (Vec<(Token, Span)>, Vec<Diagnostic>) {
    let mut tokens = Vec::new();
    let mut errors = Vec::new();
    let mut lexer = Token::lexer(text);
    while let Some(result) = lexer.next() {
        let range = lexer.span();
        let span = Span::new(range.start, range.end);
        match result {
            Ok(Token::BlockComment(true)) => {}
            Ok(Token::BlockComment(false)) => errors.push(
                Diagnostic::error("E0002", "unterminated block comment")
                    .with_primary(
                        Span::new(range.start, range.start + 2),
                        "this comment is never closed",
                    )
                    .with_help("close the comment with `*/`"),
            ),
            Ok(Token::BadNumber) => {
                errors.push(bad_number(&text[range.clone()], span));
                tokens.push((Token::BadNumber, span));
            }
            Ok(token) => tokens.push((token, span)),
            Err(()) => {
                let mut start = range.start.min(text.len());
                while !text.is_char_boundary(start) {
                    start -= 1;
                }
                let width = text[start..].chars().next().map_or(1, char::len_utf8);
                let bad = &text[start..start + width];
                errors.push(
                    Diagnostic::error(
                        "E0001",
                        format!("unexpected character `{}`", bad.escape_debug()),
                    )
                    .with_primary(Span::new(start, start + width), "not part of the language")
                    .with_help("remove it; names use ASCII letters, digits and `_`"),
                );
            }
        }
    }
    tokens.push((Token::Eof, Span::new(text.len(), text.len())));
    (tokens, errors)
}

/// The diagnostic for a malformed number such as `1e` or `12ab`.
fn bad_number(text: &str, span: Span) -> Diagnostic {
    Diagnostic::error("E0003", format!("malformed number `{text}`"))
        .with_primary(span, "not a number")
        .with_help("write integers as `42` and floats as `0.5`, `1e-6` or `2.5e3`; names cannot start with a digit")
}
