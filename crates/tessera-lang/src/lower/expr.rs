//! Expressions: values, constant offsets, sizes (extents and region bounds), regions, borders.

use tessera_ir::diagnostic::did_you_mean;
use tessera_ir::{
    BinaryOp, Border, Constant, Diagnostic, Expr as IrExpr, ExprId, ExprKind as Ir, Field, Id,
    MathFn, Range, Region, ScalarType, SizeExpr, SizeOp, Span, UnaryOp,
};

use super::Lowerer;
use super::array::IntUse;
use super::inline::parameter;
use super::scope::{Global, Resolved, Use, quoted};
use crate::ast::{BorderExpr, Expr, ExprKind, Path, RangeExpr, RegionExpr};
use crate::parser::MAX_NESTING;

/// Most axes a grid may have.
const MAX_AXES: usize = 4;

/// The conversions usable as functions (`f16(e)`, `bf16(e)`: `e` rounded to the storage type,
/// an `f32` value).
const CONVERSIONS: [ScalarType; 7] = [
    ScalarType::F32,
    ScalarType::F64,
    ScalarType::I32,
    ScalarType::I64,
    ScalarType::U8,
    ScalarType::F16,
    ScalarType::Bf16,
];

impl Lowerer<'_> {
    /// `grid [E, ...]`: 1 to 4 extents.
    pub(super) fn lower_grid(&mut self, item: usize, extents: &[Expr], span: Span) {
        self.program.grid_span = span;
        self.dims = Some(extents.len());
        if extents.is_empty() {
            self.error(
                Diagnostic::error("E0034", "the grid has no axes")
                    .with_primary(span, "no extents")
                    .with_help("give 1 to 4 extents, slowest axis first, e.g. `grid [N, N];`"),
            );
        } else if extents.len() > MAX_AXES {
            let extra = extents[MAX_AXES].span.to(extents[extents.len() - 1].span);
            self.error(
                Diagnostic::error(
                    "E0034",
                    format!("the grid has {} axes, more than {MAX_AXES}", extents.len()),
                )
                .with_primary(extra, "extra axes")
                .with_help(format!(
                    "Tessera grids have 1 to {MAX_AXES} axes; remove {}",
                    extents.len() - MAX_AXES
                )),
            );
        }
        let sizes: Vec<Option<SizeExpr>> = extents.iter().map(|e| self.size(e, item)).collect();
        self.program.extents = sizes.into_iter().flatten().collect();
    }

    /// Initial values, in field order.
    pub(super) fn lower_inits(&mut self) {
        for (field, init, item) in std::mem::take(&mut self.inits) {
            self.program.fields[field].init = self.value(init, Use::top(item));
        }
    }

    /// Lowers a value expression (children first), refusing to nest deeper than the parser
    /// allows once function calls are inlined.
    pub(super) fn value(&mut self, expr: &Expr, at: Use) -> Option<ExprId> {
        if self.depth >= MAX_NESTING {
            self.too_deep(expr, at);
            return None;
        }
        self.depth += 1;
        let value = self.lower_value(expr, at);
        self.depth -= 1;
        value
    }

    /// [`Self::value`] one level down: the node for `expr`, its children lowered first.
    fn lower_value(&mut self, expr: &Expr, at: Use) -> Option<ExprId> {
        let kind = match &expr.kind {
            ExprKind::Literal(c) => Ir::Literal(*c),
            ExprKind::Name(path) => return self.named_value(path, expr.span, at),
            ExprKind::Read {
                path,
                offsets,
                brackets,
            } => {
                if let Some(bound) = parameter(path, at) {
                    let offset = self.offsets(path, offsets, *brackets, at);
                    return self.argument_read(path, bound, offset?, expr.span);
                }
                let (path, offsets) = self.subscript(path, (offsets, *brackets), at);
                let Some(offsets) = offsets else {
                    return self.named_value(&path, expr.span, at);
                };
                let target = self.resolve(&path, at);
                if let Some(Resolved::Global(Global::Table(table))) = target {
                    self.table_read(table, &path, offsets, *brackets, at)?
                } else {
                    let field = self.read_target(&path, target);
                    let offset = self.offsets(&path, offsets, *brackets, at);
                    Ir::Read {
                        field: field?,
                        offset: offset?,
                    }
                }
            }
            ExprKind::Array(_) => {
                self.error(
                    Diagnostic::error("E0052", "an array literal is not a value")
                        .with_primary(expr.span, "an array literal")
                        .with_help("array literals are the values of array constants: `const w: [f64; 3] = [0.25, 0.5, 0.25];`, then `w[i]`"),
                );
                return None;
            }
            ExprKind::Sum { var, lo, hi, body } => {
                return self.unrolled_sum(var, (lo, hi), body, expr.span, at);
            }
            ExprKind::Unary(op, a) => Ir::Unary(*op, self.value(a, at)?),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.value(a, at), self.value(b, at));
                Ir::Binary(*op, a?, b?)
            }
            ExprKind::Conditional(c, a, b) => {
                let (cond, then, otherwise) =
                    (self.value(c, at), self.value(a, at), self.value(b, at));
                Ir::Select {
                    cond: cond?,
                    then: then?,
                    otherwise: otherwise?,
                }
            }
            ExprKind::Call { function, args } => {
                if let Some(declared) = self.declared_function(&function.name) {
                    return self.inline_call(declared, function, args, expr.span, at);
                }
                let lowered: Vec<Option<ExprId>> = args.iter().map(|a| self.value(a, at)).collect();
                let call = self.call(&function.name, function.span, args.len(), expr.span, at);
                let args: Vec<ExprId> = lowered.into_iter().collect::<Option<_>>()?;
                match call? {
                    Callee::Math(f) => Ir::Call(f, args),
                    Callee::Select => Ir::Select {
                        cond: args[0],
                        then: args[1],
                        otherwise: args[2],
                    },
                    Callee::Cast(t) => Ir::Cast(t, args[0]),
                }
            }
        };
        Some(self.program.exprs.alloc(IrExpr {
            kind,
            span: expr.span,
        }))
    }

    /// A name or array element standing alone: a loop variable's value, a parameter's
    /// argument, a constant inlined, or what [`Self::name`] reads.
    fn named_value(&mut self, path: &Path, span: Span, at: Use) -> Option<ExprId> {
        if let Some(value) = at.loop_value(path) {
            return Some(self.program.exprs.alloc(IrExpr {
                kind: Ir::Literal(Constant::Int(value)),
                span,
            }));
        }
        if let Some(bound) = parameter(path, at) {
            return self.argument(path, bound);
        }
        let kind = match self.resolve(path, at)? {
            Resolved::Global(Global::Const(index)) => return self.inline_const(index, path, at),
            resolved => self.name(path, resolved)?,
        };
        Some(self.program.exprs.alloc(IrExpr { kind, span }))
    }

    /// What a name, resolved to something other than a constant, reads.
    fn name(&mut self, path: &Path, resolved: Resolved) -> Option<Ir> {
        Some(match resolved {
            Resolved::Local(local) => Ir::Local(local),
            Resolved::Global(Global::Field(field)) => Ir::Read {
                field,
                offset: vec![0; self.dims.unwrap_or(0)],
            },
            Resolved::Global(Global::Param(param)) => Ir::Param(param),
            Resolved::Global(Global::Reduction(r)) => Ir::ReductionValue(r),
            Resolved::Coord(axis) => Ir::Coord(axis),
            Resolved::Step => Ir::Step,
            Resolved::Global(Global::Table(_)) => {
                self.table_index_error(path, path.span);
                return None;
            }
            other @ Resolved::Global(
                Global::Group(_)
                | Global::Stage
                | Global::Receiver
                | Global::Const(_)
                | Global::Function(_),
            ) => {
                self.not_a_value(path, other);
                return None;
            }
        })
    }

    fn not_a_value(&mut self, path: &Path, what: Resolved) {
        if let Resolved::Global(Global::Group(group)) = what
            && self.program.groups[group].is_array()
        {
            self.index_count(&path.head.name, "field", 1, 0, path.span);
            return;
        }
        let help = match what {
            Resolved::Global(Global::Group(group)) => {
                let names: Vec<&str> = self.program.groups[group]
                    .component_names
                    .iter()
                    .map(String::as_str)
                    .collect();
                format!("read one component, e.g. `{}.{}`", path.text(), names[0])
            }
            Resolved::Global(Global::Function(_)) => {
                format!("call the function: `{}(...)`", path.text())
            }
            _ => "stages and receivers are not values; use a field, parameter or local".to_string(),
        };
        self.error(
            Diagnostic::error(
                "E0016",
                format!(
                    "`{}` is {} and has no value by itself",
                    path.text(),
                    what.describe()
                ),
            )
            .with_primary(path.span, "used as a value here")
            .with_help(help),
        );
    }

    /// The field read by `A[...]`.
    fn read_target(&mut self, path: &Path, target: Option<Resolved>) -> Option<Id<Field>> {
        match target? {
            Resolved::Global(Global::Field(field)) => Some(field),
            other @ Resolved::Global(Global::Group(_)) => {
                self.not_a_value(path, other);
                None
            }
            other => {
                self.error(
                    Diagnostic::error(
                        "E0017",
                        format!(
                            "`{}` is {}, not a field, so it cannot be read at an offset",
                            path.text(),
                            other.describe()
                        ),
                    )
                    .with_primary(path.span, "not a field")
                    .with_help(format!(
                        "only fields take offsets; write `{}` without brackets",
                        path.text()
                    )),
                );
                None
            }
        }
    }

    /// Constant offsets, one per axis.
    pub(super) fn offsets(
        &mut self,
        path: &Path,
        offsets: &[Expr],
        brackets: Span,
        at: Use,
    ) -> Option<Vec<i32>> {
        let values: Vec<Option<i32>> = offsets.iter().map(|e| self.offset(e, at)).collect();
        if let Some(dims) = self.dims.filter(|d| *d != offsets.len()) {
            let axes = self.axis_names();
            self.error(
                Diagnostic::error(
                    "E0021",
                    format!(
                        "`{}` is read with {} offset{} but the grid has {dims} axes",
                        path.text(),
                        offsets.len(),
                        if offsets.len() == 1 { "" } else { "s" }
                    ),
                )
                .with_primary(
                    brackets,
                    format!(
                        "{} offset{}",
                        offsets.len(),
                        if offsets.len() == 1 { "" } else { "s" }
                    ),
                )
                .with_help(format!(
                    "give one offset per axis, slowest first ({}), e.g. `{}[{}]`",
                    quoted(&axes),
                    path.text(),
                    vec!["0"; dims].join(", ")
                )),
            );
            return None;
        }
        values.into_iter().collect()
    }

    /// One offset: a constant integer (literals with `+ - *`).
    fn offset(&mut self, expr: &Expr, at: Use) -> Option<i32> {
        let value = self.compile_time(expr, at, IntUse::Offset)?;
        match i32::try_from(value) {
            Ok(v) => Some(v),
            Err(_) => {
                self.error(
                    Diagnostic::error("E0022", format!("the offset {value} is too large"))
                        .with_primary(expr.span, "does not fit in 32 bits")
                        .with_help("offsets are small distances from the current point, such as `-1` or `2`"),
                );
                None
            }
        }
    }

    /// An extent or region bound: integer parameters and literals with `+ - * /`.
    pub(super) fn size(&mut self, expr: &Expr, item: usize) -> Option<SizeExpr> {
        let not_a_size = |this: &mut Self, what: String| {
            this.error(
                Diagnostic::error("E0025", format!("{what} cannot be used in a size or region bound"))
                    .with_primary(expr.span, "not an integer size")
                    .with_help("sizes and region bounds are integer parameters and literals combined with `+ - * /`, e.g. `N - 1`"),
            );
            None
        };
        match &expr.kind {
            ExprKind::Literal(Constant::Int(v)) => Some(match v.checked_neg() {
                Some(positive) if *v < 0 => SizeExpr::Neg(Box::new(SizeExpr::Const(positive))),
                _ => SizeExpr::Const(*v),
            }),
            ExprKind::Literal(c) => not_a_size(self, format!("the literal `{c}`")),
            ExprKind::Name(path) => match self.resolve(path, Use::top(item))? {
                Resolved::Global(Global::Param(p)) => Some(SizeExpr::Param(p)),
                other => not_a_size(self, format!("`{}`, {},", path.text(), other.describe())),
            },
            // `-(0)` is `0`, as `-0` is: the printer writes `Neg(Const(0))` as `-0`.
            ExprKind::Unary(UnaryOp::Neg, a) => match self.size(a, item)? {
                SizeExpr::Const(0) => Some(SizeExpr::Const(0)),
                inner => Some(SizeExpr::Neg(Box::new(inner))),
            },
            ExprKind::Binary(
                op @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div),
                a,
                b,
            ) => {
                let op = match op {
                    BinaryOp::Add => SizeOp::Add,
                    BinaryOp::Sub => SizeOp::Sub,
                    BinaryOp::Mul => SizeOp::Mul,
                    _ => SizeOp::Div,
                };
                let (a, b) = (self.size(a, item), self.size(b, item));
                Some(SizeExpr::Binary(op, Box::new(a?), Box::new(b?)))
            }
            ExprKind::Unary(op, _) => not_a_size(self, format!("`{}`", op.symbol())),
            ExprKind::Binary(op, ..) => not_a_size(self, format!("`{}`", op.symbol())),
            ExprKind::Read { .. } => not_a_size(self, "a field read".to_string()),
            ExprKind::Conditional(..) => not_a_size(self, "a conditional".to_string()),
            ExprKind::Call { function, .. } => {
                not_a_size(self, format!("the call `{}(...)`", function.name))
            }
            ExprKind::Array(_) => not_a_size(self, "an array literal".to_string()),
            ExprKind::Sum { .. } => not_a_size(self, "a `sum`".to_string()),
        }
    }

    /// `[R, ...]` with bounds resolved at item `item`.
    pub(super) fn region(&mut self, region: &RegionExpr, item: usize) -> Option<Region> {
        let mut ranges = Vec::new();
        let mut ok = true;
        for range in &region.ranges {
            let lowered = match range {
                RangeExpr::Index(e) => self.size(e, item).map(Range::Index),
                RangeExpr::Span { lo, hi, stride } => {
                    let lo = lo.as_ref().map(|e| self.size(e, item));
                    let hi = hi.as_ref().map(|e| self.size(e, item));
                    match (lo, hi) {
                        (Some(None), _) | (_, Some(None)) => None,
                        (lo, hi) => Some(Range::Span {
                            lo: lo.flatten(),
                            hi: hi.flatten(),
                            stride: *stride,
                        }),
                    }
                }
            };
            match lowered {
                Some(range) => ranges.push(range),
                None => ok = false,
            }
        }
        ok.then_some(Region {
            ranges,
            span: region.span,
        })
    }

    /// `clamp`, `periodic`, `mirror`, `constant(v)`.
    pub(super) fn lower_border(&mut self, border: &BorderExpr) -> Option<Border> {
        let mode = match border.name.name.as_str() {
            "constant" => {
                let Some((value, _)) = border.value else {
                    self.border_error(
                        border,
                        "`constant` needs a value".to_string(),
                        "write the value read outside the grid, e.g. `constant(0.0)`".to_string(),
                    );
                    return None;
                };
                return Some(Border::Constant(value));
            }
            "clamp" => Border::Clamp,
            "periodic" => Border::Periodic,
            "mirror" => Border::Mirror,
            other => {
                let modes = ["constant", "clamp", "periodic", "mirror"];
                let help = match did_you_mean(other, modes) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => "use `clamp`, `periodic`, `mirror` or `constant(v)`".to_string(),
                };
                self.border_error(border, format!("unknown border mode `{other}`"), help);
                return None;
            }
        };
        if border.value.is_some() {
            let name = &border.name.name;
            self.border_error(
                border,
                format!("`{name}` takes no value"),
                format!("write `{name}` alone; only `constant(v)` takes a value"),
            );
            return None;
        }
        Some(mode)
    }

    fn border_error(&mut self, border: &BorderExpr, message: String, help: String) {
        self.error(
            Diagnostic::error("E0013", message)
                .with_primary(border.span, "not a border mode")
                .with_help(help),
        );
    }

    /// Whether `name` is a built-in call: a math function, `select`, a conversion or an alias.
    pub(super) fn is_builtin_call(&self, name: &str) -> bool {
        MathFn::from_name(name).is_some()
            || name == "select"
            || name == super::scan::SCAN
            || CONVERSIONS.iter().any(|t| t.name() == name)
            || self.aliases.get(name).is_some()
    }

    /// What a call's name denotes; checks the argument count.
    fn call(
        &mut self,
        name: &str,
        name_span: Span,
        count: usize,
        span: Span,
        at: Use,
    ) -> Option<Callee> {
        let (callee, arity) = if name == super::scan::SCAN {
            self.misplaced_scan(span);
            return None;
        } else if let Some(f) = MathFn::from_name(name) {
            (Callee::Math(f), f.arity())
        } else if name == "select" {
            (Callee::Select, 3)
        } else if let Some(t) = CONVERSIONS.into_iter().find(|t| t.name() == name) {
            (Callee::Cast(t), 1)
        } else if let Some(t) = self.aliases.get(name) {
            (Callee::Cast(t), 1)
        } else {
            self.unknown_function(name, name_span, at);
            return None;
        };
        if count != arity {
            let usage = match callee {
                Callee::Math(_) if arity == 1 => format!("{name}(x)"),
                Callee::Math(_) => format!("{name}(x, y)"),
                Callee::Select => "select(condition, if_true, if_false)".to_string(),
                Callee::Cast(_) => format!("{name}(x)"),
            };
            self.argument_count(name, arity, count, span, &usage);
            return None;
        }
        Some(callee)
    }

    /// Reports a call of `name` with `count` arguments where it takes `arity`.
    pub(super) fn argument_count(
        &mut self,
        name: &str,
        arity: usize,
        count: usize,
        span: Span,
        usage: &str,
    ) {
        self.error(
            Diagnostic::error(
                "E0038",
                format!(
                    "`{name}` takes {arity} argument{}, found {count}",
                    if arity == 1 { "" } else { "s" }
                ),
            )
            .with_primary(
                span,
                format!("{count} argument{}", if count == 1 { "" } else { "s" }),
            )
            .with_help(format!("call it as `{usage}`")),
        );
    }

    fn unknown_function(&mut self, name: &str, span: Span, at: Use) {
        let mut names: Vec<&str> = MathFn::ALL.iter().map(|f| f.name()).collect();
        names.push("select");
        names.extend(CONVERSIONS.iter().map(|t| t.name()));
        for function in self.functions.iter().map(|f| f.name()) {
            if function != name && !names.contains(&function) {
                names.push(function);
            }
        }
        let is_value = at.locals.get(name).is_some() || self.symbols.globals.contains_key(name);
        let help = match did_you_mean(name, names.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None if is_value => format!(
                "`{name}` is not a function; to read a field at an offset use brackets: `{name}[...]`"
            ),
            None => format!("the functions are {}", quoted(&names)),
        };
        self.error(
            Diagnostic::error("E0011", format!("unknown function `{name}`"))
                .with_primary(span, "not a function")
                .with_help(help),
        );
    }
}

/// What a call invokes.
#[derive(Clone, Copy)]
enum Callee {
    Math(MathFn),
    Select,
    Cast(ScalarType),
}
