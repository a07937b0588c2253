//! Distribution: a program run on a grid cut into rank boxes, bitwise equal to one process.
//!
//! Each rank runs an ordinary program on its own box grown by deep halos ([`local`]) with any
//! backend; every `T` steps the ranks exchange the halos ([`exchange`]) that `T` steps need, so
//! that the backend's own temporal blocking runs between exchanges. [`Distribution`] holds the
//! whole layout; [`Distribution::run_in_process`] runs every rank in one process (the tests'
//! model of a distributed run and its reference).

pub mod decompose;
pub mod exchange;
pub mod local;

use tessera_analysis::bind::BoundProgram;
use tessera_plan::PlanRequest;
use tessera_runtime::{Backend, BackendError, FieldSet};

pub use decompose::Decomposition;
pub use exchange::Transfer;
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
        let periodic = local::wraps(global.program())?;
        let transfers = exchange::transfers(&decomposition, &ranks, periodic);
        Ok(Distribution {
            decomposition,
            steps_per_exchange: steps,
            ranks,
            transfers,
            periodic,
        })
    }

    /// A rank's fields cut from the global fields (tables copied whole).
    pub fn scatter(&self, rank: usize, global: &FieldSet) -> FieldSet {
        let program = &self.ranks[rank];
        let mut local = FieldSet::zeros(&program.bound);
        local.tables = global.tables.clone();
        exchange::scatter(&self.decomposition, program, self.periodic, global, &mut local);
        local
    }

    /// Runs steps `first_step .. first_step + steps` of every rank in this process with
    /// `backend` planned by `request`, exchanging halos every `T` steps, and writes the result
    /// into `fields`.
    pub fn run_in_process(
        &self,
        backend: &dyn Backend,
        request: &PlanRequest,
        fields: &mut FieldSet,
        first_step: u64,
        steps: u64,
    ) -> Result<(), DistributeError> {
        let mut executables = (self.ranks.iter())
            .map(|r| (backend.plan_and_prepare(&r.bound, request)).map_err(|e| DistributeError::Backend(r.rank, e)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut locals: Vec<FieldSet> = (0..self.ranks.len()).map(|r| self.scatter(r, fields)).collect();
        let mut done = 0;
        while done < steps {
            let pass = self.steps_per_exchange.min(steps - done);
            for (rank, (executable, local)) in executables.iter_mut().zip(&mut locals).enumerate() {
                (executable.run(local, first_step + done, pass, &mut ()))
                    .map_err(|e| DistributeError::Backend(rank, e))?;
            }
            done += pass;
            if done < steps {
                self.exchange_in_process(&mut locals);
            }
        }
        for (program, local) in self.ranks.iter().zip(&locals) {
            exchange::gather(program, local, fields);
        }
        Ok(())
    }

    /// One exchange between ranks held in this process.
    fn exchange_in_process(&self, locals: &mut [FieldSet]) {
        for transfer in &self.transfers {
            let source = locals[transfer.from].clone();
            exchange::apply(transfer, &source, &mut locals[transfer.to]);
        }
    }
}
