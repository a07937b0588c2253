//! Ctrl-C during a run. The run holds no GIL, so Python's own handler only notes the signal;
//! between passes this observer takes the GIL briefly to let Python act on it, and a raised
//! `KeyboardInterrupt` (or any error a signal handler raises) stops the run.

use std::time::{Duration, Instant};

use pyo3::prelude::*;
use tessera::runtime::{Flow, Observer};

/// How often a run looks for pending signals (taking the GIL costs microseconds).
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// Point updates per pass at most (tens of milliseconds on a CPU), so that passes end often
/// enough for a check.
const UPDATES_PER_PASS: usize = 1 << 26;

/// Stops a run when a signal handler raises; keeps the exception for the caller.
pub struct SignalWatch {
    pass_limit: u32,
    last_check: Instant,
    raised: Option<PyErr>,
}

impl SignalWatch {
    /// A watch over a run on a grid of `cells` points, whose first check comes after
    /// [`CHECK_EVERY`].
    pub fn new(cells: usize) -> SignalWatch {
        SignalWatch {
            pass_limit: u32::try_from(UPDATES_PER_PASS / cells.max(1))
                .unwrap_or(u32::MAX)
                .max(1),
            last_check: Instant::now(),
            raised: None,
        }
    }

    /// The exception a signal handler raised during the run, if any.
    pub fn raised(self) -> Option<PyErr> {
        self.raised
    }
}

impl Observer for SignalWatch {
    fn pass_limit(&self) -> Option<u32> {
        Some(self.pass_limit)
    }

    fn advance(&mut self, _done: u64, _total: u64) -> Flow {
        if self.last_check.elapsed() < CHECK_EVERY {
            return Flow::Continue;
        }
        self.last_check = Instant::now();
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => Flow::Continue,
            Err(raised) => {
                self.raised = Some(raised);
                Flow::Stop
            }
        }
    }
}
