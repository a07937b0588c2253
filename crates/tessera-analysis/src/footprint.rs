//! Footprints: the offsets at which a stage reads a field, inferred from the accesses.

/// The exact set of read offsets of one field in one stage, and its bounding box.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Every distinct offset read, sorted lexicographically (slowest axis first).
    pub offsets: Vec<Vec<i32>>,
    /// Smallest offset per axis (the box's low corner; may be positive).
    pub min: Vec<i32>,
    /// Largest offset per axis.
    pub max: Vec<i32>,
}

impl Footprint {
    /// The footprint of a single offset.
    pub fn single(offset: &[i32]) -> Footprint {
        Footprint {
            offsets: vec![offset.to_vec()],
            min: offset.to_vec(),
            max: offset.to_vec(),
        }
    }

    /// Adds an offset.
    pub fn insert(&mut self, offset: &[i32]) {
        if let Err(pos) = self.offsets.binary_search_by(|o| o.as_slice().cmp(offset)) {
            self.offsets.insert(pos, offset.to_vec());
            for (axis, &o) in offset.iter().enumerate() {
                self.min[axis] = self.min[axis].min(o);
                self.max[axis] = self.max[axis].max(o);
            }
        }
    }

    /// Merges another footprint of the same field into this one.
    pub fn merge(&mut self, other: &Footprint) {
        for offset in &other.offsets {
            self.insert(offset);
        }
    }

    /// Whether `offset` lies in the bounding box.
    pub fn box_contains(&self, offset: &[i32]) -> bool {
        offset
            .iter()
            .enumerate()
            .all(|(a, &o)| self.min[a] <= o && o <= self.max[a])
    }

    /// The largest absolute offset over all axes (the stencil radius).
    pub fn radius(&self) -> u32 {
        self.min
            .iter()
            .chain(&self.max)
            .map(|o| o.unsigned_abs())
            .max()
            .unwrap_or(0)
    }

    /// Whether some offset differs from zero on two or more axes (a "diagonal" access, as in
    /// box stencils).
    pub fn has_diagonal(&self) -> bool {
        self.offsets
            .iter()
            .any(|o| o.iter().filter(|&&v| v != 0).count() > 1)
    }
}
