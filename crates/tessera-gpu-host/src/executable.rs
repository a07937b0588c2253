//! [`GpuExecutable`]: a program lowered, built and loaded on a [`GpuDevice`], run through the
//! host-program driver with field uploads and downloads timed apart from the device's loop.

use std::time::{Duration, Instant};

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{BufferRole, GpuPlan, KernelProgram};
use tessera_runtime::{BackendError, Executable, FieldSet, Progress, RunOptions, RunReport};

use crate::driver::{HostDevice, HostState, run_steps};
use crate::plan::{lower_for_device, plan_for};

/// What a GPU runtime provides beyond the [`HostDevice`] operations: opening a device,
/// building and loading kernels, buffers, transfers and timing. Allocations are addressed by
/// their index in [`KernelProgram::host`]'s buffer list.
pub trait GpuDevice: HostDevice + Sized {
    /// The backend's name (`opencl`, `cuda`), as `--backend` takes it.
    const BACKEND: &'static str;

    /// Opens the device `selection` names (the runtime's default device without one).
    fn open(selection: Option<&str>) -> Result<Self, BackendError>;

    /// The device's limits, for planning and resource checks.
    fn limits(&self) -> tessera_codegen::kernel::DeviceLimits;

    /// The device's name for reports.
    fn label(&self) -> String;

    /// `program`'s kernels printed in the device's dialect.
    fn source(program: &KernelProgram) -> String;

    /// Builds `source` (which defines `program`'s kernels) and loads its kernels; refuses a
    /// program the device cannot hold. Returns the compilation time (zero on a cache hit).
    fn load(&mut self, program: &KernelProgram, source: &str) -> Result<Duration, BackendError>;

    /// Allocates a buffer of `bytes` bytes (`name` is for messages) filled with all-ones bytes
    /// (NaN for floats, -1 or 255 for integers), so that a cell the host program forgets to
    /// write shows; returns its allocation index (allocations are numbered in order from 0).
    fn allocate(&mut self, name: &str, bytes: usize) -> Result<usize, BackendError>;

    /// Copies `data` into the start of an allocation; done when it returns.
    fn upload(&mut self, allocation: usize, data: &[u8]) -> Result<(), BackendError>;

    /// Marks the start of a time loop.
    fn start_timing(&mut self) -> Result<(), BackendError>;

    /// Waits for the loop's work and returns its device time since [`GpuDevice::start_timing`].
    fn stop_timing(&mut self) -> Result<Duration, BackendError>;
}

/// A program lowered, built and loaded on one device of a GPU runtime.
pub struct GpuExecutable<D> {
    bound: BoundProgram,
    program: KernelProgram,
    device: D,
    allocated: bool,
    state: HostState,
    compile_time: Duration,
}

impl<D: GpuDevice> GpuExecutable<D> {
    /// Opens the device `options` select, plans, lowers, checks the program against the
    /// device's limits and memory (before allocating anything) and builds the kernels.
    pub fn new(bound: &BoundProgram, options: &RunOptions) -> Result<Self, BackendError> {
        if options.threads.is_some() {
            return Err(BackendError::InvalidOptions(format!(
                "the {} backend does not take a thread count; drop `--threads`",
                D::BACKEND
            )));
        }
        let device = D::open(options.device.as_deref())?;
        let plan = plan_for(bound, options, &device.limits())?;
        Self::lowered(bound, &plan, device)
    }

    /// Like [`GpuExecutable::new`] with an explicit plan (every [`GpuPlan`] parameter,
    /// elements per thread and streaming chunks included) on the device `selection` names.
    pub fn with_plan(
        bound: &BoundProgram,
        plan: &GpuPlan,
        selection: Option<&str>,
    ) -> Result<Self, BackendError> {
        plan.check()
            .map_err(|e| BackendError::InvalidOptions(e.to_string()))?;
        Self::lowered(bound, plan, D::open(selection)?)
    }

    /// Runs `program` (lowered from `bound`) with its kernels built from `source`, which must
    /// define them with the printed signatures: for tools and tests that alter generated code
    /// (the barrier-mutation test).
    pub fn from_source(
        bound: &BoundProgram,
        program: KernelProgram,
        source: &str,
        selection: Option<&str>,
    ) -> Result<Self, BackendError> {
        Self::loaded(bound, program, source, D::open(selection)?)
    }

    fn lowered(bound: &BoundProgram, plan: &GpuPlan, device: D) -> Result<Self, BackendError> {
        let program = lower_for_device(bound, plan, &device.limits())?;
        let source = D::source(&program);
        Self::loaded(bound, program, &source, device)
    }

    fn loaded(
        bound: &BoundProgram,
        program: KernelProgram,
        source: &str,
        mut device: D,
    ) -> Result<Self, BackendError> {
        let compile_time = device.load(&program, source)?;
        let state = HostState::new(&program);
        Ok(GpuExecutable {
            bound: bound.clone(),
            program,
            device,
            allocated: false,
            state,
            compile_time,
        })
    }

    /// The lowered program being run.
    pub fn kernel_program(&self) -> &KernelProgram {
        &self.program
    }

    /// The device it runs on.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The (field index, buffer id) of every field buffer.
    fn field_buffers(&self) -> Vec<(usize, usize)> {
        self.program
            .host
            .buffers
            .iter()
            .enumerate()
            .filter_map(|(id, b)| match b.role {
                BufferRole::Field { field } => Some((field.index(), id)),
                _ => None,
            })
            .collect()
    }

    fn check_fields(&self, fields: &FieldSet) -> Result<(), BackendError> {
        if fields.shape != self.program.extents {
            return Err(BackendError::InvalidOptions(format!(
                "the fields have shape {:?}, the program was prepared for {:?}",
                fields.shape, self.program.extents
            )));
        }
        for (field, id) in self.field_buffers() {
            let decl = &self.program.host.buffers[id];
            match fields.buffers.get(field) {
                Some(b) if b.ty() == decl.ty && b.len() == decl.len => {}
                _ => {
                    return Err(BackendError::InvalidOptions(format!(
                        "field `{}` is missing or has the wrong type or size",
                        decl.name
                    )));
                }
            }
        }
        Ok(())
    }
}

impl<D: GpuDevice> Executable for GpuExecutable<D> {
    fn run(
        &mut self,
        fields: &mut FieldSet,
        first_step: u64,
        steps: u64,
        progress: &mut dyn Progress,
    ) -> Result<RunReport, BackendError> {
        self.check_fields(fields)?;
        if !self.allocated {
            for decl in &self.program.host.buffers {
                self.device
                    .allocate(&decl.name, decl.len * decl.ty.size_bytes())?;
            }
            self.allocated = true;
        }
        if first_step == 0 {
            self.state.latest.fill(None);
        }
        self.state.bindings = (0..self.program.host.buffers.len()).collect();
        let field_buffers = self.field_buffers();
        let transfers = Instant::now();
        for &(field, id) in &field_buffers {
            self.device.upload(id, fields.buffers[field].as_bytes())?;
        }
        let mut transfer_time = transfers.elapsed();
        self.device.start_timing()?;
        let outcome = run_steps(
            &self.program,
            &self.bound,
            &mut self.device,
            &mut self.state,
            first_step,
            steps,
            progress,
        )?;
        let compute_time = self.device.stop_timing()?;
        let transfers = Instant::now();
        for &(field, id) in &field_buffers {
            let allocation = self.state.bindings[id];
            self.device
                .download(allocation, fields.buffers[field].as_bytes_mut())?;
        }
        transfer_time += transfers.elapsed();
        Ok(RunReport {
            steps: outcome.steps,
            reductions: outcome.reductions,
            stopped_early: outcome.stopped_early,
            compute_time,
            transfer_time,
            plan: self.describe(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "{} {} on {}",
            D::BACKEND,
            self.program.plan.describe(),
            self.device.label()
        )
    }

    fn compile_time(&self) -> Duration {
        self.compile_time
    }
}

/// The device-to-device copy bandwidth of `device` in GB/s (bytes read plus bytes written per
/// second): `copies` timed copies between two fresh buffers of `bytes` bytes, after one
/// untimed copy.
pub fn copy_bandwidth_gb_s<D: GpuDevice>(
    device: &mut D,
    bytes: usize,
    copies: u32,
) -> Result<f64, BackendError> {
    let from = device.allocate("bandwidth.from", bytes)?;
    let to = device.allocate("bandwidth.to", bytes)?;
    device.copy(from, to)?;
    device.start_timing()?;
    for _ in 0..copies {
        device.copy(from, to)?;
    }
    let seconds = device.stop_timing()?.as_secs_f64();
    if seconds <= 0.0 {
        return Err(BackendError::Runtime(
            "the copies took no measurable time; give the bandwidth explicitly".into(),
        ));
    }
    Ok(2.0 * bytes as f64 * f64::from(copies) / seconds / 1e9)
}

/// Shared and exclusive references to two distinct allocations (for device-to-device copies).
pub fn distinct_pair<T>(items: &mut [T], from: usize, to: usize) -> (&T, &mut T) {
    assert_ne!(from, to, "a copy needs two distinct buffers");
    if from < to {
        let (low, high) = items.split_at_mut(to);
        (&low[from], &mut high[0])
    } else {
        let (low, high) = items.split_at_mut(from);
        (&high[0], &mut low[to])
    }
}
