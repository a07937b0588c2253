//! What a GPU runtime provides: the device operations a host program needs ([`HostDevice`])
//! and opening, building, buffers, transfers and timing ([`GpuDevice`]).

use std::collections::HashMap;
use std::time::Duration;

use tessera_codegen::kernel::{DeviceLimits, KernelProgram, Launch};
use tessera_plan::BackendPlan;
use tessera_plan::gpu::GpuPlan;
use tessera_runtime::BackendError;

use crate::replay::{Recording, issue};

/// A launch argument with buffer ids resolved to the allocations now bound to them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BoundArg {
    /// A device allocation, by its index in the device's allocation list.
    Allocation(usize),
    /// A 64-bit signed integer: the step counter, or a pass's number of steps.
    Int(i64),
    /// A double: the value of a reduction computed earlier in the step.
    Float(f64),
}

/// The device operations a host program needs; allocations are addressed by index (one per
/// `BufferDecl`, created by the runtime in declaration order).
pub trait HostDevice {
    /// Launches `launch.kernel` with `args`.
    fn launch(&mut self, launch: &Launch, args: &[BoundArg]) -> Result<(), BackendError>;
    /// Copies all of allocation `from` into allocation `to`.
    fn copy(&mut self, from: usize, to: usize) -> Result<(), BackendError>;
    /// Copies the bytes of an allocation from `offset` on into `data`, after all earlier
    /// work; done when it returns.
    fn download(
        &mut self,
        allocation: usize,
        offset: usize,
        data: &mut [u8],
    ) -> Result<(), BackendError>;
    /// Runs a recording's operations in order. A device that can submit them at once
    /// overrides this (CUDA: a graph built on the recording's first replay, relaunched
    /// after); the default issues them one by one.
    fn replay(&mut self, recording: &Recording) -> Result<(), BackendError> {
        issue(self, recording)
    }
}

/// Registers and spilled bytes per kernel, as the toolchain reports them.
pub type KernelRegisters = HashMap<String, (u32, u64)>;

/// What a GPU runtime provides beyond the [`HostDevice`] operations: opening a device,
/// building and loading kernels, buffers, transfers and timing. Allocations are addressed by
/// their index in [`KernelProgram::host`]'s buffer list.
pub trait GpuDevice: HostDevice + Sized + Send {
    /// The backend's name (`opencl`, `cuda`), as `--backend` takes it.
    const BACKEND: &'static str;

    /// A GPU plan as this backend's plan.
    fn backend_plan(plan: GpuPlan) -> BackendPlan;

    /// Opens the device `selection` names (the runtime's default device without one).
    fn open(selection: Option<&str>) -> Result<Self, BackendError>;

    /// The device's limits, for planning and resource checks.
    fn limits(&self) -> DeviceLimits;

    /// The device memory's peak bandwidth in GB/s where the runtime reports it (its memory
    /// clock and bus width), for the cost model.
    fn peak_gb_s(&self) -> Option<f64> {
        None
    }

    /// The device's name for reports.
    fn label(&self) -> String;

    /// `program`'s kernels printed in the device's dialect.
    fn source(program: &KernelProgram) -> String;

    /// The registers and spills of `program`'s kernels as the toolchain reports them for the
    /// device (a typical one without), or why there are none.
    fn kernel_registers(
        _program: &KernelProgram,
        _device: Option<&Self>,
    ) -> Result<(KernelRegisters, String), String> {
        Err(format!("{} reports no registers", Self::BACKEND))
    }

    /// Builds `source` (which defines `program`'s kernels) and loads its kernels; refuses a
    /// program the device cannot hold. Returns the compilation time (zero on a cache hit).
    fn load(&mut self, program: &KernelProgram, source: &str) -> Result<Duration, BackendError>;

    /// Allocates a buffer of `bytes` bytes (`name` is for messages) filled with all-ones bytes
    /// (NaN for floats, -1 or 255 for integers), so that a cell the host program forgets to
    /// write shows; returns its allocation index (allocations are numbered in order from 0).
    fn allocate(&mut self, name: &str, bytes: usize) -> Result<usize, BackendError>;

    /// Copies `data` into an allocation from `offset` on, after all earlier work; done when
    /// it returns.
    fn upload(&mut self, allocation: usize, offset: usize, data: &[u8])
    -> Result<(), BackendError>;

    /// Marks the start of a time loop.
    fn start_timing(&mut self) -> Result<(), BackendError>;

    /// Waits for the loop's work and returns its device time since [`GpuDevice::start_timing`].
    fn stop_timing(&mut self) -> Result<Duration, BackendError>;
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
        return Err(BackendError::Unavailable(
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
