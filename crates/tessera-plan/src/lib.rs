//! Planning: every decision a backend makes to run a bound program — strategy, tiles, time-tile
//! depth, blocks, threads, exactness, per-stage forms — as plain data ([`Plan`]) that can be
//! printed, stored as JSON, tuned and replayed. Code generation is a pure function of
//! (program, plan); emitters read the plan and never re-derive a decision.
//!
//! - [`request`]: what a user asks for ([`PlanRequest`], typed options);
//! - [`plan`]: the [`Plan`] of every backend, its JSON form and its checks against a program;
//! - [`cpu`]: CPU strategies, tiles and per-stage forms, planned from a model of the machine;
//! - [`gpu`]: GPU strategies, blocks and the resource model of Rawat §2;
//! - [`gpu_cost`]: the GPU cost model that chooses between plans (bytes, reloads,
//!   instructions, occupancy and launches against a device's throughput);
//! - [`isa`]: the CPU instruction set the code targets (vector width, registers, FMA);
//! - [`reuse`], [`lanes`]: the stage forms the CPU planner chooses between;
//! - [`candidates`]: the plan space an autotuner searches, per backend kind;
//! - [`PlanError`]: the one error type, naming the field, the value and the limit.

pub mod candidates;
pub mod cpu;
mod error;
pub mod gpu;
pub mod gpu_cost;
pub mod isa;
pub mod lanes;
pub mod plan;
pub mod request;
pub mod reuse;

pub use error::PlanError;
pub use isa::TargetIsa;
pub use plan::{
    BackendPlan, PLAN_FORMAT, Plan, Precision, ReferencePlan, StepsPerPass, fusion_refusal,
};
pub use request::{Arithmetic, DeviceSelection, PlanRequest, Strategy};
