//! Tessera: describe an iterative stencil computation once, run it fast on CPUs and GPUs with
//! the same results everywhere.
//!
//! This crate is the facade over the pipeline (`tessera-lang` → `tessera-analysis` →
//! a backend of `tessera-runtime`) and the home of the `tessera` command-line tool:
//!
//! ```no_run
//! use tessera::{DeviceSelection, PlanRequest, Session, backend};
//!
//! let session = Session::load("examples/heat.tess".as_ref(), &[("N".into(), "512".into())])?;
//! let mut fields = session.initial_fields(&[])?;
//! let cpu = backend("cpu")?;
//! let plan = session.plan(cpu.as_ref(), &PlanRequest::default())?;
//! println!("{}", plan.to_json());
//! let mut executable = session.prepare(cpu.as_ref(), &plan, &DeviceSelection::Default)?;
//! let report = executable.run(&mut fields, 0, session.default_steps(), &mut ())?;
//! let u = session.field("u")?;
//! println!("{} steps, u[0] = {}", report.steps, fields.buffer(u.components[0]).get_f64(0));
//! # Ok::<(), tessera::Error>(())
//! ```
//!
//! - [`Session`]: program text → checked and bound program, fields by name, preparation;
//! - [`backends`]: the backends compiled in, by name, and the default choice;
//! - [`files`]: field values from and to `.npy`, `.png` and `.vti` files;
//! - [`metrics`]: GCells/s and the roofline bound;
//! - [`inputs`]: seeded random inputs for benchmarks;
//! - [`tuning`]: the autotuner and its database of tuned plans;
//! - [`verify`]: a backend's run compared with the reference's, bitwise, in ulps and against
//!   a tolerance;
//! - [`Error`]: every failure, with its exit code.

pub mod backends;
pub mod checkpoint;
pub mod error;
pub mod files;
pub mod inputs;
pub mod metrics;
pub mod session;
pub mod tuning;
pub mod verify;

/// The crates below the facade, for embedders that need their types (the Python package):
/// the IR, the runtime's buffers and driver, the field file formats.
pub use {tessera_io as io, tessera_ir as ir, tessera_runtime as runtime};

pub use backends::{
    DefaultBackend, backend, backend_names, default_backend, device_count, device_identity,
};
pub use error::Error;
pub use session::{FieldRef, Session};
pub use tessera_plan::gpu::PlaneReads;
pub use tessera_plan::{Arithmetic, DeviceSelection, Plan, PlanRequest, Strategy, TargetIsa};
pub use tessera_runtime::{Executable, FieldSet, RunReport};
