//! Halo exchange: which boxes of which rank's arrays fill which halo points of another's, and
//! the copies of boxes between arrays (scatter, gather, halo) that every transport shares.

use tessera_analysis::region::Rect;
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

/// The box moved by `shift`.
fn shifted(rect: &Rect, shift: &[i64]) -> Rect {
    let lo = rect.lo.iter().zip(shift).map(|(l, s)| l + s).collect();
    let hi = rect.hi.iter().zip(shift).map(|(h, s)| h + s).collect();
    Rect::new(lo, hi)
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
                let images = shifted(&sender.owned, shift);
                let points = receiver.local.intersect(&images);
                let own = receiver.rank == sender.rank && shift.iter().all(|&s| s == 0);
                if points.is_empty() || own {
                    continue;
                }
                let back: Vec<i64> = shift.iter().map(|s| -s).collect();
                out.push(Transfer {
                    from: sender.rank,
                    to: receiver.rank,
                    source: shifted(&shifted(&points, &back), &negated(&sender.local.lo)),
                    target: shifted(&points, &negated(&receiver.local.lo)),
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
    if source.is_empty() {
        return;
    }
    let width = element_width(from);
    let dims = source.dims();
    let row = source.len(dims - 1) as usize * width;
    let rows: Vec<Vec<i64>> = row_starts(source);
    for start in rows {
        let at: Vec<i64> = (0..dims)
            .map(|a| start[a] - source.lo[a] + target_lo[a])
            .collect();
        let s = Rect::linear_index(&start, from_shape) * width;
        let t = Rect::linear_index(&at, to_shape) * width;
        to.as_bytes_mut()[t..t + row].copy_from_slice(&from.as_bytes()[s..s + row]);
    }
}

/// The first point of every row of a box (rows along the fastest axis), in order.
fn row_starts(rect: &Rect) -> Vec<Vec<i64>> {
    let dims = rect.dims();
    let mut starts = vec![Vec::new()];
    for a in 0..dims {
        let range: Vec<i64> = match a + 1 == dims {
            true => vec![rect.lo[a]],
            false => (rect.lo[a]..rect.hi[a]).collect(),
        };
        starts = (starts.iter())
            .flat_map(|p| {
                range.iter().map(move |&i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    starts
}

/// The bytes of the box `rect` of every field, field after field, row after row: one
/// message of an exchange.
pub fn pack(fields: &FieldSet, rect: &Rect) -> Vec<u8> {
    let mut out = Vec::new();
    for buffer in &fields.buffers {
        let width = element_width(buffer);
        let row = rect.len(rect.dims() - 1) as usize * width;
        for start in row_starts(rect) {
            let s = Rect::linear_index(&start, &fields.shape) * width;
            out.extend_from_slice(&buffer.as_bytes()[s..s + row]);
        }
    }
    out
}

/// Writes a message made by [`pack`] (of a box of the same size) into the box `rect`.
pub fn unpack(message: &[u8], fields: &mut FieldSet, rect: &Rect) {
    let mut at = 0;
    let shape = fields.shape.clone();
    for buffer in &mut fields.buffers {
        let width = element_width(buffer);
        let row = rect.len(rect.dims() - 1) as usize * width;
        for start in row_starts(rect) {
            let t = Rect::linear_index(&start, &shape) * width;
            buffer.as_bytes_mut()[t..t + row].copy_from_slice(&message[at..at + row]);
            at += row;
        }
    }
}

/// Bytes per element of a buffer.
fn element_width(buffer: &Buffer) -> usize {
    buffer.as_bytes().len() / buffer.len().max(1)
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
        let points = rank.local.intersect(&shifted(&grid, &shift));
        let back: Vec<i64> = shift.iter().map(|s| -s).collect();
        let target = shifted(&points, &negated(&rank.local.lo));
        for (index, buffer) in global.buffers.iter().enumerate() {
            let shape = local.shape.clone();
            copy_box(
                buffer,
                &global.shape,
                &shifted(&points, &back),
                &mut local.buffers[index],
                &shape,
                &target.lo,
            );
        }
    }
}

/// The owned points of a rank's local fields written back into the global ones.
pub fn gather(rank: &RankProgram, local: &FieldSet, global: &mut FieldSet) {
    let source = shifted(&rank.owned, &negated(&rank.local.lo));
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
