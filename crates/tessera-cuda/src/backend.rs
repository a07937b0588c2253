//! The `cuda` backend: a [`CudaStreamDevice`] (kernels compiled with NVRTC for the device's
//! architecture, PTX cached per process, one stream timed with events, recorded steps
//! replayed as CUDA graphs) under the shared host-program executable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::{
    CUevent_flags, CUfunction_attribute, CUgraphInstantiate_flags, CUstreamCaptureMode,
};
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaGraph, CudaSlice, CudaStream, DevicePtrMut, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use tessera_codegen::kernel::{DeviceLimits, Kernel, KernelProgram, Launch, print_cuda};
use tessera_gpu_host::replay::issue;
use tessera_gpu_host::{
    BoundArg, GpuBackend, GpuDevice, GpuExecutable, HostDevice, KernelRegisters, Recording,
    distinct_pair,
};
use tessera_plan::BackendPlan;
use tessera_plan::gpu::GpuPlan;
use tessera_runtime::BackendError;

use crate::device::{CudaDevice, select_device};
use crate::error::CudaError;
use crate::modules::cached_ptx;

/// The CUDA backend (`--backend cuda`).
pub type CudaBackend = GpuBackend<CudaStreamDevice>;

/// A program lowered, compiled and loaded on one CUDA device.
pub type CudaExecutable = GpuExecutable<CudaStreamDevice>;

/// A loaded kernel and the dynamic shared memory each launch of it passes.
struct LoadedKernel {
    function: CudaFunction,
    dynamic_shared_bytes: u32,
}

/// Set to `0` to issue recorded steps launch by launch instead of as CUDA graphs (to measure
/// what the graphs save).
pub const GRAPHS_VARIABLE: &str = "TESSERA_CUDA_GRAPHS";

/// A graph owned by one device: used through `&mut` only, never from two threads at once.
struct OwnedGraph(CudaGraph);

// SAFETY: CUDA graphs are not internally synchronized, so they must not be used from two
// threads at once, but nothing ties one to the thread that made it (`CudaGraph::launch` binds
// the context to the calling thread). An `OwnedGraph` is reached only through its device's
// `&mut`, so moving it to another thread with the device is sound (it is not `Sync`).
unsafe impl Send for OwnedGraph {}

/// One CUDA device as the host program sees it: a stream, the loaded kernels, the allocations,
/// the graphs built from recorded steps and the event that started the running loop.
pub struct CudaStreamDevice {
    device: CudaDevice,
    stream: Arc<CudaStream>,
    functions: HashMap<String, LoadedKernel>,
    allocations: Vec<CudaSlice<u8>>,
    /// Whether recordings run as graphs (else launch by launch, see [`GRAPHS_VARIABLE`]).
    use_graphs: bool,
    /// The graphs built from recordings, by recording id.
    graphs: HashMap<u64, OwnedGraph>,
    loop_start: Option<CudaEvent>,
}

impl CudaStreamDevice {
    /// The selected device.
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    fn record_event(&self) -> Result<CudaEvent, CudaError> {
        self.stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| CudaError::driver("recording an event", e))
    }

    fn synchronize(&self, during: &str) -> Result<(), CudaError> {
        self.stream
            .synchronize()
            .map_err(|e| CudaError::driver(during, e))
    }

    /// `recording` captured from the stream into an instantiated graph.
    fn capture(&mut self, recording: &Recording) -> Result<CudaGraph, BackendError> {
        let during = |what: &str| format!("{what} a CUDA graph of {} steps", recording.steps);
        (self.stream)
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| CudaError::driver(during("starting"), e))?;
        let issued = issue(self, recording);
        // The capture ends even when an operation failed, so the stream stays usable.
        let graph = self.stream.end_capture(CUgraphInstantiate_flags(0));
        issued?;
        let graph = graph
            .map_err(|e| CudaError::driver(during("instantiating"), e))?
            .ok_or_else(|| BackendError::Runtime(during("capturing no operation into")))?;
        graph
            .upload()
            .map_err(|e| CudaError::driver(during("uploading"), e))?;
        Ok(graph)
    }
}

impl GpuDevice for CudaStreamDevice {
    const BACKEND: &'static str = "cuda";

    fn backend_plan(plan: GpuPlan) -> BackendPlan {
        BackendPlan::Cuda(plan)
    }

    fn kernel_registers(
        program: &KernelProgram,
        device: Option<&Self>,
    ) -> Result<(KernelRegisters, String), String> {
        let arch = device.map_or_else(|| "sm_90".to_string(), |d| d.device.arch.clone());
        let source = print_cuda(program);
        let unavailable = |e: &dyn std::fmt::Display| format!("ptxas numbers unavailable: {e}");
        let ptx =
            crate::compile_ptx(&source, &arch, program.plan.exact).map_err(|e| unavailable(&e))?;
        let report = crate::ptxas_report(&ptx, &arch).map_err(|e| unavailable(&e))?;
        let registers = report
            .into_iter()
            .map(|k| (k.name, (k.registers, k.spill_stores)))
            .collect();
        Ok((registers, arch))
    }

    fn open(selection: Option<&str>) -> Result<Self, BackendError> {
        let device = select_device(selection)?;
        // SAFETY: every allocation of this device is used on its one stream only (transfers,
        // launches, copies and frees), so cudarc's cross-stream events are not needed; without
        // them a launch records no event per argument, and graphs can capture the launches.
        unsafe { device.context.disable_event_tracking() };
        let use_graphs = std::env::var(GRAPHS_VARIABLE).map_or(true, |v| v.trim() != "0");
        let stream = device
            .context
            .new_stream()
            .map_err(|e| CudaError::driver("creating a stream", e))?;
        Ok(CudaStreamDevice {
            device,
            stream,
            functions: HashMap::new(),
            allocations: Vec::new(),
            use_graphs,
            graphs: HashMap::new(),
            loop_start: None,
        })
    }

    fn limits(&self) -> DeviceLimits {
        self.device.limits.clone()
    }

    fn peak_gb_s(&self) -> Option<f64> {
        self.device.peak_gb_s
    }

    fn label(&self) -> String {
        format!("{} ({})", self.device.name, self.device.arch)
    }

    fn source(program: &KernelProgram) -> String {
        print_cuda(program)
    }

    fn load(&mut self, program: &KernelProgram, source: &str) -> Result<Duration, BackendError> {
        let started = Instant::now();
        let (ptx, fresh) = cached_ptx(source, &self.device.arch, program.plan.exact)?;
        let module = self
            .device
            .context
            .load_module(Ptx::from_src(ptx.to_string()))
            .map_err(|e| CudaError::driver("loading the compiled module", e))?;
        let compile_time = if fresh {
            started.elapsed()
        } else {
            Duration::ZERO
        };
        self.functions = program
            .kernels
            .iter()
            .map(|k| {
                let function = module
                    .load_function(&k.name)
                    .map_err(|e| CudaError::driver(format!("finding kernel `{}`", k.name), e))?;
                Ok((k.name.clone(), opt_into_shared_memory(function, k)?))
            })
            .collect::<Result<HashMap<_, _>, CudaError>>()?;
        Ok(compile_time)
    }

    fn allocate(&mut self, name: &str, bytes: usize) -> Result<usize, BackendError> {
        let bytes = bytes.max(1);
        let during = || format!("allocating {bytes} bytes for `{name}`");
        // SAFETY: the memory is filled right below, before any use.
        let mut buffer = unsafe { self.stream.alloc::<u8>(bytes) }
            .map_err(|e| BackendError::Resources(CudaError::driver(during(), e).to_string()))?;
        let (pointer, record_write) = buffer.device_ptr_mut(&self.stream);
        // SAFETY: `pointer` addresses `bytes` bytes of this allocation, on this stream.
        unsafe {
            cudarc::driver::result::memset_d8_async(pointer, 0xFF, bytes, self.stream.cu_stream())
        }
        .map_err(|e| CudaError::driver(during(), e))?;
        drop(record_write);
        self.allocations.push(buffer);
        Ok(self.allocations.len() - 1)
    }

    fn upload(
        &mut self,
        allocation: usize,
        offset: usize,
        data: &[u8],
    ) -> Result<(), BackendError> {
        if data.is_empty() {
            return Ok(());
        }
        let mut view = self.allocations[allocation].slice_mut(offset..offset + data.len());
        self.stream
            .memcpy_htod(data, &mut view)
            .map_err(|e| CudaError::driver("uploading a field", e))?;
        Ok(self.synchronize("uploading a field")?)
    }

    fn start_timing(&mut self) -> Result<(), BackendError> {
        self.loop_start = Some(self.record_event()?);
        Ok(())
    }

    fn stop_timing(&mut self) -> Result<Duration, BackendError> {
        let end = self.record_event()?;
        end.synchronize()
            .map_err(|e| CudaError::driver("waiting for the kernels", e))?;
        let start = self.loop_start.take().ok_or_else(|| {
            BackendError::Runtime("the loop's timing was stopped before it started".into())
        })?;
        let milliseconds = start
            .elapsed_ms(&end)
            .map_err(|e| CudaError::driver("timing the kernels", e))?;
        Ok(Duration::from_secs_f64(
            f64::from(milliseconds.max(0.0)) / 1e3,
        ))
    }
}

/// Lets `function` launch with the dynamic shared memory `kernel` carves its arrays from
/// (past the default 48 KiB a kernel must opt in; the plan checked the device allows it).
fn opt_into_shared_memory(
    function: CudaFunction,
    kernel: &Kernel,
) -> Result<LoadedKernel, CudaError> {
    let bytes = kernel.dynamic_shared_bytes();
    // The plan's check keeps `bytes` within the device's per-block limit, far below u32::MAX.
    let dynamic_shared_bytes = u32::try_from(bytes).unwrap_or(u32::MAX);
    if bytes > 0 {
        function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dynamic_shared_bytes as i32,
            )
            .map_err(|e| {
                CudaError::driver(
                    format!(
                        "giving kernel `{}` {bytes} bytes of shared memory",
                        kernel.name
                    ),
                    e,
                )
            })?;
    }
    Ok(LoadedKernel {
        function,
        dynamic_shared_bytes,
    })
}

impl HostDevice for CudaStreamDevice {
    fn launch(&mut self, launch: &Launch, args: &[BoundArg]) -> Result<(), BackendError> {
        let kernel = self.functions.get(&launch.kernel).ok_or_else(|| {
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
        let ints: Vec<i64> = args
            .iter()
            .map(|a| if let BoundArg::Int(t) = a { *t } else { 0 })
            .collect();
        let floats: Vec<f64> = args
            .iter()
            .map(|a| if let BoundArg::Float(v) = a { *v } else { 0.0 })
            .collect();
        let allocations: &[CudaSlice<u8>] = &self.allocations;
        let mut builder = self.stream.launch_builder(&kernel.function);
        for ((arg, int), float) in args.iter().zip(&ints).zip(&floats) {
            match arg {
                BoundArg::Allocation(a) => builder.arg(&allocations[*a]),
                BoundArg::Int(_) => builder.arg(int),
                BoundArg::Float(_) => builder.arg(float),
            };
        }
        let config = LaunchConfig {
            grid_dim: (grid[0], grid[1], grid[2]),
            block_dim: (launch.block[0], launch.block[1], launch.block[2]),
            shared_mem_bytes: kernel.dynamic_shared_bytes,
        };
        // SAFETY: the arguments follow the kernel's parameters (the host program's contract) and
        // every buffer holds the elements the kernel indexes.
        unsafe { builder.launch(config) }
            .map_err(|e| CudaError::driver(format!("launching `{}`", launch.kernel), e))?;
        Ok(())
    }

    /// Launches the graph captured from `recording` on its first replay.
    fn replay(&mut self, recording: &Recording) -> Result<(), BackendError> {
        if !self.use_graphs {
            return issue(self, recording);
        }
        if !self.graphs.contains_key(&recording.id) {
            let graph = OwnedGraph(self.capture(recording)?);
            self.graphs.insert(recording.id, graph);
        }
        (self.graphs[&recording.id].0).launch().map_err(|e| {
            let during = format!("launching a CUDA graph of {} steps", recording.steps);
            CudaError::driver(during, e)
        })?;
        Ok(())
    }

    fn copy(&mut self, from: usize, to: usize) -> Result<(), BackendError> {
        let (source, destination) = distinct_pair(&mut self.allocations, from, to);
        self.stream
            .memcpy_dtod(source, destination)
            .map_err(|e| CudaError::driver("copying a buffer", e))?;
        Ok(())
    }

    fn download(
        &mut self,
        allocation: usize,
        offset: usize,
        data: &mut [u8],
    ) -> Result<(), BackendError> {
        if data.is_empty() {
            return Ok(());
        }
        let view = self.allocations[allocation].slice(offset..offset + data.len());
        self.stream
            .memcpy_dtoh(&view, data)
            .map_err(|e| CudaError::driver("downloading a buffer", e))?;
        Ok(self.synchronize("downloading a buffer")?)
    }
}
