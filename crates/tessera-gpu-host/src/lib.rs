//! What every GPU runtime shares. The runtimes (`tessera-opencl`, `tessera-cuda`) implement
//! [`GpuDevice`] — opening a device, building kernels, buffers, launches, transfers and
//! timing — and get the rest from here:
//!
//! - [`backend`]: [`GpuBackend`], the `Backend` of every GPU runtime (plan, emit, explain,
//!   bandwidth, prepare);
//! - [`plan`]: the [`GpuPlan`](tessera_codegen::kernel::GpuPlan) a request asks for
//!   ([`plan_for`]) and lowering checked against a device ([`lower_for_device`]);
//! - [`cost`]: what the cost model sees of a lowered program, and the candidate plans it
//!   weighs when the strategy is left open;
//! - [`host`]: one step or one fused pass of a host program on a [`HostDevice`]
//!   ([`run_host_step`], [`run_fused_pass`]);
//! - [`replay`]: runs of steps that do the same work every step, recorded once and replayed
//!   as one submission ([`StepRecorder`]);
//! - [`executable`]: [`GpuExecutable`], the `Executable` of every GPU backend (field checks,
//!   uploads, the passes the schedule driver asks for, downloads), with `until` evaluated by
//!   the reference interpreter (`tessera_reference::until_holds`).

pub mod backend;
pub mod cost;
pub mod device;
pub mod executable;
pub mod host;
pub mod plan;
pub mod replay;

pub use backend::GpuBackend;
pub use device::{
    BoundArg, GpuDevice, HostDevice, KernelRegisters, copy_bandwidth_gb_s, distinct_pair,
};
pub use executable::{GpuExecutable, GpuRun};
pub use host::{run_fused_pass, run_host_step};
pub use plan::{lower_for_device, plan_for, plan_requested};
pub use replay::{RecordedOp, Recording, StepRecorder};
