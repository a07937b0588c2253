//! The sweep of a streaming time tile: its loop trips (checked, and steady where every plane
//! is in range, see [`Checks`]), each iteration's loads, levels and writes, and the rings
//! stages read and write through ([`Rings`]).

use super::*;

/// Which tests an iteration of the sweep makes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::kernel::lower) enum Checks {
    /// Every load, level and write tests that its plane is in range and the pass has its
    /// step or depth.
    All,
    /// None does: the loop trip is steady, every plane in range in a pass of full depth (see
    /// [`Pipeline::steady_trips`]). Levels test the positions of a plane they compute
    /// only where rings do not span the reach (see [`Pipeline::span_rings_over_reach`]).
    Steady,
}

impl Checks {
    /// `then` under `cond` where this checks it, else `then` as it is.
    pub(super) fn when(self, cond: Expr, then: Vec<Stmt>) -> Stmt {
        match self {
            Checks::All => Stmt::when(cond, then),
            Checks::Steady => Stmt::Block(then),
        }
    }
}

/// The loop trips of `body` starting at each of `starts`, one after the other, `it` a
/// constant in each: the compiler folds their plane tests, and of a warm-up or drain trip
/// computes only the planes in range (j2d5pt at T = 4: 379 instructions for its 2 warm-up
/// trips, 726 as a loop).
fn one_by_one(ctx: &Ctx, body: &[Stmt], starts: impl Iterator<Item = i64>) -> Vec<Stmt> {
    starts
        .map(|start| {
            let mut trip = vec![Stmt::Declare {
                var: "it".into(),
                ty: ctx.ity,
                value: Some(ctx.lit(start)),
            }];
            trip.extend(body.iter().cloned());
            Stmt::Block(trip)
        })
        .collect()
}

/// Leaves out the barrier ending an unrolled iteration where it separates nothing: where
/// both it and the next iteration have barriers of their own, and what the iteration does
/// after its last own barrier shares no ring slot with what the next does before its first
/// (rings grown past their readers' planes, see `grow_rings`, often make it so). The last
/// iteration keeps its barrier: the next one is the loop's next trip, which starts over.
pub(super) fn leave_out_idle_barriers(iterations: &mut [Vec<Stmt>]) {
    let barriers = |body: &[Stmt]| -> Vec<usize> {
        (body.iter().enumerate())
            .filter(|(_, s)| matches!(s, Stmt::Barrier))
            .map(|(k, _)| k)
            .collect()
    };
    for j in 0..iterations.len().saturating_sub(1) {
        let (own, next) = (barriers(&iterations[j]), barriers(&iterations[j + 1]));
        let [.., last_own, ending] = own[..] else {
            continue;
        };
        let [first_next, _, ..] = next[..] else {
            continue;
        };
        let after = accesses(&iterations[j][last_own + 1..ending]);
        let before = accesses(&iterations[j + 1][..first_next]);
        if !conflict(&after, &before) {
            iterations[j].remove(ending);
        }
    }
}

/// Whether `stage` reads `field` through a clamped or mirrored border, whose reads across the
/// grid's edge land on a plane picked at run time (in the edge frame).
pub(super) fn picks_plane(program: &Program, stage: Id<Stage>, field: Id<Field>) -> bool {
    matches!(
        program.stages[stage].border_of(field, program),
        Some(Border::Clamp | Border::Mirror)
    )
}

/// A level's staging: the versions it reads in their rings, its outputs into new versions;
/// with register planes, at the position `owner` names (see [`Pipeline::place_at`]), read as
/// by a level of lag `lag` (the level's own, or less for a reordered level reading a later
/// plane).
pub(super) struct Rings<'p> {
    pub(super) pipeline: &'p Pipeline<'p>,
    pub(super) level: &'p Level,
    pub(super) owner: Option<(i64, i64)>,
    pub(super) lag: i64,
}

impl Staging for Rings<'_> {
    fn current(&self, field: Id<Field>) -> Option<Place<'_>> {
        let version = self.level.reads[field.index()]?;
        Some(self.pipeline.place_at(version, self.owner, self.lag))
    }

    fn next(&self, field: Id<Field>, _in_place: bool) -> (Place<'_>, bool) {
        let (_, version) = (self.level.writes.iter())
            .find(|(f, _)| *f == field)
            .expect("a level writes its stage's outputs");
        let place = self.pipeline.place_at(*version, self.owner, self.level.lag);
        (place, false)
    }
}

impl Pipeline<'_> {
    /// Every block's sweep: for each frame a block may run (see [`Frame`]), its pass of
    /// every step (where it has steady trips) and its other passes, as exclusive cases on
    /// the frame and the pass's depth ([`Stmt::UniformCases`]). The pass is chosen once,
    /// here, outside the sweep's loops: PoCL 3.1 lost values a thread carried from one
    /// barrier-holding loop to the next where the choice was made trip by trip, or where
    /// the loops' bounds depended on the pass.
    pub(super) fn sweeps(&self) -> Vec<Stmt> {
        let ctx = self.ctx;
        let frames = match interior_test(ctx, &self.touched) {
            Some(interior) => vec![
                (Frame::Interior, Some(interior.clone())),
                (
                    Frame::Edge,
                    Some(Expr::Unary(UnaryOp::Not, Box::new(interior))),
                ),
            ],
            None => vec![(Frame::Edge, None)],
        };
        let depth = Expr::int(self.depth as i64, ScalarType::I64);
        let pass = |op| Expr::var("steps").op(op, depth.clone());
        let mut cases = Vec::new();
        for (frame, test) in frames {
            let (full, checked) = self.sweep(frame);
            let Some(full) = full else {
                cases.push((test, checked));
                continue;
            };
            let and = |depth: Expr| match &test {
                Some(test) => test.clone().op(KernelOp::And, depth),
                None => depth,
            };
            cases.push((Some(and(pass(KernelOp::Eq))), full));
            cases.push((Some(and(pass(KernelOp::Ne))), checked));
        }
        match <[_; 1]>::try_from(cases) {
            Ok([(_, body)]) => body,
            Err(cases) => vec![Stmt::UniformCases(
                (cases.into_iter())
                    .map(|(cond, body)| (cond.expect("a test for each of several cases"), body))
                    .collect(),
            )],
        }
    }

    /// The sweep in a frame: per iteration, the planes finished one iteration ago written,
    /// the input planes loaded, then every level's plane, and a barrier ending the iteration.
    /// Returns the pass of every step where the frame has steady trips, and the loop every
    /// other pass runs (every pass, without steady trips).
    ///
    /// A level reads what it needs of this iteration's planes after a barrier: one precedes
    /// each level that reads a version written since the last one. Nothing else needs one
    /// within an iteration: each level writes a version of its own, and rings are deep enough
    /// that no slot a reader still needs is overwritten before the barrier that ends the
    /// iteration.
    ///
    /// With register planes the loop is unrolled by their slots (see [`Registers`]), its
    /// iterations rounded up to a multiple of them: the extra ones find no plane to load,
    /// compute or write. The pass of every step then runs its steady trips in a loop of their
    /// own (see [`Pipeline::steady_trips`]), and the trips before and after them one by one.
    pub(super) fn sweep(&self, frame: Frame) -> (Option<Vec<Stmt>>, Vec<Stmt>) {
        let ctx = self.ctx;
        let unroll = self.registers.as_ref().map_or(1, |r| r.planes);
        let end = div_ceil(self.iterations, unroll) * unroll;
        let trips = |start: i64, end: i64, body: Vec<Stmt>| Stmt::For {
            var: "it".into(),
            ty: ctx.ity,
            start: ctx.lit(start),
            end: ctx.lit(end),
            step: ctx.lit(unroll),
            body,
        };
        let checked = self.unrolled(frame, unroll, Checks::All);
        let mut loop_only = self.first_prefetches(frame);
        loop_only.push(trips(0, end, checked.clone()));
        let Some((first, steady_end)) = self.steady_trips(unroll) else {
            return (None, loop_only);
        };
        let mut full = self.first_prefetches(frame);
        full.extend(one_by_one(
            ctx,
            &checked,
            (0..first).step_by(unroll as usize),
        ));
        full.push(Stmt::Comment(
            "steady trips: every plane in range, a pass of every step".into(),
        ));
        full.push(trips(
            first,
            steady_end,
            self.unrolled(frame, unroll, Checks::Steady),
        ));
        full.extend(one_by_one(
            ctx,
            &checked,
            (steady_end..end).step_by(unroll as usize),
        ));
        (Some(full), loop_only)
    }

    /// Before the sweep, where the pipeline prefetches, the loads of the input planes its first
    /// iterations store.
    fn first_prefetches(&self, frame: Frame) -> Vec<Stmt> {
        let ahead = self.prefetch();
        if ahead == 0 {
            return Vec::new();
        }
        let loads: Vec<Stmt> = (self.inputs.iter())
            .flat_map(|&v| (0..ahead).map(move |j| (v, j)))
            .map(|(v, j)| self.prefetch_plane(v, frame, j, 0, Checks::All))
            .collect();
        one_by_one(self.ctx, &loads, std::iter::once(0))
    }

    /// One trip of the sweep's loop: `unroll` iterations, with `checks`.
    pub(super) fn unrolled(&self, frame: Frame, unroll: i64, checks: Checks) -> Vec<Stmt> {
        if unroll == 1 {
            return self.iteration(frame, 0, checks);
        }
        let mut iterations: Vec<Vec<Stmt>> = (0..unroll)
            .map(|j| self.iteration(frame, j, checks))
            .collect();
        leave_out_idle_barriers(&mut iterations);
        iterations.into_iter().map(Stmt::Block).collect()
    }

    /// The steady trips of `unroll` iterations (see [`Checks::Steady`]), from the first
    /// one's start to the last one's end, where a pass has every step: those whose loads,
    /// levels and writes all have their planes. Only tiles with register planes run them:
    /// there the tests cost a few instructions per point, where a plane shared by a loop pays
    /// them once per plane.
    pub(super) fn steady_trips(&self, unroll: i64) -> Option<(i64, i64)> {
        self.registers.as_ref()?;
        // A prefetching load reads its plane iterations early.
        let early = self.prefetch();
        let loads = (self.inputs.iter()).flat_map(|&v| {
            let v = &self.versions[v];
            [0, early].map(|ahead| (v.bounds.lo[SWEPT], v.bounds.hi[SWEPT], v.lag - ahead))
        });
        // A reordered level finishes outputs from its region's start.
        let levels = (self.levels.iter())
            .map(|level| (level.region.lo[SWEPT], level.region.hi[SWEPT], level.lag));
        let (_, write_lag) = self.finals.last()?;
        let write = (0, self.extent[SWEPT], *write_lag);
        let spans: Vec<(i64, i64, i64)> = loads.chain(levels).chain([write]).collect();
        // Iteration `it + j` handles plane `it + j + base - lag` of each.
        let first = (spans.iter())
            .map(|&(lo, _, lag)| lo - self.base + lag)
            .max()?;
        let first = div_ceil(first.max(0), unroll) * unroll;
        let last = (spans.iter())
            .map(|&(_, hi, lag)| hi - 1 - self.base + lag - (unroll - 1))
            .min()?;
        let end = (last.div_euclid(unroll) + 1) * unroll;
        (first < end).then_some((first, end))
    }

    /// Whether levels compute every position a thread owns, untested, in trips with `checks`.
    pub(super) fn untested_positions(&self, checks: Checks) -> bool {
        checks == Checks::Steady && self.whole_planes
    }

    /// The first plane level `l` handles in `frame`: a reordered level starts adding partial
    /// sums the planes its terms span before its region.
    pub(super) fn level_start(&self, l: usize, frame: Frame) -> i64 {
        let lo = self.levels[l].region.lo[SWEPT];
        match self.reordered_in(l, frame) {
            Some(reordered) => {
                let (first, last) = reordered.span();
                lo - (last - first)
            }
            None => lo,
        }
    }

    /// Iteration `it + j` of the sweep (see [`Pipeline::sweep`]), with `checks`; with rings
    /// in global memory, whose launch is an iteration, without barriers.
    pub(in crate::kernel::lower) fn iteration(
        &self,
        frame: Frame,
        j: i64,
        checks: Checks,
    ) -> Vec<Stmt> {
        let mut iteration = self.writes(frame, j, checks);
        iteration.extend((self.inputs.iter()).map(|&v| self.load(v, frame, j, checks)));
        let mut unsynced: Vec<usize> = self.inputs.clone();
        for (l, level) in self.levels.iter().enumerate() {
            let reordered = self.reordered_in(l, frame);
            if !self.global && self.reads_unsynced(level, frame, reordered, &unsynced) {
                iteration.push(Stmt::Barrier);
                unsynced.clear();
            }
            iteration.push(match reordered {
                Some(reordered) => self.reordered_plane(l, reordered, j, checks),
                None => self.level_plane(l, frame, j, checks),
            });
            unsynced.extend(level.writes.iter().map(|&(_, version)| version));
        }
        if !self.global {
            iteration.push(Stmt::Barrier);
        }
        iteration
    }

    /// Whether `level`, in `frame` (`reordered` there or not), reads from a shared ring a
    /// plane written since the last barrier (to a version of `unsynced`). Without register
    /// planes that is any read of such a version. With them a thread reads its own positions'
    /// values from registers, and only a read at an in-plane neighbour of the plane written
    /// in this iteration needs one (in the edge frame, of any plane a clamped or mirrored
    /// border may pick); a reordered level reads every neighbour on its last plane.
    pub(super) fn reads_unsynced(
        &self,
        level: &Level,
        frame: Frame,
        reordered: Option<&Reordered>,
        unsynced: &[usize],
    ) -> bool {
        if self.registers.is_none() {
            return level.uses.iter().any(|v| unsynced.contains(v));
        }
        let ctx = self.ctx;
        let program = ctx.bound.program();
        (ctx.bound.checked().stage_footprints(level.stage).iter()).any(|(field, fp)| {
            let Some(version) = level.reads[field.index()].filter(|v| unsynced.contains(v)) else {
                return false;
            };
            let fresh = level.lag - self.versions[version].lag;
            let picked = frame == Frame::Edge && picks_plane(program, level.stage, *field);
            (fp.offsets.iter()).any(|o| {
                let along = reordered.map_or(i64::from(o[SWEPT]), |r| r.span().1);
                o[1..].iter().any(|&c| c != 0) && (along == fresh || (picked && along != 0))
            })
        })
    }

    /// `p`: the plane position a version of lag `lag` handles in iteration `it + j`.
    pub(in crate::kernel::lower) fn plane(&self, lag: i64, j: i64) -> Stmt {
        Stmt::Declare {
            var: "p".into(),
            ty: self.ctx.ity,
            value: Some(self.ctx.offset(Expr::var("it"), j + self.base - lag)),
        }
    }

    /// Whether plane `p` lies in `[lo, hi)`.
    pub(in crate::kernel::lower) fn plane_in(&self, lo: i64, hi: i64) -> Expr {
        let ctx = self.ctx;
        (ctx.lit(lo).op(KernelOp::Le, Expr::var("p")))
            .op(KernelOp::And, Expr::var("p").op(KernelOp::Lt, ctx.lit(hi)))
    }

    /// The loop in which the block's threads share the points of plane `p` of `rect`, each
    /// point's block position passed to `body`; in column segments (see [`segmented_loop`])
    /// for loops that compute a stage's points (`segmented` names it).
    pub(super) fn plane_loop(
        &self,
        rect: &Rect,
        segmented: Option<Id<Stage>>,
        mut body: impl FnMut(Vec<Expr>) -> Vec<Stmt>,
    ) -> Stmt {
        let ctx = self.ctx;
        let d = ctx.dims();
        let dims: Vec<i64> = (1..d).map(|a| rect.len(a)).collect();
        let position = |local: Vec<Expr>| -> Vec<Expr> {
            std::iter::once(Expr::var("p"))
                .chain((local.into_iter().enumerate()).map(|(k, l)| ctx.offset(l, rect.lo[k + 1])))
                .collect()
        };
        let names = &self.names[1..];
        if let Some(stage) = segmented {
            let work = point_work(ctx, stage);
            segmented_loop(ctx, &dims, names, self.loop_threads, work, |local| {
                body(position(local))
            })
        } else {
            shared_loop(ctx, &dims, names, self.loop_threads, |local| {
                body(position(local))
            })
        }
    }

    /// The points of plane `p` of `rect`, each made by `body` from the owner of the position
    /// (`(k, j)`: the thread's position number and the unrolled iteration, with register
    /// planes) and its block position: the positions the thread owns, or a loop in which the
    /// block's threads share the plane (in column segments when it computes `segmented`'s
    /// points).
    pub(super) fn plane_points(
        &self,
        rect: &Rect,
        j: i64,
        segmented: Option<Id<Stage>>,
        mut body: impl FnMut(Option<(i64, i64)>, Vec<Expr>) -> Vec<Stmt>,
    ) -> Vec<Stmt> {
        match &self.registers {
            Some(registers) => self.owned_points(registers, Some(rect), |k, position| {
                body(Some((k, j)), position)
            }),
            None => vec![self.plane_loop(rect, segmented, |position| body(None, position))],
        }
    }

    /// Loads the input plane of `version` (each position's periodic image) into its ring; when
    /// the pipeline prefetches, from the registers an earlier iteration loaded it into, and
    /// the plane as far ahead into them (see [`Pipeline::prefetch`]).
    pub(super) fn load(&self, version: usize, frame: Frame, j: i64, checks: Checks) -> Stmt {
        let ctx = self.ctx;
        let lag = self.versions[version].lag;
        let ahead = self.prefetch();
        if ahead == 0 {
            return self.each_position(version, j, 0, checks, |owner, position| {
                let value = self.memory_value(version, frame, position);
                self.place_at(version, owner, lag)
                    .store(ctx, position, value)
            });
        }
        let slot = self.prefetch_slot(version, j);
        let stores = self.each_position(version, j, 0, checks, |owner, position| {
            let (k, _) = owner.expect("prefetching threads own their positions");
            let value = Expr::var(prefetched(version, k, slot));
            self.place_at(version, owner, lag)
                .store(ctx, position, value)
        });
        Stmt::Block(vec![
            stores,
            self.prefetch_plane(version, frame, j, ahead, checks),
        ])
    }

    /// The prefetch slot of the plane of `version` that iteration `it + j` stores (planes
    /// further on by the prefetch distance share it: the slot a store frees, the load after it
    /// fills).
    fn prefetch_slot(&self, version: usize, j: i64) -> i64 {
        (j - self.versions[version].lag).rem_euclid(self.prefetch())
    }

    /// The loads of `version`'s plane `ahead` planes past the one iteration `it + j` stores
    /// into the registers that hold it until then ([`prefetched`]).
    fn prefetch_plane(
        &self,
        version: usize,
        frame: Frame,
        j: i64,
        ahead: i64,
        checks: Checks,
    ) -> Stmt {
        let slot = self.prefetch_slot(version, j + ahead);
        self.each_position(version, j, ahead, checks, |owner, position| {
            let (k, _) = owner.expect("prefetching threads own their positions");
            Stmt::Assign {
                var: prefetched(version, k, slot),
                value: self.memory_value(version, frame, position),
            }
        })
    }

    /// `body` of each position of `version`'s plane `ahead` planes past the one iteration
    /// `it + j` stores, given its owner and block position, where the plane is in the
    /// version's bounds.
    fn each_position(
        &self,
        version: usize,
        j: i64,
        ahead: i64,
        checks: Checks,
        mut body: impl FnMut(Option<(i64, i64)>, &[Expr]) -> Stmt,
    ) -> Stmt {
        let v = &self.versions[version];
        let points = self.plane_points(&v.bounds, j, None, |owner, position| {
            vec![body(owner, &position)]
        });
        let within = self.plane_in(v.bounds.lo[SWEPT], v.bounds.hi[SWEPT]);
        Stmt::Block(vec![
            self.plane(v.lag - ahead, j),
            checks.when(within, points),
        ])
    }

    /// `version`'s field at block position `position` in `frame`, loaded from memory (the
    /// position's periodic image).
    fn memory_value(&self, version: usize, frame: Frame, position: &[Expr]) -> Expr {
        let ctx = self.ctx;
        let coords = self.frame(frame).grid_coords(position);
        Expr::Load {
            buffer: field_ident(ctx, self.versions[version].field),
            index: Box::new(ctx.linear(&coords)),
            cached: true,
        }
    }

    /// Level `l`'s plane of this iteration, when it has one and the pass has its step (a shared
    /// loop runs zero times otherwise; the barrier after it stays unconditional).
    pub(super) fn level_plane(&self, l: usize, frame: Frame, j: i64, checks: Checks) -> Stmt {
        let ctx = self.ctx;
        let level = &self.levels[l];
        let io = StageIo::new(ctx, level.stage);
        let point = |owner: Option<(i64, i64)>, position: Vec<Expr>| {
            let staging = Rings {
                pipeline: self,
                level,
                owner,
                lag: level.lag,
            };
            self.frame(frame)
                .point(&io, &position, &level.region, &staging)
        };
        let mut points = match &self.registers {
            Some(registers) if self.untested_positions(checks) => {
                self.owned_points(registers, None, |k, position| point(Some((k, j)), position))
            }
            _ => self.plane_points(&level.region, j, Some(level.stage), point),
        };
        let (mut body, active) = self.level_opening(l, frame, "", j);
        if self.registers.is_some() {
            body.push(checks.when(active, points));
        } else {
            // Steady trips need register planes: a shared loop's plane is always tested.
            run_only_when(ctx, &mut points[0], active);
            body.extend(points);
        }
        Stmt::Block(body)
    }

    /// The opening of level `l`'s plane in iteration `it + j` (a comment, with `note`; `p`;
    /// the step counter), and when it runs: plane `p` from its start in `frame` (see
    /// [`Pipeline::level_start`]) to its region's end, in a pass that has its step.
    pub(super) fn level_opening(
        &self,
        l: usize,
        frame: Frame,
        note: &str,
        j: i64,
    ) -> (Vec<Stmt>, Expr) {
        let ctx = self.ctx;
        let level = &self.levels[l];
        let mut active = self.plane_in(self.level_start(l, frame), level.region.hi[SWEPT]);
        if level.step > 0 {
            active = active.op(KernelOp::And, runs_step(level.step));
        }
        let stage = &ctx.bound.program().stages[level.stage].name;
        let mut opening = vec![
            Stmt::Comment(format!("stage `{stage}` of step {}{note}", level.step)),
            self.plane(level.lag, j),
        ];
        opening.extend(step_counter(ctx, level.step));
        (opening, active)
    }

    /// For each depth a pass may have, the tile's plane of every updated field written to
    /// its partner from the field's last version, when the pass has that depth; in a steady
    /// trip, the full depth's only. Edge blocks test each point against the grid's end where
    /// the last tile overhangs it (an interior block's tile is inside).
    pub(super) fn writes(&self, frame: Frame, j: i64, checks: Checks) -> Vec<Stmt> {
        let ctx = self.ctx;
        let d = ctx.dims();
        let target = Rect::new(vec![0; d], self.extent.clone());
        let hi: Vec<Option<i64>> = (0..d)
            .map(|a| {
                let covered = blocks(ctx.extent(a), self.extent[a] as u64) as i64;
                let overhangs = covered * self.extent[a] > ctx.extent(a);
                (overhangs && frame == Frame::Edge).then_some(ctx.extent(a))
            })
            .collect();
        let depths = match checks {
            Checks::All => 0..self.finals.len(),
            Checks::Steady => self.finals.len() - 1..self.finals.len(),
        };
        (depths.map(|step| (step, &self.finals[step])))
            .map(|(step, (finals, lag))| {
                let points = self.plane_points(&target, j, None, |owner, position| {
                    let coords = self.frame(Frame::Interior).grid_coords(&position);
                    let stores = (self.updated.iter().zip(finals))
                        .map(|(&field, &version)| Stmt::Store {
                            buffer: format!("{}_next", field_ident(ctx, field)),
                            index: ctx.linear(&coords),
                            value: self.place_at(version, owner, *lag).load_at(ctx, &position),
                        })
                        .collect();
                    vec![Stmt::guarded(
                        ctx.within(&coords, &vec![None; d], &hi),
                        Stmt::Block(stores),
                    )]
                });
                let depth = Expr::var("steps")
                    .op(KernelOp::Eq, Expr::int(step as i64 + 1, ScalarType::I64));
                let cond = depth.op(KernelOp::And, self.plane_in(0, self.extent[SWEPT]));
                Stmt::Block(vec![self.plane(*lag, j), checks.when(cond, points)])
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `r[slot] = 0;`
    fn store(slot: i64) -> Stmt {
        Stmt::SharedStore {
            array: "r".into(),
            index: vec![Expr::int(slot, ScalarType::I32), Expr::var("x")],
            value: Expr::int(0, ScalarType::I32),
        }
    }

    /// `int v = r[slot];`
    fn load(slot: i64) -> Stmt {
        Stmt::Declare {
            var: "v".into(),
            ty: ScalarType::I32,
            value: Some(Expr::SharedLoad {
                array: "r".into(),
                index: vec![Expr::int(slot, ScalarType::I32), Expr::var("x")],
            }),
        }
    }

    /// An iteration that stores `head` before its own barrier and loads `tail` after it.
    fn iteration(head: i64, tail: i64) -> Vec<Stmt> {
        vec![store(head), Stmt::Barrier, load(tail), Stmt::Barrier]
    }

    fn barriers(iterations: &[Vec<Stmt>]) -> Vec<usize> {
        (iterations.iter())
            .map(|body| body.iter().filter(|s| matches!(s, Stmt::Barrier)).count())
            .collect()
    }

    #[test]
    fn an_iteration_ending_barrier_stays_only_where_the_next_head_touches_the_tail() {
        // Each next iteration stores the slot this one reads after its own barrier: kept.
        let mut overlapping = vec![iteration(0, 1), iteration(1, 2), iteration(2, 0)];
        leave_out_idle_barriers(&mut overlapping);
        assert_eq!(barriers(&overlapping), [2, 2, 2]);
        // Distinct slots: left out, but at the loop's last iteration.
        let mut distinct = vec![iteration(0, 2), iteration(1, 0), iteration(2, 1)];
        leave_out_idle_barriers(&mut distinct);
        assert_eq!(barriers(&distinct), [1, 1, 2]);
        // A slot that is not a literal may be any: kept.
        let mut dynamic = vec![iteration(0, 2), iteration(1, 0)];
        dynamic[1][0] = Stmt::SharedStore {
            array: "r".into(),
            index: vec![Expr::var("s"), Expr::var("x")],
            value: Expr::int(0, ScalarType::I32),
        };
        leave_out_idle_barriers(&mut dynamic);
        assert_eq!(barriers(&dynamic), [2, 2]);
        // An iteration without a barrier of its own keeps its ending one.
        let mut bare = vec![vec![store(0), Stmt::Barrier], iteration(1, 2)];
        leave_out_idle_barriers(&mut bare);
        assert_eq!(barriers(&bare), [1, 2]);
    }
}
