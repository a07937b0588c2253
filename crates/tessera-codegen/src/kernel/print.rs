//! The kernel printer: one printer for CUDA C and OpenCL C, parameterised by the C-family
//! [`Dialect`]; the dialects differ only in qualifiers, index intrinsics, barriers, read-only
//! loads and type names. Program expressions are printed by [`crate::cfamily`].

use std::fmt::Write as _;

use tessera_ir::{ExprId, Field, Id, Local, Param, Reduction, ScalarType, Stage, UnaryOp};

use super::{Expr, Kernel, KernelOp, KernelProgram, ParamKind, ProgramEnv, Stmt};
use tessera_ir::escape::comment_text;

use crate::cfamily::{
    Dialect, MathLibrary, ReadRenderer, negation, print_reduction_value, print_stage,
    print_stage_relaxed, print_sum_terms,
};
use crate::exact_math::{exact_math_source, needs_exact_math};
use crate::half::{half_source, storage_types};

/// CUDA C source of every kernel of `program`: NVRTC-compilable alone (no includes).
pub fn print_cuda(program: &KernelProgram) -> String {
    print_source(program, Dialect::Cuda)
}

/// OpenCL C source of every kernel of `program`.
pub fn print_opencl(program: &KernelProgram) -> String {
    print_source(program, Dialect::OpenCl)
}

fn print_source(program: &KernelProgram, dialect: Dialect) -> String {
    let mut out = String::new();
    let title = format!(
        "Tessera kernels for `{}`: {}",
        program.name,
        program.plan.describe()
    );
    let _ = writeln!(out, "// {}", comment_text(&title));
    let extents: Vec<String> = program.extents.iter().map(|e| e.to_string()).collect();
    let _ = writeln!(
        out,
        "// grid {}, {} indexing",
        extents.join(" x "),
        program.index_ty
    );
    for note in &program.notes {
        let _ = writeln!(out, "// note: {}", comment_text(note));
    }
    if dialect == Dialect::OpenCl && !program.uses_f64() {
        // The preamble's helpers use `double`: devices without fp64 still need the extension.
        out.push_str("// the helpers below need cl_khr_fp64\n");
    }
    out.push_str(&dialect.preamble());
    out.push_str(&half_source(dialect, &storage_types(&program.checked)));
    if program.plan.exact && needs_exact_math(&program.checked) {
        out.push_str(&exact_math_source(dialect));
    }
    if dialect == Dialect::OpenCl && !program.plan.exact {
        out.push_str("#pragma OPENCL FP_CONTRACT ON\n");
    }
    for kernel in &program.kernels {
        out.push('\n');
        Printer {
            dialect,
            program,
            out: &mut out,
        }
        .kernel(kernel);
    }
    out
}

struct Printer<'a> {
    dialect: Dialect,
    program: &'a KernelProgram,
    out: &'a mut String,
}

impl Printer<'_> {
    /// The math library of the program's mode.
    fn math(&self) -> MathLibrary {
        MathLibrary::for_exact_mode(self.program.plan.exact)
    }

    fn ty(&self, ty: ScalarType) -> &'static str {
        self.dialect.scalar_type(ty)
    }

    fn kernel(&mut self, kernel: &Kernel) {
        let doc = format!("{} ({})", kernel.doc, kernel.strategy);
        let _ = writeln!(self.out, "// {}", comment_text(&doc));
        let params: Vec<String> = kernel
            .params
            .iter()
            .map(|p| match p.kind {
                ParamKind::Buffer { ty, read_only } => {
                    let constness = if read_only { "const " } else { "" };
                    match self.dialect {
                        // No `restrict` on OpenCL inputs: PoCL 3.1's work-item loop vectorizer
                        // (`loopvec`, its default) miscompiles some fused kernels whose
                        // read-only parameters are `restrict` (on AVX-512 hosts; corpus
                        // program receivers2d under overlapped T=2 read wrong input values).
                        Dialect::OpenCl if read_only => {
                            format!("__global const {}* {}", self.ty(ty), p.name)
                        }
                        Dialect::OpenCl => format!("__global {}* restrict {}", self.ty(ty), p.name),
                        _ => format!("{constness}{}* __restrict__ {}", self.ty(ty), p.name),
                    }
                }
                ParamKind::Scalar(ty) => format!("{} {}", self.ty(ty), p.name),
            })
            .collect();
        let [bx, by, bz] = kernel.block;
        match self.dialect {
            Dialect::OpenCl => {
                let _ = writeln!(
                    self.out,
                    "__kernel __attribute__((reqd_work_group_size({bx}, {by}, {bz})))"
                );
                let _ = writeln!(self.out, "void {}({}) {{", kernel.name, params.join(", "));
            }
            _ => {
                let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
                let bounds = match kernel.min_resident_blocks {
                    Some(blocks) => format!("{threads}, {blocks}"),
                    None => threads.to_string(),
                };
                let _ = writeln!(
                    self.out,
                    "extern \"C\" __global__ void __launch_bounds__({bounds})"
                );
                let _ = writeln!(self.out, "{}({}) {{", kernel.name, params.join(", "));
            }
        }
        if self.dialect != Dialect::OpenCl && kernel.dynamic_shared_bytes() > 0 {
            self.dynamic_shared_arrays(kernel);
        } else {
            self.static_shared_arrays(kernel);
        }
        self.block(&kernel.body, 1);
        self.out.push_str("}\n");
    }

    /// Declares the kernel's shared arrays statically (`__local` in OpenCL).
    fn static_shared_arrays(&mut self, kernel: &Kernel) {
        let qualifier = if self.dialect == Dialect::OpenCl {
            "__local"
        } else {
            "__shared__"
        };
        for array in &kernel.shared {
            let dims: String = array.dims.iter().map(|d| format!("[{d}]")).collect();
            let _ = writeln!(
                self.out,
                "    {qualifier} {} {}{dims};",
                self.ty(array.ty),
                array.name
            );
        }
    }

    /// Carves the kernel's shared arrays out of CUDA dynamic shared memory: each array a
    /// pointer to its rows, indexed as the static array would be.
    fn dynamic_shared_arrays(&mut self, kernel: &Kernel) {
        self.line(
            1,
            "extern __shared__ __align__(16) unsigned char ts_shared[];",
        );
        for (array, offset) in kernel.shared.iter().zip(kernel.dynamic_shared_offsets()) {
            let ty = self.ty(array.ty);
            let rows: String = array.dims[1..].iter().map(|d| format!("[{d}]")).collect();
            let text = format!(
                "{ty} (*{name}){rows} = reinterpret_cast<{ty} (*){rows}>(ts_shared + {offset});",
                name = array.name
            );
            self.line(1, &text);
        }
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn block(&mut self, body: &[Stmt], depth: usize) {
        for stmt in body {
            self.stmt(stmt, depth);
        }
    }

    /// [`Stmt::UniformCases`]: an `if`/`else if` chain in CUDA, whose last case is its `else`;
    /// in OpenCL one `if` per case.
    fn cases(&mut self, cases: &[(Expr, Vec<Stmt>)], depth: usize) {
        let chain = self.dialect == Dialect::Cuda;
        let last = cases.len().saturating_sub(1);
        for (k, (cond, body)) in cases.iter().enumerate() {
            let text = match k {
                _ if !chain || k == 0 => format!("if ({}) {{", self.condition(cond)),
                _ if k == last => "} else {".to_string(),
                _ => format!("}} else if ({}) {{", self.condition(cond)),
            };
            self.line(depth, &text);
            self.block(body, depth + 1);
            if !chain || k == last {
                self.line(depth, "}");
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt, depth: usize) {
        match stmt {
            Stmt::Declare { var, ty, value } => {
                let text = match value {
                    Some(v) => format!("{} {var} = {};", self.ty(*ty), self.expr(v)),
                    None => format!("{} {var};", self.ty(*ty)),
                };
                self.line(depth, &text);
            }
            Stmt::Assign { var, value } => {
                let text = format!("{var} = {};", self.expr(value));
                self.line(depth, &text);
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => {
                let text = format!("{buffer}[{}] = {};", self.expr(index), self.expr(value));
                self.line(depth, &text);
            }
            Stmt::SharedStore {
                array,
                index,
                value,
            } => {
                let text = format!("{array}{} = {};", self.indices(index), self.expr(value));
                self.line(depth, &text);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            }
            | Stmt::UniformIf {
                cond,
                then,
                otherwise,
            } => {
                let text = format!("if ({}) {{", self.condition(cond));
                self.line(depth, &text);
                self.block(then, depth + 1);
                if otherwise.is_empty() {
                    self.line(depth, "}");
                } else {
                    self.line(depth, "} else {");
                    self.block(otherwise, depth + 1);
                    self.line(depth, "}");
                }
            }
            Stmt::UniformCases(cases) => self.cases(cases, depth),
            Stmt::For {
                var,
                ty,
                start,
                end,
                step,
                body,
            } => {
                let text = format!(
                    "for ({} {var} = {}; {var} < {}; {var} += {}) {{",
                    self.ty(*ty),
                    self.expr(start),
                    self.expr(end),
                    self.expr(step)
                );
                self.line(depth, &text);
                self.block(body, depth + 1);
                self.line(depth, "}");
            }
            Stmt::Barrier => {
                let text = match self.dialect {
                    Dialect::OpenCl => "barrier(CLK_LOCAL_MEM_FENCE);",
                    _ => "__syncthreads();",
                };
                self.line(depth, text);
            }
            Stmt::Block(body) => {
                self.line(depth, "{");
                self.block(body, depth + 1);
                self.line(depth, "}");
            }
            Stmt::Comment(text) => self.line(depth, &format!("// {}", comment_text(text))),
            Stmt::Stage(eval) => {
                let checked = self.program.checked.clone();
                let printed = {
                    let mut leaves = Leaves {
                        printer: self,
                        env: &eval.env,
                        stage: Some(eval.stage),
                    };
                    let dialect = leaves.printer.dialect;
                    if leaves.printer.program.plan.exact {
                        print_stage(
                            dialect,
                            MathLibrary::Exact,
                            &checked,
                            eval.stage,
                            &mut leaves,
                        )
                    } else {
                        print_stage_relaxed(dialect, &checked, eval.stage, &mut leaves)
                    }
                };
                self.line(depth, "{");
                for text in printed.lets.iter().chain(&printed.scan_steps) {
                    self.line(depth + 1, text);
                }
                for (field, var) in &eval.outputs {
                    if let Some((_, value)) = printed.outputs.iter().find(|(f, _)| f == field) {
                        self.line(depth + 1, &format!("{var} = {value};"));
                    }
                }
                for text in &printed.scan_carries {
                    self.line(depth + 1, text);
                }
                for (reduction, var) in &eval.reductions {
                    if let Some((_, value)) =
                        printed.reductions.iter().find(|(r, _)| r == reduction)
                    {
                        self.line(depth + 1, &format!("{var} = {value};"));
                    }
                }
                self.line(depth, "}");
            }
            Stmt::PartialSum(partial) => {
                let checked = self.program.checked.clone();
                let var = &partial.var;
                // Accumulated terms head their chain with the variable, but summed apart.
                let chained = partial.accumulate && !partial.apart;
                let sum = {
                    let mut leaves = Leaves {
                        printer: self,
                        env: &partial.env,
                        stage: Some(partial.stage),
                    };
                    let dialect = leaves.printer.dialect;
                    let first = chained.then_some(var.as_str());
                    print_sum_terms(dialect, &checked, first, &partial.terms, &mut leaves)
                };
                let text = if partial.accumulate && partial.apart {
                    format!("{var} = ({var} + {sum});")
                } else {
                    format!("{var} = {sum};")
                };
                self.line(depth, &text);
            }
            Stmt::Reduce(eval) => {
                let checked = self.program.checked.clone();
                let value = checked.program().reductions[eval.reduction].value;
                let printed = {
                    let mut leaves = Leaves {
                        printer: self,
                        env: &eval.env,
                        stage: None,
                    };
                    let math = leaves.printer.math();
                    print_reduction_value(
                        leaves.printer.dialect,
                        math,
                        &checked,
                        value,
                        &mut leaves,
                    )
                };
                self.line(depth, &format!("{} = {printed};", eval.var));
            }
        }
    }

    fn indices(&self, index: &[Expr]) -> String {
        index
            .iter()
            .map(|i| format!("[{}]", self.expr(i)))
            .collect()
    }

    fn index_cast(&self, text: &str) -> String {
        format!("(({}){text})", self.ty(self.program.index_ty))
    }

    /// A condition without the parentheses a binary operation prints around itself (`if
    /// ((a == b))` draws clang's parentheses-equality warning).
    fn condition(&self, cond: &Expr) -> String {
        let text = self.expr(cond);
        match cond {
            Expr::Binary(..) => text[1..text.len() - 1].to_string(),
            _ => text,
        }
    }

    fn expr(&self, expr: &Expr) -> String {
        const AXES: [&str; 3] = ["x", "y", "z"];
        match expr {
            Expr::Literal(value, ty) => self.dialect.literal(*value, *ty),
            Expr::Var(name) => name.clone(),
            Expr::ThreadIdx(axis) => match self.dialect {
                Dialect::OpenCl => self.index_cast(&format!("get_local_id({axis})")),
                _ => self.index_cast(&format!("threadIdx.{}", AXES[*axis])),
            },
            Expr::BlockIdx(axis) => match self.dialect {
                Dialect::OpenCl => self.index_cast(&format!("get_group_id({axis})")),
                _ => self.index_cast(&format!("blockIdx.{}", AXES[*axis])),
            },
            Expr::Load {
                buffer,
                index,
                cached,
            } => {
                let index = self.expr(index);
                if *cached && self.dialect == Dialect::Cuda {
                    format!("__ldg(&{buffer}[{index}])")
                } else {
                    format!("{buffer}[{index}]")
                }
            }
            Expr::SharedLoad { array, index } => format!("{array}{}", self.indices(index)),
            Expr::Unary(op, a) => {
                let a = self.expr(a);
                match op {
                    UnaryOp::Neg => negation(&a),
                    UnaryOp::Not => format!("(!{a})"),
                }
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                let symbol = match op {
                    KernelOp::Min => return format!("({a} < {b} ? {a} : {b})"),
                    KernelOp::Max => return format!("({a} > {b} ? {a} : {b})"),
                    KernelOp::Add => "+",
                    KernelOp::Sub => "-",
                    KernelOp::Mul => "*",
                    KernelOp::Div => "/",
                    KernelOp::Rem => "%",
                    KernelOp::Lt => "<",
                    KernelOp::Le => "<=",
                    KernelOp::Eq => "==",
                    KernelOp::Ne => "!=",
                    KernelOp::And => "&&",
                    KernelOp::Or => "||",
                    KernelOp::BitAnd => "&",
                };
                format!("({a} {symbol} {b})")
            }
            Expr::Select(c, a, b) => {
                format!("({} ? {} : {})", self.expr(c), self.expr(a), self.expr(b))
            }
            Expr::Cast(ty, a) => format!("(({}){})", self.ty(*ty), self.expr(a)),
        }
    }
}

/// Spells the leaves of program expressions from a [`ProgramEnv`].
struct Leaves<'p, 'a> {
    printer: &'p Printer<'a>,
    env: &'p ProgramEnv,
    stage: Option<Id<Stage>>,
}

impl ReadRenderer for Leaves<'_, '_> {
    fn read(&mut self, field: Id<Field>, offset: &[i32]) -> String {
        match self
            .env
            .reads
            .iter()
            .find(|r| r.field == field && r.offset == offset)
        {
            Some(binding) => self.printer.expr(&binding.value),
            None => panic!(
                "kernel lowering bound no value to a read of field #{} at {offset:?}",
                field.index()
            ),
        }
    }

    fn local(&mut self, local: Id<Local>) -> String {
        format!("l{}_{}", self.stage.map_or(0, |s| s.index()), local.index())
    }

    fn coord(&mut self, axis: usize) -> String {
        let text = self.printer.expr(&self.env.coords[axis]);
        if self.printer.program.index_ty == ScalarType::I64 {
            text
        } else {
            format!("(({}){text})", self.printer.ty(ScalarType::I64))
        }
    }

    fn step(&mut self) -> String {
        self.printer.expr(&self.env.step)
    }

    fn param(&mut self, param: Id<Param>) -> String {
        let ty = self.printer.program.checked.program().params[param].ty;
        self.printer
            .dialect
            .literal(self.printer.program.param_values[param.index()], ty)
    }

    fn reduction_value(&mut self, reduction: Id<Reduction>) -> String {
        super::lower::reduction_value_name(reduction)
    }

    fn computed(&mut self, expr: ExprId) -> Option<String> {
        let (_, value) = self.env.computed.iter().find(|(e, _)| *e == expr)?;
        Some(self.printer.expr(value))
    }
}
