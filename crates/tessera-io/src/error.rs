//! What can go wrong reading or writing a file; every message names the file.

use std::io;
use std::path::PathBuf;

/// A failure reading or writing a field file.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The file could not be written (nothing was left behind).
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's or encoder's reason.
        source: io::Error,
    },
    /// The file is not in the expected format.
    #[error("{} is not a valid {format} file: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// `.npy` or PNG.
        format: &'static str,
        /// What the decoder found wrong.
        reason: String,
    },
    /// The file's shape or element type does not match the field it is meant for.
    #[error("{} has {found}, but {target} {expected}{hint}", path.display())]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What the file holds (`shape (66, 67) and dtype float64`).
        found: String,
        /// What it is meant for: ``field `u` `` or ``table `wavelet` ``.
        target: String,
        /// What the field needs (`is f32 on a 67x67 grid`).
        expected: String,
        /// How to fix it (may be empty; starts with `; `).
        hint: String,
    },
    /// A `.npy` file holds one element type, and the field's components have several.
    #[error(
        "`{field}` has components of different types ({types}) and {} would hold one dtype; give each component its own file",
        path.display()
    )]
    MixedTypes {
        /// The file.
        path: PathBuf,
        /// The field.
        field: String,
        /// The components' types, in order (`f32, i32`).
        types: String,
    },
    /// The format cannot hold this field (PNG of a 4-component float, VTK of a 4D grid, ...).
    #[error("cannot write `{field}` to {}: {reason}", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// The field.
        field: String,
        /// What the format lacks and what to do instead.
        reason: String,
    },
}
