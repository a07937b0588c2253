//! Distribution: a program run on a grid cut into rank boxes, bitwise equal to one process.
//!
//! Each rank runs an ordinary program on its own box grown by deep halos ([`local`]) with any
//! backend; every `T` steps the ranks exchange the halos ([`exchange`]) that `T` steps need, so
//! that the backend's own temporal blocking runs between exchanges; reductions combine every
//! rank's rows in THE row order ([`rows`]). [`Distribution`] holds the whole layout;
//! [`InProcessExecutable`] runs every rank in one process (the model of a distributed run,
//! checked against the single-process reference by the tests).

mod borders;
#[cfg(feature = "mpi")]
pub mod cluster;
pub mod decompose;
pub mod exchange;
pub mod in_process;
pub mod local;
pub mod overlap;
pub mod rows;

use tessera_analysis::bind::BoundProgram;
use tessera_analysis::region::Rect;
use tessera_ir::{Field, Id, ReduceOp};
use tessera_runtime::reduce::RowPartials;
use tessera_runtime::{BackendError, FieldSet, Pass};

pub use decompose::Decomposition;
pub use exchange::Transfer;
pub use in_process::InProcessExecutable;
pub use local::RankProgram;

/// Why a distributed run cannot be set up or failed.
#[derive(Debug, thiserror::Error)]
pub enum DistributeError {
    /// The ranks do not fit the grid.
    #[error("cannot cut the grid into ranks: {0}")]
    Ranks(String),
    /// The program uses something distribution does not have yet.
    #[error("distributed runs do not support {0} yet")]
    Unsupported(String),
    /// A rank's program is not a valid program (a bug of this layer, reported, not hidden).
    #[error("rank {0}: its local program is refused: {1}")]
    Rank(usize, String),
    /// A rank's backend failed.
    #[error("rank {0}: {1}")]
    Backend(usize, BackendError),
}

/// A program laid out over ranks: each rank's program and box, and the messages of one
/// exchange.
#[derive(Clone, Debug)]
pub struct Distribution {
    /// The decomposition.
    pub decomposition: Decomposition,
    /// Steps between exchanges (`T`; the halos are deep enough for them).
    pub steps_per_exchange: u64,
    /// Every rank's program, by rank.
    pub ranks: Vec<RankProgram>,
    /// The messages of one exchange.
    pub transfers: Vec<Transfer>,
    /// The number of rows of each reduction on the whole grid.
    pub global_rows: Vec<usize>,
    /// Each rank's boundary strips, by rank, when the exchange overlaps compute (empty
    /// otherwise).
    pub strips: Vec<Vec<overlap::Strip>>,
    /// The operation of each reduction.
    ops: Vec<ReduceOp>,
    /// Whether boxes reach past the grid's edges (periodic borders on a cut axis).
    periodic: bool,
}

impl Distribution {
    /// Lays `global` out over `decomposition` with `steps_per_exchange` steps between
    /// exchanges.
    pub fn new(
        global: &BoundProgram,
        decomposition: Decomposition,
        steps_per_exchange: u64,
    ) -> Result<Distribution, DistributeError> {
        let steps = steps_per_exchange.max(1);
        let ranks = (0..decomposition.rank_count())
            .map(|r| local::rank_program(global, &decomposition, r, steps as usize))
            .collect::<Result<Vec<_>, _>>()?;
        let periodic = local::wraps(global.program());
        let transfers = exchange::transfers(&decomposition, &ranks, periodic);
        let global_rows = global
            .reduction_domains
            .iter()
            .map(rows::row_count)
            .collect();
        let ops = global.program().reductions.values().map(|r| r.op).collect();
        Ok(Distribution {
            decomposition,
            steps_per_exchange: steps,
            ranks,
            transfers,
            global_rows,
            strips: Vec::new(),
            ops,
            periodic,
        })
    }

    /// The same layout with boundary strips: each rank computes and sends the halos its
    /// neighbours need before its own pass, which then hides the exchange ([`overlap`]).
    pub fn with_overlap(mut self, global: &BoundProgram) -> Result<Distribution, DistributeError> {
        let steps = self.steps_per_exchange as usize;
        self.strips = overlap::strips(
            global,
            &self.decomposition,
            &self.ranks,
            &self.transfers,
            steps,
        )?;
        Ok(self)
    }

    /// Rank `rank`'s boundary strips (none without overlap).
    pub fn rank_strips(&self, rank: usize) -> &[overlap::Strip] {
        self.strips.get(rank).map_or(&[], Vec::as_slice)
    }

    /// Whether ranks compute their boundary strips first, overlapping the exchange with their
    /// pass.
    pub fn overlapped(&self) -> bool {
        self.strips.iter().any(|strips| !strips.is_empty())
    }

    /// How the halos move, for `describe`: `exchanges every 3 steps` and `, overlapped`.
    pub fn exchange_text(&self) -> String {
        let every = steps_text(self.steps_per_exchange);
        match self.overlapped() {
            true => format!("exchanges every {every}, overlapped with compute"),
            false => format!("exchanges every {every}"),
        }
    }

    /// A rank's fields cut from the global fields (tables copied whole).
    pub fn scatter(&self, rank: usize, global: &FieldSet) -> FieldSet {
        let program = &self.ranks[rank];
        let mut local = FieldSet::zeros(&program.bound);
        local.tables = global.tables.clone();
        exchange::scatter(
            &self.decomposition,
            program,
            self.periodic,
            global,
            &mut local,
        );
        local
    }

    /// A pass cut into parts of at most `T` steps (the halos last that long); the reductions
    /// go with the last part.
    pub fn parts(&self, pass: &Pass) -> Vec<Pass> {
        let mut parts = Vec::new();
        let mut first = pass.first_step;
        while first <= pass.last_step() {
            let steps = self.steps_per_exchange.min(pass.last_step() + 1 - first);
            let last = first + steps > pass.last_step();
            parts.push(Pass {
                first_step: first,
                steps,
                reductions: if last {
                    pass.reductions.clone()
                } else {
                    Vec::new()
                },
            });
            first += steps;
        }
        parts
    }

    /// A pass's reductions from every rank's owned row values (by rank, then by the pass's
    /// reductions), in THE row order.
    pub fn combine(
        &self,
        pass: &Pass,
        owned: &[Vec<Vec<f64>>],
    ) -> Result<Vec<RowPartials>, String> {
        (pass.reductions.iter().enumerate())
            .map(|(k, reduction)| {
                let r = reduction.index();
                let ranks = (self.ranks.iter().zip(owned)).map(|(program, values)| {
                    (program.reduction_rows[r].as_slice(), values[k].as_slice())
                });
                rows::place(self.global_rows[r], self.ops[r], ranks)
            })
            .collect()
    }

    /// Where the grid point at row-major index `point` lives: the rank owning it and the point
    /// as a one-point box of that rank's local frame.
    pub fn locate(&self, point: usize) -> (usize, Rect) {
        let extents = &self.decomposition.extents;
        let mut rest = point;
        let mut coords = vec![0i64; extents.len()];
        for a in (0..extents.len()).rev() {
            coords[a] = (rest % extents[a]) as i64;
            rest /= extents[a];
        }
        let rank = self.decomposition.owner(&coords);
        let lo: Vec<i64> = (coords.iter().zip(&self.ranks[rank].local.lo))
            .map(|(c, l)| c - l)
            .collect();
        let hi = lo.iter().map(|l| l + 1).collect();
        (rank, Rect::new(lo, hi))
    }
}

/// The bytes of field `field` in the bytes of a one-point box of every field of `global`
/// (the layout of `ActiveRun::read_box`).
pub fn field_bytes<'b>(global: &BoundProgram, field: Id<Field>, point: &'b [u8]) -> &'b [u8] {
    let fields = &global.program().fields;
    let offset: usize = (fields.iter())
        .take_while(|(id, _)| *id != field)
        .map(|(_, f)| f.ty.size_bytes())
        .sum();
    &point[offset..offset + fields[field].ty.size_bytes()]
}

/// `1 step`, `3 steps`.
pub(crate) fn steps_text(steps: u64) -> String {
    match steps {
        1 => "1 step".into(),
        n => format!("{n} steps"),
    }
}
