//! Receivers' points on a concrete grid: their linear indices (row-major, x fastest), and the
//! points that leave the grid.

use tessera_ir::{Diagnostic, Program};

/// A receiver's point outside the grid: its position in the receiver's list and coordinates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointOutside {
    /// The point's index in the receiver's points.
    pub index: usize,
    /// Its coordinates, slowest axis first.
    pub point: Vec<i64>,
}

/// `[4, 10]`: a point's or an extent list's text.
pub fn coords_text<T: ToString>(coords: &[T]) -> String {
    let parts: Vec<String> = coords.iter().map(T::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// The linear index (row-major, fastest axis last) of each point on a grid of `extents`, or
/// the first point outside it (or with a different number of coordinates).
pub fn linear_indices(points: &[Vec<i64>], extents: &[usize]) -> Result<Vec<usize>, PointOutside> {
    points
        .iter()
        .enumerate()
        .map(|(index, point)| {
            linear_index(point, extents).ok_or_else(|| PointOutside {
                index,
                point: point.clone(),
            })
        })
        .collect()
}

/// The linear index of one point, `None` outside the grid.
fn linear_index(point: &[i64], extents: &[usize]) -> Option<usize> {
    if point.len() != extents.len() {
        return None;
    }
    point
        .iter()
        .zip(extents)
        .try_fold(0usize, |index, (&c, &extent)| {
            let c = usize::try_from(c).ok().filter(|&c| c < extent)?;
            Some(index * extent + c)
        })
}

/// E0270 for each receiver with a written point outside the grid of `extents`.
pub fn points_outside_grid(program: &Program, extents: &[usize]) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for receiver in program.receivers.values() {
        let tessera_ir::ReceiverPoints::Fixed(points) = &receiver.points else {
            continue;
        };
        if let Err(outside) = linear_indices(points, extents) {
            errors.push(
                Diagnostic::error(
                    "E0270",
                    format!(
                        "the receiver `{}` has point {} at {} outside the grid {}",
                        receiver.name,
                        outside.index,
                        coords_text(&outside.point),
                        coords_text(extents)
                    ),
                )
                .with_primary(receiver.span, "a point outside the grid")
                .with_help(format!(
                    "each coordinate is in 0..extent, slowest axis first, on the grid {}",
                    coords_text(extents)
                )),
            );
        }
    }
    errors
}
