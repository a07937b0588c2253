//! A growable arena with typed indices: the storage of every IR entity.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

/// A typed index into an [`Arena<T>`]; cheap to copy, compare and hash.
pub struct Id<T> {
    index: u32,
    marker: PhantomData<fn() -> T>,
}

impl<T> Id<T> {
    /// Creates a handle from a raw index (used by arenas and by side tables indexed by id).
    pub fn from_index(index: usize) -> Self {
        let index = u32::try_from(index).expect("arena index exceeds u32");
        Id {
            index,
            marker: PhantomData,
        }
    }

    /// The raw index of this handle, for side tables (`Vec<_>` indexed by id).
    pub fn index(self) -> usize {
        self.index as usize
    }
}

impl<T> Clone for Id<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Id<T> {}
impl<T> PartialEq for Id<T> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}
impl<T> Eq for Id<T> {}
impl<T> PartialOrd for Id<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Id<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.index.cmp(&other.index)
    }
}
impl<T> Hash for Id<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.index.hash(state);
    }
}
impl<T> fmt::Debug for Id<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = std::any::type_name::<T>();
        let short = full.rsplit("::").next().unwrap_or(full);
        write!(f, "{short}#{}", self.index)
    }
}

/// An append-only vector of `T` addressed by [`Id<T>`]; iteration follows insertion order.
#[derive(Clone, PartialEq)]
pub struct Arena<T> {
    items: Vec<T>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena { items: Vec::new() }
    }
}

impl<T: fmt::Debug> fmt::Debug for Arena<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<T> Arena<T> {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `item` and returns its handle.
    pub fn alloc(&mut self, item: T) -> Id<T> {
        let id = Id::from_index(self.items.len());
        self.items.push(item);
        id
    }

    /// Number of items stored.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the arena holds nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The item behind `id`, if `id` belongs to this arena.
    pub fn get(&self, id: Id<T>) -> Option<&T> {
        self.items.get(id.index())
    }

    /// Handles and items in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (Id<T>, &T)> + '_ {
        self.items
            .iter()
            .enumerate()
            .map(|(i, item)| (Id::from_index(i), item))
    }

    /// Handles in insertion order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = Id<T>> + use<T> {
        (0..self.items.len()).map(Id::from_index)
    }

    /// Items in insertion order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &T> + '_ {
        self.items.iter()
    }
}

impl<T> std::ops::Index<Id<T>> for Arena<T> {
    type Output = T;
    fn index(&self, id: Id<T>) -> &T {
        &self.items[id.index()]
    }
}

impl<T> std::ops::IndexMut<Id<T>> for Arena<T> {
    fn index_mut(&mut self, id: Id<T>) -> &mut T {
        &mut self.items[id.index()]
    }
}
