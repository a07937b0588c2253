//! The schedule of a run: the sequence of [`ScheduleItem`]s the driver executes — passes of
//! fused steps, stop tests, observation points — made from the program's reductions, the
//! plan's [`StepsPerPass`] and the step range. It is the one place where steps are split into
//! passes.
//!
//! A step in which some reduction is due runs alone, as a pass of one step that computes
//! them; the steps between two such steps are split into as few passes as the plan allows,
//! of depths as even as possible (50 steps at T=8 as 8 + 6x7, not 6x8 + 2: a shallow last
//! pass would run near the memory roofline). Observation points (every K steps, for output or
//! checks) also end passes, and so do the steps after which a receiver records (a receiver
//! every K steps limits fused passes to K steps). A halo exchange every T steps (distribution) is an item to add
//! here.

use std::collections::VecDeque;

use tessera_ir::{Id, Program, Receiver, Reduction};
use tessera_plan::StepsPerPass;

use crate::reduce::record_order;

/// Steps `first_step .. first_step + steps` computed by one backend call, and the reductions
/// due at its last step (in the order they are reported).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pass {
    /// The step counter `t` of the pass's first step.
    pub first_step: u64,
    /// Steps in the pass (at least 1).
    pub steps: u64,
    /// The reductions to compute at the pass's last step; empty for most passes.
    pub reductions: Vec<Id<Reduction>>,
}

impl Pass {
    /// The step counter of the pass's last step.
    pub fn last_step(&self) -> u64 {
        self.first_step + self.steps - 1
    }
}

/// One thing the driver does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleItem {
    /// Run a pass.
    Pass(Pass),
    /// Evaluate the program's `until` condition with the latest reduction values; stop the
    /// run when it holds. Follows every pass that computes reductions, when the program has
    /// a condition.
    StopTest,
    /// Record the receivers due after step `step` (which the pass before has just run).
    Record {
        /// The step after which they record.
        step: u64,
        /// The receivers due, in declaration order.
        receivers: Vec<Id<Receiver>>,
    },
    /// An observation point after `done` steps of the run (output, finiteness checks).
    Observe {
        /// Steps done so far in this run.
        done: u64,
    },
}

/// The items of one run, produced lazily (a run of a billion steps with a reduction every
/// step has a billion passes).
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Each reduction with its period, in the order they are reported.
    periods: Vec<(Id<Reduction>, u64)>,
    /// Each receiver with its period, in declaration order.
    recordings: Vec<(Id<Receiver>, u64)>,
    stop_test: bool,
    per_pass: StepsPerPass,
    first: u64,
    end: u64,
    next: u64,
    observe_every: Option<u64>,
    queue: VecDeque<ScheduleItem>,
}

impl Schedule {
    /// The schedule of steps `first_step .. first_step + steps` of `program` with passes of
    /// `per_pass` and an observation point every `observe_every` steps of the run.
    pub fn new(
        program: &Program,
        per_pass: StepsPerPass,
        first_step: u64,
        steps: u64,
        observe_every: Option<u64>,
    ) -> Schedule {
        Schedule {
            periods: record_order(program)
                .into_iter()
                .map(|r| (r, program.reductions[r].every.max(1)))
                .collect(),
            recordings: (program.receivers.iter())
                .map(|(id, r)| (id, r.every.max(1)))
                .collect(),
            stop_test: program.until.is_some(),
            per_pass,
            first: first_step,
            end: first_step.saturating_add(steps),
            next: first_step,
            observe_every: observe_every.filter(|&k| k > 0),
            queue: VecDeque::new(),
        }
    }

    /// The first step at or after `t` in which some reduction is due (`u64::MAX`: none).
    fn next_reduction_step(&self, t: u64) -> u64 {
        self.periods
            .iter()
            .map(|&(_, every)| (t + 1).div_ceil(every).saturating_mul(every) - 1)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The first step boundary after `t` (steps done, counted from step 0) after which some
    /// receiver records (`u64::MAX`: none).
    fn next_recording(&self, t: u64) -> u64 {
        self.recordings
            .iter()
            .map(|&(_, every)| (t + 1).div_ceil(every).saturating_mul(every))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The first step boundary after `t` at which the run is observed (`u64::MAX`: none).
    fn next_observation(&self, t: u64) -> u64 {
        self.observe_every.map_or(u64::MAX, |every| {
            let done = t - self.first;
            self.first
                .saturating_add((done / every + 1).saturating_mul(every))
        })
    }

    /// Queues the items up to the next reduction step or observation point.
    fn plan_segment(&mut self) {
        let t = self.next;
        let reduction = self.next_reduction_step(t);
        let observation = self.next_observation(t);
        let recording = self.next_recording(t);
        let end = reduction.min(observation).min(recording).min(self.end);
        let mut stop_test = false;
        if end > t {
            for (first_step, steps) in pass_ranges(t, end - t, self.per_pass) {
                self.queue.push_back(ScheduleItem::Pass(Pass {
                    first_step,
                    steps,
                    reductions: Vec::new(),
                }));
            }
            self.next = end;
        } else {
            let reductions = (self.periods.iter())
                .filter(|&&(_, every)| crate::reduce::due(every, t))
                .map(|&(r, _)| r)
                .collect();
            self.queue.push_back(ScheduleItem::Pass(Pass {
                first_step: t,
                steps: 1,
                reductions,
            }));
            stop_test = self.stop_test;
            self.next = t + 1;
        }
        if self.next == recording {
            let step = self.next - 1;
            let receivers = (self.recordings.iter())
                .filter(|&&(_, every)| crate::reduce::due(every, step))
                .map(|&(r, _)| r)
                .collect();
            self.queue
                .push_back(ScheduleItem::Record { step, receivers });
        }
        if stop_test {
            self.queue.push_back(ScheduleItem::StopTest);
        }
        if self.next == observation {
            self.queue.push_back(ScheduleItem::Observe {
                done: self.next - self.first,
            });
        }
    }
}

impl Iterator for Schedule {
    type Item = ScheduleItem;

    fn next(&mut self) -> Option<ScheduleItem> {
        if self.queue.is_empty() && self.next < self.end {
            self.plan_segment();
        }
        self.queue.pop_front()
    }
}

/// The passes `(first step, steps)` that run `steps` steps from `first` with `per_pass`: as
/// few as the limit allows, their depths as even as possible (deepest first).
fn pass_ranges(first: u64, steps: u64, per_pass: StepsPerPass) -> Vec<(u64, u64)> {
    let depth = match per_pass {
        StepsPerPass::AtMost(depth) => u64::from(depth.max(1)),
        StepsPerPass::Any => steps.max(1),
    };
    let passes = steps.div_ceil(depth);
    let mut start = first;
    (0..passes)
        .map(|i| {
            let steps = steps / passes + u64::from(i < steps % passes);
            start += steps;
            (start - steps, steps)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use tessera_ir::builder::ProgramBuilder;
    use tessera_ir::{Constant, ReduceOp, ScalarType, SizeExpr};

    use super::*;

    /// A 1D program with after-step reductions every `periods[k]` steps and, optionally, a
    /// stop condition.
    fn program(periods: &[u64], until: bool) -> Program {
        let mut b = ProgramBuilder::new("p");
        let n = b.param("N", ScalarType::I64, Constant::Int(4));
        b.grid(vec![SizeExpr::Param(n)]);
        let u = b.field("u", ScalarType::F64);
        let mut stage = b.stage("s");
        let here = b.read(u, &[0]);
        stage.assign(u, here);
        b.finish_stage(stage);
        let mut last = None;
        for (k, &every) in periods.iter().enumerate() {
            let value = b.read(u, &[0]);
            last = Some(b.reduce_after_step(format!("r{k}"), ReduceOp::Sum, value, None, every));
        }
        if let (true, Some(r)) = (until, last) {
            let value = b.reduction_value(r);
            let zero = b.lit(Constant::Float(0.0));
            let condition = b.binary(tessera_ir::BinaryOp::Lt, value, zero);
            b.until(condition);
        }
        b.finish()
    }

    /// The items as `(first, steps, reductions)` passes, `S` stop tests and `O(done)`.
    fn items(schedule: Schedule) -> Vec<String> {
        schedule
            .map(|item| match item {
                ScheduleItem::Pass(p) => match p.reductions.len() {
                    0 => format!("{}+{}", p.first_step, p.steps),
                    n => format!("{}+{}r{n}", p.first_step, p.steps),
                },
                ScheduleItem::StopTest => "S".into(),
                ScheduleItem::Record { step, receivers } => format!("R{step}x{}", receivers.len()),
                ScheduleItem::Observe { done } => format!("O{done}"),
            })
            .collect()
    }

    #[test]
    fn passes_between_reductions_are_as_few_and_even_as_the_limit_allows() {
        let p = program(&[], false);
        let s = Schedule::new(&p, StepsPerPass::AtMost(8), 0, 50, None);
        assert_eq!(
            items(s),
            ["0+8", "8+7", "15+7", "22+7", "29+7", "36+7", "43+7"]
        );
        let s = Schedule::new(&p, StepsPerPass::Any, 5, 50, None);
        assert_eq!(items(s), ["5+50"]);
        assert!(items(Schedule::new(&p, StepsPerPass::Any, 5, 0, None)).is_empty());
    }

    #[test]
    fn reduction_steps_run_alone_and_are_followed_by_stop_tests() {
        let p = program(&[3, 4], true);
        let s = Schedule::new(&p, StepsPerPass::AtMost(8), 0, 13, None);
        assert_eq!(
            items(s),
            [
                "0+2", "2+1r1", "S", "3+1r1", "S", "4+1", "5+1r1", "S", "6+1", "7+1r1", "S",
                "8+1r1", "S", "9+2", "11+1r2", "S", "12+1"
            ]
        );
        let p = program(&[3], false);
        let s = Schedule::new(&p, StepsPerPass::Any, 1, 4, None);
        assert_eq!(items(s), ["1+1", "2+1r1", "3+2"]);
    }

    #[test]
    fn observation_points_end_passes_every_k_steps_of_the_run() {
        let p = program(&[], false);
        let s = Schedule::new(&p, StepsPerPass::AtMost(4), 10, 10, Some(3));
        assert_eq!(items(s), ["10+3", "O3", "13+3", "O6", "16+3", "O9", "19+1"]);
        let p = program(&[2], false);
        let s = Schedule::new(&p, StepsPerPass::Any, 0, 4, Some(2));
        assert_eq!(items(s), ["0+1", "1+1r1", "O2", "2+1", "3+1r1", "O4"]);
    }

    #[test]
    fn recordings_end_passes_and_come_before_stop_tests_and_observations() {
        let mut p = program(&[4], true);
        let u = p.field_by_name("u").unwrap();
        let fixed = || tessera_ir::ReceiverPoints::Fixed(vec![vec![0]]);
        for (name, every) in [("a", 3), ("b", 2)] {
            p.receivers.alloc(tessera_ir::Receiver {
                name: name.into(),
                field: u,
                points: fixed(),
                every,
                span: tessera_ir::Span::NONE,
            });
        }
        let s = Schedule::new(&p, StepsPerPass::AtMost(8), 0, 9, Some(4));
        assert_eq!(
            items(s),
            [
                "0+2", "R1x1", "2+1", "R2x1", "3+1r1", "R3x1", "S", "O4", "4+2", "R5x2", "6+1",
                "7+1r1", "R7x1", "S", "O8", "8+1", "R8x1"
            ]
        );
    }

    #[test]
    fn pass_depths_are_even_and_cover_the_steps() {
        for steps in 0..200 {
            for depth in 1..20 {
                let ranges = pass_ranges(7, steps, StepsPerPass::AtMost(depth));
                let d: Vec<u64> = ranges.iter().map(|r| r.1).collect();
                assert_eq!(d.iter().sum::<u64>(), steps);
                assert_eq!(d.len() as u64, steps.div_ceil(u64::from(depth)));
                assert!(d.iter().all(|&x| 1 <= x && x <= u64::from(depth)));
                assert!(d.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
                assert!(ranges.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
            }
        }
    }
}
