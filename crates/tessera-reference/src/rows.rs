//! Domains as sequences of rows: the points sharing every index but the fastest one, in
//! lexicographic order (the order of `tessera_runtime::reduce`).

use tessera_analysis::Domain;

/// One row of a domain: fixed slow-axis indices, and `len` points along the fastest axis
/// starting at `lo`, `stride` apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    /// Indices along every axis but the fastest, slowest first.
    pub prefix: Vec<i64>,
    /// First index along the fastest axis.
    pub lo: i64,
    /// Step along the fastest axis.
    pub stride: i64,
    /// Number of points.
    pub len: usize,
}

impl Row {
    /// A row of one point at the origin of a `dims`-dimensional grid (for scalar expressions).
    pub(crate) fn single(dims: usize) -> Row {
        Row {
            prefix: vec![0; dims.saturating_sub(1)],
            lo: 0,
            stride: 1,
            len: 1,
        }
    }

    /// The fastest-axis index of the row's `k`-th point.
    pub(crate) fn x(&self, k: usize) -> i64 {
        self.lo + k as i64 * self.stride
    }

    /// The linear index of the row's first point with fastest index 0 (add the fastest index).
    pub(crate) fn base(&self, extents: &[usize]) -> usize {
        let slow = self
            .prefix
            .iter()
            .zip(extents)
            .fold(0usize, |acc, (&p, &e)| acc * e + p as usize);
        slow * extents.last().copied().unwrap_or(1)
    }
}

/// Number of covered indices along `axis` of `domain`.
fn count(domain: &Domain, axis: usize) -> i64 {
    let (lo, hi) = (domain.rect.lo[axis], domain.rect.hi[axis]);
    if hi <= lo {
        0
    } else {
        (hi - 1 - lo) / domain.stride[axis] + 1
    }
}

/// The rows of `domain` in lexicographic order (none when the domain is empty).
pub(crate) fn rows(domain: &Domain) -> Vec<Row> {
    let dims = domain.rect.dims();
    let Some(fast) = dims.checked_sub(1) else {
        return Vec::new();
    };
    let counts: Vec<i64> = (0..dims).map(|a| count(domain, a)).collect();
    if counts.contains(&0) {
        return Vec::new();
    }
    let row_count: i64 = counts[..fast].iter().product();
    (0..row_count)
        .map(|mut r| {
            let mut prefix = vec![0; fast];
            for axis in (0..fast).rev() {
                prefix[axis] = domain.rect.lo[axis] + (r % counts[axis]) * domain.stride[axis];
                r /= counts[axis];
            }
            Row {
                prefix,
                lo: domain.rect.lo[fast],
                stride: domain.stride[fast],
                len: counts[fast] as usize,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_analysis::Rect;

    #[test]
    fn strided_rows_in_lexicographic_order() {
        let domain = Domain {
            rect: Rect::new(vec![1, 0, 2], vec![4, 2, 7]),
            stride: vec![2, 1, 3],
        };
        let rows = rows(&domain);
        let prefixes: Vec<Vec<i64>> = rows.iter().map(|r| r.prefix.clone()).collect();
        assert_eq!(
            prefixes,
            vec![vec![1, 0], vec![1, 1], vec![3, 0], vec![3, 1]]
        );
        assert_eq!((rows[0].lo, rows[0].stride, rows[0].len), (2, 3, 2));
        assert_eq!(rows[3].base(&[5, 2, 7]), (3 * 2 + 1) * 7);
        let empty = Domain {
            rect: Rect::new(vec![1, 3], vec![1, 5]),
            stride: vec![1, 1],
        };
        assert!(super::rows(&empty).is_empty());
    }
}
