//! Overlap of the halo exchange with compute: boundary strips first.
//!
//! Before a pass a rank computes, in small programs of their own, the *boundary strips* its
//! messages carry: each strip is a box of points the rank owns (a face of its box as thick as
//! the halo, or one message's points where no face holds them) grown by the halo, so that its
//! program computes those points exactly for `T` steps from the rank's values now, like a
//! rank's program does ([`crate::local::strip_program`]). The rank sends them at once and then
//! runs its own pass on its whole box while the messages fly; the halos it receives are
//! written once that pass is done. The strips' points are computed twice (by the strip and by
//! the rank): the cost of the overlap, [`Distribution::overlap_cost`].

use tessera_analysis::BoundProgram;
use tessera_analysis::region::Rect;
use tessera_plan::PlanRequest;
use tessera_runtime::{ActiveRun, Backend, BackendError, Executable, FieldSet, Pass};

use crate::decompose::Decomposition;
use crate::exchange::Transfer;
use crate::local::{RankProgram, halo_depths, strip_program};
use crate::{DistributeError, Distribution};

/// One boundary strip of a rank.
#[derive(Clone, Debug)]
pub struct Strip {
    /// The strip's program: the points its messages carry, grown by the halo.
    pub program: RankProgram,
    /// The strip's box in its rank's local frame (where its starting values come from).
    pub inputs: Rect,
    /// The messages it sends: the transfer's number in the exchange and its points in the
    /// strip's own frame.
    pub sends: Vec<(usize, Rect)>,
}

/// Every rank's boundary strips, by rank.
pub fn strips(
    global: &BoundProgram,
    decomposition: &Decomposition,
    ranks: &[RankProgram],
    transfers: &[Transfer],
    steps: usize,
) -> Result<Vec<Vec<Strip>>, DistributeError> {
    (ranks.iter())
        .map(|rank| rank_strips(global, decomposition, rank, transfers, steps))
        .collect()
}

/// One rank's strips: each outgoing message goes with the first face strip holding its
/// points, or with a strip of its own.
fn rank_strips(
    global: &BoundProgram,
    decomposition: &Decomposition,
    rank: &RankProgram,
    transfers: &[Transfer],
    steps: usize,
) -> Result<Vec<Strip>, DistributeError> {
    let faces = face_strips(global, decomposition, &rank.owned, steps);
    let mut groups: Vec<(Rect, Vec<(usize, Rect)>)> =
        (faces.into_iter()).map(|face| (face, Vec::new())).collect();
    for (number, transfer) in transfers.iter().enumerate() {
        if transfer.from != rank.rank {
            continue;
        }
        let points = transfer.source.shifted(&rank.local.lo);
        match groups
            .iter_mut()
            .find(|(face, _)| face.contains_rect(&points))
        {
            Some((_, sends)) => sends.push((number, points)),
            None => groups.push((points.clone(), vec![(number, points)])),
        }
    }
    (groups.into_iter())
        .filter(|(_, sends)| !sends.is_empty())
        .map(|(strip, sends)| {
            let program = strip_program(global, decomposition, rank.rank, strip, steps)?;
            let inputs = program.local.shifted(&negated(&rank.local.lo));
            if !Rect::grid(&rank.bound.extents).contains_rect(&inputs) {
                return Err(DistributeError::Rank(
                    rank.rank,
                    format!("a boundary strip's box {inputs:?} reaches past the rank's"),
                ));
            }
            let frame = negated(&program.local.lo);
            let sends = (sends.into_iter())
                .map(|(number, points)| (number, points.shifted(&frame)))
                .collect();
            Ok(Strip {
                program,
                inputs,
                sends,
            })
        })
        .collect()
}

/// The faces of an owned box on every cut axis, as thick as the halo `steps` steps need
/// there (global coordinates).
fn face_strips(
    global: &BoundProgram,
    decomposition: &Decomposition,
    owned: &Rect,
    steps: usize,
) -> Vec<Rect> {
    let depths = halo_depths(global, owned, steps.max(1));
    let mut faces = Vec::new();
    for (a, &(below, above)) in depths.iter().enumerate() {
        if decomposition.ranks[a] == 1 {
            continue;
        }
        let thickness = below.max(above).min(owned.len(a));
        let mut low = owned.clone();
        low.hi[a] = owned.lo[a] + thickness;
        let mut high = owned.clone();
        high.lo[a] = owned.hi[a] - thickness;
        faces.extend([low, high]);
    }
    faces
}

/// `-v`.
fn negated(v: &[i64]) -> Vec<i64> {
    v.iter().map(|x| -x).collect()
}

impl Distribution {
    /// The points the boundary strips compute besides their ranks' boxes, as a fraction of
    /// the points of the largest rank box (`0` without overlap).
    pub fn overlap_cost(&self) -> f64 {
        let largest = (self.ranks.iter().map(|r| r.local.volume()).max()).unwrap_or(1);
        let strips = (self.strips.iter())
            .map(|strips| {
                strips
                    .iter()
                    .map(|s| s.program.local.volume())
                    .sum::<u128>()
            })
            .max()
            .unwrap_or(0);
        strips as f64 / largest.max(1) as f64
    }
}

/// One rank's strips prepared on its backend, with their fields.
pub struct PreparedStrips {
    executables: Vec<Box<dyn Executable>>,
    fields: Vec<FieldSet>,
}

impl PreparedStrips {
    /// Plans and prepares `strips` on `backend` for `request`.
    pub fn prepare(
        strips: &[Strip],
        backend: &dyn Backend,
        request: &PlanRequest,
    ) -> Result<PreparedStrips, DistributeError> {
        let executables = (strips.iter())
            .map(|s| {
                (backend.plan_and_prepare(&s.program.bound, request))
                    .map_err(|e| DistributeError::Backend(s.program.rank, e))
            })
            .collect::<Result<_, _>>()?;
        let fields = strips
            .iter()
            .map(|s| FieldSet::zeros(&s.program.bound))
            .collect();
        Ok(PreparedStrips {
            executables,
            fields,
        })
    }

    /// Starts the strips' runs, with the tables of the run's fields `global`.
    pub fn start<'a>(
        &'a mut self,
        strips: &'a [Strip],
        global: &FieldSet,
    ) -> Result<StripRuns<'a>, BackendError> {
        let mut runs = Vec::new();
        for (executable, fields) in self.executables.iter_mut().zip(&mut self.fields) {
            fields.tables = global.tables.clone();
            runs.push(executable.start(fields)?);
        }
        Ok(StripRuns { strips, runs })
    }
}

/// One rank's strips running.
pub struct StripRuns<'a> {
    strips: &'a [Strip],
    runs: Vec<Box<dyn ActiveRun + 'a>>,
}

impl StripRuns<'_> {
    /// Runs `part`'s steps on every strip from the rank's values now (in `rank_run`) and
    /// returns the messages of the exchange after `part`: (transfer number, bytes).
    pub fn messages(
        &mut self,
        rank_run: &mut dyn ActiveRun,
        part: &Pass,
    ) -> Result<Vec<(usize, Vec<u8>)>, BackendError> {
        let steps_only = Pass {
            reductions: Vec::new(),
            ..part.clone()
        };
        let mut messages = Vec::new();
        for (strip, run) in self.strips.iter().zip(&mut self.runs) {
            let start = rank_run.read_box(&strip.inputs)?;
            run.write_box(&Rect::grid(&strip.program.bound.extents), &start)?;
            run.run_pass(&steps_only)?;
            for (number, points) in &strip.sends {
                messages.push((*number, run.read_box(points)?));
            }
        }
        Ok(messages)
    }

    /// Ends the strips' runs.
    pub fn finish(self) -> Result<(), BackendError> {
        for run in self.runs {
            run.finish()?;
        }
        Ok(())
    }
}
