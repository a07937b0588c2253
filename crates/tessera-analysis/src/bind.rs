//! Binding: a checked program plus parameter values gives concrete extents and regions, checked
//! against the grid.

use std::collections::BTreeSet;
use std::sync::Arc;

use tessera_ir::{
    Border, Constant, Diagnostic, ExprId, ExprKind, Field, Id, Param, Program, Range,
    ReductionPlacement, Region, ScalarType, SizeExpr, Span, Stage,
};

use crate::check::{CheckedProgram, visit};
use crate::footprint::Footprint;
use crate::region::Rect;

/// The points a stage or reduction covers: a rectangle, every `stride`-th index per axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Domain {
    /// The bounding rectangle (`lo` is always a covered point when non-empty).
    pub rect: Rect,
    /// Step between covered indices per axis (1 = every index).
    pub stride: Vec<i64>,
}

impl Domain {
    /// Whether every index of the rectangle is covered.
    pub fn is_dense(&self) -> bool {
        self.stride.iter().all(|&s| s == 1)
    }

    /// The last covered index per axis (only meaningful when not empty).
    pub fn last(&self) -> Vec<i64> {
        (0..self.rect.dims())
            .map(|a| {
                self.rect.lo[a]
                    + (self.rect.hi[a] - 1 - self.rect.lo[a]) / self.stride[a] * self.stride[a]
            })
            .collect()
    }

    /// The number of covered points.
    pub fn point_count(&self) -> u128 {
        if self.rect.is_empty() {
            return 0;
        }
        (0..self.rect.dims())
            .map(|a| ((self.rect.hi[a] - 1 - self.rect.lo[a]) / self.stride[a] + 1) as u128)
            .product()
    }

    /// Whether `point` is covered.
    pub fn contains(&self, point: &[i64]) -> bool {
        self.rect.contains(point)
            && (0..point.len()).all(|a| (point[a] - self.rect.lo[a]) % self.stride[a] == 0)
    }
}

/// A checked program with concrete sizes and parameter values: what backends run.
#[derive(Clone, Debug)]
pub struct BoundProgram {
    checked: Arc<CheckedProgram>,
    /// Value of every parameter (by parameter index), typed as the parameter.
    pub param_values: Vec<Constant>,
    /// Grid extents, slowest axis first.
    pub extents: Vec<usize>,
    /// The points each stage updates (by stage index).
    pub stage_domains: Vec<Domain>,
    /// The points each reduction covers (by reduction index; an in-stage one covers its stage's).
    pub reduction_domains: Vec<Domain>,
}

impl BoundProgram {
    /// The checked program.
    pub fn checked(&self) -> &CheckedProgram {
        &self.checked
    }

    /// The checked program, shared.
    pub fn checked_arc(&self) -> &Arc<CheckedProgram> {
        &self.checked
    }

    /// The elaborated program.
    pub fn program(&self) -> &Program {
        self.checked.program()
    }

    /// Number of grid points.
    pub fn cell_count(&self) -> usize {
        self.extents.iter().product()
    }

    /// The value of a parameter.
    pub fn param(&self, id: Id<Param>) -> Constant {
        self.param_values[id.index()]
    }

    /// The domain of a stage.
    pub fn stage_domain(&self, stage: Id<Stage>) -> &Domain {
        &self.stage_domains[stage.index()]
    }

    /// The interior box of a stage: points whose reads of fields with a border mode all stay
    /// in the grid, per axis `(lo, hi)` (possibly empty).
    pub fn stage_interior(&self, stage: Id<Stage>) -> Vec<(i64, i64)> {
        let checked = self.checked();
        let program = checked.program();
        let mut bounds: Vec<(i64, i64)> = self.extents.iter().map(|&e| (0, e as i64)).collect();
        for (field, fp) in checked.stage_footprints(stage) {
            if program.stages[stage].border_of(*field, program).is_none() {
                continue;
            }
            for (a, b) in bounds.iter_mut().enumerate() {
                b.0 = b.0.max(i64::from(-fp.min[a]));
                b.1 = b.1.min(self.extents[a] as i64 - i64::from(fp.max[a]));
            }
        }
        bounds
    }

    /// Points updated per step, summed over stages (for GCells/s: the largest stage's count).
    pub fn updated_points(&self) -> u128 {
        self.stage_domains
            .iter()
            .map(Domain::point_count)
            .max()
            .unwrap_or(0)
    }

    /// Bytes one point moves per step in the traffic model every report uses: each field
    /// some stage reads is read once, each field some stage writes is written once (so
    /// `sum(element size of fields read) + sum(element size of fields written)`). It ignores
    /// caches' help (neighbours reused from cache are free) and their cost (write-allocate),
    /// and after-step reductions; temporal blocking over `T` steps can beat it `T`-fold.
    pub fn traffic_bytes_per_point(&self) -> usize {
        let program = self.program();
        let mut read = BTreeSet::new();
        let mut written = BTreeSet::new();
        for (id, stage) in program.stages.iter() {
            read.extend(self.checked().stage_footprints(id).iter().map(|(f, _)| *f));
            written.extend(stage.outputs());
        }
        read.iter()
            .chain(&written)
            .map(|&field| program.fields[field].ty.size_bytes())
            .sum()
    }

    /// Bytes every field of the program holds at one point (the grid's storage per point,
    /// one buffer per field).
    pub fn storage_bytes_per_point(&self) -> usize {
        self.program()
            .fields
            .values()
            .map(|f| f.ty.size_bytes())
            .sum()
    }
}

/// Parses a `--set NAME=VALUE` value for a parameter of `program`, by the parameter's type.
pub fn parse_param_value(
    program: &Program,
    name: &str,
    text: &str,
) -> Result<Constant, Diagnostic> {
    let Some(id) = program.param_by_name(name) else {
        let names = program.params.values().map(|p| p.name.as_str());
        let mut d = Diagnostic::error("E0401", format!("the program has no parameter `{name}`"));
        d = match tessera_ir::diagnostic::did_you_mean(name, names) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!(
                "parameters: {}",
                program
                    .params
                    .values()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        return Err(d);
    };
    let param = &program.params[id];
    let text = text.trim();
    let parsed = match param.ty {
        ScalarType::Bool => text.parse::<bool>().ok().map(Constant::Bool),
        t if t.is_integer() => text.parse::<i64>().ok().map(Constant::Int),
        _ => text.parse::<f64>().ok().map(Constant::Float),
    };
    if let Some(Constant::Float(value)) = parsed {
        check_finite(param, text, value)?;
    }
    parsed.ok_or_else(|| {
        Diagnostic::error(
            "E0402",
            format!(
                "`{text}` is not a valid `{}` for parameter `{name}`",
                param.ty
            ),
        )
        .with_help(format!(
            "give a `{}` value, e.g. `--set {name}={}`",
            param.ty, param.default
        ))
    })
}

/// Refuses a NaN or infinite `value` (as written, or once rounded to `param`'s type) for a
/// parameter not declared `nonfinite`: such a value in a coefficient or a size is almost
/// always a mistake, and it would spread through every field.
fn check_finite(param: &Param, text: &str, value: f64) -> Result<(), Diagnostic> {
    let rounded = if param.ty == ScalarType::F32 {
        f64::from(value as f32)
    } else {
        value
    };
    if rounded.is_finite() || param.accepts_non_finite {
        return Ok(());
    }
    let what = if value.is_finite() {
        format!("`{text}` is beyond the range of `{}`", param.ty)
    } else {
        format!("`{text}` is not a finite number")
    };
    Err(Diagnostic::error(
        "E0410",
        format!("{what}; parameter `{}` takes finite values", param.name),
    )
    .with_help(format!(
        "give a finite value, or declare `param {}: {} = {} nonfinite;` to accept NaN and infinities",
        param.name, param.ty, param.default
    )))
}

/// Binds `checked` to parameter values (`values` override the defaults) and checks the
/// concrete grid: positive extents, no overflow, regions inside the grid, reads that leave the
/// grid only where a border mode answers them.
pub fn bind(
    checked: Arc<CheckedProgram>,
    values: &[(String, Constant)],
) -> Result<BoundProgram, Vec<Diagnostic>> {
    let program = checked.program();
    let param_values = param_values(program, values)?;
    let params = ParamValues {
        program,
        values: &param_values,
    };
    let extents = grid_extents(&params)?;
    let (stage_domains, reduction_domains) = domains(&params, &extents)?;
    let mut errors = read_errors(&checked, &stage_domains, &reduction_domains, &extents);
    errors.extend(crate::receivers::points_outside_grid(program, &extents));
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(BoundProgram {
        checked,
        param_values,
        extents,
        stage_domains,
        reduction_domains,
    })
}

/// The program's parameters' values: the defaults, with `values` set by name.
fn param_values(
    program: &Program,
    values: &[(String, Constant)],
) -> Result<Vec<Constant>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut param_values: Vec<Constant> = program.params.values().map(|p| p.default).collect();
    for (name, value) in values {
        let Some(id) = program.param_by_name(name) else {
            errors.push(parse_param_value(program, name, "").unwrap_err());
            continue;
        };
        let param = &program.params[id];
        match typed_value(param, *value) {
            Some(v) => param_values[id.index()] = v,
            None => errors.push(
                Diagnostic::error(
                    "E0402",
                    format!(
                        "`{value}` is not a valid `{}` for parameter `{name}`",
                        param.ty
                    ),
                )
                .with_secondary(param.span, "declared here"),
            ),
        }
    }
    match errors.is_empty() {
        true => Ok(param_values),
        false => Err(errors),
    }
}

/// A program's parameters with their values, for evaluating sizes and naming the values in
/// errors.
struct ParamValues<'a> {
    program: &'a Program,
    /// By parameter index.
    values: &'a [Constant],
}

impl ParamValues<'_> {
    /// The value of integer parameter `param`.
    fn int(&self, param: Id<Param>) -> Option<i64> {
        match self.values[param.index()] {
            Constant::Int(v) => Some(v),
            _ => None,
        }
    }

    /// `N = 64, M = 3`: the integer parameters' values.
    fn describe(&self) -> String {
        (self.program.params.values())
            .zip(self.values)
            .filter(|(p, _)| p.ty.is_integer())
            .map(|(p, v)| format!("{} = {v}", p.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The grid's extents, each at least 1 and their product within 64 bits.
fn grid_extents(params: &ParamValues) -> Result<Vec<usize>, Vec<Diagnostic>> {
    let program = params.program;
    let axes = program.axis_names();
    let mut errors = Vec::new();
    let mut extents = Vec::new();
    for (axis, e) in program.extents.iter().enumerate() {
        match e.eval(&|p| params.int(p)) {
            Some(v) if v >= 1 => extents.push(v as usize),
            Some(v) => errors.push(
                Diagnostic::error(
                    "E0403",
                    format!("the grid's extent along {} is {v}", axes[axis]),
                )
                .with_primary(
                    program.grid_span,
                    format!("evaluates to {v} with {}", params.describe()),
                )
                .with_help(
                    "every extent must be at least 1; set a positive size, e.g. `--set N=64`",
                ),
            ),
            None => errors.push(
                Diagnostic::error(
                    "E0404",
                    format!(
                        "the grid's extent along {} overflows or divides by zero",
                        axes[axis]
                    ),
                )
                .with_primary(program.grid_span, format!("with {}", params.describe()))
                .with_help("use smaller sizes"),
            ),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let cells = extents
        .iter()
        .try_fold(1usize, |acc, &e| acc.checked_mul(e))
        .filter(|&c| c <= i64::MAX as usize);
    if cells.is_none() {
        let dims: Vec<String> = extents.iter().map(|e| e.to_string()).collect();
        return Err(vec![
            Diagnostic::error(
                "E0405",
                format!(
                    "the grid {} has more points than fit in 64 bits",
                    dims.join(" x ")
                ),
            )
            .with_primary(program.grid_span, "")
            .with_help("use smaller sizes"),
        ]);
    }
    Ok(extents)
}

/// The domains of the stages and of the reductions (by index): their regions evaluated, the
/// whole grid where they have none; an in-stage reduction's is its stage's.
fn domains(
    params: &ParamValues,
    extents: &[usize],
) -> Result<(Vec<Domain>, Vec<Domain>), Vec<Diagnostic>> {
    let program = params.program;
    let mut errors = Vec::new();
    let mut domain = |region: &Option<Region>, what: &str| -> Domain {
        match region {
            None => Domain {
                rect: Rect::grid(extents),
                stride: vec![1; extents.len()],
            },
            Some(region) => eval_region(region, extents, params, what, &mut errors),
        }
    };
    let stage_domains: Vec<Domain> = (program.stages.values())
        .map(|s| domain(&s.region, &format!("stage `{}`", s.name)))
        .collect();
    let reduction_domains: Vec<Domain> = (program.reductions.values())
        .map(|r| match &r.placement {
            ReductionPlacement::InStage(s) => stage_domains[s.index()].clone(),
            ReductionPlacement::AfterStep { region } => {
                domain(region, &format!("reduction `{}`", r.name))
            }
        })
        .collect();
    match errors.is_empty() {
        true => Ok((stage_domains, reduction_domains)),
        false => Err(errors),
    }
}

/// The reads of stages and of reductions after the step that leave the grid where no border
/// mode answers them.
fn read_errors(
    checked: &CheckedProgram,
    stage_domains: &[Domain],
    reduction_domains: &[Domain],
    extents: &[usize],
) -> Vec<Diagnostic> {
    let program = checked.program();
    let mut errors = Vec::new();
    for (id, stage) in program.stages.iter() {
        let roots = stage_roots(program, id);
        for (field, fp) in checked.stage_footprints(id) {
            let border = stage.border_of(*field, program);
            check_reads(
                program,
                &stage_domains[id.index()],
                *field,
                fp,
                border,
                &roots,
                &format!("stage `{}`", stage.name),
                stage.region.as_ref().map(|r| r.span).unwrap_or(stage.span),
                extents,
                &mut errors,
            );
        }
    }
    for (id, reduction) in program.reductions.iter() {
        if let ReductionPlacement::AfterStep { region } = &reduction.placement {
            for (field, fp) in checked.reduction_footprints(id) {
                let span = region.as_ref().map(|r| r.span).unwrap_or(reduction.span);
                check_reads(
                    program,
                    &reduction_domains[id.index()],
                    *field,
                    fp,
                    program.fields[*field].border,
                    &[reduction.value],
                    &format!("reduction `{}`", reduction.name),
                    span,
                    extents,
                    &mut errors,
                );
            }
        }
    }
    errors
}

/// `value` as a value of `param`'s type, if it is one.
fn typed_value(param: &Param, value: Constant) -> Option<Constant> {
    match (param.ty, value) {
        (ScalarType::Bool, Constant::Bool(b)) => Some(Constant::Bool(b)),
        (ScalarType::U8, Constant::Int(v)) if (0..=255).contains(&v) => Some(Constant::Int(v)),
        (ScalarType::I32, Constant::Int(v)) if i32::try_from(v).is_ok() => Some(Constant::Int(v)),
        (ScalarType::I64, Constant::Int(v)) => Some(Constant::Int(v)),
        (t, Constant::Int(v)) if t.is_float() => Some(Constant::Float(v as f64)),
        (t, Constant::Float(v)) if t.is_float() => Some(Constant::Float(v)),
        _ => None,
    }
}

/// `region` evaluated on the grid of `extents`; bounds that overflow, cross or leave the
/// grid are errors naming `what`.
fn eval_region(
    region: &Region,
    extents: &[usize],
    params: &ParamValues,
    what: &str,
    errors: &mut Vec<Diagnostic>,
) -> Domain {
    let dims = extents.len();
    let axes = tessera_ir::axis_names(dims);
    let mut lo = vec![0; dims];
    let mut hi = vec![0; dims];
    let mut stride = vec![1; dims];
    for (axis, range) in region.ranges.iter().enumerate().take(dims) {
        let extent = extents[axis] as i64;
        let eval = |e: &SizeExpr| e.eval(&|p| params.int(p));
        let (l, h, s) = match range {
            Range::Index(e) => (eval(e), eval(e).and_then(|v| v.checked_add(1)), 1),
            Range::Span { lo, hi, stride } => (
                lo.as_ref().map_or(Some(0), eval),
                hi.as_ref().map_or(Some(extent), eval),
                i64::from(*stride),
            ),
        };
        let (Some(l), Some(h)) = (l, h) else {
            errors.push(
                Diagnostic::error(
                    "E0404",
                    format!("a bound of the region of {what} overflows or divides by zero"),
                )
                .with_primary(region.span, format!("with {}", params.describe()))
                .with_help("use smaller sizes, and no division by a size that can be 0"),
            );
            continue;
        };
        if l > h {
            errors.push(
                Diagnostic::error("E0406", format!("the grid is smaller than the stencil: the region of {what} is {l}..{h} along {}", axes[axis]))
                    .with_primary(region.span, format!("empty with {}", params.describe()))
                    .with_help(format!("use a larger grid: along {} it has {extent} points", axes[axis])),
            );
        } else if l < 0 || h > extent {
            errors.push(
                Diagnostic::error("E0407", format!("the region of {what} leaves the grid: {l}..{h} along {}, but the grid is 0..{extent}", axes[axis]))
                    .with_primary(region.span, format!("with {}", params.describe()))
                    .with_help("keep region bounds within the grid's extents"),
            );
        }
        lo[axis] = l;
        hi[axis] = h;
        stride[axis] = s.max(1);
    }
    Domain {
        rect: Rect::new(lo, hi),
        stride,
    }
}

/// The roots of every expression evaluated by a stage (body and in-stage reductions).
fn stage_roots(program: &Program, stage: Id<Stage>) -> Vec<ExprId> {
    let mut roots: Vec<ExprId> = program.stages[stage]
        .body
        .iter()
        .map(|s| match s {
            tessera_ir::Statement::Let { value, .. }
            | tessera_ir::Statement::Assign { value, .. } => *value,
        })
        .collect();
    roots.extend(
        program
            .reductions
            .values()
            .filter(|r| r.placement == ReductionPlacement::InStage(stage))
            .map(|r| r.value),
    );
    roots
}

/// Checks that `field`'s reads over `domain` stay in the grid unless a border answers them.
#[allow(clippy::too_many_arguments)]
fn check_reads(
    program: &Program,
    domain: &Domain,
    field: Id<Field>,
    fp: &Footprint,
    border: Option<Border>,
    roots: &[ExprId],
    what: &str,
    region_span: Span,
    extents: &[usize],
    errors: &mut Vec<Diagnostic>,
) {
    if domain.rect.is_empty() {
        return;
    }
    let axes = program.axis_names();
    let last = domain.last();
    let name = &program.fields[field].name;
    for axis in 0..extents.len() {
        let extent = extents[axis] as i64;
        let low = domain.rect.lo[axis] + i64::from(fp.min[axis]);
        let high = last[axis] + i64::from(fp.max[axis]);
        match border {
            Some(Border::Constant(_)) | Some(Border::Clamp) | Some(Border::Periodic) => {}
            Some(Border::Mirror) => {
                let reach = i64::from(fp.min[axis].unsigned_abs().max(fp.max[axis].unsigned_abs()));
                if (low < 0 || high >= extent) && reach >= extent {
                    errors.push(
                        Diagnostic::error("E0408", format!("the grid is smaller than the stencil: {what} mirrors reads of `{name}` {reach} points away along {}, but the grid has {extent}", axes[axis]))
                            .with_primary(region_span, "")
                            .with_help(format!("use at least {} points along {}", reach + 1, axes[axis])),
                    );
                }
            }
            None if low < 0 || high >= extent => {
                let bad = if low < 0 { fp.min[axis] } else { fp.max[axis] };
                let (at, reads) = if low < 0 {
                    (domain.rect.lo[axis], low)
                } else {
                    (last[axis], high)
                };
                let access = find_read(program, roots, field, axis, bad);
                let text = access_text(name, fp, axis, bad);
                let mut d = Diagnostic::error(
                    "E0409",
                    format!("{what} reads `{text}` outside the grid, and `{name}` has no border handling"),
                )
                .with_primary(access.unwrap_or(region_span), format!("at {} = {at} this reads index {reads}, outside 0..{extent}", axes[axis]));
                if access.is_some() {
                    d = d.with_secondary(region_span, "over this region");
                }
                let (need_lo, need_hi) = (
                    i64::from(-fp.min[axis]).max(0),
                    i64::from(fp.max[axis]).max(0),
                );
                errors.push(d.with_help(format!(
                    "start the region at {need_lo} or later and end it {need_hi} or more before the extent along {}, or give `{name}` a border, e.g. `border clamp`",
                    axes[axis]
                )));
                return;
            }
            None => {}
        }
    }
}

fn access_text(name: &str, fp: &Footprint, axis: usize, bad: i32) -> String {
    let offset = fp
        .offsets
        .iter()
        .find(|o| o[axis] == bad)
        .cloned()
        .unwrap_or_default();
    let parts: Vec<String> = offset.iter().map(|o| o.to_string()).collect();
    format!("{name}[{}]", parts.join(", "))
}

fn find_read(
    program: &Program,
    roots: &[ExprId],
    field: Id<Field>,
    axis: usize,
    offset: i32,
) -> Option<Span> {
    let mut found = None;
    for root in roots {
        visit(program, *root, &mut |e| {
            if found.is_none()
                && let ExprKind::Read {
                    field: f,
                    offset: o,
                } = &e.kind
                && *f == field
                && o.get(axis) == Some(&offset)
                && e.span != Span::NONE
            {
                found = Some(e.span);
            }
        });
    }
    found
}
