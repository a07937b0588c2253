//! Prints a [`Program`] as `.tess` source text; parsing the output yields the same IR.

use std::fmt::Write;

use crate::arena::Id;
use crate::expr::{ExprId, ExprKind, UnaryOp};
use crate::program::{
    Border, Field, Program, Range, Receiver, ReceiverPoints, ReductionPlacement, Region, Scan,
    SizeExpr, Stage, Statement,
};
use crate::types::Constant;

/// Renders the whole program in canonical form.
pub fn print_program(program: &Program) -> String {
    let mut out = String::new();
    let p = Printer {
        program,
        locals: None,
    };
    writeln!(out, "program {};", program.name).unwrap();
    for param in program.params.values() {
        writeln!(
            out,
            "param {}: {} = {}{};",
            param.name,
            param.ty,
            param.default,
            if param.accepts_non_finite {
                " nonfinite"
            } else {
                ""
            }
        )
        .unwrap();
    }
    let extents: Vec<String> = program.extents.iter().map(|e| p.size(e, 0)).collect();
    writeln!(out, "grid [{}];", extents.join(", ")).unwrap();
    if let Some(steps) = program.default_steps {
        writeln!(out, "steps {steps};").unwrap();
    }
    for table in program.tables.values() {
        writeln!(out, "table {}: {};", table.name, table.ty).unwrap();
    }
    for (id, field) in program.fields.iter() {
        match field.group {
            None => writeln!(out, "field {}: {};", field.name, p.field_decl(field)).unwrap(),
            Some((group, 0)) if program.groups[group].is_array() => {
                let group = &program.groups[group];
                let first = &program.fields[group.components[0]];
                writeln!(
                    out,
                    "field {}: [{}; {}]{};",
                    group.name,
                    first.ty.name(),
                    group.components.len(),
                    p.field_attrs(first)
                )
                .unwrap();
            }
            Some((group, 0)) => {
                let group = &program.groups[group];
                let members: Vec<String> = group
                    .components
                    .iter()
                    .zip(&group.component_names)
                    .map(|(c, name)| format!("{name}: {}", p.field_decl(&program.fields[*c])))
                    .collect();
                writeln!(out, "field {}: {{{}}};", group.name, members.join(", ")).unwrap();
            }
            Some(_) => debug_assert!(program.fields[id].group.is_some()),
        }
    }
    for (id, stage) in program.stages.iter() {
        p.stage(&mut out, id, stage);
    }
    for reduction in program.reductions.values() {
        if let ReductionPlacement::AfterStep { region } = &reduction.placement {
            write!(
                out,
                "reduce {} = {}({})",
                reduction.name,
                reduction.op.name(),
                p.expr(reduction.value, 0)
            )
            .unwrap();
            if let Some(region) = region {
                write!(out, " over {}", p.region(region)).unwrap();
            }
            writeln!(out, " every {};", reduction.every).unwrap();
        }
    }
    for receiver in program.receivers.values() {
        writeln!(out, "{}", receiver_text(program, receiver)).unwrap();
    }
    if let Some(until) = &program.until {
        writeln!(out, "until {};", p.expr(until.condition, 0)).unwrap();
    }
    out
}

/// `receiver NAME = FIELD at POINTS every K;`.
fn receiver_text(program: &Program, receiver: &Receiver) -> String {
    let points = match &receiver.points {
        ReceiverPoints::Fixed(points) => {
            let points: Vec<String> = (points.iter())
                .map(|p| {
                    let coords: Vec<String> = p.iter().map(i64::to_string).collect();
                    format!("[{}]", coords.join(", "))
                })
                .collect();
            format!("[{}]", points.join(", "))
        }
        ReceiverPoints::Input => "input".to_string(),
    };
    format!(
        "receiver {} = {} at {points} every {};",
        receiver.name,
        program.field_text(receiver.field),
        receiver.every
    )
}

/// `t`, `t + k` or `t - k`: the index of a table read at `offset` from the step.
fn step_plus(offset: i64) -> String {
    match offset {
        0 => "t".to_string(),
        k if k < 0 => format!("t - {}", k.unsigned_abs()),
        k => format!("t + {k}"),
    }
}

/// Renders one expression of `program` (outside any stage, locals print as `local#i`).
pub fn print_expr(program: &Program, expr: ExprId) -> String {
    Printer {
        program,
        locals: None,
    }
    .expr(expr, 0)
}

struct Printer<'a> {
    program: &'a Program,
    locals: Option<&'a Stage>,
}

impl Printer<'_> {
    fn field_decl(&self, field: &Field) -> String {
        format!("{}{}", field.ty.name(), self.field_attrs(field))
    }

    /// ` readonly border B = init`, each part when present.
    fn field_attrs(&self, field: &Field) -> String {
        let mut s = String::new();
        if field.readonly {
            s.push_str(" readonly");
        }
        if let Some(border) = field.border {
            write!(s, " border {}", border_text(border)).unwrap();
        }
        if let Some(init) = field.init {
            write!(s, " = {}", self.expr(init, 0)).unwrap();
        }
        s
    }

    /// How a use names a field: `u`, `E.ex` or `f[3]`.
    fn field_ref(&self, id: Id<Field>) -> String {
        self.program.field_text(id)
    }

    fn stage(&self, out: &mut String, id: Id<Stage>, stage: &Stage) {
        let p = Printer {
            program: self.program,
            locals: Some(stage),
        };
        write!(out, "stage {}", stage.name).unwrap();
        if let Some(region) = &stage.region {
            write!(out, " over {}", p.region(region)).unwrap();
        }
        if !stage.borders.is_empty() {
            let overrides: Vec<String> = stage
                .borders
                .iter()
                .map(|(f, b)| format!("{} = {}", self.field_ref(*f), border_text(*b)))
                .collect();
            write!(out, " border {}", overrides.join(", ")).unwrap();
        }
        out.push_str(" {\n");
        for statement in &stage.body {
            match statement {
                Statement::Let { local, value } => writeln!(
                    out,
                    "    let {} = {};",
                    stage.locals[*local].name,
                    p.expr(*value, 0)
                )
                .unwrap(),
                Statement::Assign {
                    field,
                    value,
                    scan: None,
                    ..
                } => writeln!(
                    out,
                    "    {} = {};",
                    self.field_ref(*field),
                    p.expr(*value, 0)
                )
                .unwrap(),
                Statement::Assign {
                    field,
                    value,
                    scan: Some(scan),
                    ..
                } => writeln!(
                    out,
                    "    {} = scan({}, {}, {}{});",
                    self.field_ref(*field),
                    scan.op.name(),
                    p.expr(Scan::operand(self.program, *value), 0),
                    self.program.axis_names()[scan.axis],
                    if scan.exclusive { ", exclusive" } else { "" }
                )
                .unwrap(),
            }
        }
        for reduction in self.program.reductions.values() {
            if reduction.placement == ReductionPlacement::InStage(id) {
                writeln!(
                    out,
                    "    reduce {} = {}({}) every {};",
                    reduction.name,
                    reduction.op.name(),
                    p.expr(reduction.value, 0),
                    reduction.every
                )
                .unwrap();
            }
        }
        out.push_str("}\n");
    }

    fn region(&self, region: &Region) -> String {
        let ranges: Vec<String> = region
            .ranges
            .iter()
            .map(|r| match r {
                Range::Index(e) => self.size(e, 0),
                Range::Span { lo, hi, stride } => {
                    let mut s = String::new();
                    if let Some(lo) = lo {
                        s.push_str(&self.size(lo, 0));
                    }
                    s.push_str("..");
                    if let Some(hi) = hi {
                        s.push_str(&self.size(hi, 0));
                    }
                    if *stride != 1 {
                        write!(s, " by {stride}").unwrap();
                    }
                    s
                }
            })
            .collect();
        format!("[{}]", ranges.join(", "))
    }

    fn size(&self, e: &SizeExpr, parent: u8) -> String {
        match e {
            SizeExpr::Const(v) if *v < 0 => format!("({v})"),
            SizeExpr::Const(v) => v.to_string(),
            SizeExpr::Param(p) => self.program.params[*p].name.clone(),
            SizeExpr::Neg(inner) => format!("-{}", self.size(inner, 6)),
            SizeExpr::Binary(op, a, b) => {
                let prec = if matches!(op, crate::SizeOp::Add | crate::SizeOp::Sub) {
                    4
                } else {
                    5
                };
                let text = format!(
                    "{} {} {}",
                    self.size(a, prec),
                    op.symbol(),
                    self.size(b, prec + 1)
                );
                if prec < parent {
                    format!("({text})")
                } else {
                    text
                }
            }
        }
    }

    /// Prints `id`; `parent` is the binding strength the context requires (0 = none).
    fn expr(&self, id: ExprId, parent: u8) -> String {
        let program = self.program;
        match &program.exprs[id].kind {
            ExprKind::Literal(c) => literal_text(*c),
            ExprKind::Read { field, offset } => {
                let name = self.field_ref(*field);
                if offset.iter().all(|o| *o == 0) {
                    name
                } else {
                    let parts: Vec<String> = offset.iter().map(|o| o.to_string()).collect();
                    format!("{name}[{}]", parts.join(", "))
                }
            }
            ExprKind::Param(p) => program.params[*p].name.clone(),
            ExprKind::Coord(axis) => program.axis_names()[*axis].to_string(),
            ExprKind::Step => "t".to_string(),
            ExprKind::TableRead { table, offset } => {
                format!("{}[{}]", program.tables[*table].name, step_plus(*offset))
            }
            ExprKind::Local(local) => match self.locals {
                Some(stage) => stage.locals[*local].name.clone(),
                None => format!("local#{}", local.index()),
            },
            ExprKind::ReductionValue(r) => program.reductions[*r].name.clone(),
            ExprKind::ScanAccumulator(f) => format!("scan#{}", self.field_ref(*f)),
            ExprKind::Unary(op, operand) => {
                let inner = match (&program.exprs[*operand].kind, op) {
                    // `-1.0` parses as a literal, so a negated literal needs parentheses.
                    (ExprKind::Literal(_), UnaryOp::Neg) => format!("({})", self.expr(*operand, 0)),
                    _ => self.expr(*operand, 6),
                };
                format!("{}{inner}", op.symbol())
            }
            ExprKind::Binary(op, a, b) => {
                let prec = op.precedence();
                // Comparisons do not chain, so both operands of one bind tighter.
                let left = if op.is_comparison() { prec + 1 } else { prec };
                let text = format!(
                    "{} {} {}",
                    self.expr(*a, left),
                    op.symbol(),
                    self.expr(*b, prec + 1)
                );
                if prec < parent {
                    format!("({text})")
                } else {
                    text
                }
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => format!(
                "select({}, {}, {})",
                self.expr(*cond, 0),
                self.expr(*then, 0),
                self.expr(*otherwise, 0)
            ),
            ExprKind::Call(f, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(*a, 0)).collect();
                format!("{}({})", f.name(), args.join(", "))
            }
            ExprKind::Cast(ty, e) => format!("{}({})", ty.name(), self.expr(*e, 0)),
        }
    }
}

/// The source form of a border mode (`constant(0.0)`, `clamp`, ...).
pub fn border_text(border: Border) -> String {
    match border {
        Border::Constant(c) => format!("constant({})", literal_text(c)),
        Border::Clamp => "clamp".to_string(),
        Border::Periodic => "periodic".to_string(),
        Border::Mirror => "mirror".to_string(),
    }
}

fn literal_text(c: Constant) -> String {
    c.to_string()
}
