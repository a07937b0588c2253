//! What the distributed tests share: the layouts tried and the cases grown to hold them.

use tessera_distribute::local::minimum_extents;
use tessera_distribute::{Decomposition, DistributeError, Distribution};
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

/// How the halos move in one tried layout.
#[derive(Clone, Copy, Debug)]
pub struct Exchange {
    /// Steps between exchanges.
    pub every: u64,
    /// Boundary strips first, the exchange overlapped with each rank's pass.
    pub overlap: bool,
}

impl Exchange {
    /// `T=3` or `T=3 overlapped`, for labels.
    pub fn label(&self) -> String {
        match self.overlap {
            true => format!("T={} overlapped", self.every),
            false => format!("T={}", self.every),
        }
    }
}

/// `subject` laid out over `ranks` with `exchange`: `Ok(None)` when the program is refused
/// for a feature distribution does not have yet.
pub fn layout(
    subject: &Subject,
    ranks: &[usize],
    exchange: Exchange,
    label: &str,
) -> Result<Option<Distribution>, String> {
    let decomposition =
        Decomposition::new(&subject.bound.extents, ranks).map_err(|e| format!("{label}: {e}"))?;
    let distribution = match Distribution::new(&subject.bound, decomposition, exchange.every) {
        Ok(d) => d,
        Err(DistributeError::Unsupported(_)) => return Ok(None),
        Err(e) => return Err(format!("{label}: {e}")),
    };
    match exchange.overlap {
        true => (distribution.with_overlap(&subject.bound))
            .map(Some)
            .map_err(|e| format!("{label}: {e}")),
        false => Ok(Some(distribution)),
    }
}
