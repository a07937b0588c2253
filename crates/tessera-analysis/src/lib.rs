//! Analyses of Tessera programs, independent of any backend or strategy:
//!
//! - [`check`]: type checking and elaboration (every implicit conversion becomes an explicit
//!   `Cast`, every literal gets a type), structural rules, footprints, field roles;
//! - [`footprint`]: per stage and field, the exact set of read offsets and its bounding box;
//! - [`region`]: n-dimensional rectangles and their arithmetic (intersection, union hull,
//!   growth by a footprint), and Holewinski's backward region growth through stages and steps;
//! - [`deps`]: the stage dependency graph;
//! - [`linear`]: stages that are constant-coefficient linear combinations of reads;
//! - [`plane_sums`]: stages whose output is a sum of terms that each read one plane along an
//!   axis (for associative reordering in plane sweeps);
//! - [`receivers`]: receivers' points as linear indices on a concrete grid;
//! - [`bind`]: a checked program plus parameter values gives a [`BoundProgram`] with concrete
//!   extents and regions, checked against the grid (reads leaving it, sizes, overflow);
//! - [`work`]: the reads and operations one point of a stage costs (for GPU cost models).
//!
//! Invariant: nothing here does I/O; every error is a [`tessera_ir::Diagnostic`] with a span.

pub mod bind;
pub mod chains;
pub mod check;
pub mod deps;
pub mod footprint;
pub mod linear;
pub mod plane_sums;
pub mod receivers;
pub mod region;
pub mod tables;
pub mod tiling;
pub mod work;

pub use bind::{BoundProgram, Domain, bind, parse_param_value};
pub use chains::{ChainStart, ChainTerm, SumChain, sum_chains};
pub use check::{CheckedProgram, FieldRole, check};
pub use footprint::Footprint;
pub use linear::{LinearForm, LinearTerm, linear_form};
pub use plane_sums::{PlaneSums, PlaneTerms, SumTerm, plane_sums};
pub use receivers::{PointOutside, coords_text, linear_indices};
pub use region::Rect;
pub use tables::{stage_reads_step, stage_tables, table_reach, table_shortfall};
pub use tiling::{TileRegions, local_tile_regions, tile_regions};
pub use work::{StageWork, stage_work, step_work};
