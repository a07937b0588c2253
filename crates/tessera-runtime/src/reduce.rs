//! The one reduction order every backend follows, so that reductions are bitwise reproducible
//! across backends, strategies and thread counts.
//!
//! A reduction over a region is computed **row by row**: a row is the set of region points that
//! share every index but the fastest one. Each row's partial is accumulated in `f64`, points in
//! ascending x, starting from the identity; the partials are then combined in ascending
//! lexicographic row order, starting from the identity. Values are converted to `f64` before
//! accumulation. `min`/`max` propagate NaN (any NaN gives NaN).

use tessera_ir::{Id, Program, ReduceOp, Reduction, ReductionPlacement};

/// The identity of `op`: 0 for sums, +inf for min, -inf for max.
pub fn identity(op: ReduceOp) -> f64 {
    match op {
        ReduceOp::Sum => 0.0,
        ReduceOp::Min => f64::INFINITY,
        ReduceOp::Max => f64::NEG_INFINITY,
    }
}

/// Combines an accumulator with one more value (or one more row partial).
#[inline]
pub fn combine(op: ReduceOp, acc: f64, value: f64) -> f64 {
    match op {
        ReduceOp::Sum => acc + value,
        ReduceOp::Min => {
            if acc.is_nan() || value.is_nan() {
                f64::NAN
            } else if value < acc {
                value
            } else {
                acc
            }
        }
        ReduceOp::Max => {
            if acc.is_nan() || value.is_nan() {
                f64::NAN
            } else if value > acc {
                value
            } else {
                acc
            }
        }
    }
}

/// Folds values (one row's points, or row partials in row order) in the fixed order.
pub fn fold(op: ReduceOp, values: impl IntoIterator<Item = f64>) -> f64 {
    values
        .into_iter()
        .fold(identity(op), |acc, v| combine(op, acc, v))
}

/// One reduction's row partials from one step: each row accumulated in THE order, the rows
/// not yet combined (a distributed run combines the rows of every rank).
#[derive(Clone, Debug, PartialEq)]
pub struct RowPartials {
    /// The combining operation.
    pub op: ReduceOp,
    /// One partial per row of the reduction's points, in ascending lexicographic row order.
    pub rows: Vec<f64>,
}

impl RowPartials {
    /// The reduction's value: the rows combined in order.
    pub fn value(&self) -> f64 {
        fold(self.op, self.rows.iter().copied())
    }
}

/// Whether a reduction (or a launch) computed every `every` steps is due in step `t` (0-based):
/// after steps `every - 1`, `2 every - 1`, ...
pub fn due(every: u64, t: u64) -> bool {
    (t + 1).is_multiple_of(every.max(1))
}

/// The order in which a step's reductions are computed and reported: in-stage reductions by
/// stage (then by declaration), then after-step reductions by declaration.
pub fn record_order(program: &Program) -> Vec<Id<Reduction>> {
    let mut order: Vec<Id<Reduction>> = program.reductions.ids().collect();
    order.sort_by_key(|r| match program.reductions[*r].placement {
        ReductionPlacement::InStage(stage) => (0, stage.index(), r.index()),
        ReductionPlacement::AfterStep { .. } => (1, 0, r.index()),
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_in_order_and_propagates_nan_for_min_max() {
        assert_eq!(fold(ReduceOp::Sum, [1.0, 2.0, 3.5]), 6.5);
        assert_eq!(fold(ReduceOp::Min, [3.0, -1.0, 2.0]), -1.0);
        assert_eq!(fold(ReduceOp::Max, [3.0, -1.0, 2.0]), 3.0);
        assert!(fold(ReduceOp::Max, [3.0, f64::NAN, 2.0]).is_nan());
        assert_eq!(fold(ReduceOp::Sum, []), 0.0);
    }
}
