//! Backward region growth through stages and time steps (Holewinski et al., Algorithm 2): the
//! regions a tile must compute so that its final values are correct, whatever the strategy.

use tessera_ir::{Border, Field, Id};

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
    let checked = bound.checked();
    let program = checked.program();
    let grid = Rect::grid(&bound.extents);
    let empty = Rect::new(vec![0; grid.dims()], vec![0; grid.dims()]);
    let mut need: Vec<Rect> = program
        .fields
        .ids()
        .map(|f| match checked.role(f) {
            FieldRole::Updated => target.intersect(&grid),
            _ => empty.clone(),
        })
        .collect();
    let mut compute = vec![vec![empty.clone(); program.stages.len()]; steps];
    for step in (0..steps).rev() {
        for (stage_id, stage) in program.stages.iter().collect::<Vec<_>>().into_iter().rev() {
            let domain = bound.stage_domain(stage_id);
            let outputs = stage.outputs();
            let wanted = outputs
                .iter()
                .fold(empty.clone(), |acc, f| acc.hull(&need[f.index()]));
            let region = wanted.intersect(&domain.rect);
            if domain.is_dense() {
                for f in &outputs {
                    if region.contains_rect(&need[f.index()]) {
                        need[f.index()] = empty.clone();
                    }
                }
            }
            if !region.is_empty() {
                for (field, fp) in checked.stage_footprints(stage_id) {
                    let read = region.grow(&fp.min, &fp.max);
                    let mapped = read_through_border(
                        &read,
                        stage.border_of(*field, program),
                        &bound.extents,
                    );
                    need[field.index()] = need[field.index()].hull(&mapped);
                }
            }
            compute[step][stage_id.index()] = region;
        }
    }
    TileRegions {
        compute,
        inputs: need,
    }
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
