//! The `cuda` backend: plans and lowers a program for the selected device, compiles it with
//! NVRTC for the device's architecture (PTX cached per process), and executes the host
//! program on one stream, timing the loop with events and transfers on the host clock.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtrMut, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{BufferRole, GpuPlan, KernelProgram, Launch, print_cuda};
use tessera_opencl::host::{
    BoundArg, HostDevice, HostState, lower_for_device, plan_for, run_steps,
};
use tessera_runtime::{
    Backend, BackendError, Executable, FieldSet, Progress, RunOptions, RunReport,
};

use crate::device::{CudaDevice, select_device};
use crate::error::CudaError;
use crate::modules::cached_ptx;

/// The CUDA backend (`--backend cuda`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaBackend;

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn prepare(
        &self,
        program: &BoundProgram,
        options: &RunOptions,
    ) -> Result<Box<dyn Executable>, BackendError> {
        Ok(Box::new(CudaExecutable::new(program, options)?))
    }
}

/// A program lowered, compiled and loaded on one CUDA device.
pub struct CudaExecutable {
    bound: BoundProgram,
    program: KernelProgram,
    device: CudaDevice,
    stream: Arc<CudaStream>,
    functions: HashMap<String, CudaFunction>,
    allocations: Vec<CudaSlice<u8>>,
    state: HostState,
    compile_time: Duration,
}

impl CudaExecutable {
    /// Selects the device, plans, lowers, checks the program against the device's limits and
    /// memory (before allocating anything), compiles and loads the kernels.
    pub fn new(bound: &BoundProgram, options: &RunOptions) -> Result<CudaExecutable, BackendError> {
        if options.threads.is_some() {
            return Err(BackendError::InvalidOptions(
                "the CUDA backend does not take a thread count; drop `--threads`".into(),
            ));
        }
        let device = select_device(options.device.as_deref())?;
        let plan = plan_for(bound, options, &device.limits)?;
        CudaExecutable::on_device(bound, &plan, device)
    }

    /// Like [`CudaExecutable::new`] with an explicit plan on the device `selection` names.
    pub fn with_plan(
        bound: &BoundProgram,
        plan: &GpuPlan,
        selection: Option<&str>,
    ) -> Result<CudaExecutable, BackendError> {
        plan.check()
            .map_err(|e| BackendError::InvalidOptions(e.to_string()))?;
        CudaExecutable::on_device(bound, plan, select_device(selection)?)
    }

    fn on_device(
        bound: &BoundProgram,
        plan: &GpuPlan,
        device: CudaDevice,
    ) -> Result<CudaExecutable, BackendError> {
        let program = lower_for_device(bound, plan, &device.limits)?;
        let source = print_cuda(&program);
        let started = Instant::now();
        let (ptx, fresh) = cached_ptx(&source, &device.arch, plan.exact)?;
        let module = device
            .context
            .load_module(Ptx::from_src(ptx.to_string()))
            .map_err(|e| CudaError::driver("loading the compiled module", e))?;
        let compile_time = if fresh {
            started.elapsed()
        } else {
            Duration::ZERO
        };
        let functions = program
            .kernels
            .iter()
            .map(|k| {
                let function = module
                    .load_function(&k.name)
                    .map_err(|e| CudaError::driver(format!("finding kernel `{}`", k.name), e))?;
                Ok((k.name.clone(), function))
            })
            .collect::<Result<HashMap<_, _>, CudaError>>()?;
        let stream = device
            .context
            .new_stream()
            .map_err(|e| CudaError::driver("creating a stream", e))?;
        let state = HostState::new(&program);
        Ok(CudaExecutable {
            bound: bound.clone(),
            program,
            device,
            stream,
            functions,
            allocations: Vec::new(),
            state,
            compile_time,
        })
    }

    /// The lowered program being run.
    pub fn kernel_program(&self) -> &KernelProgram {
        &self.program
    }

    /// Allocates every buffer once, filled with all-ones bytes (NaN for floats), so that a
    /// cell the host program forgets to write shows in the results.
    fn allocate(&mut self) -> Result<(), CudaError> {
        if !self.allocations.is_empty() {
            return Ok(());
        }
        for decl in &self.program.host.buffers {
            let bytes = (decl.len * decl.ty.size_bytes()).max(1);
            let during = || format!("allocating {bytes} bytes for `{}`", decl.name);
            // SAFETY: the memory is filled right below, before any use.
            let mut buffer = unsafe { self.stream.alloc::<u8>(bytes) }
                .map_err(|e| CudaError::driver(during(), e))?;
            let (pointer, record_write) = buffer.device_ptr_mut(&self.stream);
            // SAFETY: `pointer` addresses `bytes` bytes of this allocation, on this stream.
            unsafe {
                cudarc::driver::result::memset_d8_async(
                    pointer,
                    0xFF,
                    bytes,
                    self.stream.cu_stream(),
                )
            }
            .map_err(|e| CudaError::driver(during(), e))?;
            drop(record_write);
            self.allocations.push(buffer);
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

impl Executable for CudaExecutable {
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
            self.stream
                .memcpy_htod(fields.buffers[field].as_bytes(), &mut self.allocations[id])
                .map_err(|e| CudaError::driver("uploading a field", e))?;
        }
        self.stream
            .synchronize()
            .map_err(|e| CudaError::driver("uploading fields", e))?;
        let mut transfer_time = transfers.elapsed();
        let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .stream
            .record_event(timing)
            .map_err(|e| CudaError::driver("recording an event", e))?;
        let mut device = StreamDevice {
            stream: &self.stream,
            functions: &self.functions,
            allocations: &mut self.allocations,
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
        let end = self
            .stream
            .record_event(timing)
            .map_err(|e| CudaError::driver("recording an event", e))?;
        end.synchronize()
            .map_err(|e| CudaError::driver("waiting for the kernels", e))?;
        let milliseconds = start
            .elapsed_ms(&end)
            .map_err(|e| CudaError::driver("timing the kernels", e))?;
        let transfers = Instant::now();
        for (field, id) in self.field_buffers() {
            let allocation = self.state.bindings[id];
            self.stream
                .memcpy_dtoh(
                    &self.allocations[allocation],
                    fields.buffers[field].as_bytes_mut(),
                )
                .map_err(|e| CudaError::driver("downloading a field", e))?;
        }
        self.stream
            .synchronize()
            .map_err(|e| CudaError::driver("downloading fields", e))?;
        transfer_time += transfers.elapsed();
        Ok(RunReport {
            steps: outcome.steps,
            reductions: outcome.reductions,
            stopped_early: outcome.stopped_early,
            compute_time: Duration::from_secs_f64(f64::from(milliseconds.max(0.0)) / 1e3),
            transfer_time,
            plan: self.describe(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "cuda {} on {} ({})",
            self.program.plan.describe(),
            self.device.name,
            self.device.arch
        )
    }

    fn compile_time(&self) -> Duration {
        self.compile_time
    }
}

/// The host program's view of one stream.
struct StreamDevice<'a> {
    stream: &'a Arc<CudaStream>,
    functions: &'a HashMap<String, CudaFunction>,
    allocations: &'a mut Vec<CudaSlice<u8>>,
}

impl HostDevice for StreamDevice<'_> {
    fn launch(&mut self, launch: &Launch, args: &[BoundArg]) -> Result<(), BackendError> {
        let function = self.functions.get(&launch.kernel).ok_or_else(|| {
            BackendError::Runtime(format!(
                "the host program launches an unknown kernel `{}`",
                launch.kernel
            ))
        })?;
        let too_many = |_| {
            BackendError::Unsupported(format!(
                "the launch of `{}` has too many blocks",
                launch.kernel
            ))
        };
        let grid = [
            u32::try_from(launch.grid[0]).map_err(too_many)?,
            u32::try_from(launch.grid[1]).map_err(too_many)?,
            u32::try_from(launch.grid[2]).map_err(too_many)?,
        ];
        if grid.contains(&0) {
            return Ok(());
        }
        let steps: Vec<i64> = args
            .iter()
            .map(|a| if let BoundArg::Step(t) = a { *t } else { 0 })
            .collect();
        let allocations: &[CudaSlice<u8>] = self.allocations;
        let mut builder = self.stream.launch_builder(function);
        for (arg, step) in args.iter().zip(&steps) {
            match arg {
                BoundArg::Allocation(a) => builder.arg(&allocations[*a]),
                BoundArg::Step(_) => builder.arg(step),
            };
        }
        let config = LaunchConfig {
            grid_dim: (grid[0], grid[1], grid[2]),
            block_dim: (launch.block[0], launch.block[1], launch.block[2]),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments follow the kernel's parameters (the host program's contract) and
        // every buffer holds the elements the kernel indexes.
        unsafe { builder.launch(config) }
            .map_err(|e| CudaError::driver(format!("launching `{}`", launch.kernel), e))?;
        Ok(())
    }

    fn copy(&mut self, from: usize, to: usize) -> Result<(), BackendError> {
        let (source, destination) = pair(self.allocations, from, to);
        self.stream
            .memcpy_dtod(source, destination)
            .map_err(|e| CudaError::driver("copying a buffer", e))?;
        Ok(())
    }

    fn read_f64(&mut self, allocation: usize, count: usize) -> Result<Vec<f64>, BackendError> {
        let mut raw = vec![0u8; count * 8];
        if count > 0 {
            let view = self.allocations[allocation].slice(0..count * 8);
            self.stream
                .memcpy_dtoh(&view, &mut raw)
                .map_err(|e| CudaError::driver("reading reduction partials", e))?;
            self.stream
                .synchronize()
                .map_err(|e| CudaError::driver("reading reduction partials", e))?;
        }
        Ok(raw
            .chunks_exact(8)
            .map(|c| f64::from_ne_bytes(c.try_into().expect("8-byte chunk")))
            .collect())
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
