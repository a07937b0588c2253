//! The interface every backend implements: prepare (compile) once, then run steps on fields.

use std::time::Duration;

use tessera_analysis::BoundProgram;

use crate::buffer::FieldSet;

/// Options that affect how (not what) a backend computes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOptions {
    /// Bitwise-reproducible mode: no FMA contraction, no fast-math, evaluation in the element
    /// type exactly as written (equal to the reference backend's exact-order mode).
    pub exact: bool,
    /// Strategy name (`None` = the backend chooses).
    pub strategy: Option<String>,
    /// Spatial tile sizes, slowest axis first (`None` = the backend chooses).
    pub tile: Option<Vec<usize>>,
    /// Time-tile depth: steps fused per tile (`None` = the backend chooses).
    pub time_tile: Option<usize>,
    /// Device selection for GPU backends (`platform:device` or an index).
    pub device: Option<String>,
    /// Thread count for CPU backends (`None` = all cores).
    pub threads: Option<usize>,
    /// Evaluate every expression in f64 regardless of declared types (reference accuracy mode).
    pub f64_accuracy: bool,
}

/// A value of a reduction at the end of a step.
#[derive(Clone, Debug, PartialEq)]
pub struct ReductionRecord {
    /// The step `t` (0-based) after which it was computed.
    pub step: u64,
    /// The reduction's name.
    pub name: String,
    /// Its value.
    pub value: f64,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    /// Steps executed (fewer than asked when the stop condition held).
    pub steps: u64,
    /// Reduction values in the order they were computed.
    pub reductions: Vec<ReductionRecord>,
    /// Whether the `until` condition ended the run.
    pub stopped_early: bool,
    /// Time spent in the time loop (compilation and host/device transfers excluded).
    pub compute_time: Duration,
    /// Time spent moving fields between host and device, if any.
    pub transfer_time: Duration,
    /// The strategy and parameters actually used, for summaries (`"overlapped tile=64x64 T=4"`).
    pub plan: String,
}

/// Receives progress during a run (a progress bar, or nothing).
pub trait Progress {
    /// `done` of `total` steps are finished.
    fn advance(&mut self, done: u64, total: u64);
}

impl Progress for () {
    fn advance(&mut self, _done: u64, _total: u64) {}
}

/// Why a backend could not prepare or run a program.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend cannot run this program or these options (what it lacks, and what to do).
    #[error("{0}")]
    Unsupported(String),
    /// The options are invalid (unknown strategy, tile 0, ...).
    #[error("{0}")]
    InvalidOptions(String),
    /// The backend's toolchain or device is unavailable (no compiler, no driver, no device).
    #[error("{0}")]
    Unavailable(String),
    /// Compiling generated code failed; the message names the saved source and the log.
    #[error("{0}")]
    Compile(String),
    /// A failure while running (launch failure, allocation failure, device error).
    #[error("{0}")]
    Runtime(String),
}

/// A prepared (compiled) program, ready to run steps on fields.
pub trait Executable {
    /// Runs steps `first_step .. first_step + steps` on `fields` (the step counter `t` starts at
    /// `first_step`), in place, and reports reductions. Stops early when the stop condition holds.
    fn run(
        &mut self,
        fields: &mut FieldSet,
        first_step: u64,
        steps: u64,
        progress: &mut dyn Progress,
    ) -> Result<RunReport, BackendError>;

    /// A one-line description of the plan (strategy and parameters).
    fn describe(&self) -> String;

    /// Time spent compiling in `prepare` (zero on a cache hit or for interpreters).
    fn compile_time(&self) -> Duration {
        Duration::ZERO
    }
}

/// A way to execute programs: reference, cpu, opencl, cuda.
pub trait Backend {
    /// The name used on the command line (`--backend NAME`).
    fn name(&self) -> &'static str;

    /// Plans and compiles `program` for this backend.
    fn prepare(
        &self,
        program: &BoundProgram,
        options: &RunOptions,
    ) -> Result<Box<dyn Executable>, BackendError>;
}
