//! The search: the backend's default (model) plan first, then each strategy's own default,
//! then the neighbours (one decision changed at a time) of the fastest plan not refined yet —
//! the best so far first — until none is left, the budget is spent or enough candidates were
//! timed. Every candidate is a request the
//! backend's own planner completes and checks, prepared through the `Backend` trait and timed
//! by the driver; one it refuses is skipped. Timing is noise-aware: the median of repeated
//! runs, a candidate whose fastest run is clearly slower than the best median is dropped
//! early, and at the end the best few are timed again in turns with the model's plan, which
//! stays the choice unless another plan is measured at least 5% faster.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use tessera_analysis::BoundProgram;
use tessera_plan::candidates::{neighbours, strategy_requests};
use tessera_plan::{BackendPlan, Plan, PlanRequest};
use tessera_runtime::{Backend, Executable, FieldSet};

use crate::error::Error;
use crate::inputs::random_inputs;
use crate::metrics::gcells_per_s;
use crate::session::Session;

/// A candidate is dropped once its fastest run is this much slower than the best median.
const DROP_FACTOR: f64 = 1.2;

/// How much faster than the model's plan another must be measured to replace it.
const MARGIN: f64 = 1.05;

/// The best candidates timed again at the end, beside the model's plan.
const CONFIRMED: usize = 3;

/// How the search runs.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Stop starting new candidates after this long (the default plan is always timed).
    pub budget: Duration,
    /// Steps per timed run.
    pub steps: u64,
    /// Timed runs per candidate (after one warm-up run).
    pub reps: usize,
    /// Stop after timing this many candidates.
    pub max_candidates: usize,
    /// Seed of the random inputs.
    pub seed: u64,
    /// Whether to stop now as if the budget were spent (a signal asked to; polled between
    /// candidates). The best plans are then not timed again.
    pub stop: fn() -> bool,
}

/// A plan that was timed.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The plan.
    pub plan: Plan,
    /// Median seconds of its time loop over the runs done.
    pub median_seconds: f64,
    /// GCells/s from the median.
    pub gcells_per_s: f64,
    /// Dropped early: clearly slower than the best, fewer runs than asked.
    pub dropped: bool,
    /// Seconds of each timed run, sorted.
    pub seconds: Vec<f64>,
    /// Steps of each timed run.
    pub steps: u64,
}

impl Candidate {
    /// `plan` timed at `seconds` (sorted) for `steps` steps of `bound`.
    fn new(plan: Plan, seconds: Vec<f64>, steps: u64, dropped: bool, bound: &BoundProgram) -> Self {
        let mut candidate = Candidate {
            plan,
            median_seconds: 0.0,
            gcells_per_s: 0.0,
            dropped,
            seconds,
            steps,
        };
        candidate.update(bound);
        candidate
    }

    /// Adds one more run of `seconds`.
    fn add_run(&mut self, seconds: f64, bound: &BoundProgram) {
        self.seconds.push(seconds);
        self.seconds.sort_by(f64::total_cmp);
        self.update(bound);
    }

    /// The median and GCells/s of the runs.
    fn update(&mut self, bound: &BoundProgram) {
        self.median_seconds = self.seconds[self.seconds.len() / 2];
        self.gcells_per_s = if self.median_seconds > 0.0 {
            gcells_per_s(bound, self.steps, self.median_seconds)
        } else {
            0.0
        };
    }
}

/// What the search found.
#[derive(Clone, Debug)]
pub struct TuneOutcome {
    /// Every fully timed candidate, best first.
    pub ranked: Vec<Candidate>,
    /// The backend's default (model) plan as timed.
    pub baseline: Candidate,
    /// Candidates timed (dropped ones included).
    pub tried: usize,
    /// Candidates the planner or `prepare` refused, with why.
    pub skipped: Vec<String>,
    /// Stopped by [`TuneOptions::stop`]: the ranking is from the first series of runs only.
    pub stopped: bool,
}

/// Where the search is, for a progress display.
pub struct Progress<'a> {
    /// Candidates timed so far.
    pub tried: usize,
    /// Candidates waiting in this round.
    pub queued: usize,
    /// The best so far.
    pub best: Option<&'a Candidate>,
}

/// Searches the plans of `backend` for `session` (at the size it is bound to) under `base`
/// (its strategy, when given, restricts the search; its arithmetic and device are kept);
/// `progress` is called after each candidate.
pub fn tune(
    session: &Session,
    backend: &dyn Backend,
    base: &PlanRequest,
    options: &TuneOptions,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<TuneOutcome, Error> {
    let default_plan = session.plan(backend, base)?;
    if matches!(default_plan.backend, BackendPlan::Reference(_)) {
        return Err(Error::Usage(format!(
            "the {} backend has no plan choices to tune; tune `--backend cpu` or a GPU backend",
            backend.name()
        )));
    }
    let mut queue: VecDeque<PlanRequest> = strategy_requests(&default_plan, base).into();
    let mut search = Search::new(session, backend, base, options)?;
    if !search.time(default_plan) {
        let why = search.skipped.last().cloned().unwrap_or_default();
        return Err(Error::Usage(format!(
            "the default plan could not be timed: {why}"
        )));
    }
    let mut refined = HashSet::new();
    loop {
        while let Some(request) = queue.pop_front() {
            if search.out_of_time() {
                return Ok(search.finish());
            }
            search.try_request(&request);
            progress(&Progress {
                tried: search.tried,
                queued: queue.len(),
                best: search.best(),
            });
        }
        // Refine around the fastest plan not refined yet: the best so far, then the others.
        let Some(centre) = search.fastest_where(|c| !refined.contains(&c.plan.to_json())) else {
            return Ok(search.finish());
        };
        refined.insert(centre.to_json());
        queue = neighbours(&centre, base).into();
    }
}

/// The state of one search.
struct Search<'a> {
    session: &'a Session,
    backend: &'a dyn Backend,
    options: &'a TuneOptions,
    device: tessera_plan::DeviceSelection,
    inputs: FieldSet,
    start: Instant,
    seen: HashSet<String>,
    timed: Vec<Candidate>,
    tried: usize,
    skipped: Vec<String>,
}

impl<'a> Search<'a> {
    /// A search with fresh inputs, its clock started.
    fn new(
        session: &'a Session,
        backend: &'a dyn Backend,
        base: &PlanRequest,
        options: &'a TuneOptions,
    ) -> Result<Search<'a>, Error> {
        Ok(Search {
            session,
            backend,
            options,
            device: base.device.clone(),
            inputs: random_inputs(session, options.seed, options.steps)?.0,
            start: Instant::now(),
            seen: HashSet::new(),
            timed: Vec::new(),
            tried: 0,
            skipped: Vec::new(),
        })
    }

    /// Whether the budget or the candidate count is spent, or the search was asked to stop.
    fn out_of_time(&self) -> bool {
        self.start.elapsed() >= self.options.budget
            || self.tried >= self.options.max_candidates
            || (self.options.stop)()
    }

    /// The best fully timed candidate so far.
    fn best(&self) -> Option<&Candidate> {
        self.fastest(|_| true)
    }

    /// The fastest fully timed candidate for which `keep` holds.
    fn fastest(&self, keep: impl Fn(&Candidate) -> bool) -> Option<&Candidate> {
        (self.timed.iter())
            .filter(|c| !c.dropped && keep(c))
            .max_by(|a, b| a.gcells_per_s.total_cmp(&b.gcells_per_s))
    }

    /// The plan of [`Search::fastest`] for `keep`.
    fn fastest_where(&self, keep: impl Fn(&Candidate) -> bool) -> Option<Plan> {
        self.fastest(keep).map(|c| c.plan.clone())
    }

    /// Plans `request` and times the plan unless it was timed already; a request the planner
    /// refuses is skipped.
    fn try_request(&mut self, request: &PlanRequest) {
        match self.session.plan(self.backend, request) {
            Ok(plan) => {
                self.time(plan);
            }
            Err(why) => (self.skipped).push(format!("{}: {why}", describe_request(request))),
        }
    }

    /// Prepares and times `plan` unless it was timed already; whether it was timed (not when
    /// `prepare` or a run fails, which is recorded as skipped).
    fn time(&mut self, plan: Plan) -> bool {
        if !self.seen.insert(plan.to_json()) {
            return false;
        }
        let bound = self.session.bound();
        let best = self.best().map(|c| c.median_seconds);
        let timed = (self.backend.prepare(bound, &plan, &self.device))
            .map_err(Error::from)
            .and_then(|mut executable| self.runs(executable.as_mut(), best));
        let (seconds, dropped, steps) = match timed {
            Ok(timed) => timed,
            Err(why) => {
                self.skipped.push(format!("{}: {why}", plan.describe()));
                return false;
            }
        };
        self.tried += 1;
        (self.timed).push(Candidate::new(plan, seconds, steps, dropped, bound));
        true
    }

    /// One warm-up run, then up to `reps` timed runs, stopping once the fastest is clearly
    /// slower than `best` seconds; returns the sorted times, whether it stopped early, and
    /// the steps each run did.
    fn runs(
        &self,
        executable: &mut dyn Executable,
        best: Option<f64>,
    ) -> Result<(Vec<f64>, bool, u64), Error> {
        let steps = self.options.steps;
        executable.run(&mut self.inputs.clone(), 0, steps, &mut ())?;
        let mut seconds = Vec::with_capacity(self.options.reps);
        let mut done = steps;
        for _ in 0..self.options.reps {
            let report = executable.run(&mut self.inputs.clone(), 0, steps, &mut ())?;
            seconds.push(report.compute_time.as_secs_f64());
            done = report.steps;
            let fastest = seconds.iter().copied().fold(f64::INFINITY, f64::min);
            if best.is_some_and(|b| fastest > b * DROP_FACTOR) && seconds.len() < self.options.reps
            {
                seconds.sort_by(f64::total_cmp);
                return Ok((seconds, true, done));
            }
        }
        seconds.sort_by(f64::total_cmp);
        Ok((seconds, false, done))
    }

    /// Times the best few candidates and the model's plan (the first timed) again, one run
    /// of each in turn, and adds those runs to their medians, so that one lucky series
    /// measured under other load cannot win alone.
    fn confirm(&mut self) {
        let session = self.session;
        let bound = session.bound();
        let mut chosen: Vec<usize> = (0..self.timed.len())
            .filter(|&i| !self.timed[i].dropped)
            .collect();
        chosen
            .sort_by(|&a, &b| (self.timed[b].gcells_per_s).total_cmp(&self.timed[a].gcells_per_s));
        chosen.truncate(CONFIRMED);
        if !chosen.contains(&0) {
            chosen.push(0);
        }
        let mut executables: Vec<(usize, Box<dyn Executable>)> = (chosen.into_iter())
            .filter_map(|i| {
                let prepared = self
                    .backend
                    .prepare(bound, &self.timed[i].plan, &self.device);
                prepared.ok().map(|executable| (i, executable))
            })
            .collect();
        let steps = self.options.steps;
        for round in 0..=self.options.reps {
            for (i, executable) in &mut executables {
                let report = executable.run(&mut self.inputs.clone(), 0, steps, &mut ());
                // Round 0 warms each executable up; a failed run adds nothing.
                if let (Ok(report), true) = (report, round > 0) {
                    self.timed[*i].add_run(report.compute_time.as_secs_f64(), bound);
                }
            }
        }
    }

    /// The outcome after [`Search::confirm`] (left out when the search was asked to stop):
    /// fully timed candidates, best first, and the model's plan.
    fn finish(mut self) -> TuneOutcome {
        let stopped = (self.options.stop)();
        if !stopped {
            self.confirm();
        }
        let baseline = self.timed[0].clone();
        let ranked = rank(self.timed, &baseline);
        TuneOutcome {
            ranked,
            baseline,
            tried: self.tried,
            skipped: self.skipped,
            stopped,
        }
    }
}

/// The fully timed candidates, fastest first, but for the model's plan `baseline`, which comes
/// first unless the fastest beats it by [`MARGIN`].
fn rank(timed: Vec<Candidate>, baseline: &Candidate) -> Vec<Candidate> {
    let mut ranked: Vec<Candidate> = timed.into_iter().filter(|c| !c.dropped).collect();
    ranked.sort_by(|a, b| b.gcells_per_s.total_cmp(&a.gcells_per_s));
    if let Some(model) = ranked.iter().position(|c| c.plan == baseline.plan)
        && ranked[0].gcells_per_s < baseline.gcells_per_s * MARGIN
    {
        let model = ranked.remove(model);
        ranked.insert(0, model);
    }
    ranked
}

/// A candidate request in one line: `wavefront tile=64x256 T=4 threads=2 isa=avx2`.
fn describe_request(request: &PlanRequest) -> String {
    let mut parts = vec![request.strategy.map_or("default", |s| s.name()).to_string()];
    if let Some(tile) = &request.tile {
        let sizes: Vec<String> = tile.iter().map(usize::to_string).collect();
        parts.push(format!("tile={}", sizes.join("x")));
    }
    if let Some(t) = request.time_tile {
        parts.push(format!("T={t}"));
    }
    if let Some(n) = request.threads {
        parts.push(format!("threads={n}"));
    }
    if let Some(isa) = request.isa {
        parts.push(format!("isa={}", isa.name()));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_plan::cpu::CpuStrategy;
    use tessera_plan::{PlanRequest, Strategy};

    #[test]
    fn the_model_plan_stays_unless_another_is_clearly_faster() {
        let session = Session::from_text(
            "grid [6, 7];\nfield u: f32;\nstage s over [1..5, 1..6] { u = u[-1, 0] + u[1, 0]; }\n",
            "p.tess",
            "p",
            &[],
        )
        .unwrap();
        let cpu = crate::backend("cpu").unwrap();
        let plan = |strategy| {
            let request = PlanRequest {
                strategy: Some(strategy),
                ..PlanRequest::default()
            };
            session.plan(cpu.as_ref(), &request).unwrap()
        };
        let (model, other) = (plan(Strategy::Parallel), plan(Strategy::Blocked));
        assert!(
            matches!(&model.backend, tessera_plan::BackendPlan::Cpu(p) if p.strategy == CpuStrategy::Parallel)
        );
        let timed = |plan: &Plan, seconds: f64| {
            Candidate::new(plan.clone(), vec![seconds], 1, false, session.bound())
        };
        let baseline = timed(&model, 1.0);
        // 3% faster: noise, the model's plan stays first.
        let ranked = rank(vec![baseline.clone(), timed(&other, 0.97)], &baseline);
        assert_eq!(ranked[0].plan, model);
        // 20% faster: the other plan wins.
        let ranked = rank(vec![baseline.clone(), timed(&other, 0.8)], &baseline);
        assert_eq!(ranked[0].plan, other);
    }
}
