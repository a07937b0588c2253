//! Where a read at a grid index lands: inside the grid, or on the border's constant value.

use tessera_ir::Border;

/// The answer to a read along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Landing {
    /// The in-grid index that is read.
    Inside(usize),
    /// Outside the grid under a `constant` border: the read gives the constant.
    Constant,
}

/// Resolves index `index` along an axis of `extent` points under `border`; `None` when it lies
/// outside the grid and the field has no border handling (binding rules this out).
///
/// clamp = nearest index; periodic = `index mod extent` (Euclidean); mirror = reflection about the
/// edges without repeating them (`-1 -> 1`, `extent -> extent - 2`), repeated as often as needed;
/// constant = [`Landing::Constant`].
pub(crate) fn land(index: i64, extent: usize, border: Option<Border>) -> Option<Landing> {
    let n = extent as i64;
    if (0..n).contains(&index) {
        return Some(Landing::Inside(index as usize));
    }
    let inside = match border? {
        Border::Constant(_) => return Some(Landing::Constant),
        Border::Clamp => index.clamp(0, n - 1),
        Border::Periodic => index.rem_euclid(n),
        Border::Mirror => {
            let period = 2 * (n - 1);
            if period == 0 {
                0
            } else {
                let folded = index.rem_euclid(period);
                if folded < n { folded } else { period - folded }
            }
        }
    };
    Some(Landing::Inside(inside as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_at_both_edges() {
        let inside = |i| Some(Landing::Inside(i));
        assert_eq!(land(-1, 5, Some(Border::Clamp)), inside(0));
        assert_eq!(land(7, 5, Some(Border::Clamp)), inside(4));
        assert_eq!(land(-1, 5, Some(Border::Periodic)), inside(4));
        assert_eq!(land(5, 5, Some(Border::Periodic)), inside(0));
        assert_eq!(land(-1, 5, Some(Border::Mirror)), inside(1));
        assert_eq!(land(-2, 5, Some(Border::Mirror)), inside(2));
        assert_eq!(land(5, 5, Some(Border::Mirror)), inside(3));
        assert_eq!(land(6, 5, Some(Border::Mirror)), inside(2));
        assert_eq!(
            land(-1, 5, Some(Border::Constant(tessera_ir::Constant::Int(3)))),
            Some(Landing::Constant)
        );
        assert_eq!(land(3, 5, None), inside(3));
        assert_eq!(land(5, 5, None), None);
    }
}
