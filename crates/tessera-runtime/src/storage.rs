//! The elements of one field buffer: a vector Tessera owns, or memory another runtime lends
//! for the length of a run (a NumPy array used in place by the Python package).

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::pages::copied;

/// A buffer's elements, read and written as a slice whoever owns them.
pub struct Storage<T> {
    inner: Inner<T>,
}

/// Who owns the elements.
enum Inner<T> {
    /// Tessera's own allocation.
    Owned(Vec<T>),
    /// Memory of the lender, alive and not otherwise accessed while the storage lives.
    Lent { start: NonNull<T>, len: usize },
}

// SAFETY: a lent storage is an exclusive borrow of plain numbers (see `Storage::lent`), which
// may move to and be shared between threads like a `&mut [T]`.
unsafe impl<T: Send> Send for Storage<T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: Sync> Sync for Storage<T> {}

impl<T> Storage<T> {
    /// Storage over `len` elements at `start` that the caller lends.
    ///
    /// # Safety
    /// `start` points to `len` initialised, aligned elements that stay allocated and are
    /// neither read nor written by anyone else until the storage is dropped.
    pub unsafe fn lent(start: NonNull<T>, len: usize) -> Storage<T> {
        Storage {
            inner: Inner::Lent { start, len },
        }
    }

    /// Whether the elements are lent rather than owned.
    pub fn is_lent(&self) -> bool {
        matches!(self.inner, Inner::Lent { .. })
    }

    /// The elements as a vector: the owned one moved out, lent ones copied.
    pub fn into_owned(self) -> Vec<T>
    where
        T: Copy + Default,
    {
        match self.inner {
            Inner::Owned(v) => v,
            Inner::Lent { .. } => copied(&self),
        }
    }
}

impl<T> From<Vec<T>> for Storage<T> {
    fn from(v: Vec<T>) -> Storage<T> {
        Storage {
            inner: Inner::Owned(v),
        }
    }
}

impl<T> FromIterator<T> for Storage<T> {
    fn from_iter<I: IntoIterator<Item = T>>(values: I) -> Storage<T> {
        Storage::from(values.into_iter().collect::<Vec<T>>())
    }
}

impl<T> Deref for Storage<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.inner {
            Inner::Owned(v) => v,
            // SAFETY: `lent`'s contract: `len` live elements nobody else touches.
            Inner::Lent { start, len } => unsafe {
                std::slice::from_raw_parts(start.as_ptr(), *len)
            },
        }
    }
}

impl<T> DerefMut for Storage<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.inner {
            Inner::Owned(v) => v,
            // SAFETY: as in `deref`; `&mut self` makes this the only access.
            Inner::Lent { start, len } => unsafe {
                std::slice::from_raw_parts_mut(start.as_ptr(), *len)
            },
        }
    }
}

impl<'a, T> IntoIterator for &'a Storage<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A copy is always owned (lent memory is lent once).
impl<T: Copy + Default> Clone for Storage<T> {
    fn clone(&self) -> Storage<T> {
        Storage::from(copied(self))
    }
}

impl<T: PartialEq> PartialEq for Storage<T> {
    fn eq(&self, other: &Storage<T>) -> bool {
        **self == **other
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for Storage<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        **self == **other
    }
}

impl<T: fmt::Debug> fmt::Debug for Storage<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_elements_are_read_and_written_in_place_and_copies_are_owned() {
        let mut memory = vec![1.0f32, 2.0, 3.0];
        let start = NonNull::new(memory.as_mut_ptr()).unwrap();
        // SAFETY: `memory` outlives the storage and is not touched while it lives.
        let mut lent = unsafe { Storage::lent(start, memory.len()) };
        lent[1] = 7.0;
        let copy = lent.clone();
        assert!(lent.is_lent() && !copy.is_lent());
        assert_eq!(copy, vec![1.0, 7.0, 3.0]);
        assert_eq!(lent.into_owned(), vec![1.0, 7.0, 3.0]);
        assert_eq!(memory, vec![1.0, 7.0, 3.0]);
        assert_eq!(Storage::from(vec![4u8]).into_owned(), vec![4u8]);
    }
}
