//! N-dimensional half-open rectangles of grid points and their arithmetic.

/// The points `lo[a] <= i[a] < hi[a]` on every axis `a` (slowest first). Empty when any
/// `hi <= lo`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rect {
    /// Lowest index per axis.
    pub lo: Vec<i64>,
    /// One past the highest index per axis.
    pub hi: Vec<i64>,
}

impl Rect {
    /// The rectangle `lo..hi`.
    pub fn new(lo: Vec<i64>, hi: Vec<i64>) -> Rect {
        debug_assert_eq!(lo.len(), hi.len());
        Rect { lo, hi }
    }

    /// The whole grid of the given extents.
    pub fn grid(extents: &[usize]) -> Rect {
        Rect {
            lo: vec![0; extents.len()],
            hi: extents.iter().map(|&e| e as i64).collect(),
        }
    }

    /// The empty rectangle of `dims` axes.
    pub fn empty(dims: usize) -> Rect {
        Rect::new(vec![0; dims], vec![0; dims])
    }

    /// Number of axes.
    pub fn dims(&self) -> usize {
        self.lo.len()
    }

    /// Whether the rectangle holds no point.
    pub fn is_empty(&self) -> bool {
        self.lo.iter().zip(&self.hi).any(|(l, h)| h <= l)
    }

    /// Number of points (0 when empty).
    pub fn volume(&self) -> u128 {
        if self.is_empty() {
            return 0;
        }
        self.lo
            .iter()
            .zip(&self.hi)
            .map(|(l, h)| (h - l) as u128)
            .product()
    }

    /// Extent along `axis` (0 when empty along it).
    pub fn len(&self, axis: usize) -> i64 {
        (self.hi[axis] - self.lo[axis]).max(0)
    }

    /// Whether `point` lies inside.
    pub fn contains(&self, point: &[i64]) -> bool {
        point
            .iter()
            .enumerate()
            .all(|(a, &p)| self.lo[a] <= p && p < self.hi[a])
    }

    /// Whether every point of `other` lies inside (an empty `other` always does).
    pub fn contains_rect(&self, other: &Rect) -> bool {
        other.is_empty()
            || (0..self.dims()).all(|a| self.lo[a] <= other.lo[a] && other.hi[a] <= self.hi[a])
    }

    /// The common points.
    pub fn intersect(&self, other: &Rect) -> Rect {
        Rect {
            lo: self
                .lo
                .iter()
                .zip(&other.lo)
                .map(|(a, b)| *a.max(b))
                .collect(),
            hi: self
                .hi
                .iter()
                .zip(&other.hi)
                .map(|(a, b)| *a.min(b))
                .collect(),
        }
    }

    /// The smallest rectangle holding both (the rectangular hull of their union); empty
    /// operands are ignored.
    pub fn hull(&self, other: &Rect) -> Rect {
        if self.is_empty() {
            return other.clone();
        }
        if other.is_empty() {
            return self.clone();
        }
        Rect {
            lo: self
                .lo
                .iter()
                .zip(&other.lo)
                .map(|(a, b)| *a.min(b))
                .collect(),
            hi: self
                .hi
                .iter()
                .zip(&other.hi)
                .map(|(a, b)| *a.max(b))
                .collect(),
        }
    }

    /// The points read when every point of `self` reads the offsets `min..=max` (a footprint's
    /// bounding box): `lo + min .. hi + max`. Empty stays empty.
    pub fn grow(&self, min: &[i32], max: &[i32]) -> Rect {
        if self.is_empty() {
            return self.clone();
        }
        Rect {
            lo: self
                .lo
                .iter()
                .zip(min)
                .map(|(l, m)| l + i64::from(*m))
                .collect(),
            hi: self
                .hi
                .iter()
                .zip(max)
                .map(|(h, m)| h + i64::from(*m))
                .collect(),
        }
    }

    /// Moved by `shift` along each axis (the same points relative to another origin).
    pub fn shifted(&self, shift: &[i64]) -> Rect {
        let lo = self.lo.iter().zip(shift).map(|(l, s)| l + s).collect();
        let hi = self.hi.iter().zip(shift).map(|(h, s)| h + s).collect();
        Rect::new(lo, hi)
    }

    /// Grows by `radius` on every side of every axis.
    pub fn dilate(&self, radius: i64) -> Rect {
        let d = self.dims();
        let r = i32::try_from(radius).unwrap_or(i32::MAX);
        self.grow(&vec![-r; d], &vec![r; d])
    }

    /// The linear (row-major) index of `point` in a grid of `extents`.
    pub fn linear_index(point: &[i64], extents: &[usize]) -> usize {
        point
            .iter()
            .zip(extents)
            .fold(0usize, |acc, (&p, &e)| acc * e + p as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(lo: &[i64], hi: &[i64]) -> Rect {
        Rect::new(lo.to_vec(), hi.to_vec())
    }

    #[test]
    fn intersection_hull_and_growth() {
        let a = r(&[0, 0], &[4, 4]);
        let b = r(&[2, 3], &[6, 5]);
        assert_eq!(a.intersect(&b), r(&[2, 3], &[4, 4]));
        assert_eq!(a.hull(&b), r(&[0, 0], &[6, 5]));
        assert_eq!(a.grow(&[-1, 0], &[2, 1]), r(&[-1, 0], &[6, 5]));
        assert!(r(&[3, 0], &[1, 4]).is_empty());
        assert_eq!(r(&[3, 0], &[1, 4]).volume(), 0);
        assert_eq!(a.hull(&r(&[9, 9], &[9, 9])), a);
        assert!(a.contains_rect(&r(&[1, 1], &[3, 3])));
        assert!(!a.contains_rect(&b));
        assert_eq!(Rect::linear_index(&[2, 3], &[4, 5]), 13);
    }
}
