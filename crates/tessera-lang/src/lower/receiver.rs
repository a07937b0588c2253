//! Receivers: `receiver NAME = FIELD at POINTS [every INT];`, a field's values at fixed points
//! recorded every K steps.

use tessera_ir::{Diagnostic, Field, Id, Receiver, ReceiverPoints, Span};

use super::Lowerer;
use super::array::{IntUse, leaves, literal_shape, shape_text};
use super::scope::{Global, Resolved, Use};
use crate::ast::{Expr, ExprKind, Path, ReceiverDecl, ReceiverPointsDecl};

impl<'a> Lowerer<'a> {
    /// Lowers one receiver declaration (item `item`); errors are reported, nothing is added.
    pub(super) fn lower_receiver(&mut self, item: usize, decl: &'a ReceiverDecl) {
        let field = self.receiver_field(&decl.field, item);
        let points = match &decl.points {
            ReceiverPointsDecl::Written(expr) => self
                .receiver_points(&decl.name.name, expr, item)
                .map(ReceiverPoints::Fixed),
            ReceiverPointsDecl::Input(_) => Some(ReceiverPoints::Input),
        };
        if decl.every == 0 {
            self.error(
                Diagnostic::error(
                    "E0073",
                    format!("the receiver `{}` has `every 0`", decl.name.name),
                )
                .with_primary(decl.span, "recorded every 0 steps")
                .with_help(
                    "record every K >= 1 steps: `every 1` (the default) records after each step",
                ),
            );
            return;
        }
        let (Some(field), Some(points)) = (field, points) else {
            return;
        };
        self.program.receivers.alloc(Receiver {
            name: decl.name.name.clone(),
            field,
            points,
            every: decl.every,
            span: decl.span,
        });
    }

    /// The scalar field (or component) a receiver records.
    fn receiver_field(&mut self, path: &Path, item: usize) -> Option<Id<Field>> {
        let help = match self.resolve(path, Use::top(item))? {
            Resolved::Global(Global::Field(field)) => return Some(field),
            Resolved::Global(Global::Group(group)) => format!(
                "a receiver records one scalar field: name one component, e.g. `{}`",
                self.program.groups[group].component_text(0)
            ),
            _ => "a receiver records a field: `receiver r = u at [[4, 10]];`".to_string(),
        };
        let what = match self.resolve(path, Use::top(item)) {
            Some(resolved) => resolved.describe(),
            None => "not a field".to_string(),
        };
        self.error(
            Diagnostic::error(
                "E0072",
                format!("`{}` is {what}, not a scalar field", path.text()),
            )
            .with_primary(path.span, "not a scalar field")
            .with_help(help),
        );
        None
    }

    /// The points a receiver declares: an integer array literal or constant of shape
    /// `[n][dims]`, each coordinate a compile-time integer.
    fn receiver_points(
        &mut self,
        name: &str,
        expr: &'a Expr,
        item: usize,
    ) -> Option<Vec<Vec<i64>>> {
        let (value, value_item) = self.points_value(name, expr, item)?;
        let dims = self.dims?;
        let shape = match literal_shape(value) {
            Ok(shape) => shape,
            Err((span, message)) => {
                self.points_error("E0071", name, span, message, dims);
                return None;
            }
        };
        if shape.len() != 2 || shape[1] != dims {
            let message = format!(
                "the points have shape {}; a grid of {dims} axes needs [n][{dims}]: one coordinate per axis for each point",
                shape_text(&shape)
            );
            self.points_error("E0071", name, expr.span, message, dims);
            return None;
        }
        let coords: Vec<Option<i64>> = (leaves(value).into_iter())
            .map(|leaf| self.compile_time(leaf, Use::top(value_item), IntUse::Point))
            .collect();
        let coords: Vec<i64> = coords.into_iter().collect::<Option<_>>()?;
        Some(coords.chunks(dims).map(<[i64]>::to_vec).collect())
    }

    /// The array expression of a receiver's points and the item where it is lowered: the
    /// literal itself, or an integer array constant's value.
    fn points_value(
        &mut self,
        name: &str,
        expr: &'a Expr,
        item: usize,
    ) -> Option<(&'a Expr, usize)> {
        if let ExprKind::Array(_) = expr.kind {
            return Some((expr, item));
        }
        if let ExprKind::Name(path) = &expr.kind
            && path.indices.is_empty()
            && path.member.is_none()
            && let Resolved::Global(Global::Const(index)) = self.resolve(path, Use::top(item))?
        {
            let def = &self.consts[index];
            let Some(ty) = def.ty.filter(|ty| !ty.is_integer()) else {
                return Some((&def.decl.value, def.item));
            };
            let message = format!(
                "the constant `{}` holds {ty} values, not integers",
                path.text()
            );
            self.points_error("E0070", name, expr.span, message, self.dims.unwrap_or(2));
            return None;
        }
        let message = "the points are not an integer array".to_string();
        self.points_error("E0070", name, expr.span, message, self.dims.unwrap_or(2));
        None
    }

    fn points_error(
        &mut self,
        code: &'static str,
        name: &str,
        span: Span,
        message: String,
        dims: usize,
    ) {
        let example: Vec<String> = (0..dims).map(|axis| (4 * axis + 4).to_string()).collect();
        self.error(
            Diagnostic::error(code, format!("the receiver `{name}`: {message}"))
                .with_primary(span, "the receiver's points")
                .with_help(format!(
                    "write the points as compile-time integers, one coordinate per axis, slowest first: `at [[{}]]`, an integer array constant, or `at input` to give them with the run",
                    example.join(", ")
                )),
        );
    }
}
