//! [`Plan`]: every decision a backend makes to run one program, as plain data that can be
//! printed, stored (JSON), tuned and replayed.

use serde::{Deserialize, Serialize};
use tessera_analysis::BoundProgram;
use tessera_ir::ScalarType;

use crate::cpu::CpuPlan;
use crate::error::PlanError;
use crate::gpu::GpuPlan;

/// The version of the plan format [`Plan::to_json`] writes and [`Plan::from_json`] reads.
pub const PLAN_FORMAT: u32 = 1;

/// A complete plan for one program on one backend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The plan format ([`PLAN_FORMAT`]).
    pub format: u32,
    /// The name of the program it was made for.
    pub program: String,
    /// The grid it was made for, slowest axis first.
    pub grid: Vec<usize>,
    /// The backend and its decisions.
    pub backend: BackendPlan,
}

/// A backend's decisions, tagged with the backend's name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendPlan {
    /// The reference interpreter.
    Reference(ReferencePlan),
    /// Generated C + OpenMP.
    Cpu(CpuPlan),
    /// OpenCL kernels.
    Opencl(GpuPlan),
    /// CUDA kernels.
    Cuda(GpuPlan),
}

/// The reference interpreter's decisions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferencePlan {
    /// Exact order or f64 accuracy.
    pub precision: Precision,
    /// Threads of its pool (`None`: the global pool, one per core).
    pub threads: Option<usize>,
}

/// How the reference interpreter evaluates float arithmetic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Every node in its elaborated type, operation by operation: THE semantics.
    #[default]
    Exact,
    /// Every `f32` node, literal, parameter and field (and `f16`/`bf16` field) is evaluated
    /// and stored as `f64` (as if every float type were `f64`); integers are unchanged.
    F64,
}

impl Precision {
    /// The type a node or field of elaborated type `ty` is evaluated and stored in.
    pub fn ty(self, ty: ScalarType) -> ScalarType {
        match (self, ty) {
            (Precision::F64, ScalarType::F32 | ScalarType::F16 | ScalarType::Bf16) => {
                ScalarType::F64
            }
            _ => ty,
        }
    }

    /// A short name for plans and reports.
    pub fn describe(self) -> &'static str {
        match self {
            Precision::Exact => "exact-order",
            Precision::F64 => "f64-accuracy",
        }
    }
}

/// How many steps one pass of a run's schedule may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepsPerPass {
    /// At most this many (fused) steps; the steps between two reductions are split into as
    /// few passes as that allows, of depths as even as possible.
    AtMost(u32),
    /// Any number: the backend loops over the steps of a pass itself.
    Any,
}

/// Why no pass may fuse steps of `bound` (`None` when passes may). Strategies that fuse steps
/// (CPU `overlapped` and `wavefront`, GPU `overlapped`) refuse such programs:
///
/// - a stage scans along an axis: each of its points depends on its whole line before it, so
///   no tile of a later step can be computed from a bounded halo;
/// - a stage reads a reduction an earlier stage of the same step computes, so each step is cut
///   after that stage, where the reduction's value is folded and handed to the later stages.
pub fn fusion_refusal(bound: &BoundProgram) -> Option<String> {
    scan_refusal(bound).or_else(|| reduction_read_refusal(bound))
}

/// Why a stage with a scan keeps steps from being fused, naming the first such stage.
fn scan_refusal(bound: &BoundProgram) -> Option<String> {
    let program = bound.program();
    let (stage, axis) =
        (program.stages.values()).find_map(|stage| stage.scan_axis().map(|axis| (stage, axis)))?;
    Some(format!(
        "stage `{}` scans along {}: each of its points depends on the whole line before it, so steps cannot be fused",
        stage.name,
        program.axis_names()[axis]
    ))
}

/// Why a stage reading a reduction of the same step keeps steps from being fused.
fn reduction_read_refusal(bound: &BoundProgram) -> Option<String> {
    let checked = bound.checked();
    let program = checked.program();
    let reader = program
        .stages
        .ids()
        .find(|&s| !checked.stage_reduction_reads(s).is_empty())?;
    let reduction = checked.stage_reduction_reads(reader)[0];
    Some(format!(
        "stage `{}` reads the reduction `{}` of the same step: each step stops after the stage computing it, so steps cannot be fused",
        program.stages[reader].name, program.reductions[reduction].name
    ))
}

impl Plan {
    /// A plan of `backend`'s decisions for `bound`.
    pub fn new(bound: &BoundProgram, backend: BackendPlan) -> Plan {
        Plan {
            format: PLAN_FORMAT,
            program: bound.program().name.clone(),
            grid: bound.extents.clone(),
            backend,
        }
    }

    /// The name of the backend the plan is for.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Whether the plan computes bitwise like the reference: exact-order reference plans, and
    /// CPU and GPU plans made for exact arithmetic.
    pub fn is_exact(&self) -> bool {
        match &self.backend {
            BackendPlan::Reference(plan) => plan.precision == Precision::Exact,
            BackendPlan::Cpu(plan) => plan.exact,
            BackendPlan::Opencl(plan) | BackendPlan::Cuda(plan) => plan.exact,
        }
    }

    /// The plan in one line, without the backend's name: `wavefront tile=256x64x256 T=8 ...`.
    pub fn describe(&self) -> String {
        match &self.backend {
            BackendPlan::Reference(plan) => plan.precision.describe().to_string(),
            BackendPlan::Cpu(plan) => plan.to_string(),
            BackendPlan::Opencl(plan) | BackendPlan::Cuda(plan) => plan.describe(),
        }
    }

    /// How many steps a pass may hold: the time tile of strategies that fuse steps (CPU and
    /// GPU), any number for single-step strategies (the CPU's generated loop runs them; a GPU
    /// runs a launch sequence per step, replayed at once where every step is the same), and
    /// one step per pass for the reference (so that progress is reported after every step).
    pub fn steps_per_pass(&self) -> StepsPerPass {
        match &self.backend {
            BackendPlan::Cpu(plan) if plan.strategy.fuses_steps() => {
                StepsPerPass::AtMost(plan.time_tile)
            }
            BackendPlan::Cpu(_) => StepsPerPass::Any,
            BackendPlan::Opencl(plan) | BackendPlan::Cuda(plan) if plan.fuses_steps() => {
                StepsPerPass::AtMost(plan.time_tile)
            }
            BackendPlan::Opencl(_) | BackendPlan::Cuda(_) => StepsPerPass::Any,
            BackendPlan::Reference(_) => StepsPerPass::AtMost(1),
        }
    }

    /// Checks that the plan was made for `bound` (its format, program and grid) and, for the
    /// backend-independent parts, that it can run it. Device limits are the backend's to check.
    pub fn check_program(&self, bound: &BoundProgram) -> Result<(), PlanError> {
        if self.format != PLAN_FORMAT {
            return Err(PlanError::field(
                "format",
                self.format,
                format!("this Tessera reads plan format {PLAN_FORMAT}"),
            ));
        }
        let program = &bound.program().name;
        if &self.program != program {
            return Err(PlanError::field(
                "program",
                format!("`{}`", self.program),
                format!(
                    "this run is of program `{program}`; make a plan for it with `tessera plan`"
                ),
            ));
        }
        if self.grid != bound.extents {
            return Err(PlanError::field(
                "grid",
                format!("{:?}", self.grid),
                format!(
                    "this run's grid is {:?}; make a plan for it with `tessera plan` and the same `--set` values",
                    bound.extents
                ),
            ));
        }
        match &self.backend {
            BackendPlan::Reference(plan) if plan.threads == Some(0) => Err(PlanError::field(
                "reference.threads",
                0,
                "a pool has at least 1 thread",
            )),
            BackendPlan::Reference(_) => Ok(()),
            BackendPlan::Cpu(plan) => plan.check(bound),
            BackendPlan::Opencl(plan) | BackendPlan::Cuda(plan) => plan.check(),
        }
    }

    /// The plan as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a plan always serializes")
    }

    /// A plan from JSON; errors name the field (`backend.cpu.tile`) and what is wrong with it.
    pub fn from_json(text: &str) -> Result<Plan, PlanError> {
        let deserializer = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(deserializer).map_err(|error| {
            let path = error.path().to_string();
            let inner = error.into_inner();
            PlanError::Format(match path.as_str() {
                "." | "" | "?" => format!("not a plan: {inner}"),
                _ => format!("plan field `{path}`: {inner}"),
            })
        })
    }
}

impl BackendPlan {
    /// The backend's name (`reference`, `cpu`, `opencl`, `cuda`).
    pub fn name(&self) -> &'static str {
        match self {
            BackendPlan::Reference(_) => "reference",
            BackendPlan::Cpu(_) => "cpu",
            BackendPlan::Opencl(_) => "opencl",
            BackendPlan::Cuda(_) => "cuda",
        }
    }

    /// The CPU plan, if this is one.
    pub fn cpu(&self) -> Option<&CpuPlan> {
        match self {
            BackendPlan::Cpu(plan) => Some(plan),
            _ => None,
        }
    }

    /// The GPU plan, if this is one.
    pub fn gpu(&self) -> Option<&GpuPlan> {
        match self {
            BackendPlan::Opencl(plan) | BackendPlan::Cuda(plan) => Some(plan),
            _ => None,
        }
    }
}
