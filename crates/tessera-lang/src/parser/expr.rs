//! Expressions (by precedence), literals and regions.

use tessera_ir::{BinaryOp, Constant, Diagnostic, ScalarType, Span, UnaryOp};

use super::{Failed, MAX_NESTING, PResult, Parser};
use crate::ast::{Expr, ExprKind, Ident, RangeExpr, RegionExpr};
use crate::lexer::Token;

/// The binary operator a token stands for.
fn binary_op(token: Token) -> Option<BinaryOp> {
    Some(match token {
        Token::OrOr => BinaryOp::Or,
        Token::AndAnd => BinaryOp::And,
        Token::EqEq => BinaryOp::Eq,
        Token::NotEq => BinaryOp::Ne,
        Token::Lt => BinaryOp::Lt,
        Token::Le => BinaryOp::Le,
        Token::Gt => BinaryOp::Gt,
        Token::Ge => BinaryOp::Ge,
        Token::Plus => BinaryOp::Add,
        Token::Minus => BinaryOp::Sub,
        Token::Star => BinaryOp::Mul,
        Token::Slash => BinaryOp::Div,
        Token::Percent => BinaryOp::Rem,
        _ => return None,
    })
}

/// The type suffixes of numbers, longest first.
const SUFFIXES: [&str; 5] = ["f32", "f64", "i32", "i64", "u8"];

/// A number's digits and its type suffix (named, with its span) if it has one.
fn split_suffix(text: &str, span: Span) -> (String, Option<Ident>) {
    let Some(suffix) = SUFFIXES.into_iter().find(|s| text.ends_with(s)) else {
        return (text.to_string(), None);
    };
    let digits = text.len() - suffix.len();
    let start = span.start as usize + digits;
    let ident = Ident {
        name: suffix.to_string(),
        span: Span::new(start, span.end as usize),
    };
    (text[..digits].to_string(), Some(ident))
}

impl Parser<'_> {
    /// A whole expression (the loosest level: `?:` and `if then else`).
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let result = self.conditional();
        self.leave();
        result
    }

    fn conditional(&mut self) -> PResult<Expr> {
        if let Some(start) = self.eat(Token::If) {
            let cond = self.expr()?;
            self.expect(Token::Then)?;
            let then = self.expr()?;
            self.expect(Token::Else)?;
            let otherwise = self.expr()?;
            return self.node(
                ExprKind::Conditional(Box::new(cond), Box::new(then), Box::new(otherwise)),
                start,
            );
        }
        let cond = self.binary(1)?;
        if self.eat(Token::Question).is_none() {
            return Ok(cond);
        }
        let then = self.expr()?;
        self.expect(Token::Colon)?;
        let otherwise = self.expr()?;
        let start = cond.span;
        self.node(
            ExprKind::Conditional(Box::new(cond), Box::new(then), Box::new(otherwise)),
            start,
        )
    }

    /// Binary operators binding at least as tightly as `min` (precedence climbing).
    fn binary(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some(op) = binary_op(self.peek()).filter(|op| op.precedence() >= min) {
            self.bump();
            self.enter()?;
            let rhs = self.binary(op.precedence() + 1);
            self.leave();
            let rhs = rhs?;
            if let Some(next) =
                binary_op(self.peek()).filter(|o| op.is_comparison() && o.is_comparison())
            {
                self.errors.push(
                    Diagnostic::error(
                        "E0007",
                        format!(
                            "comparison operators cannot be chained: `{}` after `{}`",
                            next.symbol(),
                            op.symbol()
                        ),
                    )
                    .with_primary(self.peek_span(), "second comparison here")
                    .with_help(
                        "combine comparisons with `&&`, e.g. `a < b && b < c`, or add parentheses",
                    ),
                );
                return Err(Failed);
            }
            let start = lhs.span;
            lhs = self.node(ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), start)?;
        }
        Ok(lhs)
    }

    /// `-e`, `!e` (a `-` directly before a number becomes a negative literal), or a primary.
    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            Token::Minus if self.nth(1) == Token::Number => return self.literal_expr(),
            Token::Minus => UnaryOp::Neg,
            Token::Bang => UnaryOp::Not,
            _ => return self.primary(),
        };
        let start = self.bump();
        self.enter()?;
        let operand = self.unary();
        self.leave();
        self.node(ExprKind::Unary(op, Box::new(operand?)), start)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.peek_span();
        match self.peek() {
            Token::Number | Token::True | Token::False => self.literal_expr(),
            Token::BadNumber => {
                // Already reported by the lexer; stands for some number so parsing goes on.
                self.bump();
                Ok(Expr::new(ExprKind::Literal(Constant::Int(0)), start))
            }
            Token::LParen => {
                self.bump();
                let inner = self.expr()?;
                self.expect(Token::RParen)?;
                Ok(inner)
            }
            Token::If => self.expr(),
            Token::LBracket => {
                self.bump();
                let elements = self.comma_list(Token::RBracket, Self::expr)?;
                self.node(ExprKind::Array(elements), start)
            }
            Token::Ident
                if self.nth(1) == Token::LParen
                    && self.nth(3) == Token::In
                    && self.slice(start) == "sum" =>
            {
                self.sum(start)
            }
            Token::Ident if self.nth(1) == Token::LParen => {
                let function = self.ident("a function name")?;
                self.bump();
                let args = self.comma_list(Token::RParen, Self::expr)?;
                self.node(ExprKind::Call { function, args }, start)
            }
            Token::Ident => match self.subscripted("a name")? {
                (path, Some((offsets, brackets))) => self.node(
                    ExprKind::Read {
                        path,
                        offsets,
                        brackets,
                    },
                    start,
                ),
                (path, None) => self.node(ExprKind::Name(path), start),
            },
            _ => Err(self.error_expected("an expression")),
        }
    }

    /// `sum(VAR in LO..HI, EXPR)`; the current token is `sum`.
    fn sum(&mut self, start: Span) -> PResult<Expr> {
        self.bump();
        self.expect(Token::LParen)?;
        let var = self.ident("the loop variable's name")?;
        self.expect(Token::In)?;
        let (lo, hi) = self.loop_range()?;
        self.expect(Token::Comma)?;
        let body = self.expr()?;
        self.expect(Token::RParen)?;
        let kind = ExprKind::Sum {
            var,
            lo: Box::new(lo),
            hi: Box::new(hi),
            body: Box::new(body),
        };
        self.node(kind, start)
    }

    /// A node from `start` to the end of the previous token; fails when nested too deeply.
    fn node(&mut self, kind: ExprKind, start: Span) -> PResult<Expr> {
        let span = Span::new(start.start as usize, self.prev_end() as usize);
        let expr = Expr::new(kind, span);
        if expr.height > MAX_NESTING {
            self.errors.push(
                Diagnostic::error(
                    "E0006",
                    format!("expression nested more than {MAX_NESTING} levels deep"),
                )
                .with_primary(span, "too deep")
                .with_help("split the expression with `let` bindings"),
            );
            return Err(Failed);
        }
        Ok(expr)
    }

    /// A literal in an expression; a typed one (`1.5f32`) is its conversion, `f32(1.5)`.
    fn literal_expr(&mut self) -> PResult<Expr> {
        let (value, suffix, span) = self.typed_literal()?;
        let literal = Expr::new(ExprKind::Literal(value), span);
        let Some(function) = suffix else {
            return Ok(literal);
        };
        let call = ExprKind::Call {
            function,
            args: vec![literal],
        };
        Ok(Expr::new(call, span))
    }

    /// A literal without a type suffix (parameter defaults, border constants: their
    /// declaration gives the type).
    pub(super) fn literal(&mut self) -> PResult<(Constant, Span)> {
        let (value, suffix, span) = self.typed_literal()?;
        if let Some(suffix) = suffix {
            return Err(self.suffix_error(
                suffix.span,
                format!("the type suffix `{}` is not allowed here", suffix.name),
                "the declaration gives this literal its type; remove the suffix",
            ));
        }
        Ok((value, span))
    }

    /// A literal: `true`, `false`, or a number with an optional `-` directly before it and an
    /// optional type suffix, returned as the name of its type.
    fn typed_literal(&mut self) -> PResult<(Constant, Option<Ident>, Span)> {
        if let Some(span) = self.eat(Token::True) {
            return Ok((Constant::Bool(true), None, span));
        }
        if let Some(span) = self.eat(Token::False) {
            return Ok((Constant::Bool(false), None, span));
        }
        let minus = self.eat(Token::Minus);
        if self.peek() != Token::Number {
            return Err(self.error_expected("a literal (a number, `true` or `false`)"));
        }
        let number = self.bump();
        let span = minus.map_or(number, |m| m.to(number));
        let (digits, suffix) = split_suffix(self.slice(number), number);
        let value = self.number(digits, minus.is_some(), suffix.as_ref(), span)?;
        Ok((value, suffix, span))
    }

    /// The value of `text` (digits, no suffix), negated when `negative`; a float written with
    /// an integer type suffix is an error.
    fn number(
        &mut self,
        text: String,
        negative: bool,
        suffix: Option<&Ident>,
        span: Span,
    ) -> PResult<Constant> {
        let suffix_type = suffix.and_then(|s| ScalarType::from_name(&s.name));
        let float_text = text.contains(['.', 'e', 'E']);
        if let Some(ty) = suffix_type.filter(|t| float_text && !t.is_float()) {
            return Err(self.suffix_error(
                suffix.map_or(span, |s| s.span),
                format!("the float literal `{text}` has the integer type suffix `{ty}`"),
                "write an integer (`3i32`) or a float suffix (`1.5f32`)",
            ));
        }
        if float_text || suffix_type.is_some_and(|t| t.is_float()) {
            let value: f64 = text.parse().unwrap_or(f64::INFINITY);
            if !value.is_finite() {
                return Err(self.number_error(
                    span,
                    format!("the float literal `{text}` is too large for `f64`"),
                    "use a value below 1.7e308",
                ));
            }
            return Ok(Constant::Float(if negative { -value } else { value }));
        }
        let value = text
            .parse::<i128>()
            .ok()
            .map(|v| if negative { -v } else { v });
        match value.and_then(|v| i64::try_from(v).ok()) {
            Some(v) => Ok(Constant::Int(v)),
            None => Err(self.number_error(span, format!("the integer literal `{}` does not fit in 64 bits", self.slice(span)), "integers range from -9223372036854775808 to 9223372036854775807; write a float (`1e30`) for larger values")),
        }
    }

    fn number_error(&mut self, span: Span, message: String, help: &str) -> Failed {
        self.errors.push(
            Diagnostic::error("E0003", message)
                .with_primary(span, "out of range")
                .with_help(help),
        );
        Failed
    }

    /// Reports a type suffix that does not belong where it is written.
    fn suffix_error(&mut self, span: Span, message: String, help: &str) -> Failed {
        self.errors.push(
            Diagnostic::error("E0003", message)
                .with_primary(span, "this type suffix")
                .with_help(help),
        );
        Failed
    }

    /// A non-negative integer literal (`steps`, `every`).
    pub(super) fn unsigned(&mut self, what: &str) -> PResult<(u64, Span)> {
        let span = self.peek_span();
        if self.peek() != Token::Number {
            return Err(self.error_expected(&format!("a non-negative integer ({what})")));
        }
        self.bump();
        match self.slice(span).parse::<u64>() {
            Ok(v) => Ok((v, span)),
            Err(_) => Err(self.number_error(
                span,
                format!(
                    "`{}` is not a non-negative integer that fits in 64 bits",
                    self.slice(span)
                ),
                &format!("write {what} as a whole number such as `10`"),
            )),
        }
    }

    /// `[R, R, ...]`.
    pub(super) fn region(&mut self) -> PResult<RegionExpr> {
        let open = self.expect(Token::LBracket)?;
        let ranges = self.comma_list(Token::RBracket, Self::range)?;
        Ok(RegionExpr {
            ranges,
            span: Span::new(open.start as usize, self.prev_end() as usize),
        })
    }

    /// `all`, `..`, `lo..`, `..hi`, `lo..hi`, each optionally `by S`; or a single index.
    fn range(&mut self) -> PResult<RangeExpr> {
        let bound_follows =
            |p: &Self| !matches!(p.peek(), Token::Comma | Token::RBracket | Token::By);
        let (lo, hi) = if self.eat(Token::All).is_some() {
            (None, None)
        } else if self.eat(Token::DotDot).is_some() {
            (
                None,
                if bound_follows(self) {
                    Some(self.expr()?)
                } else {
                    None
                },
            )
        } else {
            let lo = self.expr()?;
            if self.eat(Token::DotDot).is_none() {
                if self.peek() == Token::By {
                    let by = self.peek_span();
                    self.errors.push(
                        Diagnostic::error("E0026", "a stride needs a range, not a single index")
                            .with_primary(lo.span.to(by), "a single index")
                            .with_help("write a range such as `0..N by 2`"),
                    );
                    return Err(Failed);
                }
                return Ok(RangeExpr::Index(lo));
            }
            (
                Some(lo),
                if bound_follows(self) {
                    Some(self.expr()?)
                } else {
                    None
                },
            )
        };
        let mut stride = 1;
        if self.eat(Token::By).is_some() {
            let (value, span) = self.unsigned("the stride")?;
            stride = u32::try_from(value).map_err(|_| {
                self.errors.push(
                    Diagnostic::error("E0026", format!("the stride {value} is too large"))
                        .with_primary(span, "does not fit in 32 bits")
                        .with_help("use a stride below 4294967296"),
                );
                Failed
            })?;
        }
        Ok(RangeExpr::Span { lo, hi, stride })
    }
}
