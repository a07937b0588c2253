//! The `opencl` backend: an [`OpenClDevice`] (one command queue with profiling, kernels built
//! from OpenCL C and cached per process) under the shared host-program executable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer as ClBuffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::{CL_BLOCKING, cl_mem};
use tessera_codegen::kernel::{DeviceLimits, KernelProgram, Launch, print_opencl};
use tessera_gpu_host::{BoundArg, GpuBackend, GpuDevice, GpuExecutable, HostDevice, distinct_pair};
use tessera_plan::BackendPlan;
use tessera_plan::gpu::GpuPlan;
use tessera_runtime::BackendError;

use crate::build::{build_options, build_program, context_for};
use crate::device::{DeviceInfo, select_device};
use crate::error::OpenClError;

/// The OpenCL backend (`--backend opencl`).
pub type OpenClBackend = GpuBackend<OpenClDevice>;

/// A program lowered, built and ready to run on one OpenCL device.
pub type OpenClExecutable = GpuExecutable<OpenClDevice>;

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

/// One OpenCL device as the host program sees it: a profiling command queue, the built
/// kernels, the allocations, and the first and last kernel events of the running loop (its
/// device time).
pub struct OpenClDevice {
    info: DeviceInfo,
    context: Arc<Context>,
    queue: CommandQueue,
    kernels: HashMap<String, Kernel>,
    allocations: Vec<ClBuffer<u8>>,
    loop_started: Instant,
    first: Option<Event>,
    last: Option<Event>,
}

impl OpenClDevice {
    /// What the device reports about itself.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

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

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

impl GpuDevice for OpenClDevice {
    const BACKEND: &'static str = "opencl";

    fn backend_plan(plan: GpuPlan) -> BackendPlan {
        BackendPlan::Opencl(plan)
    }

    fn open(selection: Option<&str>) -> Result<Self, BackendError> {
        let (info, handle) = select_device(selection)?;
        let context = context_for(&handle)?;
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
        Ok(OpenClDevice {
            info,
            context,
            queue,
            kernels: HashMap::new(),
            allocations: Vec::new(),
            loop_started: Instant::now(),
            first: None,
            last: None,
        })
    }

    fn limits(&self) -> DeviceLimits {
        device_limits(&self.info)
    }

    fn label(&self) -> String {
        self.info.name.clone()
    }

    fn source(program: &KernelProgram) -> String {
        print_opencl(program)
    }

    fn load(&mut self, program: &KernelProgram, source: &str) -> Result<Duration, BackendError> {
        let device = &self.info;
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
        let started = Instant::now();
        let (built, fresh) = build_program(
            &self.context,
            device,
            source,
            build_options(program.plan.exact),
        )?;
        let compile_time = if fresh {
            started.elapsed()
        } else {
            Duration::ZERO
        };
        self.kernels = program
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
        Ok(compile_time)
    }

    /// Zero-length buffers get one byte: OpenCL refuses empty ones.
    fn allocate(&mut self, name: &str, bytes: usize) -> Result<usize, BackendError> {
        let bytes = bytes.max(1);
        // SAFETY: no host pointer is given.
        let mut buffer = unsafe {
            ClBuffer::<u8>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                bytes,
                std::ptr::null_mut(),
            )
        }
        .map_err(|e| {
            let error = OpenClError::call(format!("allocating {bytes} bytes for `{name}`"), e);
            BackendError::Resources(error.to_string())
        })?;
        // SAFETY: the pattern is one byte and `bytes` is the buffer's size.
        unsafe {
            self.queue
                .enqueue_fill_buffer(&mut buffer, &[0xFFu8], 0, bytes, &[])
        }
        .map_err(|e| OpenClError::call(format!("poisoning `{name}`"), e))?;
        self.allocations.push(buffer);
        Ok(self.allocations.len() - 1)
    }

    fn upload(
        &mut self,
        allocation: usize,
        offset: usize,
        data: &[u8],
    ) -> Result<(), BackendError> {
        // SAFETY: the allocation holds at least `offset + data.len()` bytes; the write is
        // blocking (in order after the kernels).
        unsafe {
            self.queue.enqueue_write_buffer(
                &mut self.allocations[allocation],
                CL_BLOCKING,
                offset,
                data,
                &[],
            )
        }
        .map_err(|e| OpenClError::call("uploading a field", e))?;
        Ok(())
    }

    fn start_timing(&mut self) -> Result<(), BackendError> {
        self.first = None;
        self.last = None;
        self.loop_started = Instant::now();
        Ok(())
    }

    fn stop_timing(&mut self) -> Result<Duration, BackendError> {
        self.queue
            .finish()
            .map_err(|e| OpenClError::call("waiting for the kernels", e))?;
        Ok(self
            .profiled_span()
            .unwrap_or_else(|| self.loop_started.elapsed()))
    }
}

impl HostDevice for OpenClDevice {
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
                BoundArg::Int(t) => unsafe { kernel.set_arg(index, &t) },
                BoundArg::Float(v) => unsafe { kernel.set_arg(index, &v) },
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
        let (source, destination) = distinct_pair(&mut self.allocations, from, to);
        // SAFETY: both buffers hold `bytes` bytes (same declaration type and length).
        unsafe {
            self.queue
                .enqueue_copy_buffer(source, destination, 0, 0, bytes, &[])
        }
        .map_err(|e| OpenClError::call("copying a buffer", e))?;
        Ok(())
    }

    fn download(
        &mut self,
        allocation: usize,
        offset: usize,
        data: &mut [u8],
    ) -> Result<(), BackendError> {
        // SAFETY: the allocation holds at least `offset + data.len()` bytes; the read is
        // blocking (in order after the kernels).
        unsafe {
            (self.queue).enqueue_read_buffer(
                &self.allocations[allocation],
                CL_BLOCKING,
                offset,
                data,
                &[],
            )
        }
        .map_err(|e| OpenClError::call("downloading a buffer", e))?;
        Ok(())
    }
}
