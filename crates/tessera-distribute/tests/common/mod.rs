//! What the distributed tests share: the layouts tried and the cases grown to hold them.

use tessera_distribute::local::minimum_extents;
use tessera_testkit::Subject;
use tessera_testkit::corpus::Case;

/// The rank layouts tried on a grid of `dims` axes: 1D cuts along the slowest axis and, from
/// 3D, 2D cuts (the fastest axis is never cut).
pub fn layouts(dims: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for k in [2, 3, 4] {
        let mut ranks = vec![1; dims];
        ranks[0] = k;
        out.push(ranks);
    }
    if dims >= 3 {
        let mut ranks = vec![1; dims];
        (ranks[0], ranks[1]) = (2, 2);
        out.push(ranks);
    }
    out
}

/// The case at its first size, with the cut axes grown where needed so that each rank holds at
/// least the halo `t` steps need (plus an uneven remainder).
pub fn subject_for(case: &Case, ranks: &[usize], t: u64) -> Subject {
    let bound = case.bind(0);
    let extents = minimum_extents(&bound, ranks, t);
    let bound = match extents == bound.extents {
        true => bound,
        false => case.bind_extents(&extents, &[]),
    };
    let label = format!("{} {:?}", case.name, bound.extents);
    Subject::new(label, bound, 7, case.steps)
}
