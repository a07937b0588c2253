//! Column sums: box-shaped linear stages computed in two passes per row chunk, so that
//! neighbouring points share their loads (register/L1 reuse along the fastest axis).
//!
//! A linear stage reads `field[q, x + dx]` for every *column* `q` (field and offset on the
//! slower axes) and every `dx` of one set `D`, with weights `W[q][dx]`. Per row chunk, a first
//! pass loads each column once per point and stores one partial sum per point into a small
//! buffer (in L1); a second pass combines the buffered sums at `x + dx`:
//!
//! - rank one (`W[q][dx] = u[q] v[dx]`, e.g. a separable Gaussian): one sum `Σ_q u[q] col_q`,
//!   then `Σ_dx v[dx] sum[x + dx]`: `|Q| + |D|` multiply-adds instead of `|Q| |D|`;
//! - otherwise one sum per `dx`, `Σ_q W[q][dx] col_q`, then `Σ_dx sum_dx[x + dx]`: the same
//!   multiply-adds, but `|Q| + |D|` loads per point instead of `|Q| |D|` (gcc keeps one pointer
//!   register per distinct offset of a loop, so a 27-point box spills and reloads them);
//! - with fewer products where the weights split into a part per group of columns and a part
//!   per column that does not depend on `dx` ([`grouped_sums`]: `W[q][dx] = V[g(q)][dx] +
//!   β[q]`, as in `j3d27pt`, whose weight is a function of `(dy, dx)` plus one of `dz`): the
//!   columns of each group, and those with one value of `β`, are first added up; the `β` part
//!   is summed once per point and shared by the sums, which weight the groups by `V`
//!   (`j3d27pt`: 11 multiplies or multiply-adds and 11 additions per vector of points instead
//!   of 27 multiply-adds and 2 additions; measured in docs/performance.md, "Grouped column
//!   sums").
//!
//! Where the stage also has a shifted-lanes form ([`crate::lanes`]) and its rows hold at least
//! [`min_lane_row`] points, the sums stay in registers instead: per aligned vector of
//! a row, its sums, and the terms at `x + dx` shuffled out of the sums of the neighbouring
//! vectors (one pass, no buffer; [`sums_on_lanes`]).
//!
//! Only non-exact plans use it (the sums are reassociated), only for box-shaped stages (every
//! column read at every `dx`, so the first pass reads nothing the plain loop would not), and
//! only where it pays ([`column_sums`]): buffered, where it moves fewer values per point than
//! the plain loop; on shifted lanes, where it needs fewer shuffles (the loads are the same,
//! one per column, and the shuffles share one execution port: a general 3x3 box does 2
//! instead of 6 per vector).

use tessera_analysis::{BoundProgram, linear_form};
use tessera_ir::{Field, Id, ScalarType, Stage};

use crate::isa::TargetIsa;
use crate::lanes::shifted_lanes;

/// The shortest row whose column sums run on shifted lanes, in vectors per point of the
/// stage's reach along the fastest axis and per register file its columns fill. Each row pays
/// a fixed cost there (the sums before its first vector and after its last, their shuffles, and
/// its unaligned ends), which grows with the reach and, once the columns no longer fit in the
/// registers, with their reloads; so short rows keep the buffered form. Measured in
/// docs/performance.md ("Column sums on shifted lanes", "Columns in registers on shifted
/// lanes"): on 256-point f32 rows the lanes form gains up to 40% at reach 1 (a 3x3 box), is
/// even at reach 2 (5x5) and loses 12-23% at reach 3 and 4; on 254-point f64 rows it gains 20%
/// on a 5x5x5 box (25 columns) and loses 40% on a 7x7x7 box (49 columns).
pub const MIN_LANE_ROW_VECTORS_PER_REACH: usize = 8;

/// The terms of one buffered sum: (column group index, weight).
pub type SumTerms = Vec<(usize, f64)>;

/// One term of the second pass: (sum index, dx, weight).
pub type Tap = (usize, i32, f64);

/// A linear stage rewritten as column sums.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnSums {
    /// The element type of every field involved.
    pub ty: ScalarType,
    /// The field the stage writes.
    pub output: Id<Field>,
    /// The columns: field and offset with the fastest-axis component 0.
    pub columns: Vec<(Id<Field>, Vec<i32>)>,
    /// The column groups the sums weight, each the plain sum of its columns (most often one).
    pub groups: Vec<Vec<usize>>,
    /// Per buffered sum: its terms (group index, weight).
    pub sums: Vec<SumTerms>,
    /// Terms every sum shares (group index, weight): summed once per point, added to each sum.
    pub shared: SumTerms,
    /// The second pass: (sum index, dx, weight).
    pub taps: Vec<Tap>,
    /// The constant addend.
    pub constant: f64,
    /// The smallest and largest dx.
    pub reach: (i32, i32),
}

impl ColumnSums {
    /// Values loaded or stored per point: columns, buffered sums read back, sums stored.
    pub fn moves_per_point(&self) -> usize {
        self.columns.len() + self.taps.len() + self.sums.len()
    }

    /// Reads per point of the plain loop: every column at every x offset (box-shaped).
    fn plain_reads_per_point(&self) -> usize {
        self.columns.len() * self.taps.len()
    }

    /// Whether the buffered form moves fewer values per point than the plain loop reads.
    pub fn pays_buffered(&self) -> bool {
        self.moves_per_point() < self.plain_reads_per_point()
    }

    /// Arithmetic per point: every weighted group of every sum and of the shared terms, every
    /// addition within a group or of the shared terms to a sum, every tap.
    pub fn arithmetic_per_point(&self) -> usize {
        let sharing = if self.shared.is_empty() {
            0
        } else {
            self.sums.len()
        };
        self.first_pass_products() + self.group_additions() + sharing + self.taps.len()
    }

    /// Weighted groups over all sums and the shared terms: the multiply-adds of the first pass
    /// per point.
    fn first_pass_products(&self) -> usize {
        self.sums.iter().map(Vec::len).sum::<usize>() + self.shared.len()
    }

    /// The additions that form the groups of more than one column, per point.
    fn group_additions(&self) -> usize {
        self.groups.iter().map(|g| g.len() - 1).sum()
    }

    /// The registers of groups of more than one column and of the shared terms' sum.
    fn added_values(&self) -> usize {
        let groups = self.groups.iter().filter(|g| g.len() > 1).count();
        groups + usize::from(!self.shared.is_empty())
    }

    /// Whether the buffered first pass keeps each column's vector in a register. Left to
    /// itself, gcc folds a column's load into every multiply-add that uses it: one load per
    /// product, each split across two cache lines when the row is not aligned. Kept in
    /// registers, the columns and the partial sums leave fewer registers for the weights, and
    /// the weights that do not fit are reloaded (aligned, from the stack) once per use. It
    /// takes the registers where that saves at least a third of the loads, as measured on the
    /// AMD EPYC machine (docs/performance.md): the 27-point box (9 columns and 9 weights
    /// instead of 27 loads) gains 17-20%, the 5x5 box (10 instead of 25) 9-13%; the 7x7 box
    /// (40 instead of 49) runs as fast either way, the 9x9 box (78 instead of 81) 5% slower.
    pub fn keeps_columns_in_registers(&self, isa: TargetIsa) -> bool {
        let products = self.first_pass_products();
        // Two registers for the temporaries of the sums' trees.
        let live = self.columns.len() + self.added_values() + self.sums.len() + 2;
        let registers = isa.vector_registers();
        let weight_reloads = products.saturating_sub(registers.saturating_sub(live));
        3 * (self.columns.len() + weight_reloads) <= 2 * products
    }

    /// Whether the loop on shifted lanes keeps each column's vector in a register, as the
    /// buffered first pass may ([`Self::keeps_columns_in_registers`]): where each column feeds
    /// more than one sum and the columns, their added groups and shared terms, the sums of the
    /// previous, current and next vector and one temporary fit in the registers. Measured on
    /// the AMD EPYC machine (docs/performance.md): the 27-point box gains 15-25% over unpinned
    /// lanes in 3D, where its columns come from three planes in L2; the general 5x5 and 7x7
    /// boxes in 2D run as fast either way.
    pub fn keeps_lane_columns_in_registers(&self, isa: TargetIsa) -> bool {
        let live = self.columns.len() + self.added_values() + 3 * self.sums.len() + 1;
        self.first_pass_products() > self.columns.len() && live < isa.vector_registers()
    }

    /// The shortest row, in points of `ty`, on which these sums run on shifted lanes of `isa`
    /// ([`MIN_LANE_ROW_VECTORS_PER_REACH`]).
    fn min_lane_row(&self, ty: ScalarType, isa: TargetIsa) -> usize {
        let (left, right) = self.reach;
        let reach = usize::try_from(right.max(-left).max(1)).unwrap_or(1);
        let register_files = self.columns.len().div_ceil(isa.vector_registers());
        MIN_LANE_ROW_VECTORS_PER_REACH * reach * register_files * isa.lanes(ty)
    }

    /// Whether the loops are bound by their arithmetic rather than their loads and stores: at
    /// least 1.5 operations ([`Self::arithmetic_per_point`]) per value moved. The general form
    /// (one sum per x offset) keeps the plain loop's `|Q| |D|` multiply-adds while moving
    /// `|Q| + 2 |D|` values (a 27-point box: 30 against 15); the rank-one form moves about as
    /// many values as it multiplies (the 5x5 Gaussian: 10 against 11).
    pub fn bound_by_arithmetic(&self) -> bool {
        2 * self.arithmetic_per_point() >= 3 * self.moves_per_point()
    }
}

/// The column-sum form of `stage` with tiles of `tile` points, when it applies and pays:
/// buffered ([`ColumnSums::pays_buffered`]), or on shifted lanes ([`sums_on_lanes`]) where it
/// has more than one column (the plain lanes loop shuffles once per column and `dx != 0`, the
/// column form once per `dx != 0`).
pub fn column_sums(
    bound: &BoundProgram,
    stage: Id<Stage>,
    tile: &[usize],
    isa: TargetIsa,
) -> Option<ColumnSums> {
    column_form(bound, stage).filter(|sums| {
        sums.pays_buffered() || (sums.columns.len() > 1 && on_lanes(bound, stage, sums, tile, isa))
    })
}

/// The column-sum form of a box-shaped linear float stage, whether or not it pays.
pub fn column_form(bound: &BoundProgram, stage: Id<Stage>) -> Option<ColumnSums> {
    let dims = bound.extents.len();
    let program = bound.program();
    if dims < 2 || bound.stage_domain(stage).stride[dims - 1] != 1 {
        return None;
    }
    let form = linear_form(bound, stage)?;
    let ty = program.fields[form.output].ty;
    let uniform = form.terms.iter().all(|t| program.fields[t.field].ty == ty);
    if !ty.is_float() || !uniform {
        return None;
    }
    let mut shifts: Vec<i32> = form.terms.iter().map(|t| t.offset[dims - 1]).collect();
    shifts.sort_unstable();
    shifts.dedup();
    // The weights per column and shift (terms are distinct reads).
    let mut columns: Vec<(Id<Field>, Vec<i32>)> = Vec::new();
    let mut weights: Vec<Vec<f64>> = Vec::new();
    for term in &form.terms {
        let column = (term.field, column_offset(&term.offset));
        let c = columns
            .iter()
            .position(|k| *k == column)
            .unwrap_or_else(|| {
                columns.push(column);
                weights.push(vec![0.0; shifts.len()]);
                columns.len() - 1
            });
        let s = shifts
            .binary_search(&term.offset[dims - 1])
            .expect("every shift is listed");
        weights[c][s] = term.coefficient;
    }
    // Box-shaped: every column at every shift.
    if form.terms.len() != columns.len() * shifts.len() || shifts.len() < 2 {
        return None;
    }
    let singles = || (0..columns.len()).map(|c| vec![c]).collect();
    let per_shift = || {
        shifts
            .iter()
            .enumerate()
            .map(|(s, &dx)| (s, dx, 1.0))
            .collect()
    };
    let (groups, sums, shared, taps) = match rank_one(&weights) {
        Some((u, v)) => (
            singles(),
            vec![u.into_iter().enumerate().collect()],
            Vec::new(),
            shifts.iter().zip(v).map(|(&dx, w)| (0, dx, w)).collect(),
        ),
        None => match grouped_sums(&weights) {
            Some(Grouped {
                groups,
                sums,
                shared,
            }) => (groups, sums, shared, per_shift()),
            None => (
                singles(),
                (0..shifts.len())
                    .map(|s| weights.iter().map(|row| row[s]).enumerate().collect())
                    .collect(),
                Vec::new(),
                per_shift(),
            ),
        },
    };
    Some(ColumnSums {
        ty,
        output: form.output,
        columns,
        groups,
        sums,
        shared,
        taps,
        constant: form.constant,
        reach: (shifts[0], shifts[shifts.len() - 1]),
    })
}

/// Whether the column sums of `stage` (where it has them) run on shifted lanes rather than
/// through a buffer: the stage has a shifted-lanes form and its rows within tiles of `tile`
/// points hold at least [`min_lane_row`] points.
pub fn sums_on_lanes(
    bound: &BoundProgram,
    stage: Id<Stage>,
    tile: &[usize],
    isa: TargetIsa,
) -> bool {
    column_form(bound, stage).is_some_and(|sums| on_lanes(bound, stage, &sums, tile, isa))
}

/// The shortest row, in points, on which the column sums of `stage` run on shifted lanes
/// ([`MIN_LANE_ROW_VECTORS_PER_REACH`]), where it has both forms.
pub fn min_lane_row(bound: &BoundProgram, stage: Id<Stage>, isa: TargetIsa) -> Option<usize> {
    let ty = shifted_lanes(bound, stage, isa)?;
    Some(column_form(bound, stage)?.min_lane_row(ty, isa))
}

/// [`sums_on_lanes`] for the column-sum form `sums` of `stage`.
fn on_lanes(
    bound: &BoundProgram,
    stage: Id<Stage>,
    sums: &ColumnSums,
    tile: &[usize],
    isa: TargetIsa,
) -> bool {
    let Some(ty) = shifted_lanes(bound, stage, isa) else {
        return false;
    };
    let x = bound.extents.len() - 1;
    let rect = &bound.stage_domain(stage).rect;
    let (lo, hi) = bound.stage_interior(stage)[x];
    let row = rect.hi[x].min(hi) - rect.lo[x].max(lo);
    usize::try_from(row).unwrap_or(0).min(tile[x]) >= sums.min_lane_row(ty, isa)
}

/// The column sums of `stage` with tiles of `tile` points where they run through a buffer:
/// they pay buffered and do not run on shifted lanes.
pub fn buffered_sums(
    bound: &BoundProgram,
    stage: Id<Stage>,
    tile: &[usize],
    isa: TargetIsa,
) -> Option<ColumnSums> {
    column_form(bound, stage)
        .filter(|sums| sums.pays_buffered() && !on_lanes(bound, stage, sums, tile, isa))
}

/// The element type `stage` runs its interior rows on shifted lanes with, in a plan that uses
/// column sums (`with_column_sums`) or not, with tiles of `tile` points: its shifted-lanes
/// type, unless its column sums run buffered ([`buffered_sums`]).
pub fn lane_type(
    bound: &BoundProgram,
    stage: Id<Stage>,
    with_column_sums: bool,
    tile: &[usize],
    isa: TargetIsa,
) -> Option<ScalarType> {
    let buffered = with_column_sums && buffered_sums(bound, stage, tile, isa).is_some();
    shifted_lanes(bound, stage, isa).filter(|_| !buffered)
}

/// An offset with its fastest-axis component zeroed: the column it lies in.
fn column_offset(offset: &[i32]) -> Vec<i32> {
    let mut column = offset.to_vec();
    if let Some(last) = column.last_mut() {
        *last = 0;
    }
    column
}

/// Column sums over groups of columns ([`grouped_sums`]).
struct Grouped {
    groups: Vec<Vec<usize>>,
    sums: Vec<SumTerms>,
    shared: SumTerms,
}

/// The groups, per-shift sums and shared terms of weights (per column, per shift) of the form
/// `W[q][dx] = V[g(q)][dx] + β[q]`, where that takes fewer products than one term per column
/// in every sum. The columns whose weights differ by the same amount at every shift form a
/// group, weighted by the first one's weights (`V`); the rest (`β`, the same at every shift)
/// goes to one more group per distinct non-zero value, weighted by it in the shared terms.
fn grouped_sums(weights: &[Vec<f64>]) -> Option<Grouped> {
    let scale = weights.iter().flatten().fold(0.0f64, |m, w| m.max(w.abs()));
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * scale;
    // Columns whose weights differ from a group's first by one amount at every shift.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut offsets = vec![0.0; weights.len()];
    for (c, row) in weights.iter().enumerate() {
        let same_shape = |group: &&mut Vec<usize>| {
            let first = &weights[group[0]];
            let d = row[0] - first[0];
            row.iter().zip(first).all(|(w, f)| close(w - f, d))
        };
        match groups.iter_mut().find(same_shape) {
            Some(group) => {
                offsets[c] = row[0] - weights[group[0]][0];
                group.push(c);
            }
            None => groups.push(vec![c]),
        }
    }
    // The columns per distinct non-zero offset, in order of first appearance.
    let mut levels: Vec<(f64, Vec<usize>)> = Vec::new();
    for (c, &b) in offsets.iter().enumerate().filter(|(_, b)| !close(**b, 0.0)) {
        match levels.iter_mut().find(|(v, _)| close(*v, b)) {
            Some((_, level)) => level.push(c),
            None => levels.push((b, vec![c])),
        }
    }
    if groups.len() + levels.len() >= weights.len() {
        return None;
    }
    let shifts = weights[0].len();
    let sums: Vec<SumTerms> = (0..shifts)
        .map(|s| {
            let shaped = groups
                .iter()
                .enumerate()
                .map(|(g, cols)| (g, weights[cols[0]][s]));
            shaped.filter(|&(_, w)| w != 0.0).collect()
        })
        .collect();
    let shared = (levels.iter().enumerate())
        .map(|(h, (v, _))| (groups.len() + h, *v))
        .collect();
    if sums.iter().any(Vec::is_empty) {
        return None;
    }
    groups.extend(levels.into_iter().map(|(_, level)| level));
    Some(Grouped {
        groups,
        sums,
        shared,
    })
}

/// `W = u vᵀ` (with `v` of the first shift 1) when the weights (per column, per shift) have
/// rank one, up to a relative tolerance far below single-precision rounding.
fn rank_one(weights: &[Vec<f64>]) -> Option<(Vec<f64>, Vec<f64>)> {
    let first = weights.first()?;
    let pivot = first[0];
    if pivot == 0.0 {
        return None;
    }
    let u: Vec<f64> = weights.iter().map(|row| row[0]).collect();
    let v: Vec<f64> = first.iter().map(|w| w / pivot).collect();
    let fits = weights.iter().zip(&u).all(|(row, uc)| {
        row.iter().zip(&v).all(|(&w, vs)| {
            let model = uc * vs;
            (w - model).abs() <= 1e-12 * w.abs().max(model.abs())
        })
    });
    fits.then_some((u, v))
}
