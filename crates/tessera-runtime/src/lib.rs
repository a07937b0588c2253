//! What every backend shares: field storage ([`FieldSet`]), the [`Backend`] and
//! [`Executable`] traits, the schedule of a run ([`schedule`]) and the one time loop that
//! executes it for every backend ([`driver`]), run reports, memory estimates ([`memory`]), the fixed reduction order and the one seeded generator of inputs ([`random`]).
//!
//! Invariant: backends receive only bound programs ([`tessera_analysis::BoundProgram`]): checked,
//! with concrete sizes and parameter values.

pub mod backend;
pub mod boxes;
pub mod buffer;
pub mod driver;
pub mod memory;
mod pages;
pub mod random;
pub mod reduce;
pub mod schedule;
pub mod storage;

pub use backend::{
    ActiveRun, Backend, BackendError, Bandwidth, Executable, Explanation, Prediction, RankTimes,
    RunTimes, Source,
};
pub use buffer::{Buffer, FieldSet, concat, empty_tables, gather_bytes};
pub use driver::{
    Flow, Observation, Observer, ReceiverRecord, ReceiverSeries, ReductionRecord, RunReport,
    RunState, check_tables, drive, receiver_indices, receiver_series,
};
pub use memory::{MemoryEstimate, MemoryPart};
pub use schedule::{Pass, Schedule, ScheduleItem};
pub use storage::Storage;
