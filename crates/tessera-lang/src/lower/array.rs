//! Arrays: compile-time integers (offsets, array indices, loop bounds, array lengths), the
//! shapes of array constants, and subscripts split into element indices and offsets.

use tessera_ir::{BinaryOp, Constant, Diagnostic, Span, UnaryOp};

use super::Lowerer;
use super::inline::parameter;
use super::scope::{Global, Use};
use crate::ast::{Expr, ExprKind, Path};

/// Most elements of an array, and most iterations unrolled in a whole program.
pub const MAX_UNROLLED: i64 = 4096;

/// What a compile-time integer is for: the wording and codes of its errors.
#[derive(Clone, Copy, PartialEq)]
pub enum IntUse {
    /// A read's offset (`u[-1, 0]`).
    Offset,
    /// An array index (`f[i]`, `w[2]`).
    Index,
    /// A `for` or `sum` bound.
    Bound,
    /// An array type's length (`[f64; N]`).
    Length,
    /// A receiver point's coordinate (`receiver r = u at [[4, 10]];`).
    Point,
}

impl IntUse {
    fn noun(self) -> &'static str {
        match self {
            IntUse::Offset => "offset",
            IntUse::Index => "array index",
            IntUse::Bound => "loop bound",
            IntUse::Length => "array length",
            IntUse::Point => "receiver coordinate",
        }
    }

    /// The code of a value that is not a compile-time integer.
    fn code(self) -> &'static str {
        match self {
            IntUse::Offset => "E0020",
            IntUse::Index => "E0045",
            IntUse::Bound | IntUse::Length => "E0046",
            IntUse::Point => "E0070",
        }
    }

    /// The code of a value that overflows.
    fn overflow_code(self) -> &'static str {
        match self {
            IntUse::Offset => "E0022",
            other => other.code(),
        }
    }

    fn help(self) -> &'static str {
        match self {
            IntUse::Offset => {
                "offsets are integer constants relative to the current point (`A[-1, 0]`, `A[2-1, 0]`); to work on other points, change the stage's region"
            }
            _ => {
                "use integer literals, integer constants (`const N = 9;`), loop variables and elements of integer array constants, combined with `+ - * / %`; parameters are known only at run time"
            }
        }
    }
}

/// The shape of an array literal: its length at each level, outermost first (empty for a
/// scalar); `Err` with the span and message of the first element out of shape.
pub fn literal_shape(expr: &Expr) -> Result<Vec<usize>, (Span, String)> {
    let ExprKind::Array(elements) = &expr.kind else {
        return Ok(Vec::new());
    };
    let Some(first) = elements.first() else {
        return Err((expr.span, "an array has at least one element".to_string()));
    };
    let inner = literal_shape(first)?;
    for element in &elements[1..] {
        let shape = literal_shape(element)?;
        if shape != inner {
            let message = format!(
                "this element has shape {}, the first has shape {}",
                shape_text(&shape),
                shape_text(&inner)
            );
            return Err((element.span, message));
        }
    }
    Ok([vec![elements.len()], inner].concat())
}

/// `[9×2]` for a shape, `scalar` for none.
pub fn shape_text(shape: &[usize]) -> String {
    if shape.is_empty() {
        return "scalar".to_string();
    }
    let lengths: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", lengths.join("×"))
}

/// Every scalar element of an array literal, in order (the expression itself if not an array).
pub fn leaves(expr: &Expr) -> Vec<&Expr> {
    match &expr.kind {
        ExprKind::Array(elements) => elements.iter().flat_map(leaves).collect(),
        _ => vec![expr],
    }
}

impl<'a> Lowerer<'a> {
    /// A compile-time integer: literals, loop variables, integer constants and elements of
    /// integer array constants, combined with `+ - * / %` (`/` and `%` truncate).
    pub(super) fn compile_time(&mut self, expr: &Expr, at: Use, what: IntUse) -> Option<i64> {
        let value = match &expr.kind {
            ExprKind::Literal(Constant::Int(v)) => return Some(*v),
            ExprKind::Unary(UnaryOp::Neg, a) => self.compile_time(a, at, what)?.checked_neg(),
            ExprKind::Binary(
                op
                @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem),
                a,
                b,
            ) => {
                let (a, b) = (
                    self.compile_time(a, at, what),
                    self.compile_time(b, at, what),
                );
                let (a, b) = (a?, b?);
                match op {
                    BinaryOp::Add => a.checked_add(b),
                    BinaryOp::Sub => a.checked_sub(b),
                    BinaryOp::Mul => a.checked_mul(b),
                    BinaryOp::Div => a.checked_div(b),
                    _ => a.checked_rem(b),
                }
            }
            ExprKind::Name(path) => return self.named_integer(path, expr.span, at, what),
            ExprKind::Read {
                path,
                offsets,
                brackets,
            } if offsets.len() == 1 => {
                let indexed = path.with_index(offsets[0].clone(), *brackets);
                return self.named_integer(&indexed, expr.span, at, what);
            }
            _ => {
                let message = format!("{} must be a constant integer", article(what.noun()));
                self.not_compile_time(expr.span, message, "not a constant integer", what);
                return None;
            }
        };
        if value.is_none() {
            self.error(
                Diagnostic::error(
                    what.overflow_code(),
                    format!(
                        "the {}'s arithmetic overflows or divides by zero",
                        what.noun()
                    ),
                )
                .with_primary(expr.span, "overflows 64 bits or divides by zero")
                .with_help(what.help()),
            );
        }
        value
    }

    /// A name in a compile-time integer: a loop variable, an integer constant or an element of
    /// an integer array constant.
    fn named_integer(&mut self, path: &Path, span: Span, at: Use, what: IntUse) -> Option<i64> {
        if let Some(value) = at.loop_value(path) {
            return Some(value);
        }
        let shadowed = parameter(path, at).is_some() || at.locals.get(&path.head.name).is_some();
        let constant = (self.symbols.globals.get(&path.head.name))
            .filter(|decl| !shadowed && path.member.is_none() && decl.item <= at.item)
            .and_then(|decl| match decl.global {
                Global::Const(index) => Some(index),
                _ => None,
            });
        let Some(index) = constant else {
            let message = format!("the {} `{}` is not a constant", what.noun(), path.text());
            self.not_compile_time(span, message, "not a constant", what);
            return None;
        };
        let (element, item) = self.const_element(index, &path.indices, span, at)?;
        if self.consts[index].ty.is_some_and(|t| !t.is_integer()) {
            let message = format!("the {} `{}` is not an integer", what.noun(), path.text());
            self.not_compile_time(span, message, "a float constant", what);
            return None;
        }
        self.compile_time(element, Use::top(item), what)
    }

    fn not_compile_time(&mut self, span: Span, message: String, label: &str, what: IntUse) {
        self.error(
            Diagnostic::error(what.code(), message)
                .with_primary(span, label)
                .with_help(what.help()),
        );
    }

    /// An array index: a compile-time integer in `0..length`.
    pub(super) fn array_index(
        &mut self,
        expr: &Expr,
        length: usize,
        what: &str,
        at: Use,
    ) -> Option<usize> {
        let value = self.compile_time(expr, at, IntUse::Index)?;
        match usize::try_from(value).ok().filter(|v| *v < length) {
            Some(index) => Some(index),
            None => {
                self.error(
                    Diagnostic::error(
                        "E0047",
                        format!(
                            "the index {value} is out of range for `{what}` of length {length}"
                        ),
                    )
                    .with_primary(expr.span, format!("index {value}"))
                    .with_help(format!("indices of `{what}` run from 0 to {}", length - 1)),
                );
                None
            }
        }
    }

    /// The element of the array constant `index` that `indices` select, and the item that
    /// declares the constant (where the element is lowered).
    pub(super) fn const_element(
        &mut self,
        index: usize,
        indices: &[Expr],
        span: Span,
        at: Use,
    ) -> Option<(&'a Expr, usize)> {
        let def = self.consts[index].clone();
        let shape = def.shape?;
        let name = &def.decl.name.name;
        if indices.len() != shape.len() {
            self.index_count(name, "constant", shape.len(), indices.len(), span);
            return None;
        }
        let mut element = &def.decl.value;
        for (expr, length) in indices.iter().zip(&shape) {
            let i = self.array_index(expr, *length, name, at)?;
            let ExprKind::Array(elements) = &element.kind else {
                return None;
            };
            element = &elements[i];
        }
        Some((element, def.item))
    }

    /// Reports an array used with `count` indices where it takes `depth` (or a scalar indexed).
    pub(super) fn index_count(
        &mut self,
        name: &str,
        kind: &str,
        depth: usize,
        count: usize,
        span: Span,
    ) {
        let (message, help) = match (depth, count) {
            (0, _) => (
                format!("the {kind} `{name}` is not an array, so it takes no index"),
                format!("remove the brackets after `{name}`"),
            ),
            (_, 0) => (
                format!("the array {kind} `{name}` is used without an index"),
                format!(
                    "use one element, e.g. `{name}{}`; to go through them all, use `for i in 0..N {{ ... }}` or `sum(i in 0..N, ...)`",
                    "[0]".repeat(depth)
                ),
            ),
            _ => (
                format!(
                    "the array {kind} `{name}` takes {depth} {}, found {count}",
                    if depth == 1 { "index" } else { "indices" }
                ),
                format!("index it as `{name}{}`", "[i]".repeat(depth)),
            ),
        };
        self.error(
            Diagnostic::error("E0049", message)
                .with_primary(span, "wrong number of indices")
                .with_help(help),
        );
    }

    /// How many array indices the name at the head of `path` takes (0 when it is not an array).
    pub(super) fn array_depth(&self, path: &Path, at: Use) -> usize {
        let name = &path.head.name;
        let hidden = at.loop_value(path).is_some()
            || parameter(path, at).is_some()
            || at.locals.get(name).is_some();
        let global = self.symbols.globals.get(name).filter(|_| !hidden);
        match global.map(|decl| decl.global) {
            Some(Global::Group(group)) if self.program.groups[group].is_array() => 1,
            Some(Global::Const(index)) => self.consts[index].shape.as_ref().map_or(0, Vec::len),
            _ => 0,
        }
    }

    /// Splits `path[..]...[offsets]`: when the path still lacks its array's last index, the last
    /// bracket (one expression) is that index, and the element is read at the point itself.
    pub(super) fn subscript<'e>(
        &self,
        path: &Path,
        (offsets, brackets): (&'e [Expr], Span),
        at: Use,
    ) -> (Path, Option<&'e [Expr]>) {
        if offsets.len() == 1 && path.indices.len() < self.array_depth(path, at) {
            return (path.with_index(offsets[0].clone(), brackets), None);
        }
        (path.clone(), Some(offsets))
    }
}

/// `an offset`, `a loop bound`.
fn article(noun: &str) -> String {
    let vowel = noun.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {noun}", if vowel { "an" } else { "a" })
}
