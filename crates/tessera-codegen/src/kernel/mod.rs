//! The GPU kernel IR, strategies lowering stencil programs into it, and the CUDA/OpenCL printers.
//!
//! # The contract with the GPU runtimes
//!
//! [`lower`] turns a bound program and a [`GpuPlan`] into a [`KernelProgram`]: device kernels
//! ([`Kernel`]) and a [`HostProgram`] saying how to run them. [`print_cuda`] and
//! [`print_opencl`] print all kernels of a program as one self-contained source (CUDA: NVRTC
//! compilable alone, `extern "C" __global__` kernels, no includes; OpenCL C 1.2 `__kernel`s).
//!
//! A runtime executes a [`HostProgram`] as follows:
//!
//! 1. Allocate every [`BufferDecl`] (`len` elements of `ty`; contents unspecified). Upload each
//!    field to its [`BufferRole::Field`] buffer (row-major, fastest axis last — the layout of
//!    `tessera_runtime::Buffer`), then run [`HostProgram::start`]'s operations (copies of
//!    fields into their partners). Upload each input table of the run to its
//!    [`BufferRole::Table`] buffer, allocated for the run's table length (its declared `len`
//!    is 0).
//! 2. For a pass of the run's schedule that computes no reduction, when the program has a
//!    [`HostProgram::fused`] pass, run its operations once with `t` the pass's first step and
//!    `steps` its number of steps (at most [`FusedPass::depth`]). Otherwise, for each step `t`
//!    of the pass, run [`HostProgram::step`]'s operations in order, skipping those with
//!    `every = K` unless `(t + 1) % K == 0`:
//!    - [`HostOp::Launch`]: launch the kernel with `grid` blocks of `block` threads (x, y, z;
//!      OpenCL's global size is `grid * block` per axis) and the arguments in order
//!      ([`LaunchArg::Buffer`]: the buffer now bound to that id; [`LaunchArg::Step`]: `t` as a
//!      64-bit signed integer; [`LaunchArg::Steps`]: `steps`, likewise;
//!      [`LaunchArg::ReductionValue`]: the value of that reduction read back by an earlier
//!      [`HostOp::Reduce`] of the step, as a `double`);
//!    - [`HostOp::Copy`]: copy a whole buffer to another on the device;
//!    - [`HostOp::Swap`]: exchange the allocations bound to two buffer ids (ping-pong);
//!    - [`HostOp::Reduce`]: read the `rows` f64 partials back and fold them in index order
//!      with `tessera_runtime::reduce::fold` (THE fixed order); record the value for step `t`.
//! 3. After a step in which a reduction was recorded, the run's driver evaluates the program's
//!    `until` condition (once every reduction it names has a value) and stops when it holds.
//! 4. Download each field from the buffer then bound to its [`BufferRole::Field`] id.
//!
//! A receiver is recorded, after the steps the run's schedule says, by its
//! [`ReceiverGather`]: the runtime uploads the receiver's points (linear indices, in
//! [`KernelProgram::index_ty`]) once per run to its [`BufferRole::ReceiverPoints`] buffer,
//! launches the gather kernel over them (one thread per point, `ceil(n / block)` blocks,
//! [`LaunchArg::Count`]: `n`) and reads the `n` values back from its
//! [`BufferRole::ReceiverValues`] buffer: the field itself stays on the device.
//!
//! Kernels never depend on the launch order within an op, only on the op order.

mod lower;
mod print;
mod resources;
mod traffic;

use std::sync::Arc;

use tessera_analysis::{BoundProgram, CheckedProgram, SumTerm};
use tessera_ir::{
    Constant, ExprId, Field, Id, Receiver, ReduceOp, Reduction, ScalarType, Stage, Table, UnaryOp,
};
use tessera_plan::PlanError;
pub use tessera_plan::gpu::{DeviceLimits, GpuPlan, GpuStrategy, Limiter, Occupancy, occupancy};

pub use lower::{fits, lower};
pub use print::{print_cuda, print_opencl};
pub use resources::{kernel_resources, validate};
pub use traffic::{KernelTraffic, kernel_traffic};

/// A program lowered for a GPU: its kernels and the host program that runs them.
#[derive(Clone, Debug)]
pub struct KernelProgram {
    /// Program name (kernel names start with it).
    pub name: String,
    /// The checked program whose expressions [`Stmt::Stage`] and [`Stmt::Reduce`] refer to.
    pub checked: Arc<CheckedProgram>,
    /// The bound parameter values (inlined as literals by the printers).
    pub param_values: Vec<Constant>,
    /// Grid extents, slowest axis first.
    pub extents: Vec<usize>,
    /// The plan it was lowered with.
    pub plan: GpuPlan,
    /// The integer type of coordinates and linear indices: `i64` when a linear index can
    /// reach 2^31, else `i32`.
    pub index_ty: ScalarType,
    /// Device kernels, in the order they are first launched.
    pub kernels: Vec<Kernel>,
    /// How to run them.
    pub host: HostProgram,
    /// Decisions a user may want to know about (a stage lowered by another strategy, and why).
    pub notes: Vec<String>,
}

impl KernelProgram {
    /// Whether any kernel or buffer uses `f64` (OpenCL then needs `cl_khr_fp64`).
    pub fn uses_f64(&self) -> bool {
        self.host.buffers.iter().any(|b| b.ty == ScalarType::F64)
            || (0..self.checked.program().exprs.len())
                .any(|i| self.checked.ty(Id::from_index(i)) == ScalarType::F64)
    }

    /// The kernel of a given name.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// One device kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// Function name (unique in the program, a C identifier).
    pub name: String,
    /// The strategy that produced it (`naive`, `tiled`, `streaming`, `overlapped`,
    /// `reduction`).
    pub strategy: &'static str,
    /// What it computes, for the comment above it.
    pub doc: String,
    /// Parameters in launch-argument order.
    pub params: Vec<KernelParam>,
    /// Shared (local) memory arrays, declared at the top of the body.
    pub shared: Vec<SharedArray>,
    /// The threads per block it is written for (x, y, z); launches use exactly this.
    pub block: [u32; 3],
    /// CUDA: the blocks per multiprocessor its registers must allow (`__launch_bounds__`'s
    /// second argument); `None` leaves it to ptxas's occupancy heuristics.
    pub min_resident_blocks: Option<u32>,
    /// The body.
    pub body: Vec<Stmt>,
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelParam {
    /// Name in the kernel (a C identifier).
    pub name: String,
    /// What it is.
    pub kind: ParamKind,
}

/// The kind of a kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A pointer to a global buffer of `ty` elements. No two parameters of a launch alias:
    /// buffer parameters are `restrict` (on OpenCL the written ones only, see the printer);
    /// `read_only` ones are also `const` and loaded through the read-only cache when
    /// [`Expr::Load::cached`] says so.
    Buffer {
        /// Element type.
        ty: ScalarType,
        /// Never written by the kernel.
        read_only: bool,
    },
    /// A scalar passed by value (the step counter `t` is an `i64`).
    Scalar(ScalarType),
}

/// A shared (OpenCL: local) memory array of a kernel; several dimensions, slowest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedArray {
    /// Name.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Extent per dimension, slowest first.
    pub dims: Vec<usize>,
}

impl SharedArray {
    /// Bytes it occupies.
    pub fn bytes(&self) -> usize {
        self.dims.iter().product::<usize>() * self.ty.size_bytes()
    }
}

/// The most shared memory a CUDA kernel declares statically (the default per-block amount).
/// Beyond it the CUDA printer carves the arrays out of dynamic shared memory, which the device
/// opts into up to its per-block limit (227 KiB on an H100).
pub const CUDA_STATIC_SHARED_BYTES: usize = 48 * 1024;

/// Where the arrays of dynamic shared memory start: every array aligned to 16 bytes.
const DYNAMIC_SHARED_ALIGN: usize = 16;

impl Kernel {
    /// The shared memory one block needs, in bytes: the arrays' sum when declared statically,
    /// the end of the dynamic layout ([`Kernel::dynamic_shared_offsets`]) beyond
    /// [`CUDA_STATIC_SHARED_BYTES`].
    pub fn shared_bytes(&self) -> usize {
        match self.dynamic_shared_bytes() {
            0 => self.declared_shared_bytes(),
            dynamic => dynamic,
        }
    }

    /// The dynamic shared memory a CUDA launch of the kernel passes: 0 when its arrays are
    /// declared statically (they fit [`CUDA_STATIC_SHARED_BYTES`]).
    pub fn dynamic_shared_bytes(&self) -> usize {
        if self.declared_shared_bytes() <= CUDA_STATIC_SHARED_BYTES {
            0
        } else {
            self.dynamic_layout().1
        }
    }

    /// The arrays' bytes as declared: in order, each aligned to its element's size (as the
    /// compilers lay out static arrays).
    fn declared_shared_bytes(&self) -> usize {
        (self.shared.iter()).fold(0, |end, array| {
            end.next_multiple_of(array.ty.size_bytes().max(1)) + array.bytes()
        })
    }

    /// Each array's byte offset in dynamic shared memory, when the kernel uses it.
    pub fn dynamic_shared_offsets(&self) -> Vec<usize> {
        self.dynamic_layout().0
    }

    /// The arrays' offsets and the layout's end, each array aligned to 16 bytes.
    fn dynamic_layout(&self) -> (Vec<usize>, usize) {
        let mut end = 0usize;
        let offsets = (self.shared.iter())
            .map(|array| {
                let offset = end.next_multiple_of(DYNAMIC_SHARED_ALIGN);
                end = offset + array.bytes();
                offset
            })
            .collect();
        (offsets, end)
    }
}

/// A statement of a kernel body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `ty var = value;` (uninitialised without a value). Register queues are plain variables.
    Declare {
        /// Variable name.
        var: String,
        /// Its type.
        ty: ScalarType,
        /// Initial value.
        value: Option<Expr>,
    },
    /// `var = value;`
    Assign {
        /// Variable name.
        var: String,
        /// New value.
        value: Expr,
    },
    /// `buffer[index] = value;` on a global buffer parameter.
    Store {
        /// Buffer parameter name.
        buffer: String,
        /// Linear element index.
        index: Expr,
        /// Value (of the buffer's element type).
        value: Expr,
    },
    /// `array[i0][i1]... = value;` on a shared array.
    SharedStore {
        /// Shared array name.
        array: String,
        /// One index per dimension, slowest first.
        index: Vec<Expr>,
        /// Value.
        value: Expr,
    },
    /// `if (cond) { then } else { otherwise }`.
    If {
        /// Condition (bool).
        cond: Expr,
        /// Taken when it holds.
        then: Vec<Stmt>,
        /// Taken otherwise (may be empty).
        otherwise: Vec<Stmt>,
    },
    /// `if (cond) { then } else { otherwise }` where every thread of a block evaluates `cond`
    /// alike (block indices, kernel arguments): barriers may sit in either branch.
    UniformIf {
        /// Condition (bool), the same in every thread of a block.
        cond: Expr,
        /// Taken when it holds.
        then: Vec<Stmt>,
        /// Taken otherwise (may be empty).
        otherwise: Vec<Stmt>,
    },
    /// Exactly one of `cases` runs: the one whose condition holds, each condition the same in
    /// every thread of a block, no two holding at once and one always holding; barriers may
    /// sit in any case. CUDA prints an `if`/`else if` chain (the last case its `else`), OpenCL
    /// one `if` per case. PoCL 3.1 loses values a thread carries from one barrier-holding loop
    /// to the next inside nested branches (NaN at the last plane of a streaming time tile's
    /// chunk where both frames of blocks have steady trips); given separate `if`s, nvcc keeps
    /// fewer values in registers across the cases' loops (10-16% more instructions in an
    /// interior block's steady trip).
    UniformCases(Vec<(Expr, Vec<Stmt>)>),
    /// `for (ty var = start; var < end; var += step) { body }`.
    For {
        /// Loop variable.
        var: String,
        /// Its type.
        ty: ScalarType,
        /// First value.
        start: Expr,
        /// Exclusive bound.
        end: Expr,
        /// Increment (positive).
        step: Expr,
        /// Body.
        body: Vec<Stmt>,
    },
    /// A block-wide barrier with a shared-memory fence (`__syncthreads()`,
    /// `barrier(CLK_LOCAL_MEM_FENCE)`); never inside divergent control flow (only under
    /// [`Stmt::UniformIf`]s, [`Stmt::UniformCases`] and loops with uniform bounds).
    Barrier,
    /// Evaluates one stage at one point: its `let`s, then assigns each output's final value to
    /// a variable and each in-stage reduction's value (as `f64`) to a variable.
    Stage(StageEval),
    /// Evaluates an after-step reduction's value (as `f64`) at one point into a variable.
    Reduce(ReductionEval),
    /// Adds some terms of a stage's output sum into a variable, or starts it with them
    /// (associative reordering: see [`tessera_analysis::plane_sums`]).
    PartialSum(PartialSum),
    /// `{ body }`: a scope for the variables of one point.
    Block(Vec<Stmt>),
    /// A comment line.
    Comment(String),
}

impl Stmt {
    /// `if (cond) { then }` (no else branch).
    pub fn when(cond: Expr, then: Vec<Stmt>) -> Stmt {
        Stmt::If {
            cond,
            then,
            otherwise: Vec::new(),
        }
    }

    /// `stmt` only where `cond` holds; `stmt` itself without a condition.
    pub fn guarded(cond: Option<Expr>, stmt: Stmt) -> Stmt {
        match cond {
            Some(cond) => Stmt::when(cond, vec![stmt]),
            None => stmt,
        }
    }
}

/// How the leaves of program expressions are spelled at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramEnv {
    /// Every `(field, offset)` read, and the expression giving its value (usually a variable
    /// loaded beforehand).
    pub reads: Vec<ReadBinding>,
    /// The current point's coordinate per axis, slowest first (in [`KernelProgram::index_ty`]).
    pub coords: Vec<Expr>,
    /// The step counter `t` (an `i64`).
    pub step: Expr,
    /// Expressions of the program whose values the kernel has already computed (a reordered
    /// sum's partial sums), and the expressions giving them.
    pub computed: Vec<(ExprId, Expr)>,
}

/// [`Stmt::PartialSum`]: `var = var + (terms)`, or `var = (terms)`, the terms summed as a
/// balanced tree in their order (non-exact mode only).
#[derive(Clone, Debug, PartialEq)]
pub struct PartialSum {
    /// The stage whose sum the terms belong to.
    pub stage: Id<Stage>,
    /// The terms' leaves.
    pub env: ProgramEnv,
    /// The terms.
    pub terms: Vec<SumTerm>,
    /// The variable receiving the sum (of the sum's type).
    pub var: String,
    /// Whether the terms are added to the variable's value (else they replace it).
    pub accumulate: bool,
    /// Whether the terms are summed apart before they are added: another plane has the same
    /// terms ([`tessera_analysis::PlaneTerms::repeated`]), so their sum is computed once for
    /// both. Else the variable heads the terms' chain, each product a fused multiply-add.
    pub apart: bool,
}

/// The value of one read of a program expression.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadBinding {
    /// The field read.
    pub field: Id<Field>,
    /// The offset, slowest axis first.
    pub offset: Vec<i32>,
    /// Its value, of the field's type.
    pub value: Expr,
}

/// [`Stmt::Stage`]: one stage evaluated at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct StageEval {
    /// The stage.
    pub stage: Id<Stage>,
    /// Its leaves.
    pub env: ProgramEnv,
    /// Per output field, the (already declared) variable receiving its new value.
    pub outputs: Vec<(Id<Field>, String)>,
    /// Per in-stage reduction evaluated here, the (already declared, `f64`) variable receiving
    /// its value.
    pub reductions: Vec<(Id<Reduction>, String)>,
}

/// [`Stmt::Reduce`]: an after-step reduction's value at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct ReductionEval {
    /// The reduction.
    pub reduction: Id<Reduction>,
    /// Its leaves.
    pub env: ProgramEnv,
    /// The (already declared, `f64`) variable receiving the value.
    pub var: String,
}

/// A kernel expression (index arithmetic, loads, register values). Program values appear
/// only through [`Stmt::Stage`] and [`Stmt::Reduce`].
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal of a type.
    Literal(Constant, ScalarType),
    /// A variable or scalar parameter.
    Var(String),
    /// A thread's index in its block along x (0), y (1), z (2), in the index type.
    ThreadIdx(usize),
    /// The block's index in the grid along x, y, z, in the index type.
    BlockIdx(usize),
    /// A load from a global buffer parameter.
    Load {
        /// Buffer parameter name.
        buffer: String,
        /// Linear element index.
        index: Box<Expr>,
        /// Through the read-only data cache (`__ldg` on CUDA; a plain load of a `const`
        /// parameter on OpenCL).
        cached: bool,
    },
    /// A load from a shared array, one index per dimension.
    SharedLoad {
        /// Shared array name.
        array: String,
        /// Indices, slowest first.
        index: Vec<Expr>,
    },
    /// A unary operation (on indices: plain C semantics; never overflows by construction).
    Unary(UnaryOp, Box<Expr>),
    /// A binary operation in plain C semantics (indices never overflow nor divide by zero).
    Binary(KernelOp, Box<Expr>, Box<Expr>),
    /// `cond ? then : otherwise` (only the chosen side is evaluated).
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A C conversion.
    Cast(ScalarType, Box<Expr>),
}

/// Binary operators of kernel expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (positive divisors only)
    Div,
    /// `%` (positive divisors only)
    Rem,
    /// The smaller operand.
    Min,
    /// The larger operand.
    Max,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `&` of two integers.
    BitAnd,
}

impl Expr {
    /// An integer literal of type `ty`.
    pub fn int(value: i64, ty: ScalarType) -> Expr {
        Expr::Literal(Constant::Int(value), ty)
    }

    /// A variable.
    pub fn var(name: impl Into<String>) -> Expr {
        Expr::Var(name.into())
    }

    /// `op(self, other)`.
    pub fn op(self, op: KernelOp, other: Expr) -> Expr {
        Expr::Binary(op, Box::new(self), Box::new(other))
    }

    /// `self + other`, folding a zero literal away.
    pub fn plus(self, other: Expr) -> Expr {
        match (&self, &other) {
            (_, Expr::Literal(Constant::Int(0), _)) => self,
            (Expr::Literal(Constant::Int(0), _), _) => other,
            _ => self.op(KernelOp::Add, other),
        }
    }

    /// `self * other`, folding a literal one away.
    pub fn times(self, other: Expr) -> Expr {
        match (&self, &other) {
            (_, Expr::Literal(Constant::Int(1), _)) => self,
            (Expr::Literal(Constant::Int(1), _), _) => other,
            _ => self.op(KernelOp::Mul, other),
        }
    }
}

/// The host side: buffers, the operations of one step, and those of one fused pass.
#[derive(Clone, Debug, PartialEq)]
pub struct HostProgram {
    /// Device buffers, addressed by their index ([`BufferId`]).
    pub buffers: Vec<BufferDecl>,
    /// Operations run once after the upload: a field copied into its partner when stages
    /// write it on part of the grid, so that the points no stage writes hold the field's
    /// values in both buffers and no step copies the field.
    pub start: Vec<HostOp>,
    /// The operations of one step, in order: they run every step of a pass when there is no
    /// fused pass, and the passes that compute reductions otherwise (empty when the program
    /// has no reduction and a fused pass).
    pub step: Vec<HostOp>,
    /// The operations of one pass of up to `depth` steps (overlapped time tiling), run once
    /// per pass that computes no reduction.
    pub fused: Option<FusedPass>,
    /// How each receiver is recorded, in declaration order.
    pub receivers: Vec<ReceiverGather>,
}

/// A receiver's gather: its kernel copies the field's values at the receiver's points into a
/// small buffer that the host reads back.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverGather {
    /// The receiver.
    pub receiver: Id<Receiver>,
    /// The gather's launch: arguments (the field's current buffer, the points, the values,
    /// [`LaunchArg::Count`]) and block; the runtime sets its grid to `[ceil(n / block), 1,
    /// 1]` for `n` points (one block here).
    pub launch: Launch,
    /// The buffer of the points' linear indices.
    pub points: BufferId,
    /// The buffer the values are gathered into.
    pub values: BufferId,
}

/// [`HostProgram::fused`]: a pass of several steps in one sequence of operations.
#[derive(Clone, Debug, PartialEq)]
pub struct FusedPass {
    /// The most steps one pass may hold.
    pub depth: u32,
    /// Its operations, in order (launches take [`LaunchArg::Steps`]).
    pub ops: Vec<HostOp>,
}

impl HostProgram {
    /// The buffer holding a field's current values.
    pub fn field_buffer(&self, field: Id<Field>) -> Option<BufferId> {
        self.buffers
            .iter()
            .position(|b| b.role == BufferRole::Field { field })
            .map(BufferId)
    }

    /// Every launch of the step and of the fused pass; a kernel the fused pass launches once
    /// per sweep iteration (the wavefront) counts once, its launches sharing the pass's work.
    pub fn launches(&self) -> impl Iterator<Item = &Launch> {
        let fused = self.fused.iter().flat_map(|f| f.ops.iter());
        let mut seen: Vec<&str> = Vec::new();
        let step = self.step.iter().filter_map(|op| match op {
            HostOp::Launch(launch) => Some(launch),
            _ => None,
        });
        let fused = fused.filter_map(move |op| match op {
            HostOp::Launch(launch) if !seen.contains(&launch.kernel.as_str()) => {
                seen.push(&launch.kernel);
                Some(launch)
            }
            _ => None,
        });
        step.chain(fused)
    }

    /// Whether `launch` runs in a pass without reductions: it belongs to the fused pass, or
    /// there is none and it belongs to the step.
    pub fn in_plain_pass(&self, launch: &Launch) -> bool {
        match &self.fused {
            Some(fused) => (fused.ops.iter())
                .any(|op| matches!(op, HostOp::Launch(l) if l.kernel == launch.kernel)),
            None => true,
        }
    }

    /// Total device memory, in bytes.
    pub fn bytes(&self) -> u64 {
        self.buffers
            .iter()
            .map(|b| (b.len * b.ty.size_bytes()) as u64)
            .sum()
    }
}

/// The index of a buffer in [`HostProgram::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub usize);

/// A device buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecl {
    /// Name, for messages and debugging (`A`, `A.next`, `partials.total`).
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Number of elements.
    pub len: usize,
    /// What it holds.
    pub role: BufferRole,
}

/// What a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferRole {
    /// A field's current values: uploaded before the run, downloaded after it.
    Field {
        /// The field.
        field: Id<Field>,
    },
    /// The ping-pong partner of a field's buffer (new values are written here, then swapped).
    Next {
        /// The field.
        field: Id<Field>,
    },
    /// Per-row partial results (`f64`) of a reduction, in row order.
    Partials {
        /// The reduction.
        reduction: Id<Reduction>,
    },
    /// An input table, read only: its declared `len` is 0, as the table's length comes with
    /// each run; the runtime allocates and uploads the run's table before the first pass.
    Table {
        /// The table.
        table: Id<Table>,
    },
    /// A receiver's points as linear indices (in the index type); its declared `len` is 0, as
    /// the points may come with the run: the runtime allocates and uploads them.
    ReceiverPoints {
        /// The receiver.
        receiver: Id<Receiver>,
    },
    /// A receiver's gathered values (of its field's type), one per point; allocated by the
    /// runtime like [`BufferRole::ReceiverPoints`].
    ReceiverValues {
        /// The receiver.
        receiver: Id<Receiver>,
    },
    /// A fused kernel's working array in global memory (the wavefront's rings of planes):
    /// neither uploaded nor read back.
    Scratch,
}

/// One host operation.
#[derive(Clone, Debug, PartialEq)]
pub enum HostOp {
    /// Launch a kernel.
    Launch(Launch),
    /// Copy all of `from` into `to` (same type and length).
    Copy {
        /// Source.
        from: BufferId,
        /// Destination.
        to: BufferId,
    },
    /// Exchange the allocations bound to two buffer ids.
    Swap(BufferId, BufferId),
    /// Read a reduction's partials back and fold them in order.
    Reduce(ReduceReadback),
}

/// [`HostOp::Launch`].
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// Kernel name.
    pub kernel: String,
    /// Blocks along x, y, z.
    pub grid: [u64; 3],
    /// Threads per block along x, y, z (the kernel's [`Kernel::block`]).
    pub block: [u32; 3],
    /// Arguments, in the kernel's parameter order.
    pub args: Vec<LaunchArg>,
    /// Run only in steps `t` with `(t + 1) % every == 0` (1 = every step).
    pub every: u64,
}

/// An argument of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchArg {
    /// The buffer currently bound to this id.
    Buffer(BufferId),
    /// The step counter `t` (first step of the iteration or pass), as an `i64`.
    Step,
    /// The number of steps of the pass (fused passes), as an `i64`.
    Steps,
    /// The value of a reduction read back earlier in the step, as an `f64` (stages reading
    /// the in-stage reductions of earlier stages).
    ReductionValue(Id<Reduction>),
    /// The number of items a gather covers (a receiver's points), as an `i64`.
    Count,
    /// A constant known when lowering (a launch's number within a sweep), as an `i64`.
    Int(i64),
}

/// [`HostOp::Reduce`].
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceReadback {
    /// The reduction.
    pub reduction: Id<Reduction>,
    /// Its name, as reported.
    pub name: String,
    /// The combining operation (fold with `tessera_runtime::reduce::fold`).
    pub op: ReduceOp,
    /// The partials buffer.
    pub partials: BufferId,
    /// Number of partials (rows) to read and fold, in index order.
    pub rows: usize,
    /// Run only in steps `t` with `(t + 1) % every == 0`.
    pub every: u64,
}

/// Lowers and prints a bound program in both dialects (convenience for tests and tools).
pub fn generate(
    bound: &BoundProgram,
    plan: &GpuPlan,
) -> Result<(KernelProgram, String, String), PlanError> {
    let program = lower(bound, plan)?;
    let (cuda, opencl) = (print_cuda(&program), print_opencl(&program));
    Ok((program, cuda, opencl))
}
