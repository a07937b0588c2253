//! Top-level items, field types and attributes, stages and their statements.

use tessera_ir::{BinaryOp, Diagnostic, Span};

use super::{Failed, PResult, Parser};
use crate::ast::{
    Attrs, BorderExpr, Bracketed, ConstDecl, Expr, FnDecl, Item, Member, Path, ReceiverDecl,
    ReceiverPointsDecl, ReduceDecl, StageDecl, Statement, TypeExpr,
};
use crate::lexer::Token;

impl Parser<'_> {
    /// One item; the current token is an item keyword.
    pub(super) fn item(&mut self) -> PResult<Item> {
        let keyword = self.bump();
        let start = keyword.start as usize;
        let token = self.tokens[self.pos - 1].0;
        let item = match token {
            Token::Program => {
                let name = self.ident("the program's name")?;
                Item::Program(name, Span::new(start, self.prev_end() as usize))
            }
            Token::Param => {
                let name = self.ident("a parameter name")?;
                self.expect(Token::Colon)?;
                let ty = self.ident("a scalar type such as `f32` or `i64`")?;
                self.expect(Token::Assign)?;
                let default = self.literal()?;
                let non_finite = self.eat_word("nonfinite");
                let span = name.span.to(non_finite.unwrap_or(default.1));
                Item::Param {
                    name,
                    ty,
                    default,
                    non_finite: non_finite.is_some(),
                    span,
                }
            }
            Token::Type => {
                let name = self.ident("a type alias name")?;
                self.expect(Token::Assign)?;
                let ty = self.ident("a scalar type such as `f32`")?;
                Item::Alias { name, ty }
            }
            Token::Grid => {
                self.expect(Token::LBracket)?;
                let extents = self.comma_list(Token::RBracket, Self::expr)?;
                Item::Grid {
                    extents,
                    span: Span::new(start, self.prev_end() as usize),
                }
            }
            Token::Steps => {
                let (value, span) = self.unsigned("the default number of steps")?;
                Item::Steps(value, Span::new(start, span.end as usize))
            }
            Token::Field => {
                let name = self.ident("a field name")?;
                self.expect(Token::Colon)?;
                let ty = self.field_type()?;
                let attrs = self.attrs()?;
                let span = Span::new(name.span.start as usize, self.prev_end() as usize);
                Item::Field {
                    name,
                    ty,
                    attrs,
                    span,
                }
            }
            Token::Table => {
                let name = self.ident("a table name")?;
                self.expect(Token::Colon)?;
                let ty = self.ident("a scalar type such as `f32`")?;
                let span = name.span.to(ty.span);
                Item::Table { name, ty, span }
            }
            Token::Const => {
                let name = self.ident("the constant's name")?;
                let ty = match self.eat(Token::Colon) {
                    Some(_) => Some(self.field_type()?),
                    None => None,
                };
                self.expect(Token::Assign)?;
                let value = self.expr()?;
                Item::Const(ConstDecl { name, ty, value })
            }
            Token::Fn => {
                let name = self.ident("the function's name")?;
                self.expect(Token::LParen)?;
                let params = self.comma_list(Token::RParen, |p| p.ident("a parameter name"))?;
                self.expect(Token::Assign)?;
                let body = self.expr()?;
                Item::Function(FnDecl { name, params, body })
            }
            Token::Stage => return self.stage(start).map(Item::Stage),
            Token::Reduce => Item::Reduce(self.reduce(start)?),
            Token::Receiver => Item::Receiver(self.receiver(start)?),
            Token::Until => {
                let condition = self.expr()?;
                Item::Until(condition, Span::new(start, self.prev_end() as usize))
            }
            _ => return Err(self.error_expected("an item")),
        };
        self.semicolon()?;
        Ok(item)
    }

    /// `f32`, `real`, `f32x4`, `{a: T attrs, ...}` or `[T; N]`.
    fn field_type(&mut self) -> PResult<TypeExpr> {
        if let Some(open) = self.eat(Token::LBracket) {
            let element = Box::new(self.field_type()?);
            self.expect(Token::Semi)?;
            let length = self.expr()?;
            let close = self.expect(Token::RBracket)?;
            return Ok(TypeExpr::Array {
                element,
                length,
                span: open.to(close),
            });
        }
        let Some(open) = self.eat(Token::LBrace) else {
            return Ok(TypeExpr::Named(
                self.ident("a type (`f32`, an alias, `f32x4` or `{a: f32, ...}`)")?,
            ));
        };
        let mut members = Vec::new();
        while self.peek() != Token::RBrace {
            let name = self.ident("a component name")?;
            self.expect(Token::Colon)?;
            let ty = self.ident("the component's scalar type")?;
            let attrs = self.attrs()?;
            let span = Span::new(name.span.start as usize, self.prev_end() as usize);
            members.push(Member {
                name,
                ty,
                attrs,
                span,
            });
            if self.eat(Token::Comma).is_none() {
                break;
            }
        }
        let close = self.expect(Token::RBrace)?;
        Ok(TypeExpr::Struct(members, open.to(close)))
    }

    /// `[readonly] [border B] [= EXPR]` (the first two in any order).
    fn attrs(&mut self) -> PResult<Attrs> {
        let mut attrs = Attrs::default();
        loop {
            match self.peek() {
                Token::Readonly => {
                    let span = self.bump();
                    if attrs.readonly.replace(span).is_some() {
                        return Err(self.repeated(span, "readonly"));
                    }
                }
                Token::Border => {
                    let span = self.bump();
                    if attrs.border.replace(self.border()?).is_some() {
                        return Err(self.repeated(span, "border"));
                    }
                }
                _ => break,
            }
        }
        if self.eat(Token::Assign).is_some() {
            attrs.init = Some(self.expr()?);
        }
        Ok(attrs)
    }

    fn repeated(&mut self, span: Span, what: &str) -> Failed {
        self.errors.push(
            Diagnostic::error("E0004", format!("`{what}` is written twice"))
                .with_primary(span, "second time here")
                .with_help(format!("write `{what}` once")),
        );
        Failed
    }

    /// A border mode: a name, optionally with a parenthesized literal (`constant(0.0)`).
    pub(super) fn border(&mut self) -> PResult<BorderExpr> {
        let name = self.ident("a border mode (`clamp`, `periodic`, `mirror` or `constant(v)`)")?;
        let mut value = None;
        if self.eat(Token::LParen).is_some() {
            value = Some(self.literal()?);
            self.expect(Token::RParen)?;
        }
        let span = Span::new(name.span.start as usize, self.prev_end() as usize);
        Ok(BorderExpr { name, value, span })
    }

    /// `stage NAME [over REGION] [border F = B, ...] { STMT* }`; `stage` is consumed.
    fn stage(&mut self, start: usize) -> PResult<StageDecl> {
        let name = self.ident("a stage name")?;
        let span = Span::new(start, name.span.end as usize);
        let region = match self.eat(Token::Over) {
            Some(_) => Some(self.region()?),
            None => None,
        };
        let mut borders = Vec::new();
        if self.eat(Token::Border).is_some() {
            loop {
                let field = self.indexed_path("a field name")?;
                self.expect(Token::Assign)?;
                borders.push((field, self.border()?));
                if self.eat(Token::Comma).is_none() {
                    break;
                }
            }
        }
        let open = self.expect(Token::LBrace)?;
        let body = self.block(open, &format!("stage `{}`", name.name), "the stage's body");
        Ok(StageDecl {
            name,
            region,
            borders,
            body,
            span,
        })
    }

    /// Statements up to the `}` closing the block opened at `open`; `what` names what the
    /// block belongs to, `body` the block.
    fn block(&mut self, open: Span, what: &str, body_name: &str) -> Vec<Statement> {
        let mut body = Vec::new();
        loop {
            match self.peek() {
                Token::RBrace => {
                    self.bump();
                    break;
                }
                _ if self.errors.len() >= super::MAX_ERRORS => break,
                t if t == Token::Eof || (t.starts_item() && t != Token::Reduce) => {
                    let found = self.found();
                    self.errors.push(
                        Diagnostic::error(
                            "E0004",
                            format!("expected `}}` to close {what}, found {found}"),
                        )
                        .with_primary(
                            Span::new(self.prev_end() as usize, self.prev_end() as usize),
                            "expected `}` here",
                        )
                        .with_secondary(open, format!("{body_name} starts here"))
                        .with_help(format!("close {body_name} with `}}`")),
                    );
                    break;
                }
                _ => match self.statement() {
                    Ok(statement) => body.push(statement),
                    Err(Failed) => self.recover_statement(),
                },
            }
        }
        body
    }

    /// `for VAR in LO..HI { ... }`; `for` is the current token.
    fn for_loop(&mut self) -> PResult<Statement> {
        let start = self.bump();
        let var = self.ident("the loop variable's name")?;
        self.expect(Token::In)?;
        let (lo, hi) = self.loop_range()?;
        let span = start.to(hi.span);
        let open = self.expect(Token::LBrace)?;
        let body = self.block(open, "the `for` loop", "the loop's body");
        Ok(Statement::For {
            var,
            lo,
            hi,
            body,
            span,
        })
    }

    /// `LO..HI`, the values of a loop variable.
    pub(super) fn loop_range(&mut self) -> PResult<(Expr, Expr)> {
        let lo = self.expr()?;
        self.expect(Token::DotDot)?;
        let hi = self.expr()?;
        Ok((lo, hi))
    }

    /// A statement of a stage body.
    fn statement(&mut self) -> PResult<Statement> {
        match self.peek() {
            Token::For => self.for_loop(),
            Token::Let => {
                self.bump();
                let name = self.ident("the local's name")?;
                self.expect(Token::Assign)?;
                let value = self.expr()?;
                self.semicolon()?;
                Ok(Statement::Let { name, value })
            }
            Token::Reduce => {
                let start = self.bump().start as usize;
                let reduce = self.reduce(start)?;
                self.semicolon()?;
                Ok(Statement::Reduce(reduce))
            }
            Token::Ident => {
                let (target, offsets) = self.subscripted("a field name")?;
                let op = match self.peek() {
                    Token::Assign => None,
                    Token::PlusAssign => Some(BinaryOp::Add),
                    Token::MinusAssign => Some(BinaryOp::Sub),
                    Token::StarAssign => Some(BinaryOp::Mul),
                    Token::SlashAssign => Some(BinaryOp::Div),
                    _ => return Err(self.error_expected("`=` (or `+=`, `-=`, `*=`, `/=`)")),
                };
                self.bump();
                let value = self.expr()?;
                let span = target.span.to(value.span);
                self.semicolon()?;
                Ok(Statement::Assign {
                    target,
                    offsets,
                    op,
                    value,
                    span,
                })
            }
            _ => {
                Err(self.error_expected("a statement (`let`, `reduce` or an assignment `F = ...`)"))
            }
        }
    }

    /// `NAME = OP(EXPR) [over REGION] [every INT]`; `reduce` is consumed.
    fn reduce(&mut self, start: usize) -> PResult<ReduceDecl> {
        let name = self.ident("the reduction's name")?;
        self.expect(Token::Assign)?;
        let op = self.ident("`sum`, `max` or `min`")?;
        self.expect(Token::LParen)?;
        let value = self.expr()?;
        self.expect(Token::RParen)?;
        let region = match self.eat(Token::Over) {
            Some(_) => Some(self.region()?),
            None => None,
        };
        let every = match self.eat(Token::Every) {
            Some(_) => {
                self.unsigned("how often (in steps) the reduction is computed")?
                    .0
            }
            None => 1,
        };
        Ok(ReduceDecl {
            name,
            op,
            value,
            region,
            every,
            span: Span::new(start, self.prev_end() as usize),
        })
    }

    /// `NAME = FIELD at POINTS [every INT]`; `receiver` is consumed.
    fn receiver(&mut self, start: usize) -> PResult<ReceiverDecl> {
        let name = self.ident("the receiver's name")?;
        self.expect(Token::Assign)?;
        let field = self.indexed_path("the field it records (`u`, `s.x`, `f[3]`)")?;
        if self.eat_word("at").is_none() {
            return Err(self.error_expected("`at` and the receiver's points"));
        }
        let points = match self.eat_word("input") {
            Some(span) => ReceiverPointsDecl::Input(span),
            None => ReceiverPointsDecl::Written(self.expr()?),
        };
        let every = match self.eat(Token::Every) {
            Some(_) => {
                self.unsigned("how often (in steps) the receiver records")?
                    .0
            }
            None => 1,
        };
        Ok(ReceiverDecl {
            name,
            field,
            points,
            every,
            span: Span::new(start, self.prev_end() as usize),
        })
    }

    /// `NAME` or `NAME.COMPONENT`.
    pub(super) fn path(&mut self, what: &str) -> PResult<Path> {
        let head = self.ident(what)?;
        let member = match self.eat(Token::Dot) {
            Some(_) => Some(self.ident("a component name")?),
            None => None,
        };
        let span = member.as_ref().map_or(head.span, |m| head.span.to(m.span));
        Ok(Path {
            head,
            member,
            indices: Vec::new(),
            span,
        })
    }

    /// A path followed by bracketed groups: all but the last are array indices (one
    /// expression each); the last, returned apart with its span, holds offsets or the last index.
    pub(super) fn subscripted(&mut self, what: &str) -> PResult<(Path, Option<Bracketed>)> {
        let mut path = self.path(what)?;
        let mut last: Option<Bracketed> = None;
        while let Some(open) = self.eat(Token::LBracket) {
            let items = self.comma_list(Token::RBracket, Self::expr)?;
            let span = Span::new(open.start as usize, self.prev_end() as usize);
            if let Some((previous, previous_span)) = last.replace((items, span)) {
                path = self.push_index(path, previous, previous_span)?;
            }
        }
        Ok((path, last))
    }

    /// A path whose bracketed groups are all array indices (`f[3]` in a border override).
    fn indexed_path(&mut self, what: &str) -> PResult<Path> {
        let (path, last) = self.subscripted(what)?;
        match last {
            Some((items, span)) => self.push_index(path, items, span),
            None => Ok(path),
        }
    }

    /// `path` with the bracketed group `items` as one more index; more than one item is an error.
    fn push_index(&mut self, path: Path, mut items: Vec<Expr>, span: Span) -> PResult<Path> {
        if items.len() != 1 {
            self.errors.push(
                Diagnostic::error("E0049", "an array index is one expression in brackets")
                    .with_primary(span, format!("{} expressions", items.len()))
                    .with_help(
                        "index one level per bracket, `c[i][0]`; offsets come last: `f[i][-1, 0]`",
                    ),
            );
            return Err(Failed);
        }
        Ok(path.with_index(items.remove(0), span))
    }

    /// Items separated by `,` up to `close` (consumed); a trailing comma is allowed.
    pub(super) fn comma_list<T>(
        &mut self,
        close: Token,
        item: fn(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        let mut items = Vec::new();
        while self.peek() != close {
            items.push(item(self)?);
            if self.eat(Token::Comma).is_none() {
                break;
            }
        }
        self.expect(close)?;
        Ok(items)
    }
}
