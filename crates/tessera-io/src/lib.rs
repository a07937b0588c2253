//! Tessera's file formats, on [`tessera_runtime::Buffer`]s of a grid's shape:
//!
//! - [`npy`]: NumPy `.npy` in (shape and dtype checked against the field) and out; a struct or
//!   vector field as one array with a trailing component axis;
//! - [`picture`]: PNG out (a perceptual colour map for numbers, grey or RGB(A) for `u8`) and
//!   PNG in (grey images for `u8` fields);
//! - [`vti`]: VTK XML image data (`.vti`) out, for ParaView;
//! - [`describe`]: how shapes, grids and dtypes are written in messages;
//! - [`write_text`]: any text file (generated code), atomically.
//!
//! Invariant: every write is atomic — the data goes to a temporary file in the destination's
//! directory, which is renamed over the destination only once it is complete, so a failure
//! never leaves a partial file behind. Every error names the file.

mod atomic;
mod base64;
pub mod colormap;
pub mod describe;
pub mod error;
pub mod npy;
pub mod picture;
pub mod vti;

pub use atomic::write_text;
pub use error::IoError;
pub use npy::{
    read_npy, read_npy_components, read_npy_points, read_npy_table, write_npy, write_npy_components,
};
pub use picture::{PngSummary, ValueRange, check_png, read_png, write_png};
pub use vti::{VtiArray, check_vti, write_vti};
