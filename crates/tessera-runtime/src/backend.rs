//! The interface every backend implements: plan, emit and explain a program; prepare
//! (compile) it once under a plan; then answer the schedule driver's requests during a run
//! ([`ActiveRun`]: run this pass, does `until` hold, the fields now).

use std::time::Duration;

use tessera_analysis::BoundProgram;
use tessera_analysis::region::Rect;
use tessera_ir::{Id, Receiver};
use tessera_plan::{DeviceSelection, Plan, PlanError, PlanRequest};

use crate::boxes::{pack_box, unpack_box};
use crate::buffer::{Buffer, FieldSet};
use crate::driver::{Observer, RunReport, RunState, drive};
use crate::memory::MemoryEstimate;
use crate::reduce::RowPartials;
use crate::schedule::Pass;

/// Why a backend could not plan, prepare or run a program.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The request or plan cannot be planned or does not fit the program, backend or device.
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// The backend cannot run this program or these options (what it lacks, and what to do).
    #[error("{0}")]
    Unsupported(String),
    /// The options or the fields given are invalid (wrong shape, a flag the backend lacks).
    #[error("{0}")]
    InvalidOptions(String),
    /// The backend's toolchain or device is unavailable (no compiler, no driver, no device, an
    /// unwritable kernel cache).
    #[error("{0}")]
    Unavailable(String),
    /// The machine lacks the memory the run needs (host scratch or device buffers).
    #[error("{0}")]
    Resources(String),
    /// Compiling generated code failed; the message names the saved source and the log.
    #[error("{0}")]
    Compile(String),
    /// A failure of Tessera itself while running (a failed launch, a missing symbol).
    #[error("{0}")]
    Runtime(String),
}

/// The source code a backend generates for a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The text.
    pub text: String,
    /// The file extension its language uses (`c`, `cu`, `cl`; `tess` for the printed IR).
    pub extension: &'static str,
}

/// A backend's description of a plan, for `tessera explain`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explanation {
    /// What the plan was made for, after the plan in its line (` for NVIDIA H100 (...)`).
    pub target: String,
    /// Lines about the plan's kernels or passes (resources, occupancy, traffic per kernel).
    pub lines: Vec<String>,
    /// Bytes one updated point moves per step in the backend's traffic model.
    pub bytes_per_point: f64,
    /// How the traffic model counts.
    pub traffic_model: String,
    /// What the roofline means for this plan (temporal blocking can beat it).
    pub roofline_note: String,
}

/// What a backend's cost model predicts for a plan, for `tessera bench` to print beside the
/// measured rate.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Points updated per second, in billions.
    pub gcells_per_s: f64,
    /// What bounds it, in words.
    pub bound: String,
    /// The kind of kernel the model's efficiency is kept for (`overlapped`, `streaming-time`).
    pub kernel_class: String,
    /// The grid's dimension.
    pub dims: usize,
    /// The efficiency the model applied.
    pub efficiency: f64,
    /// Whether that efficiency was measured (else assumed).
    pub measured: bool,
}

/// A memory bandwidth and how it was obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct Bandwidth {
    /// Gigabytes per second (reads plus writes).
    pub gb_s: f64,
    /// How it was measured (`STREAM triad, best of 5 runs on 2 threads`).
    pub how: String,
}

/// A way to execute programs: reference, cpu, opencl, cuda.
pub trait Backend: Send + Sync {
    /// The name used on the command line (`--backend NAME`) and in plans.
    fn name(&self) -> &'static str;

    /// The plan a run of `program` uses for `request`: the backend's default choices with
    /// the request's overrides, validated.
    fn plan(&self, program: &BoundProgram, request: &PlanRequest) -> Result<Plan, BackendError>;

    /// The source code `plan` compiles for `program` (the printed IR for interpreters),
    /// checked against the device `device` selects (GPU backends: its limits, or a built-in
    /// table's, or a typical GPU's).
    fn emit(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Source, BackendError>;

    /// A description of `plan` for `program` on the device `device` selects.
    fn explain(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Explanation, BackendError>;

    /// What the backend's cost model predicts for `plan` on the device `device` selects; by
    /// default none (the CPU backends plan with a model of the machine, not a predicted rate).
    fn predict(
        &self,
        _program: &BoundProgram,
        _plan: &Plan,
        _device: &DeviceSelection,
    ) -> Result<Option<Prediction>, BackendError> {
        Ok(None)
    }

    /// The memory bandwidth that bounds the backend's runs, measured (`threads`: CPU threads).
    fn bandwidth(
        &self,
        device: &DeviceSelection,
        threads: Option<usize>,
    ) -> Result<Bandwidth, BackendError>;

    /// The memory a run of `plan` needs, by part, and the device's memory (see
    /// [`MemoryEstimate`]); by default the fields on the host.
    fn memory(
        &self,
        program: &BoundProgram,
        _plan: &Plan,
        _device: &DeviceSelection,
    ) -> Result<MemoryEstimate, BackendError> {
        Ok(MemoryEstimate::fields(program))
    }

    /// Checks `plan` against `program` and the device (before allocating anything: a plan
    /// that does not fit is refused naming the plan field, its value and the limit), then
    /// compiles it.
    fn prepare(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Box<dyn Executable>, BackendError>;

    /// Plans `program` for `request` and prepares that plan on the device it selects.
    fn plan_and_prepare(
        &self,
        program: &BoundProgram,
        request: &PlanRequest,
    ) -> Result<Box<dyn Executable>, BackendError> {
        let plan = self.plan(program, request)?;
        self.prepare(program, &plan, &request.device)
    }
}

/// A prepared (compiled) program: starts runs on fields, which the schedule driver
/// ([`drive`]) then steps. `Send`: a prepared program may be kept and run on another thread
/// (the Python package runs it with the GIL released).
pub trait Executable: Send {
    /// The program it runs.
    fn program(&self) -> &BoundProgram;

    /// The plan it runs.
    fn plan(&self) -> &Plan;

    /// One line: the backend, the plan and where it runs (`cuda tiled block=32x8x1 E=1 on
    /// NVIDIA H100`).
    fn describe(&self) -> String {
        let plan = self.plan();
        format!("{} {}", plan.backend_name(), plan.describe())
    }

    /// Time spent compiling in `prepare` (zero on a cache hit or for interpreters).
    fn compile_time(&self) -> Duration {
        Duration::ZERO
    }

    /// Starts a run on `fields` (checked against the program; copied to the device where the
    /// backend has one). The run ends with [`ActiveRun::finish`].
    fn start<'a>(
        &'a mut self,
        fields: &'a mut FieldSet,
    ) -> Result<Box<dyn ActiveRun + 'a>, BackendError>;

    /// Runs steps `first_step .. first_step + steps` on `fields`, in place, through the
    /// schedule driver, from a fresh [`RunState`] (use [`drive`] to carry reduction values
    /// from one call to the next).
    fn run(
        &mut self,
        fields: &mut FieldSet,
        first_step: u64,
        steps: u64,
        observer: &mut dyn Observer,
    ) -> Result<RunReport, BackendError> {
        let mut state = RunState::new(self.program().program());
        drive(self, fields, first_step, steps, &mut state, observer)
    }
}

/// A run in progress: the backend's side of the schedule driver.
pub trait ActiveRun {
    /// Runs the pass's steps; at its last step also computes the pass's reductions, whose
    /// row partials it returns in the pass's order (the driver combines them in the fixed
    /// order of [`crate::reduce`]).
    fn run_pass(&mut self, pass: &Pass) -> Result<Vec<RowPartials>, BackendError>;

    /// Whether the program's `until` condition holds for the latest reduction values (by
    /// reduction index; every value the condition names is present), in exact semantics.
    fn until_holds(&mut self, latest: &[Option<f64>]) -> Result<bool, BackendError>;

    /// The fields as the passes so far left them (copied from the device where they live
    /// there).
    fn fields(&mut self) -> Result<&FieldSet, BackendError>;

    /// The fields as the passes so far left them, writable: the next pass starts from them as
    /// they are then (a distributed run writes the halos it receives here between passes).
    fn fields_mut(&mut self) -> Result<&mut FieldSet, BackendError>;

    /// The bytes of the box `rect` of every field as the passes so far left them (the layout
    /// of [`crate::boxes::pack_box`]): a halo a distributed run sends.
    fn read_box(&mut self, rect: &Rect) -> Result<Vec<u8>, BackendError> {
        Ok(pack_box(self.fields()?, rect))
    }

    /// Writes bytes of [`ActiveRun::read_box`]'s layout into the box `rect` of every field; the
    /// next pass starts from them (a halo a distributed run receives).
    fn write_box(&mut self, rect: &Rect, bytes: &[u8]) -> Result<(), BackendError> {
        unpack_box(bytes, self.fields_mut()?, rect);
        Ok(())
    }

    /// The current values of `receiver`'s field at the linear indices `points` (row-major,
    /// in the grid; the same `points` at every call of a run), without copying the whole
    /// field: the backend reads those elements where the field lives.
    fn sample(&mut self, receiver: Id<Receiver>, points: &[usize]) -> Result<Buffer, BackendError>;

    /// Ends the run with the results in the fields; returns the device's own timing of the
    /// passes where it has one, and the time spent moving fields.
    fn finish(self: Box<Self>) -> Result<RunTimes, BackendError>;
}

/// What a backend measured of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTimes {
    /// The passes' time on the device (`None`: the driver's wall clock counts).
    pub compute: Option<Duration>,
    /// Time spent moving fields between host and device.
    pub transfer: Duration,
    /// Each rank's times, by rank, in a distributed run (empty otherwise).
    pub ranks: Vec<RankTimes>,
}

/// Where one rank of a distributed run spent its time loop.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RankTimes {
    /// Running its passes.
    pub compute: Duration,
    /// Packing, sending and unpacking halos.
    pub exchange: Duration,
    /// Blocked on other ranks: halos not yet arrived, reduction rows and fields gathered.
    pub wait: Duration,
}
