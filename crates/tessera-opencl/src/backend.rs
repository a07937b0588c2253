//! The `opencl` backend: plans and lowers a program for the selected device, builds the
//! OpenCL source (cached), and executes the host program with timed transfers and kernels.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer as ClBuffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::{CL_BLOCKING, cl_mem};
use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{
    BufferRole, DeviceLimits, GpuPlan, KernelProgram, Launch, print_opencl,
};
use tessera_runtime::{
    Backend, BackendError, Executable, FieldSet, Progress, RunOptions, RunReport,
};

use crate::build::{build_options, build_program, context_for};
use crate::device::{DeviceInfo, select_device};
use crate::error::OpenClError;
use crate::host::{BoundArg, HostDevice, HostState, lower_for_device, plan_for, run_steps};

/// The OpenCL backend (`--backend opencl`).
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenClBackend;

impl Backend for OpenClBackend {
    fn name(&self) -> &'static str {
        "opencl"
    }

    fn prepare(
        &self,
        program: &BoundProgram,
        options: &RunOptions,
    ) -> Result<Box<dyn Executable>, BackendError> {
        Ok(Box::new(OpenClExecutable::new(program, options)?))
    }
}

/// A device's limits in the kernel generator's terms. OpenCL does not report warps,
/// registers or per-multiprocessor residency: GPUs get NVIDIA-like values, CPUs (PoCL) one
/// "thread" per warp and generous register files.
pub fn device_limits(info: &DeviceInfo) -> DeviceLimits {
    let dim = |axis: usize| {
        info.max_work_item_sizes
            .get(axis)
            .map_or(1, |&s| u32::try_from(s).unwrap_or(u32::MAX))
    };
    let max_threads = u32::try_from(info.max_work_group_size).unwrap_or(u32::MAX);
    let local = usize::try_from(info.local_mem_bytes).unwrap_or(usize::MAX);
    DeviceLimits {
        name: info.name.clone(),
        max_threads_per_block: max_threads,
        max_block_dims: [dim(0), dim(1), dim(2)],
        max_grid_dims: [u64::from(u32::MAX); 3],
        shared_bytes_per_block: local,
        shared_bytes_per_sm: local,
        max_threads_per_sm: if info.is_gpu { 2048 } else { max_threads },
        max_blocks_per_sm: if info.is_gpu { 32 } else { 1 },
        registers_per_sm: if info.is_gpu { 65536 } else { u32::MAX },
        max_registers_per_thread: 255,
        warp_size: if info.is_gpu { 32 } else { 1 },
        multiprocessors: info.compute_units,
        global_bytes: info.global_mem_bytes,
    }
}

/// A program lowered, built and ready to run on one OpenCL device.
pub struct OpenClExecutable {
    bound: BoundProgram,
    program: KernelProgram,
    device: DeviceInfo,
    context: Arc<Context>,
    queue: CommandQueue,
    kernels: HashMap<String, Kernel>,
    allocations: Vec<ClBuffer<u8>>,
    state: HostState,
    compile_time: Duration,
}

impl OpenClExecutable {
    /// Selects the device, plans, lowers, checks the program against the device's limits and
    /// memory (before allocating anything) and builds the kernels.
    pub fn new(
        bound: &BoundProgram,
        options: &RunOptions,
    ) -> Result<OpenClExecutable, BackendError> {
        if options.threads.is_some() {
            return Err(BackendError::InvalidOptions(
                "the OpenCL backend does not take a thread count; drop `--threads`".into(),
            ));
        }
        let (device, _) = select_device(options.device.as_deref())?;
        let plan = plan_for(bound, options, &device_limits(&device))?;
        OpenClExecutable::with_plan(bound, &plan, options.device.as_deref())
    }

    /// Like [`OpenClExecutable::new`] with an explicit plan (every [`GpuPlan`] parameter,
    /// elements per thread and streaming chunks included) on the device `selection` names.
    pub fn with_plan(
        bound: &BoundProgram,
        plan: &GpuPlan,
        selection: Option<&str>,
    ) -> Result<OpenClExecutable, BackendError> {
        plan.check()
            .map_err(|e| BackendError::InvalidOptions(e.to_string()))?;
        let (device, _) = select_device(selection)?;
        let program = lower_for_device(bound, plan, &device_limits(&device))?;
        let source = print_opencl(&program);
        OpenClExecutable::from_source(bound, program, &source, selection)
    }

    /// Runs `program` (lowered from `bound`) with its kernels built from `source`, which must
    /// define them with the printed signatures: for tools and tests that alter generated code
    /// (the barrier-mutation test).
    pub fn from_source(
        bound: &BoundProgram,
        program: KernelProgram,
        source: &str,
        selection: Option<&str>,
    ) -> Result<OpenClExecutable, BackendError> {
        let (device, handle) = select_device(selection)?;
        let plan = program.plan.clone();
        if let Some(buffer) = program
            .host
            .buffers
            .iter()
            .find(|b| (b.len * b.ty.size_bytes()) as u64 > device.max_alloc_bytes)
        {
            return Err(OpenClError::TooLarge(format!(
                "buffer `{}` needs {:.2} GiB in one allocation, {} allows {:.2} GiB; use a smaller grid",
                buffer.name,
                gib((buffer.len * buffer.ty.size_bytes()) as u64),
                device.name,
                gib(device.max_alloc_bytes)
            ))
            .into());
        }
        if program.uses_f64() && !device.has_fp64 {
            return Err(OpenClError::Unsupported(format!(
                "the program uses f64, which {} does not support (no cl_khr_fp64); choose another device or f32 fields",
                device.name
            ))
            .into());
        }
        let context = context_for(&handle)?;
        let started = Instant::now();
        let (built, fresh) = build_program(&context, &device, source, build_options(plan.exact))?;
        let compile_time = if fresh {
            started.elapsed()
        } else {
            Duration::ZERO
        };
        let kernels = program
            .kernels
            .iter()
            .map(|k| {
                Ok((
                    k.name.clone(),
                    Kernel::create(&built, &k.name).map_err(|e| {
                        OpenClError::call(format!("creating kernel `{}`", k.name), e)
                    })?,
                ))
            })
            .collect::<Result<HashMap<_, _>, OpenClError>>()?;
        // SAFETY: the context is valid; the properties are a plain flag.
        let queue = unsafe {
            CommandQueue::create_with_properties(
                &context,
                handle.id(),
                CL_QUEUE_PROFILING_ENABLE,
                0,
            )
        }
        .map_err(|e| OpenClError::call("creating a command queue", e))?;
        let state = HostState::new(&program);
        Ok(OpenClExecutable {
            bound: bound.clone(),
            program,
            device,
            context,
            queue,
            kernels,
            allocations: Vec::new(),
            state,
            compile_time,
        })
    }

    /// The lowered program being run.
    pub fn kernel_program(&self) -> &KernelProgram {
        &self.program
    }

    /// The device it runs on.
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// Allocates every buffer once (zero-length buffers get one byte: OpenCL refuses empty ones)
    /// and fills it with all-ones bytes (NaN for floats, -1 or 255 for integers), so that a
    /// cell the host program forgets to write shows in the results.
    fn allocate(&mut self) -> Result<(), OpenClError> {
        if !self.allocations.is_empty() {
            return Ok(());
        }
        for decl in &self.program.host.buffers {
            let bytes = (decl.len * decl.ty.size_bytes()).max(1);
            // SAFETY: no host pointer is given.
            let buffer = unsafe {
                ClBuffer::<u8>::create(
                    &self.context,
                    CL_MEM_READ_WRITE,
                    bytes,
                    std::ptr::null_mut(),
                )
            }
            .map_err(|e| {
                OpenClError::call(format!("allocating {bytes} bytes for `{}`", decl.name), e)
            })?;
            self.allocations.push(buffer);
            let buffer = self.allocations.last_mut().expect("just pushed");
            // SAFETY: the pattern is one byte and `bytes` is the buffer's size.
            unsafe {
                self.queue
                    .enqueue_fill_buffer(buffer, &[0xFFu8], 0, bytes, &[])
            }
            .map_err(|e| OpenClError::call(format!("poisoning `{}`", decl.name), e))?;
        }
        Ok(())
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

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

impl Executable for OpenClExecutable {
    fn run(
        &mut self,
        fields: &mut FieldSet,
        first_step: u64,
        steps: u64,
        progress: &mut dyn Progress,
    ) -> Result<RunReport, BackendError> {
        self.check_fields(fields)?;
        self.allocate()?;
        if first_step == 0 {
            self.state.latest.fill(None);
        }
        self.state.bindings = (0..self.program.host.buffers.len()).collect();
        let transfers = Instant::now();
        for (field, id) in self.field_buffers() {
            let data = fields.buffers[field].as_bytes();
            // SAFETY: the allocation holds at least `data.len()` bytes; the write is blocking.
            unsafe {
                self.queue.enqueue_write_buffer(
                    &mut self.allocations[id],
                    CL_BLOCKING,
                    0,
                    data,
                    &[],
                )
            }
            .map_err(|e| OpenClError::call("uploading a field", e))?;
        }
        let mut transfer_time = transfers.elapsed();
        let loop_started = Instant::now();
        let mut device = QueueDevice {
            queue: &self.queue,
            kernels: &self.kernels,
            allocations: &mut self.allocations,
            first: None,
            last: None,
        };
        let outcome = run_steps(
            &self.program,
            &self.bound,
            &mut device,
            &mut self.state,
            first_step,
            steps,
            progress,
        )?;
        self.queue
            .finish()
            .map_err(|e| OpenClError::call("waiting for the kernels", e))?;
        let compute_time = device
            .profiled_span()
            .unwrap_or_else(|| loop_started.elapsed());
        let transfers = Instant::now();
        for (field, id) in self.field_buffers() {
            let allocation = self.state.bindings[id];
            let data = fields.buffers[field].as_bytes_mut();
            // SAFETY: the allocation holds `data.len()` bytes; the read is blocking.
            unsafe {
                self.queue.enqueue_read_buffer(
                    &self.allocations[allocation],
                    CL_BLOCKING,
                    0,
                    data,
                    &[],
                )
            }
            .map_err(|e| OpenClError::call("downloading a field", e))?;
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
            "opencl {} on {}",
            self.program.plan.describe(),
            self.device.name
        )
    }

    fn compile_time(&self) -> Duration {
        self.compile_time
    }
}

/// The host program's view of one command queue; remembers the first and last kernel events
/// to time the loop on the device.
struct QueueDevice<'a> {
    queue: &'a CommandQueue,
    kernels: &'a HashMap<String, Kernel>,
    allocations: &'a mut Vec<ClBuffer<u8>>,
    first: Option<Event>,
    last: Option<Event>,
}

impl QueueDevice<'_> {
    /// Device time from the first kernel's start to the last one's end (queue finished).
    fn profiled_span(&self) -> Option<Duration> {
        let start = self.first.as_ref()?.profiling_command_start().ok()?;
        let end = self
            .last
            .as_ref()
            .or(self.first.as_ref())?
            .profiling_command_end()
            .ok()?;
        Some(Duration::from_nanos(end.saturating_sub(start)))
    }
}

impl HostDevice for QueueDevice<'_> {
    fn launch(&mut self, launch: &Launch, args: &[BoundArg]) -> Result<(), BackendError> {
        let kernel = self.kernels.get(&launch.kernel).ok_or_else(|| {
            BackendError::Runtime(format!(
                "the host program launches an unknown kernel `{}`",
                launch.kernel
            ))
        })?;
        let during = || format!("setting the arguments of `{}`", launch.kernel);
        for (index, arg) in args.iter().enumerate() {
            let index = u32::try_from(index).map_err(|_| BackendError::Runtime(during()))?;
            // SAFETY: argument kinds follow the kernel's parameters (the host program's contract).
            let set = match *arg {
                BoundArg::Allocation(a) => {
                    let mem: cl_mem = self.allocations[a].get();
                    unsafe { kernel.set_arg(index, &mem) }
                }
                BoundArg::Step(t) => unsafe { kernel.set_arg(index, &t) },
            };
            set.map_err(|e| OpenClError::call(during(), e))?;
        }
        let mut global = [0usize; 3];
        let mut local = [0usize; 3];
        for axis in 0..3 {
            let blocks = usize::try_from(launch.grid[axis])
                .map_err(|_| BackendError::Unsupported("launch grid too large".into()))?;
            local[axis] = launch.block[axis] as usize;
            global[axis] = blocks.checked_mul(local[axis]).ok_or_else(|| {
                BackendError::Unsupported(format!(
                    "the launch of `{}` has too many work-items",
                    launch.kernel
                ))
            })?;
        }
        if global.contains(&0) {
            return Ok(());
        }
        // SAFETY: the sizes are valid 3-element arrays; the kernel's arguments are all set.
        let event = unsafe {
            self.queue.enqueue_nd_range_kernel(
                kernel.get(),
                3,
                std::ptr::null(),
                global.as_ptr(),
                local.as_ptr(),
                &[],
            )
        }
        .map_err(|e| {
            OpenClError::call(
                format!(
                    "launching `{}` ({global:?} work-items in groups of {local:?})",
                    launch.kernel
                ),
                e,
            )
        })?;
        if self.first.is_none() {
            self.first = Some(event);
        } else {
            self.last = Some(event);
        }
        Ok(())
    }

    fn copy(&mut self, from: usize, to: usize) -> Result<(), BackendError> {
        let bytes = self.allocations[from]
            .size()
            .map_err(|e| OpenClError::call("reading a buffer's size", e))?;
        let (source, destination) = pair(self.allocations, from, to);
        // SAFETY: both buffers hold `bytes` bytes (same declaration type and length).
        unsafe {
            self.queue
                .enqueue_copy_buffer(source, destination, 0, 0, bytes, &[])
        }
        .map_err(|e| OpenClError::call("copying a buffer", e))?;
        Ok(())
    }

    fn read_f64(&mut self, allocation: usize, count: usize) -> Result<Vec<f64>, BackendError> {
        let mut values = vec![0f64; count];
        if count == 0 {
            return Ok(values);
        }
        let bytes = values.len() * 8;
        let mut raw = vec![0u8; bytes];
        // SAFETY: the allocation holds `count` f64 values; the read is blocking (in order after the kernels).
        unsafe {
            self.queue.enqueue_read_buffer(
                &self.allocations[allocation],
                CL_BLOCKING,
                0,
                &mut raw,
                &[],
            )
        }
        .map_err(|e| OpenClError::call("reading reduction partials", e))?;
        for (value, chunk) in values.iter_mut().zip(raw.chunks_exact(8)) {
            *value = f64::from_ne_bytes(chunk.try_into().expect("8-byte chunk"));
        }
        Ok(values)
    }
}

/// Shared and exclusive references to two distinct allocations.
fn pair<T>(items: &mut [T], from: usize, to: usize) -> (&T, &mut T) {
    assert_ne!(from, to, "a copy needs two distinct buffers");
    if from < to {
        let (low, high) = items.split_at_mut(to);
        (&low[from], &mut high[0])
    } else {
        let (low, high) = items.split_at_mut(from);
        (&high[0], &mut low[to])
    }
}
