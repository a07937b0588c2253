//! Performance arithmetic: GCells/s, a simple memory-traffic model and the roofline bound.
//!
//! The traffic model: each step reads every field some stage reads once and writes every
//! field some stage writes once, so a point moves `sum(element size of fields read) +
//! sum(element size of fields written)` bytes per step. It ignores caches' help (stencil
//! neighbours reused from cache are free) and their cost (write-allocate), and after-step
//! reductions. Temporal blocking over `T` steps can beat the bound up to `T`-fold.

use std::collections::BTreeSet;

use tessera_analysis::BoundProgram;

/// Billions of updated points per second: `updated_points x steps / seconds / 1e9`.
pub fn gcells_per_s(bound: &BoundProgram, steps: u64, seconds: f64) -> f64 {
    bound.updated_points() as f64 * steps as f64 / seconds / 1e9
}

/// Bytes one point moves per step under the model above.
pub fn bytes_per_point(bound: &BoundProgram) -> usize {
    let program = bound.program();
    let mut read = BTreeSet::new();
    let mut written = BTreeSet::new();
    for (id, stage) in program.stages.iter() {
        read.extend(
            bound
                .checked()
                .stage_footprints(id)
                .iter()
                .map(|(field, _)| *field),
        );
        written.extend(stage.outputs());
    }
    read.iter()
        .chain(&written)
        .map(|&field| program.fields[field].ty.size_bytes())
        .sum()
}

/// The bandwidth-bound GCells/s: `bandwidth / bytes per point` (0 when nothing moves).
pub fn roofline_gcells_per_s(bandwidth_gb_s: f64, bytes_per_point: usize) -> f64 {
    if bytes_per_point == 0 {
        0.0
    } else {
        bandwidth_gb_s / bytes_per_point as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;

    #[test]
    fn a_jacobi_step_in_f32_moves_eight_bytes_per_point() {
        let text = "grid [10, 12];\nfield u: f32 border clamp;\nfield k: f64 readonly;\nfield unused: i32;\nstage s over [1..9, 1..11] { u = u[1, 0] + u[-1, 0] + f32(k); }\n";
        let session = Session::from_text(text, "t.tess", "t", &[]).unwrap();
        assert_eq!(bytes_per_point(session.bound()), 4 + 8 + 4);
        assert_eq!(
            gcells_per_s(session.bound(), 10, 1e-6),
            8.0 * 10.0 * 10.0 / 1e-6 / 1e9
        );
        assert_eq!(roofline_gcells_per_s(160.0, 16), 10.0);
        assert_eq!(roofline_gcells_per_s(160.0, 0), 0.0);
    }
}
