//! The syntax tree: what was written, with spans, before names are resolved.

use tessera_ir::{BinaryOp, Constant, Span, UnaryOp};

/// A name and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// `name`, `group.component` or `array[i]...` (array indices before any offsets).
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// The first name.
    pub head: Ident,
    /// The component after the dot, if any.
    pub member: Option<Ident>,
    /// Array indices, one bracketed expression each (`f[i]`, `c[i][0]`).
    pub indices: Vec<Expr>,
    /// The whole path.
    pub span: Span,
}

impl Path {
    /// The path as written (`E.ex`).
    pub fn text(&self) -> String {
        let mut text = self.head.name.clone();
        if let Some(member) = &self.member {
            text = format!("{text}.{}", member.name);
        }
        for _ in &self.indices {
            text.push_str("[..]");
        }
        text
    }

    /// Levels of nesting of its indices.
    fn height(&self) -> usize {
        self.indices.iter().map(|e| e.height).max().unwrap_or(0)
    }

    /// The path with one more array index, written in `brackets`.
    pub fn with_index(&self, index: Expr, brackets: Span) -> Path {
        let mut path = self.clone();
        path.span = path.span.to(brackets);
        path.indices.push(index);
        path
    }
}

/// An expression as written; value expressions, sizes and offsets share this form.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What was written.
    pub kind: ExprKind,
    /// Where (parentheses excluded).
    pub span: Span,
    /// Levels of nesting below and including this node (a literal has height 1).
    pub height: usize,
}

impl Expr {
    /// A node over `kind`, its height computed from its children.
    pub fn new(kind: ExprKind, span: Span) -> Self {
        let below = match &kind {
            ExprKind::Literal(_) => 0,
            ExprKind::Name(path) => path.height(),
            ExprKind::Read { path, offsets, .. } => {
                (offsets.iter().map(|e| e.height).max().unwrap_or(0)).max(path.height())
            }
            ExprKind::Array(elements) => elements.iter().map(|e| e.height).max().unwrap_or(0),
            ExprKind::Sum { lo, hi, body, .. } => lo.height.max(hi.height).max(body.height),
            ExprKind::Unary(_, a) => a.height,
            ExprKind::Binary(_, a, b) => a.height.max(b.height),
            ExprKind::Conditional(c, a, b) => c.height.max(a.height).max(b.height),
            ExprKind::Call { args, .. } => args.iter().map(|e| e.height).max().unwrap_or(0),
        };
        Expr {
            kind,
            span,
            height: below + 1,
        }
    }
}

/// Expressions written between brackets, with the span of the brackets and their content.
pub type Bracketed = (Vec<Expr>, Span);

/// The forms of [`Expr`].
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A number or `true`/`false` (a `-` directly before a number is folded in).
    Literal(Constant),
    /// A name alone: local, field, parameter, reduction, coordinate or `t`.
    Name(Path),
    /// `A[e, ...]`.
    Read {
        /// The field.
        path: Path,
        /// One offset per axis.
        offsets: Vec<Expr>,
        /// The brackets and what is between them.
        brackets: Span,
    },
    /// `-e`, `!e`.
    Unary(UnaryOp, Box<Expr>),
    /// `a op b`.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b` or `if c then a else b`.
    Conditional(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `[a, b, ...]`: an array literal, the value of an array constant.
    Array(Vec<Expr>),
    /// `sum(i in lo..hi, e)`: `e` for each `i`, added in order (unrolled).
    Sum {
        /// The loop variable.
        var: Ident,
        /// First value of `var`.
        lo: Box<Expr>,
        /// One past the last value of `var`.
        hi: Box<Expr>,
        /// The summed expression.
        body: Box<Expr>,
    },
    /// `f(args)`: math function, `select` or conversion.
    Call {
        /// The function name.
        function: Ident,
        /// Arguments in order.
        args: Vec<Expr>,
    },
}

/// A type as written: a name (scalar, alias or vector such as `f32x4`), a struct or an array.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeExpr {
    /// `f32`, `real`, `f32x4`.
    Named(Ident),
    /// `{a: f32, b: f32 border clamp}`.
    Struct(Vec<Member>, Span),
    /// `[T; N]`: `N` elements of type `T`.
    Array {
        /// The element type.
        element: Box<TypeExpr>,
        /// The length, a compile-time integer.
        length: Expr,
        /// The brackets and what is between them.
        span: Span,
    },
}

/// One member of a struct field type.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// Component name.
    pub name: Ident,
    /// Component type (scalar or alias).
    pub ty: Ident,
    /// Its own attributes.
    pub attrs: Attrs,
    /// Name through attributes.
    pub span: Span,
}

/// `readonly`, `border B` and `= init` of a field or member.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs {
    /// Where `readonly` was written.
    pub readonly: Option<Span>,
    /// The border mode.
    pub border: Option<BorderExpr>,
    /// The initial value.
    pub init: Option<Expr>,
}

/// A border mode as written: `clamp`, `constant(0.0)`.
#[derive(Clone, Debug, PartialEq)]
pub struct BorderExpr {
    /// The mode's name.
    pub name: Ident,
    /// The parenthesized literal, for `constant(v)`.
    pub value: Option<(Constant, Span)>,
    /// The whole mode.
    pub span: Span,
}

/// One axis of a region as written.
#[derive(Clone, Debug, PartialEq)]
pub enum RangeExpr {
    /// A single index.
    Index(Expr),
    /// `lo..hi by S` with optional parts.
    Span {
        /// Lower bound.
        lo: Option<Expr>,
        /// Upper bound (exclusive).
        hi: Option<Expr>,
        /// Stride (1 when absent).
        stride: u32,
    },
}

/// `[R, R, ...]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionExpr {
    /// Per-axis ranges.
    pub ranges: Vec<RangeExpr>,
    /// The brackets and their content.
    pub span: Span,
}

/// `reduce NAME = OP(EXPR) [over REGION] [every INT]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceDecl {
    /// Reduction name.
    pub name: Ident,
    /// `sum`, `max` or `min` (checked when lowering).
    pub op: Ident,
    /// The reduced expression.
    pub value: Expr,
    /// `over REGION` (after-step reductions only).
    pub region: Option<RegionExpr>,
    /// `every INT`.
    pub every: u64,
    /// The declaration without `;`.
    pub span: Span,
}

/// `receiver NAME = FIELD at POINTS [every INT]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverDecl {
    /// Receiver name.
    pub name: Ident,
    /// The field sampled (`u`, `s.x`, `f[3]`).
    pub field: Path,
    /// The points: an integer array expression, or `input` (given with the run).
    pub points: ReceiverPointsDecl,
    /// `every INT` (1 when absent).
    pub every: u64,
    /// The declaration without `;`.
    pub span: Span,
}

/// Where a receiver's points come from, as written.
#[derive(Clone, Debug, PartialEq)]
pub enum ReceiverPointsDecl {
    /// `[[y, x], ...]` or the name of an integer array constant.
    Written(Expr),
    /// `input`: given with each run.
    Input(Span),
}

/// A statement of a stage body.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `let NAME = EXPR;`
    Let {
        /// The local's name.
        name: Ident,
        /// Its value.
        value: Expr,
    },
    /// `TARGET[offsets] op= EXPR;`
    Assign {
        /// The field written.
        target: Path,
        /// Offsets written after the target (an error unless all zero).
        offsets: Option<Bracketed>,
        /// `None` for `=`; the operator of `+=` etc.
        op: Option<BinaryOp>,
        /// The right-hand side.
        value: Expr,
        /// The statement without `;`.
        span: Span,
    },
    /// An in-stage reduction.
    Reduce(ReduceDecl),
    /// `for VAR in LO..HI { ... }`: the body once per value, unrolled.
    For {
        /// The loop variable.
        var: Ident,
        /// First value of `var`.
        lo: Expr,
        /// One past the last value of `var`.
        hi: Expr,
        /// The statements of each iteration.
        body: Vec<Statement>,
        /// `for VAR in LO..HI`.
        span: Span,
    },
}

/// `stage NAME [over REGION] [border F = B, ...] { ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct StageDecl {
    /// Stage name.
    pub name: Ident,
    /// `over REGION`.
    pub region: Option<RegionExpr>,
    /// Per-stage border overrides.
    pub borders: Vec<(Path, BorderExpr)>,
    /// Statements in order.
    pub body: Vec<Statement>,
    /// `stage NAME`.
    pub span: Span,
}

/// `const NAME[: TYPE] = EXPR;`: a named value, inlined at each use.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstDecl {
    /// The constant's name.
    pub name: Ident,
    /// Its type (scalar, alias or array of them), if written.
    pub ty: Option<TypeExpr>,
    /// Its value.
    pub value: Expr,
}

/// `fn NAME(PARAM, ...) = EXPR;`: a pure function, inlined at each call.
#[derive(Clone, Debug, PartialEq)]
pub struct FnDecl {
    /// The function's name.
    pub name: Ident,
    /// Its parameters, in order.
    pub params: Vec<Ident>,
    /// Its body.
    pub body: Expr,
}

/// A top-level item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `program NAME;`
    Program(Ident, Span),
    /// `param NAME: TYPE = LITERAL [nonfinite];`
    Param {
        /// Parameter name.
        name: Ident,
        /// Its type (scalar or alias).
        ty: Ident,
        /// The default and where it was written.
        default: (Constant, Span),
        /// Written `nonfinite`: `--set` may give it NaN or an infinity.
        non_finite: bool,
        /// Name through default.
        span: Span,
    },
    /// `type NAME = TYPE;`
    Alias {
        /// Alias name.
        name: Ident,
        /// The aliased type.
        ty: Ident,
    },
    /// `grid [E, ...];`
    Grid {
        /// Extents, slowest first.
        extents: Vec<Expr>,
        /// The declaration without `;`.
        span: Span,
    },
    /// `steps INT;`
    Steps(u64, Span),
    /// `field NAME: FTYPE attrs;`
    Field {
        /// Field name.
        name: Ident,
        /// Its type.
        ty: TypeExpr,
        /// Attributes after the type.
        attrs: Attrs,
        /// Name through attributes.
        span: Span,
    },
    /// `table NAME: TYPE;`
    Table {
        /// Table name.
        name: Ident,
        /// Element type (a scalar type or an alias).
        ty: Ident,
        /// Name through type.
        span: Span,
    },
    /// `const NAME[: TYPE] = EXPR;`
    Const(ConstDecl),
    /// `fn NAME(PARAM, ...) = EXPR;`
    Function(FnDecl),
    /// A stage.
    Stage(StageDecl),
    /// An after-step reduction.
    Reduce(ReduceDecl),
    /// `receiver NAME = FIELD at POINTS [every INT];`
    Receiver(ReceiverDecl),
    /// `until EXPR;`
    Until(Expr, Span),
}
