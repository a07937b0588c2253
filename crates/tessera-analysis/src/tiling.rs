//! Backward region growth through stages and time steps (Holewinski et al., Algorithm 2): the
//! regions a tile must compute so that its final values are correct, whatever the strategy.

use tessera_ir::{Border, Field, Id, Stage};

use crate::bind::BoundProgram;
use crate::check::FieldRole;
use crate::region::Rect;

/// What a tile computes when it fuses `steps` time steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileRegions {
    /// `compute[step][stage]`: the points (within the stage's domain) the stage must compute in
    /// that fused step; empty when the stage contributes nothing to the tile.
    pub compute: Vec<Vec<Rect>>,
    /// Per field: the points whose values from before the first fused step are read; empty
    /// when none are.
    pub inputs: Vec<Rect>,
}

impl TileRegions {
    /// Points computed beyond the target over all steps and stages, relative to the points
    /// computed when every stage computes only the target: the redundant work of overlapped
    /// tiling (0.0 = none).
    pub fn redundancy(&self, target: &Rect) -> f64 {
        let computed: u128 = self.compute.iter().flatten().map(Rect::volume).sum();
        let useful: u128 = self
            .compute
            .iter()
            .flatten()
            .map(|r| r.intersect(target).volume())
            .sum();
        if useful == 0 {
            0.0
        } else {
            computed as f64 / useful as f64 - 1.0
        }
    }
}

/// Grows `target` backwards through `steps` steps of `bound`'s stage sequence.
///
/// Every updated field must be correct on `target` after the last step. Walking the stages in
/// reverse, a stage computes the hull of what is still needed of its outputs, clipped to its
/// domain; the values of its outputs from before it are then no longer needed there (unless
/// the domain is strided), and the points it reads (its footprint, mapped through the border
/// mode of each field: periodic reads wrap, mirror reads reflect, clamped reads land on the
/// edge, constant reads need nothing) become needed. Regions are rectangular hulls, as in
/// Holewinski's formulation, so the result is conservative: a superset of what is read.
pub fn tile_regions(bound: &BoundProgram, target: &Rect, steps: usize) -> TileRegions {
    let program = bound.program();
    let grid = Rect::grid(&bound.extents);
    walk_backwards(
        bound,
        &target.intersect(&grid),
        steps,
        false,
        |stage_id, wanted, need| {
            let stage = &program.stages[stage_id];
            let domain = bound.stage_domain(stage_id);
            let region = wanted.intersect(&domain.rect);
            if domain.is_dense() {
                for f in stage.outputs() {
                    if region.contains_rect(&need[f.index()]) {
                        need[f.index()] = Rect::empty(grid.dims());
                    }
                }
            }
            if !region.is_empty() {
                for (field, fp) in bound.checked().stage_footprints(stage_id) {
                    let read = region.grow(&fp.min, &fp.max);
                    let mapped = read_through_border(
                        &read,
                        stage.border_of(*field, program),
                        &bound.extents,
                    );
                    need[field.index()] = need[field.index()].hull(&mapped);
                }
            }
            region
        },
    )
}

/// Holewinski's backward walk: every updated field is needed on `target` after the last
/// step (after every step with `every_step_ends`: a pass that may stop early writes its tile
/// from that step's values); walking the steps and their stages in reverse, `visit` gets each
/// stage, the hull of what is still needed of its outputs and the needs of every field to
/// update, and returns the region the stage computes. The needs left at the end are the
/// inputs.
fn walk_backwards(
    bound: &BoundProgram,
    target: &Rect,
    steps: usize,
    every_step_ends: bool,
    mut visit: impl FnMut(Id<Stage>, Rect, &mut Vec<Rect>) -> Rect,
) -> TileRegions {
    let checked = bound.checked();
    let program = checked.program();
    let empty = Rect::empty(target.dims());
    let mut need: Vec<Rect> = program
        .fields
        .ids()
        .map(|f| match checked.role(f) {
            FieldRole::Updated => target.clone(),
            _ => empty.clone(),
        })
        .collect();
    let mut compute = vec![vec![empty.clone(); program.stages.len()]; steps];
    for step in (0..steps).rev() {
        if every_step_ends && step + 1 < steps {
            for f in program.fields.ids() {
                if checked.role(f) == FieldRole::Updated {
                    need[f.index()] = need[f.index()].hull(target);
                }
            }
        }
        for (stage_id, stage) in program.stages.iter().collect::<Vec<_>>().into_iter().rev() {
            let wanted =
                (stage.outputs().iter()).fold(empty.clone(), |acc, f| acc.hull(&need[f.index()]));
            compute[step][stage_id.index()] = visit(stage_id, wanted, &mut need);
        }
    }
    TileRegions {
        compute,
        inputs: need,
    }
}

/// Grows a block's tile `[0, tile)` backwards through `steps` steps of `bound`'s stage
/// sequence in the tile's own frame, as the GPU's overlapped kernels compute it. A kernel
/// takes the pass's depth and may stop after any step, writing its tile from that step's
/// values, so every updated field is needed on the tile after every step: a step whose next
/// overwrites a field without reading it still computes the field on the tile.
///
/// Unlike [`tile_regions`], nothing is clipped: a block computes every point of its regions,
/// a point outside the grid standing for its periodic image (so that a periodic read across
/// the edge is a plain neighbour read), and checks stage domains point by point (blocks differ
/// in where the grid and the domains end). A stage's output is no longer needed before it only
/// when the stage covers the whole grid. A read at offset `o` reaches `min(o, 0) ..= max(o,
/// 0)` along each axis (a clamped read lands between the point and `o`); a mirrored read
/// reaches as far on the other side, where the reflection lands.
pub fn local_tile_regions(bound: &BoundProgram, tile: &[i64], steps: usize) -> TileRegions {
    let program = bound.program();
    let grid = Rect::grid(&bound.extents);
    let target = Rect::new(vec![0; tile.len()], tile.to_vec());
    walk_backwards(bound, &target, steps, true, |stage_id, region, need| {
        let stage = &program.stages[stage_id];
        let domain = bound.stage_domain(stage_id);
        if domain.rect.is_empty() || region.is_empty() {
            return Rect::empty(grid.dims());
        }
        if domain.is_dense() && domain.rect == grid {
            for f in stage.outputs() {
                need[f.index()] = Rect::empty(grid.dims());
            }
        }
        for (field, fp) in bound.checked().stage_footprints(stage_id) {
            let (min, max) = local_reach(&fp.min, &fp.max, stage.border_of(*field, program));
            let read = region.grow(&min, &max);
            need[field.index()] = need[field.index()].hull(&read);
        }
        region
    })
}

/// The offsets a read of footprint `min..=max` reaches in a tile's frame, per axis (see
/// [`local_tile_regions`]).
fn local_reach(min: &[i32], max: &[i32], border: Option<Border>) -> (Vec<i32>, Vec<i32>) {
    min.iter()
        .zip(max)
        .map(|(&lo, &hi)| {
            let (lo, hi) = (lo.min(0), hi.max(0));
            if border == Some(Border::Mirror) {
                let reach = hi.max(-lo);
                (-reach, reach)
            } else {
                (lo, hi)
            }
        })
        .unzip()
}

/// The in-grid points actually read when reading `read` (possibly outside the grid) of a field
/// with the given border mode.
pub fn read_through_border(read: &Rect, border: Option<Border>, extents: &[usize]) -> Rect {
    if read.is_empty() {
        return read.clone();
    }
    let mut lo = Vec::with_capacity(extents.len());
    let mut hi = Vec::with_capacity(extents.len());
    for (axis, &extent) in extents.iter().enumerate() {
        let n = extent as i64;
        let (a, b) = (read.lo[axis], read.hi[axis] - 1);
        let (mut l, mut h) = (a.max(0), b.min(n - 1));
        if a < 0 || b >= n {
            match border {
                Some(Border::Periodic) => (l, h) = (0, n - 1),
                Some(Border::Clamp) => (l, h) = (a.clamp(0, n - 1), b.clamp(0, n - 1)),
                Some(Border::Mirror) => {
                    if a < 0 {
                        (l, h) = (l.min(1.min(n - 1)), h.max((-a).min(n - 1)));
                    }
                    if b >= n {
                        (l, h) = (l.min((2 * (n - 1) - b).max(0)), h.max((n - 2).max(0)));
                    }
                }
                Some(Border::Constant(_)) | None => {}
            }
        }
        lo.push(l);
        hi.push(h + 1);
    }
    Rect::new(lo, hi)
}

/// The fields whose values before the first fused step a tile reads.
pub fn input_fields(regions: &TileRegions) -> Vec<Id<Field>> {
    regions
        .inputs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.is_empty())
        .map(|(i, _)| Id::from_index(i))
        .collect()
}
