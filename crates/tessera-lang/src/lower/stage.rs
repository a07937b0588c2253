//! Stages (regions, border overrides, statements), reductions and the stop condition.

use std::collections::{HashMap, HashSet};

use tessera_ir::diagnostic::did_you_mean;
use tessera_ir::{
    BinaryOp, Diagnostic, Expr as IrExpr, ExprId, ExprKind as Ir, Field, Id, Local, ReduceOp,
    Reduction, ReductionPlacement, Span, Stage, StopCondition,
};

use super::Lowerer;
use super::scope::{BUILTIN_NAMES, Global, Locals, LoopVar, Resolved, Use};
use crate::ast::{Bracketed, Expr, Ident, Path, ReduceDecl, StageDecl, Statement};

/// What a stage's statements have lowered into so far.
#[derive(Default)]
struct StageBody<'d> {
    locals: tessera_ir::Arena<Local>,
    /// The locals in scope by name.
    by_name: HashMap<String, Id<Local>>,
    body: Vec<tessera_ir::Statement>,
    /// In-stage reductions with the number of locals visible to each.
    reductions: Vec<(&'d ReduceDecl, usize)>,
    /// Locals bound inside loops, with the loop values of their iteration (outermost first).
    unrolled: Vec<(Id<Local>, Vec<i64>)>,
}

impl Lowerer<'_> {
    /// A stage: region, border overrides, statements, then its in-stage reductions.
    pub(super) fn lower_stage(&mut self, item: usize, decl: &StageDecl) {
        let Some(id) = self.stage_id(decl) else {
            return;
        };
        let region = decl.region.as_ref().and_then(|r| self.region(r, item));
        let mut borders = Vec::new();
        for (path, border) in &decl.borders {
            let fields = self.border_targets(path, item);
            if let Some(border) = self.lower_border(border) {
                borders.extend(fields.into_iter().map(|f| (f, border)));
            }
        }
        let mut scope = StageBody::default();
        self.statements(item, &decl.body, &mut scope, None);
        self.name_unrolled_locals(&mut scope);
        let StageBody {
            locals,
            by_name,
            body,
            reductions,
            ..
        } = scope;
        for (reduce, visible_count) in reductions {
            if let Some(region) = &reduce.region {
                self.error(
                    Diagnostic::error("E0039", format!("the in-stage reduction `{}` cannot have its own region", reduce.name.name))
                        .with_primary(region.span, "a region here")
                        .with_help("an in-stage reduction covers its stage's points; to reduce over another region, declare it after the stages"),
                );
            }
            self.lower_reduction(
                reduce,
                Use::in_stage(item, Locals::new(&by_name, visible_count), None),
                ReductionPlacement::InStage(id),
            );
        }
        let stage = &mut self.program.stages[id];
        stage.region = region;
        stage.borders = borders;
        stage.locals = locals;
        stage.body = body;
    }

    /// Lowers `statements` into `scope`, unrolling loops; `loops` are the loop variables of the
    /// iteration being unrolled. Returns the names of the locals bound, to be forgotten when
    /// an iteration ends.
    fn statements<'d>(
        &mut self,
        item: usize,
        statements: &'d [Statement],
        scope: &mut StageBody<'d>,
        loops: Option<&LoopVar>,
    ) -> Vec<String> {
        let mut bound = Vec::new();
        for statement in statements {
            let at = Use::in_stage(item, Locals::new(&scope.by_name, scope.locals.len()), loops);
            match statement {
                Statement::Let { name, value } => {
                    let value = self.value(value, at);
                    if self.bind_local(name, value, scope, loops) {
                        bound.push(name.name.clone());
                    }
                }
                Statement::Assign {
                    target,
                    offsets,
                    op,
                    value,
                    span,
                } => {
                    let assign = self.assign(target, offsets.as_ref(), *op, value, *span, at);
                    scope.body.extend(assign);
                }
                Statement::Reduce(reduce) if loops.is_some() => self.reduce_in_loop(reduce),
                Statement::Reduce(reduce) => scope.reductions.push((reduce, scope.locals.len())),
                Statement::For {
                    var,
                    lo,
                    hi,
                    body,
                    span,
                } => {
                    let Some(values) = self.loop_values(var, (lo, hi), *span, at) else {
                        continue;
                    };
                    for value in values {
                        let iteration = LoopVar {
                            name: &var.name,
                            value,
                            span: var.span,
                            outer: loops,
                        };
                        for name in self.statements(item, body, scope, Some(&iteration)) {
                            scope.by_name.remove(&name);
                        }
                    }
                }
            }
        }
        bound
    }

    /// Binds `let name = value;`; returns whether the name was bound.
    fn bind_local(
        &mut self,
        name: &Ident,
        value: Option<ExprId>,
        scope: &mut StageBody,
        loops: Option<&LoopVar>,
    ) -> bool {
        if !self.allowed_name(name) {
            return false;
        }
        let first = (scope
            .by_name
            .get(&name.name)
            .map(|l| (scope.locals[*l].span, "local")))
        .or_else(|| LoopVar::find(loops, &name.name).map(|v| (v.span, "loop variable")));
        if let Some((first, kind)) = first {
            self.duplicate(name, first, kind, "give each `let` of a stage its own name");
            return false;
        }
        let local = scope.locals.alloc(Local {
            name: name.name.clone(),
            span: name.span,
        });
        scope.by_name.insert(name.name.clone(), local);
        if loops.is_some() {
            scope.unrolled.push((local, LoopVar::values(loops)));
        }
        if let Some(value) = value {
            scope.body.push(tessera_ir::Statement::Let { local, value });
        }
        true
    }

    /// `TARGET[offsets] op= value;` as an assignment of a field at the point itself.
    fn assign(
        &mut self,
        target: &Path,
        offsets: Option<&Bracketed>,
        op: Option<BinaryOp>,
        value: &Expr,
        span: Span,
        at: Use,
    ) -> Option<tessera_ir::Statement> {
        let (target, offsets) = match offsets {
            Some((offsets, brackets)) => match self.subscript(target, (offsets, *brackets), at) {
                (path, Some(offsets)) => (path, Some((offsets, *brackets))),
                (path, None) => (path, None),
            },
            None => (target.clone(), None),
        };
        let field = self.assign_target(&target, at);
        if let (Some((offsets, brackets)), Some(_)) = (offsets, field) {
            self.written_offsets(&target, offsets, brackets, at);
        }
        // `F op= e` is `F = F op (e)`: the read of `F` comes first, as when written out.
        let current = field.filter(|_| op.is_some()).map(|field| {
            let here = vec![0; self.dims.unwrap_or(0)];
            self.program.exprs.alloc(IrExpr {
                kind: Ir::Read {
                    field,
                    offset: here,
                },
                span: target.span,
            })
        });
        let (scan, value) = match Self::scan_arguments(value) {
            Some(_) if op.is_some() => {
                self.misplaced_scan(value.span);
                return None;
            }
            Some(args) => match self.scan(args, value.span) {
                Some((scan, operand)) => (Some(scan), operand),
                None => return None,
            },
            None => (None, value),
        };
        let mut value = self.value(value, at);
        if let (Some(op), Some(current)) = (op, current) {
            value = value.map(|value| {
                self.program.exprs.alloc(IrExpr {
                    kind: Ir::Binary(op, current, value),
                    span,
                })
            });
        }
        Some(tessera_ir::Statement::Assign {
            field: field?,
            value: value?,
            span,
            scan,
        })
    }

    /// The reduction or scan operation `name`: `sum`, `max` or `min`.
    pub(super) fn reduce_op(&mut self, name: &Ident) -> Option<ReduceOp> {
        match name.name.as_str() {
            "sum" => Some(ReduceOp::Sum),
            "max" => Some(ReduceOp::Max),
            "min" => Some(ReduceOp::Min),
            other => {
                let help = match did_you_mean(other, ["sum", "max", "min"]) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => "reduce with `sum`, `max` or `min`, e.g. `reduce total = sum(u);`"
                        .to_string(),
                };
                self.error(
                    Diagnostic::error("E0014", format!("unknown reduction `{other}`"))
                        .with_primary(name.span, "not `sum`, `max` or `min`")
                        .with_help(help),
                );
                None
            }
        }
    }

    /// Reports an in-stage reduction inside a `for` loop.
    fn reduce_in_loop(&mut self, reduce: &ReduceDecl) {
        self.error(
            Diagnostic::error("E0053", format!("the reduction `{}` is inside a `for` loop", reduce.name.name))
                .with_primary(reduce.span, "a reduction in a loop")
                .with_help("a reduction is declared once per stage: declare it after the loop, summing over the elements with `sum(i in 0..N, ...)` if needed"),
        );
    }

    /// Names each local bound inside a loop after its iteration (`feq` at `i = 3` is
    /// `feq_3`), avoiding every other name of the stage and the program, so that the printed
    /// program declares each local once.
    fn name_unrolled_locals(&self, scope: &mut StageBody) {
        let unrolled: HashSet<Id<Local>> = scope.unrolled.iter().map(|(l, _)| *l).collect();
        let mut taken: HashSet<String> = (scope.locals.iter())
            .filter(|(id, _)| !unrolled.contains(id))
            .map(|(_, local)| local.name.clone())
            .chain(self.symbols.globals.keys().cloned())
            .chain(BUILTIN_NAMES.iter().map(|n| n.to_string()))
            .collect();
        for (local, values) in &scope.unrolled {
            let suffix: Vec<String> = (values.iter())
                .map(|v| {
                    if *v < 0 {
                        format!("m{}", v.unsigned_abs())
                    } else {
                        v.to_string()
                    }
                })
                .collect();
            let mut name = format!("{}_{}", scope.locals[*local].name, suffix.join("_"));
            while taken.contains(&name) {
                name.push('_');
            }
            taken.insert(name.clone());
            scope.locals[*local].name = name;
        }
    }

    /// The stage allocated for this declaration (by position among the stages).
    fn stage_id(&self, decl: &StageDecl) -> Option<Id<Stage>> {
        self.program
            .stages
            .iter()
            .find(|(_, s)| s.span == decl.span && s.name == decl.name.name)
            .map(|(id, _)| id)
    }

    /// The fields named by a border override (every component for a struct or vector field).
    fn border_targets(&mut self, path: &Path, item: usize) -> Vec<Id<Field>> {
        match self.resolve(path, Use::top(item)) {
            Some(Resolved::Global(Global::Field(field))) => vec![field],
            Some(Resolved::Global(Global::Group(group))) => {
                self.program.groups[group].components.clone()
            }
            Some(other) => {
                self.error(
                    Diagnostic::error(
                        "E0017",
                        format!(
                            "`{}` is {}, not a field, so it has no border",
                            path.text(),
                            other.describe()
                        ),
                    )
                    .with_primary(path.span, "not a field")
                    .with_help("border overrides name fields: `border u = clamp`"),
                );
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// The field an assignment writes; anything else is reported.
    fn assign_target(&mut self, path: &Path, at: Use) -> Option<Id<Field>> {
        let resolved = self.resolve(path, at)?;
        let name = path.text();
        let help = match resolved {
            Resolved::Global(Global::Field(field)) => return Some(field),
            Resolved::Global(Global::Group(group)) if self.program.groups[group].is_array() => {
                self.error(
                    Diagnostic::error("E0050", format!("cannot assign to the array field `{name}` as a whole"))
                        .with_primary(path.span, "a whole array")
                        .with_help(format!("assign each element: `{name}[0] = ...;`, or all of them in a loop: `for i in 0..N {{ {name}[i] = ...; }}`")),
                );
                return None;
            }
            Resolved::Global(Global::Group(group)) => {
                let first = self.program.groups[group].component_text(0);
                format!("assign each component separately, e.g. `{first} = ...;`")
            }
            Resolved::Local(_) => format!(
                "a `let` binding cannot change; bind a new name instead: `let {name}2 = ...;`"
            ),
            Resolved::Global(Global::Param(_)) => {
                "parameters are constant during a run; keep changing values in a field".to_string()
            }
            Resolved::Coord(_) | Resolved::Step => {
                "coordinates and `t` are given by the time loop; write a field instead".to_string()
            }
            Resolved::Global(
                Global::Reduction(_)
                | Global::Stage
                | Global::Receiver
                | Global::Const(_)
                | Global::Function(_)
                | Global::Table(_),
            ) => "only fields can be assigned in a stage".to_string(),
        };
        let message = match resolved {
            Resolved::Global(Global::Group(_)) => {
                format!("cannot assign to the struct or vector field `{name}` as a whole")
            }
            _ => format!(
                "cannot assign to `{name}`: it is {}, not a field",
                resolved.describe()
            ),
        };
        self.error(
            Diagnostic::error("E0024", message)
                .with_primary(path.span, "cannot be assigned")
                .with_help(help),
        );
        None
    }

    /// Offsets written after an assigned field: only the point itself (all zero) is allowed.
    fn written_offsets(&mut self, target: &Path, offsets: &[Expr], brackets: Span, at: Use) {
        let Some(values) = self.offsets(target, offsets, brackets, at) else {
            return;
        };
        if values.iter().any(|v| *v != 0) {
            let name = target.text();
            self.error(
                Diagnostic::error("E0023", format!("`{name}` is written at an offset, but a stage writes only at the point itself"))
                    .with_primary(brackets, "an offset")
                    .with_help(format!("write `{name} = ...;` and read neighbours on the right-hand side; to update other points, change the stage's region")),
            );
        }
    }

    /// An after-step reduction.
    pub(super) fn lower_after_step(&mut self, item: usize, decl: &ReduceDecl) {
        let region = match &decl.region {
            Some(region) => match self.region(region, item) {
                Some(region) => Some(region),
                None => return,
            },
            None => None,
        };
        self.lower_reduction(
            decl,
            Use::top(item),
            ReductionPlacement::AfterStep { region },
        );
    }

    fn lower_reduction(&mut self, decl: &ReduceDecl, at: Use, placement: ReductionPlacement) {
        let op = self.reduce_op(&decl.op);
        let value = self.value(&decl.value, at);
        let Some(Global::Reduction(id)) =
            self.symbols.globals.get(&decl.name.name).map(|d| d.global)
        else {
            return;
        };
        if let (Some(op), Some(value)) = (op, value) {
            let reduction = Reduction {
                name: decl.name.name.clone(),
                op,
                value,
                placement,
                every: decl.every,
                span: decl.span,
            };
            if let Some(slot) = self
                .reductions
                .get_mut(id.index())
                .filter(|slot| slot.is_none())
            {
                *slot = Some(reduction);
            }
        }
    }

    /// `until EXPR;`: must read at least one reduction.
    pub(super) fn lower_until(&mut self, item: usize, condition: &Expr, span: Span) {
        self.reads_reduction = false;
        let lowered = self.value(condition, Use::top(item));
        if lowered.is_some() && !self.reads_reduction {
            self.error(
                Diagnostic::error("E0035", "the `until` condition reads no reduction")
                    .with_primary(condition.span, "never re-evaluated")
                    .with_help("`until` is checked when a reduction is computed: declare one (`reduce res = max(abs(u - u_old));`) and use its name here"),
            );
        }
        if let Some(condition) = lowered {
            self.program.until = Some(StopCondition { condition, span });
        }
    }
}
