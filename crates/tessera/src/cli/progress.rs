//! A progress bar on stderr for runs longer than about a second (none when stderr is not a
//! terminal).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use tessera::tuning::Progress;
use tessera_runtime::{Flow, Observer};

/// How long a run goes before the bar appears.
const DELAY: Duration = Duration::from_secs(1);

/// The most steps one pass holds in a run that reports progress: backends that run any number
/// of steps in a pass (the CPU's single-step loops, GPU launches recorded and replayed) would
/// otherwise report nothing until the run ends.
const STEPS_PER_UPDATE: u32 = 1024;

/// Shows `done / total` steps once the run has taken [`DELAY`].
pub struct StepBar {
    bar: Option<ProgressBar>,
    start: Instant,
    enabled: bool,
    /// Steps of the whole run.
    total: u64,
}

impl StepBar {
    /// A bar for a run of `total` steps.
    pub fn new(total: u64) -> StepBar {
        StepBar {
            bar: None,
            start: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
            total,
        }
    }

    /// Removes the bar.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

impl StepBar {
    /// Shows `done` steps of the run.
    pub fn show(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() && self.start.elapsed() >= DELAY {
            let bar = ProgressBar::new(self.total);
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} steps, {eta} left",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }
}

impl Observer for StepBar {
    fn advance(&mut self, done: u64, _total: u64) -> Flow {
        self.show(done);
        Flow::Continue
    }

    /// Passes short enough that the bar moves; the same whether or not a bar shows, so that
    /// every rank of a distributed run makes the same passes.
    fn pass_limit(&self) -> Option<u32> {
        Some(STEPS_PER_UPDATE)
    }
}

/// A spinner on stderr naming what is being compiled, shown once compilation has taken
/// [`DELAY`] (none when stderr is not a terminal). Stops when dropped.
pub struct CompileSpinner {
    done: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CompileSpinner {
    /// Starts waiting; `what` is the message (`compiling box3d4r for cpu/wavefront ...`).
    pub fn start(what: String) -> CompileSpinner {
        if !std::io::stderr().is_terminal() {
            return CompileSpinner {
                done: None,
                thread: None,
            };
        }
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if finished.recv_timeout(DELAY).is_ok() {
                return;
            }
            let spinner = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
                spinner.set_style(style);
            }
            spinner.set_message(what);
            spinner.enable_steady_tick(Duration::from_millis(100));
            // Returns when the spinner is stopped (or its owner went away).
            let _ = finished.recv();
            spinner.finish_and_clear();
        });
        CompileSpinner {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for CompileSpinner {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A bar on stderr for `tessera tune`: the budget's time spent, candidates timed and the
/// best so far (none when stderr is not a terminal).
pub struct TuneBar {
    bar: Option<ProgressBar>,
}

impl TuneBar {
    /// A bar over a budget of `budget`.
    pub fn new(budget: Duration) -> TuneBar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(budget.as_secs().max(1));
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} s of budget; {msg}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        TuneBar { bar }
    }

    /// Shows the candidates timed, those queued in this round and the best so far.
    pub fn show(&self, progress: &Progress<'_>) {
        if let Some(bar) = &self.bar {
            bar.set_position(bar.elapsed().as_secs());
            let best = progress.best.map_or("none yet".to_string(), |c| {
                format!("{:.3} GCells/s ({})", c.gcells_per_s, c.plan.describe())
            });
            bar.set_message(format!(
                "{} candidates timed, {} queued; best {best}",
                progress.tried, progress.queued
            ));
        }
    }

    /// Removes the bar.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
