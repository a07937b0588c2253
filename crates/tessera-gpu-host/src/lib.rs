//! Executes a kernel program's host side on any device. The GPU runtimes (`tessera-opencl`,
//! `tessera-cuda`) implement [`GpuDevice`] — opening a device, building kernels, buffers,
//! launches, transfers and timing — and get the rest from here:
//!
//! - [`plan`]: the [`GpuPlan`](tessera_codegen::kernel::GpuPlan) run options ask for
//!   ([`plan_for`]) and lowering checked against a device ([`lower_for_device`]);
//! - [`driver`]: the time loop over a [`HostDevice`] ([`run_steps`]), with `until` evaluated by
//!   the reference interpreter (`tessera_reference::until_holds`);
//! - [`executable`]: [`GpuExecutable`], the `Executable` of every GPU backend (field checks,
//!   uploads, the timed loop, downloads).

pub mod driver;
pub mod executable;
pub mod plan;

pub use driver::{BoundArg, HostDevice, HostState, LoopOutcome, run_steps};
pub use executable::{GpuDevice, GpuExecutable, copy_bandwidth_gb_s, distinct_pair};
pub use plan::{lower_for_device, plan_for};
