//! Halo exchange: which boxes of which rank's arrays fill which halo points of another's, and
//! the copies of boxes between arrays (scatter, gather, halo) that every transport shares.

use tessera_analysis::region::Rect;
use tessera_runtime::boxes::{box_rows, element_width};
use tessera_runtime::{Buffer, FieldSet};

use crate::decompose::Decomposition;
use crate::local::RankProgram;

/// One message of an exchange: points `from` owns, copied into `to`'s halo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The sending rank.
    pub from: usize,
    /// The receiving rank.
    pub to: usize,
    /// The points, in the sender's local frame.
    pub source: Rect,
    /// The same points, in the receiver's local frame.
    pub target: Rect,
}

impl Transfer {
    /// Points moved per field.
    pub fn points(&self) -> u128 {
        self.source.volume()
    }
}

/// The shifts (multiples of each extent) under which a point of the grid is seen in a box: on
/// a periodic axis cut into ranks, `-N`, `0` and `N`; elsewhere `0`.
fn image_shifts(decomposition: &Decomposition, periodic: bool) -> Vec<Vec<i64>> {
    let per_axis: Vec<Vec<i64>> = (decomposition.extents.iter().zip(&decomposition.ranks))
        .map(|(&n, &k)| match periodic && k > 1 {
            true => vec![-(n as i64), 0, n as i64],
            false => vec![0],
        })
        .collect();
    per_axis.iter().fold(vec![Vec::new()], |acc, shifts| {
        (acc.iter())
            .flat_map(|prefix| {
                shifts.iter().map(move |&s| {
                    let mut next = prefix.clone();
                    next.push(s);
                    next
                })
            })
            .collect()
    })
}
/// Every message of one exchange: each rank's halo points, from the ranks owning their
/// images. Together they fill every point of every local box that its rank does not own.
pub fn transfers(
    decomposition: &Decomposition,
    ranks: &[RankProgram],
    periodic: bool,
) -> Vec<Transfer> {
    let shifts = image_shifts(decomposition, periodic);
    let mut out = Vec::new();
    for receiver in ranks {
        for sender in ranks {
            for shift in &shifts {
                let images = sender.owned.shifted(shift);
                let points = receiver.local.intersect(&images);
                let own = receiver.rank == sender.rank && shift.iter().all(|&s| s == 0);
                if points.is_empty() || own {
                    continue;
                }
                let back: Vec<i64> = shift.iter().map(|s| -s).collect();
                out.push(Transfer {
                    from: sender.rank,
                    to: receiver.rank,
                    source: points.shifted(&back).shifted(&negated(&sender.local.lo)),
                    target: points.shifted(&negated(&receiver.local.lo)),
                });
            }
        }
    }
    out
}

/// `-v`.
fn negated(v: &[i64]) -> Vec<i64> {
    v.iter().map(|x| -x).collect()
}

/// Copies the box `source` of `from` (an array of `from_shape`) onto the box of the same size
/// at `target_lo` of `to` (an array of `to_shape`), row by row.
pub fn copy_box(
    from: &Buffer,
    from_shape: &[usize],
    source: &Rect,
    to: &mut Buffer,
    to_shape: &[usize],
    target_lo: &[i64],
) {
    let width = element_width(from);
    let target = source.shifted(
        &(0..source.dims())
            .map(|a| target_lo[a] - source.lo[a])
            .collect::<Vec<_>>(),
    );
    let rows = box_rows(source, from_shape, width).into_iter();
    for ((s, len), (t, _)) in rows.zip(box_rows(&target, to_shape, width)) {
        to.as_bytes_mut()[t..t + len].copy_from_slice(&from.as_bytes()[s..s + len]);
    }
}

/// A rank's local fields cut from the global ones: every point of the box from its image.
pub fn scatter(
    decomposition: &Decomposition,
    rank: &RankProgram,
    periodic: bool,
    global: &FieldSet,
    local: &mut FieldSet,
) {
    let grid = Rect::grid(&global.shape);
    for shift in image_shifts(decomposition, periodic) {
        let points = rank.local.intersect(&grid.shifted(&shift));
        let back: Vec<i64> = shift.iter().map(|s| -s).collect();
        let target = points.shifted(&negated(&rank.local.lo));
        for (index, buffer) in global.buffers.iter().enumerate() {
            let shape = local.shape.clone();
            copy_box(
                buffer,
                &global.shape,
                &points.shifted(&back),
                &mut local.buffers[index],
                &shape,
                &target.lo,
            );
        }
    }
}

/// The owned points of a rank's local fields written back into the global ones.
pub fn gather(rank: &RankProgram, local: &FieldSet, global: &mut FieldSet) {
    let source = rank.owned.shifted(&negated(&rank.local.lo));
    for (index, buffer) in local.buffers.iter().enumerate() {
        let shape = global.shape.clone();
        copy_box(
            buffer,
            &local.shape,
            &source,
            &mut global.buffers[index],
            &shape,
            &rank.owned.lo,
        );
    }
}
