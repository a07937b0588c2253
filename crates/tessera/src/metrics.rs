//! Performance arithmetic: GCells/s and the roofline bound of the traffic model
//! ([`BoundProgram::traffic_bytes_per_point`]).

use tessera_analysis::BoundProgram;

/// Billions of updated points per second: `updated_points x steps / seconds / 1e9`.
pub fn gcells_per_s(bound: &BoundProgram, steps: u64, seconds: f64) -> f64 {
    bound.updated_points() as f64 * steps as f64 / seconds / 1e9
}

/// The bandwidth-bound GCells/s: `bandwidth / bytes per point` (0 when nothing moves).
pub fn roofline_gcells_per_s(bandwidth_gb_s: f64, bytes_per_point: f64) -> f64 {
    if bytes_per_point <= 0.0 {
        0.0
    } else {
        bandwidth_gb_s / bytes_per_point
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
        assert_eq!(session.bound().traffic_bytes_per_point(), 4 + 8 + 4);
        assert_eq!(
            gcells_per_s(session.bound(), 10, 1e-6),
            8.0 * 10.0 * 10.0 / 1e-6 / 1e9
        );
        assert_eq!(roofline_gcells_per_s(160.0, 16.0), 10.0);
        assert_eq!(roofline_gcells_per_s(160.0, 0.0), 0.0);
    }
}
