//! The grid cut into rank boxes: a Cartesian grid of ranks, each owning one box of points.

use tessera_analysis::region::Rect;

use crate::DistributeError;

/// A Cartesian decomposition of a grid: `ranks[a]` ranks along axis `a` (slowest first), rank
/// numbers in row-major order of their coordinates, boxes as even as the extents allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decomposition {
    /// Grid extents, slowest axis first.
    pub extents: Vec<usize>,
    /// Ranks along each axis.
    pub ranks: Vec<usize>,
}

impl Decomposition {
    /// The decomposition with `ranks` per axis (`--ranks 2x2`), refused when the counts do not
    /// match the grid's axes or an axis has fewer points than ranks.
    pub fn new(extents: &[usize], ranks: &[usize]) -> Result<Decomposition, DistributeError> {
        if ranks.len() != extents.len() {
            return Err(DistributeError::Ranks(format!(
                "{} rank counts for a grid of {} axes",
                ranks.len(),
                extents.len()
            )));
        }
        for (axis, (&n, &k)) in extents.iter().zip(ranks).enumerate() {
            if k == 0 || k > n {
                return Err(DistributeError::Ranks(format!(
                    "{k} ranks along axis {axis}, which has {n} points"
                )));
            }
        }
        Ok(Decomposition {
            extents: extents.to_vec(),
            ranks: ranks.to_vec(),
        })
    }

    /// `count` ranks spread over the grid's axes (as `MPI_Dims_create` would, but never along
    /// the fastest axis, so that every row of the grid lies in one rank: reductions then fold
    /// whole rows, in THE order of `tessera_runtime::reduce`; nor along the axes `whole`, which
    /// scans run along). Each prime factor of `count`, largest first, goes to the axis whose
    /// boxes are longest.
    pub fn automatic(
        extents: &[usize],
        count: usize,
        whole: &[usize],
    ) -> Result<Decomposition, DistributeError> {
        if count == 0 {
            return Err(DistributeError::Ranks("0 ranks".into()));
        }
        let mut ranks = vec![1; extents.len()];
        let cuttable: Vec<usize> = (0..extents.len().saturating_sub(1))
            .filter(|a| !whole.contains(a))
            .collect();
        if cuttable.is_empty() && count > 1 {
            let why = match extents.len() {
                1 => "a 1D grid: the fastest axis is never split".to_string(),
                _ => format!(
                    "a grid whose axes but the fastest are scanned along (axes {whole:?}): the \
                     fastest axis is never split, nor one a scan runs along"
                ),
            };
            return Err(DistributeError::Ranks(format!("{count} ranks for {why}")));
        }
        for factor in prime_factors(count).into_iter().rev() {
            let longest = (cuttable.iter().copied())
                .max_by_key(|&a| (extents[a] / ranks[a], std::cmp::Reverse(a)));
            if let Some(axis) = longest {
                ranks[axis] *= factor;
            }
        }
        Decomposition::new(extents, &ranks)
    }

    /// The number of ranks.
    pub fn rank_count(&self) -> usize {
        self.ranks.iter().product()
    }

    /// A rank's coordinates in the grid of ranks.
    pub fn coords(&self, rank: usize) -> Vec<usize> {
        let mut rest = rank;
        let mut coords = vec![0; self.ranks.len()];
        for axis in (0..self.ranks.len()).rev() {
            coords[axis] = rest % self.ranks[axis];
            rest /= self.ranks[axis];
        }
        coords
    }

    /// The points rank `rank` owns.
    pub fn owned(&self, rank: usize) -> Rect {
        let coords = self.coords(rank);
        let (lo, hi) = (0..self.extents.len())
            .map(|a| axis_share(self.extents[a], self.ranks[a], coords[a]))
            .unzip();
        Rect::new(lo, hi)
    }

    /// The rank owning `point` (a grid point).
    pub fn owner(&self, point: &[i64]) -> usize {
        (0..self.extents.len()).fold(0, |rank, a| {
            let (n, k) = (self.extents[a] as i64, self.ranks[a] as i64);
            let (base, extra) = (n / k, n % k);
            let p = point[a];
            let coord = if p < extra * (base + 1) {
                p / (base + 1)
            } else {
                extra + (p - extra * (base + 1)) / base
            };
            rank * self.ranks[a] + coord as usize
        })
    }

    /// How it is written (`2x1`).
    pub fn describe(&self) -> String {
        (self.ranks.iter().map(usize::to_string))
            .collect::<Vec<_>>()
            .join("x")
    }
}

/// The share `[lo, hi)` of `n` points of the rank at `coord` of `k`: the first `n % k` ranks
/// hold one point more.
fn axis_share(n: usize, k: usize, coord: usize) -> (i64, i64) {
    let (base, extra) = (n / k, n % k);
    let lo = coord * base + coord.min(extra);
    let len = base + usize::from(coord < extra);
    (lo as i64, (lo + len) as i64)
}

/// The prime factors of `n`, smallest first.
fn prime_factors(mut n: usize) -> Vec<usize> {
    let mut factors = Vec::new();
    let mut p = 2;
    while p * p <= n {
        while n.is_multiple_of(p) {
            factors.push(p);
            n /= p;
        }
        p += 1;
    }
    if n > 1 {
        factors.push(n);
    }
    factors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_cover_the_grid_once_and_owner_agrees() {
        let d = Decomposition::new(&[7, 10, 5], &[3, 2, 1]).unwrap();
        let mut seen = vec![0u8; 7 * 10 * 5];
        for rank in 0..d.rank_count() {
            let owned = d.owned(rank);
            for z in owned.lo[0]..owned.hi[0] {
                for y in owned.lo[1]..owned.hi[1] {
                    for x in owned.lo[2]..owned.hi[2] {
                        assert_eq!(d.owner(&[z, y, x]), rank);
                        seen[((z * 10 + y) * 5 + x) as usize] += 1;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
        assert_eq!(d.owned(0), Rect::new(vec![0, 0, 0], vec![3, 5, 5]));
        assert_eq!(d.owned(5), Rect::new(vec![5, 5, 0], vec![7, 10, 5]));
    }

    #[test]
    fn automatic_never_splits_the_fastest_axis_nor_a_scanned_one() {
        assert_eq!(
            Decomposition::automatic(&[64, 64], 4, &[]).unwrap().ranks,
            [4, 1]
        );
        assert_eq!(
            Decomposition::automatic(&[64, 64, 64], 4, &[])
                .unwrap()
                .ranks,
            [2, 2, 1]
        );
        assert_eq!(
            Decomposition::automatic(&[8, 64, 9], 6, &[]).unwrap().ranks,
            [1, 6, 1]
        );
        assert_eq!(
            Decomposition::automatic(&[64, 64, 64], 6, &[])
                .unwrap()
                .ranks,
            [3, 2, 1]
        );
        assert!(Decomposition::automatic(&[64], 2, &[]).is_err());
        assert_eq!(Decomposition::automatic(&[64], 1, &[]).unwrap().ranks, [1]);
        // A scan along z: the ranks go to y.
        assert_eq!(
            Decomposition::automatic(&[64, 64, 64], 4, &[0])
                .unwrap()
                .ranks,
            [1, 4, 1]
        );
        assert!(Decomposition::automatic(&[64, 64], 2, &[0]).is_err());
    }

    #[test]
    fn too_many_ranks_for_an_axis_are_refused() {
        let error = Decomposition::new(&[3, 64], &[4, 1]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("4 ranks along axis 0, which has 3 points")
        );
        assert!(Decomposition::new(&[3, 64], &[1]).is_err());
    }
}
