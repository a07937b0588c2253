//! Plain row-major arrays and the Jacobi sweep the formulas are written with: the new array
//! starts as a copy of the old one and the update reads only the old one.

/// Seeded random numbers (the one generator, `tessera_runtime::random`), so every run of a
/// test sees the same inputs.
pub struct Rng(tessera_runtime::random::SplitMix64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(tessera_runtime::random::SplitMix64::new(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// `len` values in [0, 1).
    pub fn units<R: super::Real>(&mut self, len: usize) -> Vec<R> {
        (0..len).map(|_| R::unit(self.next_u64())).collect()
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| (self.next_u64() >> 56) as u8).collect()
    }

    /// `len` random 0/1 cells.
    pub fn bits(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| (self.next_u64() >> 63) as u8).collect()
    }
}

/// Read access to the old values around one point of a 2D `n x n` array.
pub struct At2<'a, T> {
    data: &'a [T],
    n: usize,
    i: usize,
    j: usize,
}

impl<'a, T: Copy> At2<'a, T> {
    /// Reads of `data` (an `n x n` array) around the point `(i, j)`.
    pub fn view(data: &'a [T], n: usize, i: usize, j: usize) -> At2<'a, T> {
        At2 { data, n, i, j }
    }

    /// The old value at offset `[di, dj]` from the point.
    pub fn at(&self, di: isize, dj: isize) -> T {
        let i = self.i.checked_add_signed(di).expect("read inside the grid");
        let j = self.j.checked_add_signed(dj).expect("read inside the grid");
        assert!(i < self.n && j < self.n, "read inside the grid");
        self.data[i * self.n + j]
    }

    /// The point's indices `(i, j)`.
    pub fn point(&self) -> (usize, usize) {
        (self.i, self.j)
    }
}

/// Read access to the old values around one point of a 3D array.
pub struct At3<'a, T> {
    data: &'a [T],
    shape: [usize; 3],
    p: [usize; 3],
}

impl<'a, T: Copy> At3<'a, T> {
    /// Reads of `data` (an array of `shape`) around the point `p` (z, y, x).
    pub fn view(data: &'a [T], shape: [usize; 3], p: [usize; 3]) -> At3<'a, T> {
        At3 { data, shape, p }
    }

    /// The point's indices (z, y, x).
    pub fn coords(&self) -> [usize; 3] {
        self.p
    }

    /// The old value at offset `[dz, dy, dx]` from the point.
    pub fn at(&self, dz: isize, dy: isize, dx: isize) -> T {
        let q: Vec<usize> = (0..3)
            .map(|a| {
                self.p[a]
                    .checked_add_signed([dz, dy, dx][a])
                    .filter(|v| *v < self.shape[a])
                    .expect("read inside the grid")
            })
            .collect();
        self.data[(q[0] * self.shape[1] + q[1]) * self.shape[2] + q[2]]
    }

    /// The point's linear index.
    pub fn index(&self) -> usize {
        (self.p[0] * self.shape[1] + self.p[1]) * self.shape[2] + self.p[2]
    }
}

/// The points of `lo..hi` along each of two axes, row by row.
pub fn points2(lo: [usize; 2], hi: [usize; 2]) -> impl Iterator<Item = (usize, usize)> {
    (lo[0]..hi[0]).flat_map(move |i| (lo[1]..hi[1]).map(move |j| (i, j)))
}

/// One Jacobi sweep of an `n x n` array over `lo..hi`: points there get `update` of the old
/// values, every other point keeps its value.
pub fn sweep2<T: Copy>(
    old: &[T],
    n: usize,
    lo: [usize; 2],
    hi: [usize; 2],
    update: impl Fn(&At2<T>) -> T,
) -> Vec<T> {
    let mut new = old.to_vec();
    for (i, j) in points2(lo, hi) {
        new[i * n + j] = update(&At2 { data: old, n, i, j });
    }
    new
}

/// One Jacobi sweep of the interior `r..n-r` of an `n x n` array.
pub fn interior2<T: Copy>(old: &[T], n: usize, r: usize, update: impl Fn(&At2<T>) -> T) -> Vec<T> {
    sweep2(old, n, [r, r], [n - r, n - r], update)
}

/// The points of `lo..hi` along each of three axes, in row-major order.
pub fn points3(lo: [usize; 3], hi: [usize; 3]) -> impl Iterator<Item = [usize; 3]> {
    (lo[0]..hi[0])
        .flat_map(move |z| (lo[1]..hi[1]).flat_map(move |y| (lo[2]..hi[2]).map(move |x| [z, y, x])))
}

/// One Jacobi sweep of a 3D array of `shape` over `lo..hi`.
pub fn sweep3<T: Copy>(
    old: &[T],
    shape: [usize; 3],
    lo: [usize; 3],
    hi: [usize; 3],
    update: impl Fn(&At3<T>) -> T,
) -> Vec<T> {
    let mut new = old.to_vec();
    for p in points3(lo, hi) {
        new[(p[0] * shape[1] + p[1]) * shape[2] + p[2]] = update(&At3 {
            data: old,
            shape,
            p,
        });
    }
    new
}

/// One Jacobi sweep of the interior `r..n-r` of an `n x n x n` array.
pub fn interior3<T: Copy>(old: &[T], n: usize, r: usize, update: impl Fn(&At3<T>) -> T) -> Vec<T> {
    sweep3(old, [n; 3], [r; 3], [n - r; 3], update)
}
