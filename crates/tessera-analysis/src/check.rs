//! Type checking and elaboration.
//!
//! Typing rules (the semantics every backend follows):
//! - Literals are *untyped constants*; so is any expression made only of literals (and `let`s
//!   bound to one). An untyped constant takes the type its context asks for: the other operand,
//!   the assigned field, the cast around it. Without context an integer constant is `i32` and a
//!   float constant `f64`; a float constant next to a typed integer makes the operation `f64`.
//! - Two typed numeric operands promote to the wider of `u8 < i32 < i64 < f32 < f64`.
//! - Comparisons give `bool`; `&&`, `||`, `!` and the condition of `select` take `bool`.
//!   `bool` never converts to a number implicitly (write `u8(c)` or `select(c, 1, 0)`).
//! - `sqrt rsqrt exp log pow sin cos atan2 floor` take floats; `abs min max` any number.
//! - Coordinates and `t` are `i64`; reduction values are `f64` in `until`; in a stage (which
//!   reads the in-stage reductions of earlier stages) a reduction value is read like a float
//!   constant: an `f64` value converted by an explicit `Cast` to its context's float type.
//! - An assignment converts the value to the field's type (as C does).
//!
//! Elaboration makes all of this explicit: in a [`CheckedProgram`] every literal has its final
//! type, every conversion is a `Cast` node and the operands of every node have the node's
//! operand type, so backends never re-derive a rule.

use std::collections::{BTreeMap, HashMap};

use tessera_ir::{
    Arena, BinaryOp, Constant, Diagnostic, Expr, ExprId, ExprKind, Field, Id, Local, MathFn,
    Program, Range, ReduceOp, Reduction, ReductionPlacement, Region, ScalarType, Scan, SizeExpr,
    Span, Stage, Statement, UnaryOp,
};

use crate::footprint::Footprint;

/// How a field is used by the step sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldRole {
    /// Neither read nor written by any stage or reduction.
    Unused,
    /// Read but never written: an input or a coefficient.
    ReadOnly,
    /// Written by at least one stage.
    Updated,
}

/// A program that passed type checking, with everything backends need precomputed.
#[derive(Clone, Debug)]
pub struct CheckedProgram {
    program: Program,
    expr_types: Vec<ScalarType>,
    local_types: Vec<Vec<ScalarType>>,
    stage_footprints: Vec<Vec<(Id<Field>, Footprint)>>,
    reduction_footprints: Vec<Vec<(Id<Field>, Footprint)>>,
    roles: Vec<FieldRole>,
    warnings: Vec<Diagnostic>,
}

impl CheckedProgram {
    /// Warnings found while checking (literals that lose digits), in source order.
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// The elaborated program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The type of an expression of the elaborated program.
    pub fn ty(&self, expr: ExprId) -> ScalarType {
        self.expr_types[expr.index()]
    }

    /// The type of a stage's local.
    pub fn local_ty(&self, stage: Id<Stage>, local: Id<Local>) -> ScalarType {
        self.local_types[stage.index()][local.index()]
    }

    /// Fields read by a stage (body and in-stage reductions), with their footprints, by field id.
    pub fn stage_footprints(&self, stage: Id<Stage>) -> &[(Id<Field>, Footprint)] {
        &self.stage_footprints[stage.index()]
    }

    /// The footprint of `field` in `stage`, if the stage reads it.
    pub fn footprint(&self, stage: Id<Stage>, field: Id<Field>) -> Option<&Footprint> {
        let footprints = &self.stage_footprints[stage.index()];
        let at = footprints.binary_search_by_key(&field, |(f, _)| *f).ok()?;
        Some(&footprints[at].1)
    }

    /// Fields read by a reduction, with their footprints.
    pub fn reduction_footprints(
        &self,
        reduction: Id<tessera_ir::Reduction>,
    ) -> &[(Id<Field>, Footprint)] {
        &self.reduction_footprints[reduction.index()]
    }

    /// How a field is used.
    pub fn role(&self, field: Id<Field>) -> FieldRole {
        self.roles[field.index()]
    }

    /// The reductions whose values `stage` reads (in its statements or in-stage reductions), by
    /// index: in-stage reductions of earlier stages of the same step.
    pub fn stage_reduction_reads(&self, stage: Id<Stage>) -> Vec<Id<Reduction>> {
        let program = &self.program;
        let statements = program.stages[stage].body.iter().map(|s| match s {
            Statement::Let { value, .. } | Statement::Assign { value, .. } => *value,
        });
        let reductions =
            (self.stage_reductions(stage).into_iter()).map(|r| program.reductions[r].value);
        let mut read = Vec::new();
        for root in statements.chain(reductions) {
            visit(program, root, &mut |e| {
                if let ExprKind::ReductionValue(r) = e.kind {
                    read.push(r);
                }
            });
        }
        read.sort();
        read.dedup();
        read
    }

    /// The reductions some stage reads, by index: each step is cut after the stage computing
    /// them.
    pub fn stage_read_reductions(&self) -> Vec<Id<Reduction>> {
        let mut read: Vec<Id<Reduction>> = (self.program.stages.ids())
            .flat_map(|s| self.stage_reduction_reads(s))
            .collect();
        read.sort();
        read.dedup();
        read
    }

    /// Reductions computed inside `stage`.
    pub fn stage_reductions(&self, stage: Id<Stage>) -> Vec<Id<tessera_ir::Reduction>> {
        self.program
            .reductions
            .iter()
            .filter(|(_, r)| r.placement == ReductionPlacement::InStage(stage))
            .map(|(id, _)| id)
            .collect()
    }
}

/// Type-checks and elaborates `program`; returns every error found.
pub fn check(program: &Program) -> Result<CheckedProgram, Vec<Diagnostic>> {
    let mut checker = Checker::new(program);
    checker.check_declarations();
    let mut elaborated = Program {
        exprs: Arena::new(),
        ..program.clone()
    };
    let mut local_types = Vec::new();
    // Field initial values: parameters, coordinates and literals only.
    for (id, field) in program.fields.iter() {
        if let Some(init) = field.init {
            let mut scope = Scope::field_init(field);
            let value = checker.lower_stored(&mut scope, init, field.ty, "the initial value");
            elaborated.fields[id].init = value;
        }
    }
    let in_stage_reductions = in_stage_reductions(program);
    for ((stage_id, stage), reductions) in program.stages.iter().zip(&in_stage_reductions) {
        checker.check_scans(stage, reductions);
        let mut scope = Scope::stage(stage_id, stage);
        let mut body = Vec::new();
        for statement in &stage.body {
            match statement {
                Statement::Let { local, value } => {
                    if let Some(elaborated_value) = checker.bind_local(&mut scope, *local, *value) {
                        body.push(Statement::Let {
                            local: *local,
                            value: elaborated_value,
                        });
                    }
                }
                Statement::Assign {
                    field,
                    value,
                    span,
                    scan,
                } => {
                    let target = &program.fields[*field];
                    if target.readonly {
                        checker.error(
                            Diagnostic::error(
                                "E0301",
                                format!(
                                    "stage `{}` writes the read-only field `{}`",
                                    stage.name, target.name
                                ),
                            )
                            .with_primary(*span, "written here")
                            .with_secondary(target.span, "declared `readonly` here")
                            .with_help(format!(
                                "remove `readonly` from the declaration of `{}`",
                                target.name
                            )),
                        );
                    }
                    let what = format!("the value assigned to `{}`", target.name);
                    let value = match scan {
                        None => checker.lower_stored(&mut scope, *value, target.ty, &what),
                        Some(scan) => checker.lower_scan(&mut scope, *field, *scan, *value, &what),
                    };
                    if let Some(value) = value {
                        body.push(Statement::Assign {
                            field: *field,
                            value,
                            span: *span,
                            scan: *scan,
                        });
                    }
                }
            }
        }
        elaborated.stages[stage_id].body = body;
        for &reduction in reductions {
            let value = program.reductions[reduction].value;
            if let Some(value) = checker.lower_reduction(&mut scope, value) {
                elaborated.reductions[reduction].value = value;
            }
        }
        local_types.push(
            scope
                .local_types
                .iter()
                .map(|t| t.unwrap_or(ScalarType::F64))
                .collect(),
        );
    }
    for (reduction_id, reduction) in program.reductions.iter() {
        if let ReductionPlacement::AfterStep { .. } = reduction.placement {
            let mut scope = Scope::after_step();
            if let Some(value) = checker.lower_reduction(&mut scope, reduction.value) {
                elaborated.reductions[reduction_id].value = value;
            }
        }
    }
    if let Some(until) = &program.until {
        let mut scope = Scope::until();
        if let Some(condition) = checker.lower_coerced(
            &mut scope,
            until.condition,
            ScalarType::Bool,
            "the `until` condition",
        ) {
            elaborated.until.as_mut().expect("until present").condition = condition;
        }
    }
    if !checker.errors.is_empty() {
        return Err(checker.errors);
    }
    elaborated.exprs = std::mem::take(&mut checker.out);
    let expr_types = std::mem::take(&mut checker.out_types);
    let mut checked = finish(elaborated, expr_types, local_types);
    checked.warnings = std::mem::take(&mut checker.warnings)
        .into_values()
        .collect();
    Ok(checked)
}

/// Computes footprints and roles of an elaborated program.
fn finish(
    program: Program,
    expr_types: Vec<ScalarType>,
    local_types: Vec<Vec<ScalarType>>,
) -> CheckedProgram {
    let mut roles = vec![FieldRole::Unused; program.fields.len()];
    let mut stage_footprints = Vec::new();
    for ((_, stage), reductions) in program.stages.iter().zip(in_stage_reductions(&program)) {
        let mut reads = BTreeMap::new();
        let values = stage.body.iter().map(|s| match s {
            Statement::Let { value, .. } | Statement::Assign { value, .. } => *value,
        });
        let reduction_values = reductions.iter().map(|&r| program.reductions[r].value);
        for root in values.chain(reduction_values) {
            collect_reads(&program, root, &mut reads);
        }
        stage_footprints.push(reads.into_iter().collect());
        for field in stage.outputs() {
            roles[field.index()] = FieldRole::Updated;
        }
    }
    let reduction_footprints: Vec<Vec<(Id<Field>, Footprint)>> = program
        .reductions
        .values()
        .map(|r| {
            let mut reads = BTreeMap::new();
            collect_reads(&program, r.value, &mut reads);
            reads.into_iter().collect()
        })
        .collect();
    for (field, _) in stage_footprints
        .iter()
        .chain(&reduction_footprints)
        .flatten()
    {
        if roles[field.index()] == FieldRole::Unused {
            roles[field.index()] = FieldRole::ReadOnly;
        }
    }
    CheckedProgram {
        program,
        expr_types,
        local_types,
        stage_footprints,
        reduction_footprints,
        roles,
        warnings: Vec::new(),
    }
}

/// The in-stage reductions of each stage, by stage index, in declaration order.
fn in_stage_reductions(program: &Program) -> Vec<Vec<Id<Reduction>>> {
    let mut by_stage = vec![Vec::new(); program.stages.len()];
    for (id, reduction) in program.reductions.iter() {
        if let ReductionPlacement::InStage(stage) = reduction.placement {
            by_stage[stage.index()].push(id);
        }
    }
    by_stage
}

/// Adds every field read under `root` to `reads`.
fn collect_reads(program: &Program, root: ExprId, reads: &mut BTreeMap<Id<Field>, Footprint>) {
    visit(program, root, &mut |expr| {
        if let ExprKind::Read { field, offset } = &expr.kind {
            match reads.get_mut(field) {
                Some(fp) => fp.insert(offset),
                None => {
                    reads.insert(*field, Footprint::single(offset));
                }
            }
        }
    });
}

/// Calls `f` on `root` and every expression below it.
pub fn visit(program: &Program, root: ExprId, f: &mut dyn FnMut(&Expr)) {
    let expr = &program.exprs[root];
    f(expr);
    match &expr.kind {
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => visit(program, *a, f),
        ExprKind::Binary(_, a, b) => {
            visit(program, *a, f);
            visit(program, *b, f);
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            visit(program, *cond, f);
            visit(program, *then, f);
            visit(program, *otherwise, f);
        }
        ExprKind::Call(_, args) => args.iter().for_each(|a| visit(program, *a, f)),
        ExprKind::Literal(_)
        | ExprKind::Read { .. }
        | ExprKind::Param(_)
        | ExprKind::Coord(_)
        | ExprKind::Step
        | ExprKind::TableRead { .. }
        | ExprKind::Local(_)
        | ExprKind::ScanAccumulator(_)
        | ExprKind::ReductionValue(_) => {}
    }
}

/// The type of an expression before elaboration: concrete, or an untyped constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inferred {
    Typed(ScalarType),
    UntypedInt,
    UntypedFloat,
}

/// What an expression may refer to where it appears.
struct Scope<'p> {
    what: &'static str,
    stage: Option<(Id<Stage>, &'p Stage)>,
    allow_reads: bool,
    allow_step: bool,
    allow_coords: bool,
    allow_reduction_values: bool,
    /// Per local: its type once bound (typed locals), or the untyped constant it names.
    local_types: Vec<Option<ScalarType>>,
    untyped_locals: Vec<Option<ExprId>>,
    bound: Vec<bool>,
}

impl<'p> Scope<'p> {
    fn base(what: &'static str) -> Self {
        Scope {
            what,
            stage: None,
            allow_reads: false,
            allow_step: false,
            allow_coords: false,
            allow_reduction_values: false,
            local_types: Vec::new(),
            untyped_locals: Vec::new(),
            bound: Vec::new(),
        }
    }

    fn field_init(_field: &Field) -> Self {
        Scope {
            allow_coords: true,
            ..Scope::base("an initial value")
        }
    }

    fn stage(id: Id<Stage>, stage: &'p Stage) -> Self {
        let n = stage.locals.len();
        Scope {
            stage: Some((id, stage)),
            allow_reads: true,
            allow_step: true,
            allow_coords: true,
            local_types: vec![None; n],
            untyped_locals: vec![None; n],
            bound: vec![false; n],
            ..Scope::base("a stage")
        }
    }

    fn after_step() -> Self {
        Scope {
            allow_reads: true,
            allow_step: true,
            allow_coords: true,
            ..Scope::base("a reduction")
        }
    }

    fn until() -> Self {
        Scope {
            allow_reduction_values: true,
            ..Scope::base("an `until` condition")
        }
    }
}

struct Checker<'p> {
    program: &'p Program,
    errors: Vec<Diagnostic>,
    /// By span: a literal inlined from a constant or function is elaborated at every use.
    warnings: BTreeMap<Span, Diagnostic>,
    out: Arena<Expr>,
    out_types: Vec<ScalarType>,
}

impl<'p> Checker<'p> {
    fn new(program: &'p Program) -> Self {
        Checker {
            program,
            errors: Vec::new(),
            warnings: BTreeMap::new(),
            out: Arena::new(),
            out_types: Vec::new(),
        }
    }

    fn error(&mut self, diagnostic: Diagnostic) {
        self.errors.push(diagnostic);
    }

    fn span(&self, id: ExprId) -> Span {
        self.program.exprs[id].span
    }

    fn emit(&mut self, kind: ExprKind, ty: ScalarType, span: Span) -> ExprId {
        self.out_types.push(ty);
        self.out.alloc(Expr { kind, span })
    }

    /// Declarations: grid, parameters, fields, regions, names.
    fn check_declarations(&mut self) {
        let program = self.program;
        if program.extents.is_empty() {
            self.error(
                Diagnostic::error("E0101", "the program declares no grid")
                    .with_primary(program.grid_span, "")
                    .with_help("declare the grid's extents, e.g. `grid [N, N];`"),
            );
        }
        for extent in &program.extents {
            self.check_size_expr(extent, program.grid_span);
        }
        let mut names: Vec<(&str, Span, &str)> = Vec::new();
        for param in program.params.values() {
            names.push((&param.name, param.span, "parameter"));
            if param.ty.is_storage_only() {
                self.error(storage_type_parameter(param));
                continue;
            }
            let ok = match param.default {
                Constant::Int(_) => param.ty.is_integer() || param.ty.is_float(),
                Constant::Float(_) => param.ty.is_float(),
                Constant::Bool(_) => param.ty == ScalarType::Bool,
            };
            if !ok {
                self.error(
                    Diagnostic::error(
                        "E0102",
                        format!(
                            "the default of parameter `{}` is not a `{}`",
                            param.name, param.ty
                        ),
                    )
                    .with_primary(param.span, format!("`{}` declared here", param.name))
                    .with_help(format!("give a default of type `{}`", param.ty)),
                );
            }
        }
        for field in program.fields.values() {
            names.push((&field.name, field.span, "field"));
            if !field.ty.is_storable() {
                self.error(
                    Diagnostic::error(
                        "E0103",
                        format!(
                            "field `{}` has type `bool`, which cannot be stored",
                            field.name
                        ),
                    )
                    .with_primary(field.span, "")
                    .with_help("use `u8` and store 0 or 1"),
                );
            }
            if let Some(tessera_ir::Border::Constant(c)) = field.border
                && (matches!(c, Constant::Float(_)) && field.ty.is_integer()
                    || matches!(c, Constant::Bool(_)))
            {
                self.error(
                    Diagnostic::error(
                        "E0104",
                        format!(
                            "the border value of `{}` is not a `{}`",
                            field.name, field.ty
                        ),
                    )
                    .with_primary(field.span, "")
                    .with_help(format!(
                        "write an integer constant for a `{}` field",
                        field.ty
                    )),
                );
            }
        }
        for stage in program.stages.values() {
            names.push((&stage.name, stage.span, "stage"));
            if let Some(region) = &stage.region {
                self.check_region(region);
            }
        }
        for reduction in program.reductions.values() {
            names.push((&reduction.name, reduction.span, "reduction"));
            if reduction.every == 0 {
                self.error(
                    Diagnostic::error(
                        "E0105",
                        format!("reduction `{}` has `every 0`", reduction.name),
                    )
                    .with_primary(reduction.span, "")
                    .with_help("use `every 1` to compute it after every step"),
                );
            }
            if let ReductionPlacement::AfterStep {
                region: Some(region),
            } = &reduction.placement
            {
                self.check_region(region);
            }
        }
        let mut first_declarations: HashMap<&str, (Span, &str)> = HashMap::new();
        for &(name, span, kind) in &names {
            if let Some(&(first, first_kind)) = first_declarations.get(name) {
                self.error(
                    Diagnostic::error("E0106", format!("`{name}` is declared twice"))
                        .with_primary(span, format!("{kind} `{name}` declared here"))
                        .with_secondary(first, format!("{first_kind} `{name}` first declared here"))
                        .with_help("give each parameter, field, stage and reduction its own name"),
                );
            } else {
                first_declarations.insert(name, (span, kind));
            }
        }
    }

    fn check_region(&mut self, region: &Region) {
        let dims = self.program.dims();
        if region.ranges.len() != dims {
            self.error(
                Diagnostic::error(
                    "E0107",
                    format!(
                        "the region has {} axes but the grid has {dims}",
                        region.ranges.len()
                    ),
                )
                .with_primary(region.span, "")
                .with_help(format!(
                    "give one range per axis ({})",
                    self.program.axis_names().join(", ")
                )),
            );
        }
        for range in &region.ranges {
            match range {
                Range::Index(e) => self.check_size_expr(e, region.span),
                Range::Span { lo, hi, stride } => {
                    for e in lo.iter().chain(hi) {
                        self.check_size_expr(e, region.span);
                    }
                    if *stride == 0 {
                        self.error(
                            Diagnostic::error("E0108", "a region's stride must be at least 1")
                                .with_primary(region.span, "stride 0 here")
                                .with_help("use `by 1` (or omit it) for every index"),
                        );
                    }
                }
            }
        }
    }

    fn check_size_expr(&mut self, e: &SizeExpr, span: Span) {
        match e {
            SizeExpr::Const(_) => {}
            SizeExpr::Param(p) => {
                let param = &self.program.params[*p];
                if !param.ty.is_integer() {
                    self.error(
                        Diagnostic::error(
                            "E0109",
                            format!(
                                "`{}` is a `{}` parameter, but sizes and regions need integers",
                                param.name, param.ty
                            ),
                        )
                        .with_primary(span, "used here")
                        .with_secondary(param.span, "declared here")
                        .with_help(format!("declare it as `param {}: i64 = ...;`", param.name)),
                    );
                }
            }
            SizeExpr::Neg(a) => self.check_size_expr(a, span),
            SizeExpr::Binary(_, a, b) => {
                self.check_size_expr(a, span);
                self.check_size_expr(b, span);
            }
        }
    }

    /// Binds a `let`; returns the elaborated value unless the local is an untyped constant.
    fn bind_local(&mut self, scope: &mut Scope, local: Id<Local>, value: ExprId) -> Option<ExprId> {
        let inferred = self.infer(scope, value)?;
        scope.bound[local.index()] = true;
        match inferred {
            Inferred::Typed(ty) => {
                let out = self.lower(scope, value, None)?;
                scope.local_types[local.index()] = Some(ty);
                debug_assert_eq!(self.out_types[out.index()], ty);
                Some(out)
            }
            Inferred::UntypedInt | Inferred::UntypedFloat => {
                scope.untyped_locals[local.index()] = Some(value);
                None
            }
        }
    }

    fn lower_reduction(&mut self, scope: &mut Scope, value: ExprId) -> Option<ExprId> {
        let inferred = self.infer(scope, value)?;
        if inferred == Inferred::Typed(ScalarType::Bool) {
            self.error(
                Diagnostic::error("E0201", "a reduction cannot reduce a `bool`")
                    .with_primary(self.span(value), "this is a `bool`")
                    .with_help("reduce a number, e.g. `sum(select(c, 1, 0))`"),
            );
            return None;
        }
        self.lower(scope, value, Some(ScalarType::F64))
    }

    /// Elaborates `id` and converts it to `want`.
    fn lower_coerced(
        &mut self,
        scope: &mut Scope,
        id: ExprId,
        want: ScalarType,
        what: &str,
    ) -> Option<ExprId> {
        self.infer(scope, id)?;
        let out = self.lower(scope, id, Some(want))?;
        self.coerce(out, want, what)
    }

    /// Elaborates a value stored in a field of type `stored`: computed in the type's
    /// [arithmetic type](ScalarType::arithmetic_type), then (for `f16`/`bf16`) rounded to it.
    fn lower_stored(
        &mut self,
        scope: &mut Scope,
        id: ExprId,
        stored: ScalarType,
        what: &str,
    ) -> Option<ExprId> {
        let value = self.lower_coerced(scope, id, stored.arithmetic_type(), what)?;
        Some(self.narrow(value, stored))
    }

    /// A stage's scans run along one axis (E0280), each scanned field is assigned once
    /// (E0281), and the stage has no in-stage reduction (E0282).
    fn check_scans(&mut self, stage: &Stage, reductions: &[Id<Reduction>]) {
        let program = self.program;
        let scans: Vec<(Id<Field>, Scan, Span)> = (stage.body.iter())
            .filter_map(|statement| match statement {
                Statement::Assign {
                    field,
                    span,
                    scan: Some(scan),
                    ..
                } => Some((*field, *scan, *span)),
                _ => None,
            })
            .collect();
        let Some(&(_, first, first_span)) = scans.first() else {
            return;
        };
        let axes = program.axis_names();
        for &(_, scan, span) in &scans[1..] {
            if scan.axis != first.axis {
                self.error(
                    Diagnostic::error(
                        "E0280",
                        format!(
                            "stage `{}` scans along `{}` and along `{}`",
                            stage.name, axes[first.axis], axes[scan.axis]
                        ),
                    )
                    .with_primary(span, format!("a scan along `{}`", axes[scan.axis]))
                    .with_secondary(first_span, format!("a scan along `{}`", axes[first.axis]))
                    .with_help("a stage walks its lines along one axis: put each scan axis in a stage of its own"),
                );
            }
        }
        for &(field, _, span) in &scans {
            let assignments = (stage.body.iter())
                .filter(|s| matches!(s, Statement::Assign { field: f, .. } if *f == field))
                .count();
            if assignments > 1 {
                self.error(
                    Diagnostic::error(
                        "E0281",
                        format!(
                            "stage `{}` assigns the scanned field `{}` more than once",
                            stage.name, program.fields[field].name
                        ),
                    )
                    .with_primary(span, "the scan")
                    .with_help("a scanned field gets the scan's value: assign it only there"),
                );
            }
        }
        if let Some(&reduction) = reductions.first() {
            let r = &program.reductions[reduction];
            self.error(
                Diagnostic::error(
                    "E0282",
                    format!(
                        "stage `{}` has a scan and the in-stage reduction `{}`",
                        stage.name, r.name
                    ),
                )
                .with_primary(r.span, "an in-stage reduction")
                .with_secondary(first_span, "a scan")
                .with_help("compute the reduction in another stage of the step"),
            );
        }
    }

    /// The value of `field = scan(op, value, axis);`: the running value `combine(acc, value)`
    /// in the field's arithmetic type (`acc`: the [`ExprKind::ScanAccumulator`] of `field`;
    /// `combine`: `+`, or the `min`/`max` functions), rounded to the field's storage type.
    fn lower_scan(
        &mut self,
        scope: &mut Scope,
        field: Id<Field>,
        scan: Scan,
        value: ExprId,
        what: &str,
    ) -> Option<ExprId> {
        let stored = self.program.fields[field].ty;
        // A program checked before (a rank's program, rewritten from a checked one) holds the
        // running value already: checking it again keeps it.
        let mut lowered = false;
        visit(self.program, value, &mut |e| {
            lowered |= e.kind == ExprKind::ScanAccumulator(field);
        });
        let ty = stored.arithmetic_type();
        if lowered {
            // The same shape again: the running value, narrowed to a storage-only type.
            let running = match self.program.exprs[value].kind {
                ExprKind::Cast(to, inner) if to == stored && stored.is_storage_only() => inner,
                _ => value,
            };
            let running = self.lower_coerced(scope, running, ty, what)?;
            return Some(self.narrow(running, stored));
        }
        let operand = self.lower_coerced(scope, value, ty, what)?;
        let span = self.out[operand].span;
        let acc = self.emit(ExprKind::ScanAccumulator(field), ty, span);
        let combined = match scan.op {
            ReduceOp::Sum => ExprKind::Binary(BinaryOp::Add, acc, operand),
            ReduceOp::Max => ExprKind::Call(MathFn::Max, vec![acc, operand]),
            ReduceOp::Min => ExprKind::Call(MathFn::Min, vec![acc, operand]),
        };
        let running = self.emit(combined, ty, span);
        Some(self.narrow(running, stored))
    }

    /// `value` (of `stored`'s arithmetic type) rounded to the storage type `stored`, if it is
    /// one: an explicit `Cast` node.
    fn narrow(&mut self, value: ExprId, stored: ScalarType) -> ExprId {
        if !stored.is_storage_only() {
            return value;
        }
        let span = self.out[value].span;
        self.emit(ExprKind::Cast(stored, value), stored, span)
    }

    /// Converts an elaborated expression to `want`, refusing implicit bool/number conversions.
    fn coerce(&mut self, out: ExprId, want: ScalarType, what: &str) -> Option<ExprId> {
        let have = self.out_types[out.index()];
        if have == want {
            return Some(out);
        }
        let span = self.out[out].span;
        if have == ScalarType::Bool || want == ScalarType::Bool {
            self.error(
                Diagnostic::error(
                    "E0202",
                    format!("type mismatch: {what} must be `{want}`, found `{have}`"),
                )
                .with_primary(span, format!("this is `{have}`"))
                .with_help(if have == ScalarType::Bool {
                    format!("convert explicitly: `{want}(...)` or `select(cond, 1, 0)`")
                } else {
                    "compare it, e.g. `x != 0`".to_string()
                }),
            );
            return None;
        }
        Some(self.emit(ExprKind::Cast(want, out), want, span))
    }

    /// Reports a type mismatch (E0202) at `span`; the expression has no type.
    fn type_error(
        &mut self,
        span: Span,
        message: String,
        label: String,
        help: &str,
    ) -> Option<Inferred> {
        self.refuse("E0202", span, message, label, help)
    }

    /// Reports error `code` at `span`; the expression has no type.
    fn refuse(
        &mut self,
        code: &'static str,
        span: Span,
        message: String,
        label: String,
        help: &str,
    ) -> Option<Inferred> {
        self.error(
            Diagnostic::error(code, message)
                .with_primary(span, label)
                .with_help(help),
        );
        None
    }

    /// Unifies the operand types of an arithmetic or comparison node.
    fn unify(&mut self, a: Inferred, b: Inferred, span: Span, op: &str) -> Option<Inferred> {
        use Inferred::*;
        Some(match (a, b) {
            (Typed(ScalarType::Bool), Typed(ScalarType::Bool)) => Typed(ScalarType::Bool),
            (Typed(ScalarType::Bool), _) | (_, Typed(ScalarType::Bool)) => {
                let other = if a == Typed(ScalarType::Bool) { b } else { a };
                return self.type_error(
                    span,
                    format!(
                        "type mismatch: `{op}` between a `bool` and {}",
                        describe(other)
                    ),
                    "operands of different kinds".to_string(),
                    "convert the `bool` explicitly, e.g. `select(c, 1.0, 0.0)`",
                );
            }
            (Typed(x), Typed(y)) => Typed(x.max(y)),
            (Typed(t), UntypedInt) | (UntypedInt, Typed(t)) => Typed(t),
            (Typed(t), UntypedFloat) | (UntypedFloat, Typed(t)) => {
                Typed(if t.is_float() { t } else { ScalarType::F64 })
            }
            (UntypedInt, UntypedInt) => UntypedInt,
            _ => UntypedFloat,
        })
    }

    /// The type of a read of reduction `r`: `f64` in `until`; in a stage, where only the
    /// in-stage reductions of earlier stages computed every step can be read, an untyped float
    /// (the value converted to its context's type, like a float constant).
    fn infer_reduction_value(
        &mut self,
        scope: &Scope,
        r: Id<Reduction>,
        span: Span,
    ) -> Option<Inferred> {
        if scope.allow_reduction_values {
            return Some(Inferred::Typed(ScalarType::F64));
        }
        let program = self.program;
        let reduction = &program.reductions[r];
        let name = &reduction.name;
        let error = match (scope.stage, &reduction.placement) {
            (None, _) => Diagnostic::error(
                "E0208",
                format!("the reduction `{name}` cannot be used in {}", scope.what),
            )
            .with_primary(span, "")
            .with_help(
                "reduction values are read by `until` and by the stages after the one computing them",
            ),
            (Some(_), ReductionPlacement::AfterStep { .. }) => Diagnostic::error(
                "E0208",
                format!("the after-step reduction `{name}` cannot be read by a stage"),
            )
            .with_primary(span, "")
            .with_secondary(reduction.span, "computed after the step's stages")
            .with_help(format!(
                "compute it inside an earlier stage (`reduce {name} = ...;` in its body) to read it in the stages after that one"
            )),
            (Some((reader, reader_stage)), &ReductionPlacement::InStage(source))
                if source.index() >= reader.index() =>
            {
                let source_name = &program.stages[source].name;
                let when = if source == reader {
                    "the stage that computes it".to_string()
                } else {
                    let reader_name = &reader_stage.name;
                    format!("stage `{reader_name}`, which runs before stage `{source_name}`")
                };
                Diagnostic::error(
                    "E0213",
                    format!("the reduction `{name}` is read by {when}"),
                )
                .with_primary(span, "")
                .with_secondary(reduction.span, format!("computed by stage `{source_name}`"))
                .with_help("a stage reads only the reductions of earlier stages of the same step")
            }
            (Some((_, reader_stage)), ReductionPlacement::InStage(_)) if reduction.every != 1 => {
                let every = reduction.every;
                Diagnostic::error(
                    "E0214",
                    format!(
                        "the reduction `{name}` is computed every {every} steps, but stage `{}` reads it every step",
                        reader_stage.name
                    ),
                )
                .with_primary(span, "")
                .with_secondary(reduction.span, "declared here")
                .with_help(format!(
                    "drop `every {every}`: a reduction read by a stage is computed every step"
                ))
            }
            (Some(_), ReductionPlacement::InStage(_)) => return Some(Inferred::UntypedFloat),
        };
        self.error(error);
        None
    }

    /// Infers the type of `id` (checking names and scoping), without elaborating.
    fn infer(&mut self, scope: &Scope, id: ExprId) -> Option<Inferred> {
        let program = self.program;
        let expr = &program.exprs[id];
        let span = expr.span;
        use Inferred::*;
        match &expr.kind {
            ExprKind::Literal(Constant::Int(_)) => Some(UntypedInt),
            ExprKind::Literal(Constant::Float(_)) => Some(UntypedFloat),
            ExprKind::Literal(Constant::Bool(_)) => Some(Typed(ScalarType::Bool)),
            ExprKind::Read { field, offset } => self.infer_read(scope, *field, offset, span),
            ExprKind::Param(p) => Some(Typed(program.params[*p].ty)),
            ExprKind::ScanAccumulator(field) => {
                Some(Typed(program.fields[*field].ty.arithmetic_type()))
            }
            ExprKind::Coord(axis) if !scope.allow_coords || *axis >= program.dims() => self.refuse(
                "E0205",
                span,
                format!("coordinates cannot be used in {}", scope.what),
                String::new(),
                "coordinates exist only inside stages, reductions and initial values",
            ),
            ExprKind::Step if !scope.allow_step => self.refuse(
                "E0206",
                span,
                format!("the step counter `t` cannot be used in {}", scope.what),
                String::new(),
                "`t` exists only inside stages and reductions",
            ),
            ExprKind::Coord(_) | ExprKind::Step => Some(Typed(ScalarType::I64)),
            ExprKind::TableRead { table, .. } if scope.stage.is_none() => self.refuse(
                "E0260",
                span,
                format!(
                    "the table `{}` cannot be read in {}",
                    program.tables[*table].name, scope.what
                ),
                String::new(),
                "tables are read only inside stages (their in-stage reductions included)",
            ),
            ExprKind::TableRead { table, .. } => Some(Typed(program.tables[*table].ty)),
            ExprKind::Local(local) => self.infer_local(scope, *local, span),
            ExprKind::ReductionValue(r) => self.infer_reduction_value(scope, *r, span),
            ExprKind::Unary(op, a) => self.infer_unary(scope, *op, *a, span),
            ExprKind::Binary(op, a, b) => self.infer_binary(scope, *op, *a, *b, span),
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => self.infer_select(scope, *cond, *then, *otherwise, span),
            ExprKind::Call(f, args) => self.infer_call(scope, *f, args, span),
            ExprKind::Cast(ty, a) => {
                self.infer(scope, *a)?;
                Some(Typed(ty.arithmetic_type()))
            }
        }
    }

    /// The type of a read of `field` at `offset`, where `scope` allows reads.
    fn infer_read(
        &mut self,
        scope: &Scope,
        field: Id<Field>,
        offset: &[i32],
        span: Span,
    ) -> Option<Inferred> {
        let program = self.program;
        use Inferred::*;
        let f = &program.fields[field];
        if !scope.allow_reads {
            return self.refuse(
                "E0203",
                span,
                format!("{} cannot read fields", scope.what),
                format!("reads `{}`", f.name),
                "initial values may use parameters and coordinates only; give the field as an input instead",
            );
        }
        if offset.len() != program.dims() {
            return self.refuse(
                "E0204",
                span,
                format!(
                    "`{}` is read with {} offsets but the grid has {} axes",
                    f.name,
                    offset.len(),
                    program.dims()
                ),
                String::new(),
                &format!(
                    "give one offset per axis ({})",
                    program.axis_names().join(", ")
                ),
            );
        }
        Some(Typed(f.ty.arithmetic_type()))
    }

    /// The type of a local, which must be bound by then.
    fn infer_local(&mut self, scope: &Scope, local: Id<Local>, span: Span) -> Option<Inferred> {
        use Inferred::*;
        let valid = scope
            .stage
            .is_some_and(|(_, s)| local.index() < s.locals.len());
        if !valid || !scope.bound[local.index()] {
            return self.refuse(
                "E0207",
                span,
                "a local is used before its `let`".into(),
                String::new(),
                "move the `let` before its first use",
            );
        }
        match (
            scope.local_types[local.index()],
            scope.untyped_locals[local.index()],
        ) {
            (Some(ty), _) => Some(Typed(ty)),
            (None, Some(value)) => self.infer(scope, value),
            (None, None) => None,
        }
    }

    /// The type of `-a` (a number) or `!a` (a `bool`).
    fn infer_unary(
        &mut self,
        scope: &Scope,
        op: UnaryOp,
        a: ExprId,
        span: Span,
    ) -> Option<Inferred> {
        use Inferred::*;
        let t = self.infer(scope, a)?;
        match op {
            UnaryOp::Neg if t == Typed(ScalarType::Bool) => self.type_error(
                span,
                "type mismatch: cannot negate a `bool`".into(),
                "this is a `bool`".into(),
                "use `!` for logical not",
            ),
            UnaryOp::Not if t != Typed(ScalarType::Bool) => self.type_error(
                span,
                format!("type mismatch: `!` needs a `bool`, found {}", describe(t)),
                "".into(),
                "compare first, e.g. `!(x > 0)`",
            ),
            UnaryOp::Neg | UnaryOp::Not => Some(t),
        }
    }

    /// The type of `a op b`: logic on `bool`s, comparisons giving `bool`, arithmetic on the
    /// unified type of numbers.
    fn infer_binary(
        &mut self,
        scope: &Scope,
        op: BinaryOp,
        a: ExprId,
        b: ExprId,
        span: Span,
    ) -> Option<Inferred> {
        use Inferred::*;
        let (ta, tb) = (self.infer(scope, a), self.infer(scope, b));
        let (ta, tb) = (ta?, tb?);
        if op.is_logical() {
            for (t, e) in [(ta, a), (tb, b)] {
                if t != Typed(ScalarType::Bool) {
                    let s = self.span(e);
                    return self.type_error(
                        s,
                        format!(
                            "type mismatch: `{}` needs `bool` operands, found {}",
                            op.symbol(),
                            describe(t)
                        ),
                        "not a `bool`".into(),
                        "compare it, e.g. `x != 0`",
                    );
                }
            }
            return Some(Typed(ScalarType::Bool));
        }
        let unified = self.unify(ta, tb, span, op.symbol())?;
        if op.is_comparison() {
            if unified == Typed(ScalarType::Bool) && !matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
                return self.type_error(
                    span,
                    format!("type mismatch: `{}` cannot order `bool`s", op.symbol()),
                    "".into(),
                    "only `==` and `!=` compare `bool`s",
                );
            }
            return Some(Typed(ScalarType::Bool));
        }
        if unified == Typed(ScalarType::Bool) {
            return self.type_error(
                span,
                format!("type mismatch: `{}` on `bool`s", op.symbol()),
                "".into(),
                "use `&&`, `||` or `!` for logic",
            );
        }
        Some(unified)
    }

    /// The type of `select(cond, then, otherwise)`: a `bool` condition, branches unified.
    fn infer_select(
        &mut self,
        scope: &Scope,
        cond: ExprId,
        then: ExprId,
        otherwise: ExprId,
        span: Span,
    ) -> Option<Inferred> {
        use Inferred::*;
        let tc = self.infer(scope, cond);
        let (tt, to) = (self.infer(scope, then), self.infer(scope, otherwise));
        let (tc, tt, to) = (tc?, tt?, to?);
        if tc != Typed(ScalarType::Bool) {
            let s = self.span(cond);
            return self.type_error(
                s,
                format!(
                    "type mismatch: a condition must be `bool`, found {}",
                    describe(tc)
                ),
                "not a `bool`".into(),
                "compare it, e.g. `x != 0`",
            );
        }
        self.unify(tt, to, span, "select")
    }

    /// The type of a call of `f`: its arity checked, its arguments unified, floats where it
    /// takes floats only.
    fn infer_call(
        &mut self,
        scope: &Scope,
        f: MathFn,
        args: &[ExprId],
        span: Span,
    ) -> Option<Inferred> {
        use Inferred::*;
        if args.len() != f.arity() {
            self.error(
                Diagnostic::error(
                    "E0209",
                    format!(
                        "`{}` takes {} argument{}, found {}",
                        f.name(),
                        f.arity(),
                        if f.arity() == 1 { "" } else { "s" },
                        args.len()
                    ),
                )
                .with_primary(span, "")
                .with_help(format!("call it as `{}`", signature(f))),
            );
            return None;
        }
        let mut types = Vec::new();
        for a in args {
            types.push(self.infer(scope, *a));
        }
        let mut t = types.into_iter().collect::<Option<Vec<_>>>()?.into_iter();
        let first = t.next().expect("arity >= 1");
        let unified = match t.next() {
            Some(second) => self.unify(first, second, span, f.name())?,
            None => first,
        };
        match unified {
            Typed(ScalarType::Bool) => self.type_error(
                span,
                format!("type mismatch: `{}` of a `bool`", f.name()),
                "".into(),
                "convert it first",
            ),
            Typed(ty) if ty.is_integer() && f.is_float_only() => self.type_error(
                span,
                format!("type mismatch: `{}` takes floats, found `{ty}`", f.name()),
                format!("this is `{ty}`"),
                &format!("convert explicitly, e.g. `{}(f64(...))`", f.name()),
            ),
            UntypedInt if f.is_float_only() => Some(UntypedFloat),
            other => Some(other),
        }
    }
    /// Elaborates `id` (already inferred without error); `context` is the type an untyped
    /// constant should take. Returns the new node; its type is in `out_types`.
    fn lower(&mut self, scope: &Scope, id: ExprId, context: Option<ScalarType>) -> Option<ExprId> {
        let program = self.program;
        let expr = &program.exprs[id];
        let span = expr.span;
        let inferred = self.infer(scope, id)?;
        let ty = match inferred {
            Inferred::Typed(t) => t,
            Inferred::UntypedInt => match context {
                Some(c) if c != ScalarType::Bool => c,
                _ => ScalarType::I32,
            },
            Inferred::UntypedFloat => match context {
                Some(c) if c.is_float() => c,
                _ => ScalarType::F64,
            },
        };
        let out = match &expr.kind {
            ExprKind::Literal(c) => {
                let value = self.literal(*c, ty, span)?;
                self.emit(ExprKind::Literal(value), ty, span)
            }
            ExprKind::Read { field, .. } => {
                // A storage type's value widens (exactly) to the type it is computed in.
                let stored = program.fields[*field].ty;
                let read = self.emit(expr.kind.clone(), stored, span);
                if stored == ty {
                    read
                } else {
                    self.emit(ExprKind::Cast(ty, read), ty, span)
                }
            }
            ExprKind::Param(_)
            | ExprKind::Coord(_)
            | ExprKind::Step
            | ExprKind::ScanAccumulator(_)
            | ExprKind::TableRead { .. } => self.emit(expr.kind.clone(), ty, span),
            ExprKind::ReductionValue(_) => {
                let value = self.emit(expr.kind.clone(), ScalarType::F64, span);
                if ty == ScalarType::F64 {
                    value
                } else {
                    self.emit(ExprKind::Cast(ty, value), ty, span)
                }
            }
            ExprKind::Local(local) => match scope.untyped_locals[local.index()] {
                Some(value) if scope.local_types[local.index()].is_none() => {
                    self.lower(scope, value, Some(ty))?
                }
                _ => self.emit(ExprKind::Local(*local), ty, span),
            },
            ExprKind::Unary(op, a) => {
                let a = self.lower_as(scope, *a, ty)?;
                self.emit(ExprKind::Unary(*op, a), ty, span)
            }
            ExprKind::Binary(op, a, b) => {
                let operand_ty = if op.is_logical() {
                    ScalarType::Bool
                } else if op.is_comparison() {
                    let (ta, tb) = (self.infer(scope, *a)?, self.infer(scope, *b)?);
                    match self.unify(ta, tb, span, op.symbol())? {
                        Inferred::Typed(t) => t,
                        Inferred::UntypedInt => ScalarType::I32,
                        Inferred::UntypedFloat => ScalarType::F64,
                    }
                } else {
                    ty
                };
                let a = self.lower_as(scope, *a, operand_ty)?;
                let b = self.lower_as(scope, *b, operand_ty)?;
                self.emit(ExprKind::Binary(*op, a, b), ty, span)
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let cond = self.lower_as(scope, *cond, ScalarType::Bool)?;
                let then = self.lower_as(scope, *then, ty)?;
                let otherwise = self.lower_as(scope, *otherwise, ty)?;
                self.emit(
                    ExprKind::Select {
                        cond,
                        then,
                        otherwise,
                    },
                    ty,
                    span,
                )
            }
            ExprKind::Call(f, args) => {
                let args = args
                    .iter()
                    .map(|a| self.lower_as(scope, *a, ty))
                    .collect::<Option<Vec<_>>>()?;
                self.emit(ExprKind::Call(*f, args), ty, span)
            }
            ExprKind::Cast(target, a) => {
                // `f16(e)`/`bf16(e)`: `e` as `f32`, rounded to the storage type and widened back.
                let computed = target.arithmetic_type();
                let inner = self.lower(scope, *a, Some(computed))?;
                let have = self.out_types[inner.index()];
                let converted = if have == computed {
                    inner
                } else {
                    self.emit(ExprKind::Cast(computed, inner), computed, span)
                };
                if target.is_storage_only() {
                    let stored = self.narrow(converted, *target);
                    self.emit(ExprKind::Cast(computed, stored), computed, span)
                } else {
                    converted
                }
            }
        };
        Some(out)
    }

    /// Elaborates `id` with `want` as context and converts the result to `want`.
    fn lower_as(&mut self, scope: &Scope, id: ExprId, want: ScalarType) -> Option<ExprId> {
        let out = self.lower(scope, id, Some(want))?;
        self.coerce(out, want, "an operand")
    }

    /// A literal converted to its final type; integers must fit.
    fn literal(&mut self, c: Constant, ty: ScalarType, span: Span) -> Option<Constant> {
        if let Some(warning) = narrowing_warning(c, ty, span) {
            self.warnings.entry(span).or_insert(warning);
        }
        Some(match (c, ty) {
            (Constant::Bool(b), ScalarType::Bool) => Constant::Bool(b),
            (Constant::Int(v), t) if t.is_float() => Constant::Float(v as f64),
            (Constant::Int(v), t) => {
                let fits = match t {
                    ScalarType::U8 => (0..=255).contains(&v),
                    ScalarType::I32 => i32::try_from(v).is_ok(),
                    _ => true,
                };
                if !fits {
                    self.error(
                        Diagnostic::error(
                            "E0210",
                            format!("the literal {v} does not fit in `{t}`"),
                        )
                        .with_primary(span, format!("used as `{t}` here"))
                        .with_help("use a wider type, e.g. `i64(...)` or `f64(...)`"),
                    );
                    return None;
                }
                Constant::Int(v)
            }
            (Constant::Float(v), _) => Constant::Float(v),
            (c, _) => c,
        })
    }
}

/// W0001 when a literal of type `ty` does not keep the digits it was written with: the
/// value it rounds to prints differently (`3.141592653589793` as `f32` is `3.1415927`; an
/// integer beyond 2^24 as `f32`, or 2^53 as `f64`; `1e-50` underflowing to 0). A decimal that
/// the type holds as written (`0.1` prints back as `0.1`) is not flagged, though rounded.
fn narrowing_warning(c: Constant, ty: ScalarType, span: Span) -> Option<Diagnostic> {
    let (written, rounded) = match (c, ty) {
        (Constant::Float(v), ScalarType::F32) => {
            let kept = v as f32;
            let changed = kept.to_string().parse::<f64>() != Ok(v);
            (format!("{v:?}"), changed.then(|| format!("{kept:?}")))
        }
        (Constant::Int(v), ScalarType::F32) => {
            let exact = (v as f32) as i128 == i128::from(v);
            (v.to_string(), (!exact).then(|| format!("{}", v as f32)))
        }
        (Constant::Int(v), ScalarType::F64) => {
            let exact = (v as f64) as i128 == i128::from(v);
            (v.to_string(), (!exact).then(|| format!("{}", v as f64)))
        }
        _ => return None,
    };
    let rounded = rounded?;
    let help = if ty == ScalarType::F32 {
        format!(
            "write `{written}f64` (or make an operand `f64`) to compute in f64, or `{rounded}` to say that `f32` is meant"
        )
    } else {
        format!("`f64` holds integers exactly up to 2^53: compute in `i64`, or write `{rounded}`")
    };
    Some(
        Diagnostic::warning(
            "W0001",
            format!("the literal {written} becomes {rounded} as `{ty}`"),
        )
        .with_primary(span, format!("used as `{ty}` here"))
        .with_help(help),
    )
}

/// E0211: a parameter of type `f16`/`bf16`, a storage type only fields have.
fn storage_type_parameter(param: &tessera_ir::Param) -> Diagnostic {
    let ty = param.ty;
    Diagnostic::error(
        "E0211",
        format!(
            "parameter `{}` has type `{ty}`, a storage type only fields have",
            param.name
        ),
    )
    .with_primary(param.span, format!("declared `{ty}` here"))
    .with_help(format!(
        "declare it `f32`: `{ty}` values are computed in `f32` (`{ty}` fields are read as `f32` and round what is written to them)"
    ))
}

fn describe(t: Inferred) -> String {
    match t {
        Inferred::Typed(t) => format!("`{t}`"),
        Inferred::UntypedInt => "an integer constant".to_string(),
        Inferred::UntypedFloat => "a float constant".to_string(),
    }
}

fn signature(f: MathFn) -> String {
    match f.arity() {
        1 => format!("{}(x)", f.name()),
        _ => format!("{}(x, y)", f.name()),
    }
}
