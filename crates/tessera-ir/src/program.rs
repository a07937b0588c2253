//! The program: grid, parameters, fields, the stage sequence of one time step, reductions.

use std::collections::HashSet;

use crate::arena::{Arena, Id};
use crate::expr::{Expr, ExprId, ExprKind};
use crate::span::Span;
use crate::types::{Constant, ScalarType};

/// A whole stencil program. Plain data: no I/O, no interior mutability.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Program name (from `program NAME;`, else the file stem).
    pub name: String,
    /// Extent of each grid axis, slowest first (`[NZ, NY, NX]`); its length is the dimension.
    pub extents: Vec<SizeExpr>,
    /// Where the `grid` declaration was written.
    pub grid_span: Span,
    /// Scalar parameters (`param alpha: f32 = 0.1;`), size parameters included.
    pub params: Arena<Param>,
    /// Fields: one scalar array each; struct/vector fields are groups of these.
    pub fields: Arena<Field>,
    /// Struct or vector fields, as groups of component fields.
    pub groups: Arena<FieldGroup>,
    /// Input tables (`table wavelet: f32;`): 1D arrays read at the step counter.
    pub tables: Arena<Table>,
    /// Every expression of the program.
    pub exprs: Arena<Expr>,
    /// The stages of one time step, in execution order.
    pub stages: Arena<Stage>,
    /// Reductions reported during the run.
    pub reductions: Arena<Reduction>,
    /// Receivers: a field's values at fixed points, recorded every K steps.
    pub receivers: Arena<Receiver>,
    /// Optional stop condition, evaluated whenever a reduction it reads is computed.
    pub until: Option<StopCondition>,
    /// Default step count (`steps 100;`), used when the run gives none.
    pub default_steps: Option<u64>,
}

impl Program {
    /// An empty program with the given name and extents.
    pub fn new(name: impl Into<String>, extents: Vec<SizeExpr>) -> Self {
        Program {
            name: name.into(),
            extents,
            grid_span: Span::NONE,
            params: Arena::new(),
            fields: Arena::new(),
            groups: Arena::new(),
            tables: Arena::new(),
            exprs: Arena::new(),
            stages: Arena::new(),
            reductions: Arena::new(),
            receivers: Arena::new(),
            until: None,
            default_steps: None,
        }
    }

    /// Number of grid axes.
    pub fn dims(&self) -> usize {
        self.extents.len()
    }

    /// The expression behind a handle.
    pub fn expr(&self, id: ExprId) -> &Expr {
        &self.exprs[id]
    }

    /// Finds a parameter by name.
    pub fn param_by_name(&self, name: &str) -> Option<Id<Param>> {
        self.params
            .iter()
            .find(|(_, p)| p.name == name)
            .map(|(id, _)| id)
    }

    /// Finds a field by name (`E.ex` for a component of a group).
    pub fn field_by_name(&self, name: &str) -> Option<Id<Field>> {
        self.fields
            .iter()
            .find(|(_, f)| f.name == name)
            .map(|(id, _)| id)
    }

    /// Finds a table by name.
    pub fn table_by_name(&self, name: &str) -> Option<Id<Table>> {
        self.tables
            .iter()
            .find(|(_, t)| t.name == name)
            .map(|(id, _)| id)
    }

    /// Finds a reduction by name.
    pub fn reduction_by_name(&self, name: &str) -> Option<Id<Reduction>> {
        self.reductions
            .iter()
            .find(|(_, r)| r.name == name)
            .map(|(id, _)| id)
    }

    /// Finds a receiver by name.
    pub fn receiver_by_name(&self, name: &str) -> Option<Id<Receiver>> {
        self.receivers
            .iter()
            .find(|(_, r)| r.name == name)
            .map(|(id, _)| id)
    }

    /// How a use names field `id`: `u`, `E.ex`, or `f[3]` for an element of an array field.
    pub fn field_text(&self, id: Id<Field>) -> String {
        let field = &self.fields[id];
        match field.group {
            Some((group, index)) => self.groups[group].component_text(index),
            None => field.name.clone(),
        }
    }

    /// Names of the coordinate variables for this dimension, slowest first (`["z", "y", "x"]` in 3D).
    pub fn axis_names(&self) -> Vec<&'static str> {
        axis_names(self.dims())
    }
}

/// Coordinate names for `dims` axes, slowest first: the last `dims` of `w z y x` (`a0, a1, ...` beyond 4).
pub fn axis_names(dims: usize) -> Vec<&'static str> {
    const NAMES: [&str; 4] = ["w", "z", "y", "x"];
    if dims <= NAMES.len() {
        NAMES[NAMES.len() - dims..].to_vec()
    } else {
        const MANY: [&str; 8] = ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"];
        MANY[..dims.min(MANY.len())].to_vec()
    }
}

/// An input table: a 1D array of scalars given with the run (`--input NAME=x.npy`), read in
/// stages only at the step counter plus a constant (`wavelet[t + 1]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Name as written.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Declaration site.
    pub span: Span,
}

/// A named scalar parameter with a type and default, overridable at run time.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Name as written.
    pub name: String,
    /// Its type; integer parameters may appear in extents and regions.
    pub ty: ScalarType,
    /// Default value.
    pub default: Constant,
    /// Whether a value may be NaN or infinite (declared `nonfinite`); other float parameters
    /// refuse such values.
    pub accepts_non_finite: bool,
    /// Declaration site.
    pub span: Span,
}

/// How a field's out-of-grid reads are answered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Border {
    /// A fixed value (SkelCL's neutral value).
    Constant(Constant),
    /// The nearest in-grid point, per axis.
    Clamp,
    /// Wrap around (toroidal), per axis.
    Periodic,
    /// Reflect about the edge without repeating it (`-1 -> 1`, `n -> n-2`), per axis.
    Mirror,
}

/// One scalar array over the whole grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Name (`A`, or `E.ex` for a component of group `E`).
    pub name: String,
    /// Element type (never `bool`).
    pub ty: ScalarType,
    /// Out-of-grid read handling; `None` means such reads are errors.
    pub border: Option<Border>,
    /// Initial value when the field is not given as input (default 0); may use coordinates and parameters.
    pub init: Option<ExprId>,
    /// The group and component index, for components of struct/vector fields.
    pub group: Option<(Id<FieldGroup>, usize)>,
    /// Declared `readonly`: writing it is an error.
    pub readonly: bool,
    /// Declaration site.
    pub span: Span,
}

/// A struct or vector field (`field E: {ex: f32, ey: f32};`, `field F: f32x4;`).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldGroup {
    /// Name of the whole field.
    pub name: String,
    /// Component names in order (`x y z w` for vectors).
    pub component_names: Vec<String>,
    /// The component fields, in order.
    pub components: Vec<Id<Field>>,
    /// Declaration site.
    pub span: Span,
}

impl FieldGroup {
    /// Whether this is an array field (`field f: [f64; 9]`): components named `0`, `1`, ...
    pub fn is_array(&self) -> bool {
        (self.component_names.iter().enumerate()).all(|(i, name)| *name == i.to_string())
    }

    /// How a use names component `index`: `f[3]` in an array field, `E.ex` otherwise.
    pub fn component_text(&self, index: usize) -> String {
        if self.is_array() {
            format!("{}[{index}]", self.name)
        } else {
            format!("{}.{}", self.name, self.component_names[index])
        }
    }
}

/// An integer expression over integer parameters: extents and region bounds.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeExpr {
    /// A literal.
    Const(i64),
    /// An integer parameter.
    Param(Id<Param>),
    /// `-e`.
    Neg(Box<SizeExpr>),
    /// `a op b`.
    Binary(SizeOp, Box<SizeExpr>, Box<SizeExpr>),
}

/// Operators of [`SizeExpr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SizeOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`, rounding towards negative infinity.
    Div,
}

impl SizeOp {
    /// The operator's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            SizeOp::Add => "+",
            SizeOp::Sub => "-",
            SizeOp::Mul => "*",
            SizeOp::Div => "/",
        }
    }
}

impl SizeExpr {
    /// Evaluates with the given parameter lookup; `None` on overflow, division by zero or an
    /// unknown parameter.
    pub fn eval(&self, param: &dyn Fn(Id<Param>) -> Option<i64>) -> Option<i64> {
        match self {
            SizeExpr::Const(v) => Some(*v),
            SizeExpr::Param(p) => param(*p),
            SizeExpr::Neg(e) => e.eval(param)?.checked_neg(),
            SizeExpr::Binary(op, a, b) => {
                let (a, b) = (a.eval(param)?, b.eval(param)?);
                match op {
                    SizeOp::Add => a.checked_add(b),
                    SizeOp::Sub => a.checked_sub(b),
                    SizeOp::Mul => a.checked_mul(b),
                    SizeOp::Div => {
                        let q = a.checked_div(b)?;
                        let inexact = a.checked_rem(b)? != 0;
                        Some(if inexact && ((a < 0) != (b < 0)) {
                            q - 1
                        } else {
                            q
                        })
                    }
                }
            }
        }
    }
}

/// One axis of a region.
#[derive(Clone, Debug, PartialEq)]
pub enum Range {
    /// `lo..hi` (half-open; a missing bound is 0 or the extent), optionally every `stride`-th index.
    Span {
        /// First index (0 when absent).
        lo: Option<SizeExpr>,
        /// One past the last index (the extent when absent).
        hi: Option<SizeExpr>,
        /// Step between updated indices (1 = every index).
        stride: u32,
    },
    /// A single index (`ey[0, all]` writes the row 0).
    Index(SizeExpr),
}

impl Range {
    /// The whole axis (`..` or `all`).
    pub fn all() -> Self {
        Range::Span {
            lo: None,
            hi: None,
            stride: 1,
        }
    }
}

/// A rectangular (optionally strided) set of points: one [`Range`] per axis, slowest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    /// Per-axis ranges.
    pub ranges: Vec<Range>,
    /// Where it was written.
    pub span: Span,
}

/// A `let` binding inside a stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    /// Name as written.
    pub name: String,
    /// Binding site.
    pub span: Span,
}

/// One statement of a stage body, executed in order at every point of the stage's region.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `let name = value;`
    Let {
        /// The bound local (in the stage's `locals`).
        local: Id<Local>,
        /// Its value.
        value: ExprId,
    },
    /// `field = value;` at the current point (written after the stage, Jacobi semantics).
    Assign {
        /// The field written.
        field: Id<Field>,
        /// The new value; for a scan, the scanned operand as written, and once checked the
        /// running value `combine(ScanAccumulator, operand)` (see [`Scan`]).
        value: ExprId,
        /// Where the assignment was written.
        span: Span,
        /// `Some` for `field = scan(op, value, axis);`: the field gets the prefix combination of
        /// `value` along the axis instead of `value` itself.
        scan: Option<Scan>,
    },
}

/// A scan (prefix sum, max or min) along one axis: `c = scan(sum, e, x);` gives each point the
/// combination of `e` at the stage's points of its line (the points sharing every other index)
/// up to and including it (`exclusive`: before it), combined one point at a time from the
/// region's low end in the field's arithmetic type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// The combining operation: `+`, or the language's `min`/`max` functions.
    pub op: ReduceOp,
    /// The axis scanned (0 = slowest).
    pub axis: usize,
    /// Whether a point's own value is left out (it gets the combination of the points before it).
    pub exclusive: bool,
}

impl Scan {
    /// The value a line's combination starts from, in `ty` (an arithmetic type): `-0.0` or 0
    /// for sums (so that one value sums to itself, bit for bit), the largest or smallest value
    /// of the type (infinities for floats) for `min` and `max`.
    pub fn identity(self, ty: ScalarType) -> Constant {
        let float = ty.is_float();
        match (self.op, ty) {
            (ReduceOp::Sum, _) if float => Constant::Float(-0.0),
            (ReduceOp::Sum, _) => Constant::Int(0),
            (ReduceOp::Min, _) if float => Constant::Float(f64::INFINITY),
            (ReduceOp::Max, _) if float => Constant::Float(f64::NEG_INFINITY),
            (ReduceOp::Min, ScalarType::U8) => Constant::Int(i64::from(u8::MAX)),
            (ReduceOp::Min, ScalarType::I32) => Constant::Int(i64::from(i32::MAX)),
            (ReduceOp::Min, _) => Constant::Int(i64::MAX),
            (ReduceOp::Max, ScalarType::U8) => Constant::Int(0),
            (ReduceOp::Max, ScalarType::I32) => Constant::Int(i64::from(i32::MIN)),
            (ReduceOp::Max, _) => Constant::Int(i64::MIN),
        }
    }

    /// The running value in a checked scan's assigned `value`: below the rounding to a storage
    /// type (`f16`, `bf16`), if any; `value` itself otherwise.
    pub fn running(program: &Program, value: ExprId) -> ExprId {
        match program.exprs[value].kind {
            ExprKind::Cast(ty, inner) if ty.is_storage_only() => inner,
            _ => value,
        }
    }

    /// The scanned operand of a scan's assigned `value`: the operand the running value
    /// combines with the accumulator once checked, `value` itself before.
    pub fn operand(program: &Program, value: ExprId) -> ExprId {
        let running = Scan::running(program, value);
        let (acc, operand) = match &program.exprs[running].kind {
            ExprKind::Binary(_, acc, operand) => (*acc, *operand),
            ExprKind::Call(_, args) if args.len() == 2 => (args[0], args[1]),
            _ => return value,
        };
        match program.exprs[acc].kind {
            ExprKind::ScanAccumulator(_) => operand,
            _ => value,
        }
    }
}

/// A stencil stage: writes one or more fields over a region from values of before the stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// Name as written.
    pub name: String,
    /// The points updated; `None` means the whole grid.
    pub region: Option<Region>,
    /// Per-stage border overrides, taking precedence over the fields' own.
    pub borders: Vec<(Id<Field>, Border)>,
    /// The stage's `let` bindings.
    pub locals: Arena<Local>,
    /// Statements in order.
    pub body: Vec<Statement>,
    /// Declaration site.
    pub span: Span,
}

impl Stage {
    /// The fields assigned by this stage, in first-assignment order.
    pub fn outputs(&self) -> Vec<Id<Field>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for statement in &self.body {
            if let Statement::Assign { field, .. } = statement
                && seen.insert(*field)
            {
                out.push(*field);
            }
        }
        out
    }

    /// The scans of this stage (`(field, scan)`, in statement order).
    pub fn scans(&self) -> Vec<(Id<Field>, Scan)> {
        (self.body.iter())
            .filter_map(|statement| match statement {
                Statement::Assign {
                    field,
                    scan: Some(scan),
                    ..
                } => Some((*field, *scan)),
                _ => None,
            })
            .collect()
    }

    /// The axis this stage scans along, if it has a scan (every scan of a stage shares one
    /// axis: the checker refuses others).
    pub fn scan_axis(&self) -> Option<usize> {
        self.scans().first().map(|(_, scan)| scan.axis)
    }

    /// The border that applies to reads of `field` in this stage.
    pub fn border_of(&self, field: Id<Field>, program: &Program) -> Option<Border> {
        self.borders
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, b)| *b)
            .or(program.fields[field].border)
    }
}

/// The combining operation of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (accumulated in f64 in a fixed order: see `tessera-runtime`).
    Sum,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

impl ReduceOp {
    /// The name used in the language.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}

/// When and over what a reduction is evaluated.
#[derive(Clone, Debug, PartialEq)]
pub enum ReductionPlacement {
    /// Over fields after the whole step, on a region (`None` = whole grid).
    AfterStep {
        /// The points reduced.
        region: Option<Region>,
    },
    /// Over the stage's own points during the stage; may read its `let` bindings (Himeno's `gosa`).
    InStage(Id<Stage>),
}

/// A reduction such as `reduce gosa = sum(ss * ss) every 1;`.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduction {
    /// Name as written; reported with the value.
    pub name: String,
    /// Combining operation.
    pub op: ReduceOp,
    /// The reduced expression (evaluated at every point of the region).
    pub value: ExprId,
    /// Stage-internal or after the step.
    pub placement: ReductionPlacement,
    /// Computed in the steps `t` with `(t + 1) % every == 0`.
    pub every: u64,
    /// Declaration site.
    pub span: Span,
}

/// Where a receiver's points come from.
#[derive(Clone, Debug, PartialEq)]
pub enum ReceiverPoints {
    /// Written in the program: one coordinate per axis for each point, slowest axis first.
    Fixed(Vec<Vec<i64>>),
    /// Given with each run (`--input NAME=points.npy`: integers of shape `(n, dims)`).
    Input,
}

/// A receiver such as `receiver seis = u at [[4, 10], [4, 20]] every 2;`: the values of one
/// scalar field at fixed points, recorded after the steps `t` with `(t + 1) % every == 0`.
#[derive(Clone, Debug, PartialEq)]
pub struct Receiver {
    /// Name as written; names the recorded time series.
    pub name: String,
    /// The field sampled (a scalar field or one component).
    pub field: Id<Field>,
    /// The points sampled.
    pub points: ReceiverPoints,
    /// Recorded after the steps `t` with `(t + 1) % every == 0`.
    pub every: u64,
    /// Declaration site.
    pub span: Span,
}

/// `until EXPR;`: stop the time loop once the condition (over reduction values) holds.
#[derive(Clone, Debug, PartialEq)]
pub struct StopCondition {
    /// A `bool` expression of reduction values and parameters.
    pub condition: ExprId,
    /// Where it was written.
    pub span: Span,
}
