//! Recorded steps: when a host program's step between reductions (or its fused pass) does the
//! same work every time (no step counter, no value read back), it is resolved once for the
//! bindings it starts from and then replayed as one submission ([`HostDevice::replay`]: one CUDA graph
//! launch instead of a launch per kernel; other devices issue the operations).
//!
//! Runs of single steps are recorded for a whole number of swap cycles (the steps after which
//! every buffer id is bound to the allocation it started with), so a replay leaves the
//! bindings as it found them and a few recordings serve every pass. A fused pass is recorded
//! whole, per depth and starting bindings.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicU64, Ordering};

use tessera_codegen::kernel::{FusedPass, HostOp, KernelProgram, Launch, LaunchArg};
use tessera_runtime::BackendError;

use crate::device::{BoundArg, HostDevice};
use crate::host::{run_fused_pass, run_step_ops};

/// The most operations one recording holds: enough that a recording's single submission
/// costs little per step, few enough that short passes still get one.
pub const MAX_RECORDED_OPERATIONS: usize = 64;

/// The most steps a swap cycle may span for steps to be recorded.
const MAX_CYCLE: u64 = 16;

/// One operation of a recording, its buffers resolved to allocations.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordedOp {
    /// A kernel launch with its bound arguments.
    Launch {
        /// The launch.
        launch: Launch,
        /// Its arguments, resolved.
        args: Vec<BoundArg>,
    },
    /// A device-to-device copy of a whole allocation.
    Copy {
        /// The allocation copied.
        from: usize,
        /// The allocation written.
        to: usize,
    },
}

/// The operations of a run of steps, resolved for the bindings it starts from.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// Unique in the process (a device keys what it built from a recording by this).
    pub id: u64,
    /// The steps it holds.
    pub steps: u64,
    /// Its operations, in order.
    pub ops: Vec<RecordedOp>,
    /// The allocation bound to each buffer id after it (swaps exchange entries).
    pub bindings_after: Vec<usize>,
}

/// The next recording's id.
static NEXT_RECORDING: AtomicU64 = AtomicU64::new(0);

/// Recordings by the bindings they start from and the steps they hold.
#[derive(Debug, Default)]
struct Recordings(HashMap<(Vec<usize>, u64), Recording>);

impl Recordings {
    /// Replays the recording of `steps` steps from `bindings` on `device` and moves
    /// `bindings` past it; `issue` records it the first time (it issues those steps' operations
    /// on the device and bindings it is given).
    fn replay(
        &mut self,
        device: &mut dyn HostDevice,
        bindings: &mut [usize],
        steps: u64,
        issue: impl FnOnce(&mut dyn HostDevice, &mut [usize]) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        let recording = match self.0.entry((bindings.to_vec(), steps)) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let mut recorder = Recorder::default();
                let mut after = bindings.to_vec();
                issue(&mut recorder, &mut after)?;
                entry.insert(Recording {
                    id: NEXT_RECORDING.fetch_add(1, Ordering::Relaxed),
                    steps,
                    ops: recorder.ops,
                    bindings_after: after,
                })
            }
        };
        device.replay(recording)?;
        bindings.copy_from_slice(&recording.bindings_after);
        Ok(())
    }
}

/// Issues `recording`'s operations one by one: [`HostDevice::replay`] for a device that has
/// no single submission of several operations.
pub fn issue<D: HostDevice + ?Sized>(
    device: &mut D,
    recording: &Recording,
) -> Result<(), BackendError> {
    for op in &recording.ops {
        match op {
            RecordedOp::Launch { launch, args } => device.launch(launch, args)?,
            RecordedOp::Copy { from, to } => device.copy(*from, *to)?,
        }
    }
    Ok(())
}

/// The recordings of one host program's steps, made as passes need them.
#[derive(Debug)]
pub struct StepRecorder {
    step: Vec<HostOp>,
    /// Steps after which every buffer id is bound to its allocation again.
    cycle: u64,
    /// Operations per step.
    ops_per_step: usize,
    recordings: Recordings,
}

impl StepRecorder {
    /// A recorder for the steps of passes without a reduction due (the schedule gives each
    /// step with reductions due a pass of its own) of the step operations `step`, or `None`
    /// when those steps cannot be replayed: see [`why_not_replayed`] and [`swap_cycle`].
    pub fn new(step: &[HostOp], buffers: usize) -> Option<StepRecorder> {
        let step = between_reductions(step);
        if !replayable(&step) {
            return None;
        }
        let cycle = swap_cycle(&step, buffers)?;
        let ops_per_step = (step.iter())
            .filter(|op| matches!(op, HostOp::Launch(_) | HostOp::Copy { .. }))
            .count();
        Some(StepRecorder {
            step,
            cycle,
            ops_per_step,
            recordings: Recordings::default(),
        })
    }

    /// The steps of the next recording for a pass with `remaining` steps left: a whole number
    /// of swap cycles, within [`MAX_RECORDED_OPERATIONS`] (one cycle at least); 0 when fewer
    /// steps than a cycle remain.
    fn steps_to_record(&self, remaining: u64) -> u64 {
        let per_cycle = self.ops_per_step as u64 * self.cycle;
        let cycles_allowed = (MAX_RECORDED_OPERATIONS as u64 / per_cycle).max(1);
        (remaining / self.cycle).min(cycles_allowed) * self.cycle
    }

    /// Runs as many of a pass's `remaining` steps as recordings hold ([`Self::steps_to_record`]
    /// at a time) from `bindings` on `device`; returns the steps run (fewer than a swap cycle
    /// are left to run step by step).
    pub fn run_recorded(
        &mut self,
        device: &mut dyn HostDevice,
        bindings: &mut [usize],
        remaining: u64,
    ) -> Result<u64, BackendError> {
        let mut done = 0;
        loop {
            let steps = self.steps_to_record(remaining - done);
            if steps == 0 {
                return Ok(done);
            }
            self.run(device, bindings, steps)?;
            done += steps;
        }
    }

    /// Runs `steps` steps (a whole number of swap cycles) from `bindings` on `device` as one
    /// replay, recording them the first time these bindings run this many steps.
    fn run(
        &mut self,
        device: &mut dyn HostDevice,
        bindings: &mut [usize],
        steps: u64,
    ) -> Result<(), BackendError> {
        if steps == 0 || !steps.is_multiple_of(self.cycle) {
            return Err(BackendError::Runtime(format!(
                "internal error: recording {steps} steps of a {}-step swap cycle",
                self.cycle
            )));
        }
        let step = &self.step;
        self.recordings
            .replay(device, bindings, steps, |recorder, bound| {
                (0..steps).try_for_each(|t| run_step_ops(step, recorder, bound, t))
            })
    }
}

/// The recordings of one host program's fused pass, per depth and starting bindings.
#[derive(Debug)]
pub struct PassRecorder {
    fused: FusedPass,
    recordings: Recordings,
}

impl PassRecorder {
    /// A recorder for `fused`, or `None` when its operations are not
    /// [replayable](replayable).
    pub fn new(fused: &FusedPass) -> Option<PassRecorder> {
        replayable(&fused.ops).then(|| PassRecorder {
            fused: fused.clone(),
            recordings: Recordings::default(),
        })
    }

    /// Runs a fused pass of `steps` steps from `bindings` on `device` as one replay,
    /// recording it the first time these bindings run a pass this deep.
    pub fn run(
        &mut self,
        device: &mut dyn HostDevice,
        bindings: &mut [usize],
        steps: u64,
    ) -> Result<(), BackendError> {
        let fused = &self.fused;
        self.recordings
            .replay(device, bindings, steps, |recorder, bound| {
                // No launch takes the step counter: the pass is the same at every step.
                run_fused_pass(fused, recorder, bound, 0, steps)
            })
    }
}

/// Whether `ops` do the same work every time ([`why_not_replayed`] has nothing to say).
fn replayable(ops: &[HostOp]) -> bool {
    why_not_replayed(ops).is_none()
}

/// Why `ops` cannot be recorded and replayed: nothing to launch, a launch that takes the step
/// counter or a value read back or that is not due every time, a reduction read back. (The
/// number of steps of a pass is part of a recording's key, so a launch may take it.)
fn why_not_replayed(ops: &[HostOp]) -> Option<String> {
    if !ops.iter().any(|op| matches!(op, HostOp::Launch(_))) {
        return Some("nothing is launched".into());
    }
    ops.iter().find_map(|op| match op {
        HostOp::Launch(launch) if launch.every > 1 => Some(format!(
            "`{}` runs every {} steps",
            launch.kernel, launch.every
        )),
        HostOp::Launch(launch) => (launch.args.iter()).find_map(|arg| match arg {
            LaunchArg::Buffer(_) | LaunchArg::Int(_) | LaunchArg::Steps => None,
            LaunchArg::Step => Some(format!("`{}` takes the step counter", launch.kernel)),
            LaunchArg::ReductionValue(_) => {
                Some(format!("`{}` takes a reduction's value", launch.kernel))
            }
            LaunchArg::Count => Some(format!("`{}` takes a count", launch.kernel)),
        }),
        HostOp::Reduce(readback) => Some(format!("reduction `{}` is read back", readback.name)),
        HostOp::Copy { .. } | HostOp::Swap(..) => None,
    })
}

/// The operations of a step in which no reduction is due: without the reductions' launches
/// and read-backs that come every few steps. (A reduction due every step stays, and keeps
/// the step from being replayed.)
fn between_reductions(step: &[HostOp]) -> Vec<HostOp> {
    let sparse = |op: &HostOp| match op {
        HostOp::Launch(launch) => launch.every > 1,
        HostOp::Reduce(readback) => readback.every > 1,
        HostOp::Copy { .. } | HostOp::Swap(..) => false,
    };
    step.iter().filter(|op| !sparse(op)).cloned().collect()
}

/// How `program`'s launches are issued, for `explain`: recorded once and replayed as one
/// submission (a CUDA graph on `cuda`), or one by one and why. A program with a fused pass
/// runs single steps only where reductions are due, one by one.
pub fn replay_summary(program: &KernelProgram) -> String {
    if let Some(fused) = &program.host.fused {
        return match why_not_replayed(&fused.ops) {
            None => "launches: fused passes are recorded once per depth and replayed (a CUDA graph on cuda)".into(),
            Some(why) => format!("launches: fused passes are launched one by one: {why}"),
        };
    }
    let reduces = (program.host.step.iter()).any(|op| matches!(op, HostOp::Reduce(_)));
    let what = if reduces {
        "steps between reductions"
    } else {
        "steps"
    };
    let step = between_reductions(&program.host.step);
    match why_not_replayed(&step) {
        Some(why) => format!("launches: {what} are launched one by one: {why}"),
        None if swap_cycle(&step, program.host.buffers.len()).is_none() => format!(
            "launches: {what} are launched one by one: their swaps take more than {MAX_CYCLE} steps to come back"
        ),
        None => format!(
            "launches: {what} are recorded once and replayed (a CUDA graph on cuda for up to {MAX_RECORDED_OPERATIONS} launches)"
        ),
    }
}

/// The steps after which `step`'s swaps bind every buffer id to its allocation again, if
/// at most [`MAX_CYCLE`].
fn swap_cycle(step: &[HostOp], buffers: usize) -> Option<u64> {
    let start: Vec<usize> = (0..buffers).collect();
    let mut bindings = start.clone();
    for steps in 1..=MAX_CYCLE {
        for op in step {
            if let HostOp::Swap(a, b) = op {
                bindings.swap(a.0, b.0);
            }
        }
        if bindings == start {
            return Some(steps);
        }
    }
    None
}

/// A [`HostDevice`] that keeps the operations it is given instead of running them.
#[derive(Default)]
struct Recorder {
    ops: Vec<RecordedOp>,
}

impl HostDevice for Recorder {
    fn launch(&mut self, launch: &Launch, args: &[BoundArg]) -> Result<(), BackendError> {
        self.ops.push(RecordedOp::Launch {
            launch: launch.clone(),
            args: args.to_vec(),
        });
        Ok(())
    }

    fn copy(&mut self, from: usize, to: usize) -> Result<(), BackendError> {
        self.ops.push(RecordedOp::Copy { from, to });
        Ok(())
    }

    fn download(&mut self, _: usize, _: usize, _: &mut [u8]) -> Result<(), BackendError> {
        Err(BackendError::Runtime(
            "internal error: a recorded step reads from the device".into(),
        ))
    }

    fn replay(&mut self, _: &Recording) -> Result<(), BackendError> {
        Err(BackendError::Runtime(
            "internal error: a recording replayed into a recording".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use tessera_codegen::kernel::{BufferId, ReduceReadback};
    use tessera_ir::{Id, ReduceOp};

    use super::*;

    fn launch(kernel: &str, args: Vec<LaunchArg>) -> HostOp {
        HostOp::Launch(Launch {
            kernel: kernel.into(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            args,
            every: 1,
        })
    }

    /// A ping-pong step: `k` reads buffer 0 and writes buffer 1, then they swap; buffer 2 is
    /// copied into buffer 3 and read as a constant.
    fn ping_pong() -> Vec<HostOp> {
        let b = |i| LaunchArg::Buffer(BufferId(i));
        vec![
            HostOp::Copy {
                from: BufferId(2),
                to: BufferId(3),
            },
            launch("k", vec![b(0), b(1), b(3), LaunchArg::Int(7)]),
            HostOp::Swap(BufferId(0), BufferId(1)),
        ]
    }

    /// What a device is asked to do, in order: the operations issued, replays or not, and
    /// the recordings replayed.
    #[derive(Default)]
    struct Log {
        issued: Recorder,
        replays: Vec<u64>,
    }

    impl HostDevice for Log {
        fn launch(&mut self, launch: &Launch, args: &[BoundArg]) -> Result<(), BackendError> {
            self.issued.launch(launch, args)
        }
        fn copy(&mut self, from: usize, to: usize) -> Result<(), BackendError> {
            self.issued.copy(from, to)
        }
        fn download(&mut self, _: usize, _: usize, _: &mut [u8]) -> Result<(), BackendError> {
            Ok(())
        }
        fn replay(&mut self, recording: &Recording) -> Result<(), BackendError> {
            self.replays.push(recording.id);
            issue(self, recording)
        }
    }

    #[test]
    fn replayed_steps_issue_what_the_steps_issue() {
        let step = ping_pong();
        let mut recorder = StepRecorder::new(&step, 4).expect("replayable");
        assert_eq!(recorder.cycle, 2);
        let (mut direct, mut replayed) = (Log::default(), Log::default());
        for start in [vec![0, 1, 2, 3], vec![1, 0, 2, 3]] {
            let mut bindings = start.clone();
            for t in 0..12 {
                run_step_ops(&step, &mut direct, &mut bindings, t).unwrap();
            }
            assert_eq!(bindings, start);
            let mut replayed_bindings = start.clone();
            recorder
                .run(&mut replayed, &mut replayed_bindings, 6)
                .unwrap();
            recorder
                .run(&mut replayed, &mut replayed_bindings, 6)
                .unwrap();
            assert_eq!(replayed_bindings, start);
        }
        assert_eq!(direct.issued.ops, replayed.issued.ops);
        // Each start binding is recorded once and replayed twice.
        let ids = &replayed.replays;
        assert!(
            ids[0] == ids[1] && ids[2] == ids[3] && ids[0] != ids[2],
            "{ids:?}"
        );
        assert_eq!(recorder.recordings.0.len(), 2);
    }

    #[test]
    fn a_recording_spans_whole_swap_cycles_within_the_operation_budget() {
        let recorder = StepRecorder::new(&ping_pong(), 4).unwrap();
        // Two operations per step, two steps per cycle.
        assert_eq!(recorder.steps_to_record(1), 0);
        assert_eq!(recorder.steps_to_record(7), 6);
        assert_eq!(
            recorder.steps_to_record(1000),
            MAX_RECORDED_OPERATIONS as u64 / 2
        );
        let mut odd = StepRecorder::new(&ping_pong(), 4).unwrap();
        assert!(odd.run(&mut Log::default(), &mut [0, 1, 2, 3], 3).is_err());
    }

    #[test]
    fn a_replayed_fused_pass_issues_what_the_pass_issues_and_swaps_alike() {
        let b = |i| LaunchArg::Buffer(BufferId(i));
        let fused = FusedPass {
            depth: 4,
            ops: vec![
                launch(
                    "pass",
                    vec![b(0), b(1), LaunchArg::Steps, LaunchArg::Int(0)],
                ),
                launch(
                    "pass",
                    vec![b(0), b(1), LaunchArg::Steps, LaunchArg::Int(1)],
                ),
                HostOp::Swap(BufferId(0), BufferId(1)),
            ],
        };
        let mut recorder = PassRecorder::new(&fused).expect("replayable");
        let (mut direct, mut replayed) = (Log::default(), Log::default());
        let (mut bindings, mut replayed_bindings) = (vec![0, 1], vec![0, 1]);
        for (t, steps) in [(0, 4), (4, 4), (8, 3), (11, 4), (15, 4)] {
            run_fused_pass(&fused, &mut direct, &mut bindings, t, steps).unwrap();
            recorder
                .run(&mut replayed, &mut replayed_bindings, steps)
                .unwrap();
            assert_eq!(replayed_bindings, bindings);
        }
        assert_eq!(direct.issued.ops, replayed.issued.ops);
        // Passes of 4 steps from [0, 1] and [1, 0], and one of 3 steps.
        assert_eq!(recorder.recordings.0.len(), 3);
        let with_step = FusedPass {
            depth: 4,
            ops: vec![launch("pass", vec![b(0), LaunchArg::Step])],
        };
        assert!(PassRecorder::new(&with_step).is_none());
    }

    #[test]
    fn steps_that_change_from_step_to_step_are_not_recorded() {
        let b = |i| LaunchArg::Buffer(BufferId(i));
        let with = |arg| vec![launch("k", vec![b(0), arg])];
        assert!(StepRecorder::new(&with(LaunchArg::Int(3)), 1).is_some());
        assert!(StepRecorder::new(&with(LaunchArg::Steps), 1).is_some());
        assert!(StepRecorder::new(&with(LaunchArg::Step), 1).is_none());
        assert!(StepRecorder::new(&with(LaunchArg::Count), 1).is_none());
        // A reduction every 10 steps: the steps between are recorded without it; one due
        // every step keeps them from being recorded.
        let reduced = |every| {
            let mut step = with(LaunchArg::Int(3));
            let mut reduce = launch("reduce", vec![b(0), b(1)]);
            if let HostOp::Launch(l) = &mut reduce {
                l.every = every;
            }
            step.push(reduce);
            step.push(HostOp::Reduce(ReduceReadback {
                reduction: Id::from_index(0),
                name: "total".into(),
                op: ReduceOp::Sum,
                partials: BufferId(1),
                rows: 4,
                every,
            }));
            step
        };
        let between = StepRecorder::new(&reduced(10), 2).expect("replayable between reductions");
        assert_eq!(between.step, with(LaunchArg::Int(3)));
        assert!(StepRecorder::new(&reduced(1), 2).is_none());
        assert!(StepRecorder::new(&[HostOp::Swap(BufferId(0), BufferId(1))], 2).is_none());
    }
}
