//! What a user asks of a plan ([`PlanRequest`]): typed options every backend reads, each
//! `None` where the backend chooses.

use serde::{Deserialize, Serialize};

use crate::gpu::PlaneReads;
use crate::isa::TargetIsa;

/// How values are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arithmetic {
    /// Value-changing rewrites a backend has are allowed (FMA contraction, reassociated
    /// sums, reciprocals of literal divisors): results may differ from the reference in the
    /// last bits. The reference backend computes exactly either way.
    #[default]
    Relaxed,
    /// Bitwise-reproducible: every operation in its elaborated type, in program order, no
    /// contraction — equal to the reference backend on every backend.
    Exact,
    /// Every expression evaluated in f64 regardless of declared types (the reference
    /// backend's accuracy mode).
    F64,
}

impl Arithmetic {
    /// `Exact` when `exact`, else `Relaxed`: what an `--exact` flag or keyword asks for.
    pub fn exact_if(exact: bool) -> Arithmetic {
        if exact {
            Arithmetic::Exact
        } else {
            Arithmetic::Relaxed
        }
    }
}

/// A strategy of some backend; each backend takes its own subset and refuses the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// One thread (CPU) or one thread per point (GPU), plain loops.
    Naive,
    /// CPU: OpenMP over the slowest axis.
    Parallel,
    /// CPU: spatial blocks, one stage at a time.
    Blocked,
    /// CPU: overlapped (ghost-zone) time tiling in per-thread scratch buffers.
    Overlapped,
    /// CPU: pipelined wavefront over the slowest axis with per-step ring buffers.
    Wavefront,
    /// GPU: spatial tiles in shared memory.
    Tiled,
    /// GPU: 2.5D streaming along the slowest tiled axis.
    Streaming,
}

impl Strategy {
    /// Every strategy, CPU ones first.
    pub const ALL: [Strategy; 7] = [
        Strategy::Naive,
        Strategy::Parallel,
        Strategy::Blocked,
        Strategy::Overlapped,
        Strategy::Wavefront,
        Strategy::Tiled,
        Strategy::Streaming,
    ];

    /// The name used on the command line and in plan files.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Naive => "naive",
            Strategy::Parallel => "parallel",
            Strategy::Blocked => "blocked",
            Strategy::Overlapped => "overlapped",
            Strategy::Wavefront => "wavefront",
            Strategy::Tiled => "tiled",
            Strategy::Streaming => "streaming",
        }
    }

    /// Looks a strategy up by name.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Which device a GPU plan is made for and run on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceSelection {
    /// The runtime's default device.
    #[default]
    Default,
    /// The device a `--device` value names (`platform:device` or an index).
    Named(String),
    /// No device: plan for a typical device of the backend's kind (for emitting code on a
    /// machine without one).
    Typical,
}

impl DeviceSelection {
    /// The selection a `--device` value gives (`None`: the default device).
    pub fn from_flag(flag: Option<&str>) -> DeviceSelection {
        flag.map_or(DeviceSelection::Default, |d| {
            DeviceSelection::Named(d.to_string())
        })
    }

    /// The named device, if any.
    pub fn name(&self) -> Option<&str> {
        match self {
            DeviceSelection::Named(name) => Some(name),
            DeviceSelection::Default | DeviceSelection::Typical => None,
        }
    }
}

/// What the user asks of a plan; every `None` is chosen by the backend's planner.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PlanRequest {
    /// The strategy.
    pub strategy: Option<Strategy>,
    /// CPU: the spatial tile; GPU: the block. Slowest axis first.
    pub tile: Option<Vec<usize>>,
    /// Steps fused per pass.
    pub time_tile: Option<u32>,
    /// Threads (CPU backends and the reference's thread pool).
    pub threads: Option<usize>,
    /// How values are computed.
    pub arithmetic: Arithmetic,
    /// The device (GPU backends).
    pub device: DeviceSelection,
    /// The instruction set CPU code is written for (`None`: the host's best).
    pub isa: Option<TargetIsa>,
    /// GPU `streaming`: where in-plane neighbours are read from.
    pub plane_reads: Option<PlaneReads>,
    /// GPU streaming time tiles: how many sweep iterations ahead each input plane is loaded.
    pub prefetch: Option<u32>,
}

impl PlanRequest {
    /// A request for exact arithmetic with everything else chosen by the backend.
    pub fn exact() -> PlanRequest {
        PlanRequest {
            arithmetic: Arithmetic::Exact,
            ..PlanRequest::default()
        }
    }
}
