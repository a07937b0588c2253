//! Box sums reordered plane by plane (see [`Reordered`]): each arriving plane's neighbours
//! read once and added into the partial sums of the output planes they feed.

use super::sweep::Rings;
use super::*;

/// A level whose stage's sum is reordered along the sweep in the interior frame (see the
/// module's documentation). At the iteration where the level computes plane `p`, each
/// position the thread owns reads plane `p + last` of `version` (its neighbours through the
/// ring, its own column from registers), adds the terms reading plane offset `dz` into the
/// partial sum of output plane `p + last - dz` (starting it at the lowest offset), and
/// finishes output `p`, whose terms have all arrived. Partial sums live in registers
/// `a<level>_<k>_s<slot>`, slotted as the register planes are: the sweep is unrolled by at
/// least the outputs in flight.
pub(in crate::kernel::lower) struct Reordered {
    pub(super) sums: PlaneSums,
    /// Neighbours read through the ring per point in the written order that reordering does
    /// not read.
    pub(super) saved_reads: i64,
}

impl Reordered {
    /// The lowest and highest plane offsets the terms read.
    pub(super) fn span(&self) -> (i64, i64) {
        let (first, last) = self.sums.span();
        (i64::from(first), i64::from(last))
    }

    /// Outputs whose partial sums are in flight at once.
    pub(super) fn in_flight(&self) -> i64 {
        let (first, last) = self.span();
        last - first + 1
    }

    /// 32-bit registers its partial sums take per position a thread owns.
    pub(super) fn registers(&self) -> i64 {
        self.in_flight() * self.sums.ty.size_bytes().div_ceil(4) as i64
    }
}

/// The register of level `l`'s partial sum in slot `slot` (taken modulo the slots) at the
/// position numbered `k` a thread owns (see [`Reordered`]).
pub(super) fn partial_sum(l: usize, k: i64, slot: i64, registers: &Registers) -> String {
    format!("a{l}_{k}_s{}", slot.rem_euclid(registers.planes))
}

impl Pipeline<'_> {
    /// How `level` is reordered, when it can be: outside exact mode, a stage whose output is
    /// a function of a sum of terms that each read one plane of one staged field, where more
    /// than one plane's terms read neighbours off the sweep's axis (else reordering reads no
    /// neighbour fewer times).
    pub(super) fn reorderable(&self, level: &Level) -> Option<Reordered> {
        if self.ctx.plan.exact {
            return None;
        }
        let checked = self.ctx.bound.checked();
        let sums = plane_sums(checked, level.stage, SWEPT)?;
        let staged = level.reads[sums.field.index()].is_some();
        if !staged || sums.off_axis_planes() < 2 {
            return None;
        }
        let footprints = checked.stage_footprints(level.stage);
        let (_, footprint) = footprints.iter().find(|(f, _)| *f == sums.field)?;
        let neighbours: Vec<&[i32]> = (footprint.offsets.iter())
            .map(|o| &o[1..])
            .filter(|o| o.iter().any(|&c| c != 0))
            .collect();
        let mut distinct = neighbours.clone();
        distinct.sort();
        distinct.dedup();
        let saved_reads = (neighbours.len() - distinct.len()) as i64;
        Some(Reordered { sums, saved_reads })
    }

    /// Level `l`'s reordering, when it is reordered in `frame`.
    pub(super) fn reordered_in(&self, l: usize, frame: Frame) -> Option<&Reordered> {
        self.reordered[l]
            .as_ref()
            .filter(|_| frame == Frame::Interior)
    }

    /// Level `l`'s plane of this iteration with its sum reordered (see [`Reordered`]; the
    /// interior frame, with register planes), when the pass has its step and the plane feeds
    /// an output of its region.
    pub(super) fn reordered_plane(
        &self,
        l: usize,
        reordered: &Reordered,
        j: i64,
        checks: Checks,
    ) -> Stmt {
        let ctx = self.ctx;
        let level = &self.levels[l];
        let registers = (self.registers.as_ref()).expect("reordered levels keep register planes");
        let (first, last) = reordered.span();
        let io = StageIo::new(ctx, level.stage);
        let region = &level.region;
        let frame = self.frame(Frame::Interior);
        let tested = (!self.untested_positions(checks)).then_some(region);
        let points = self.owned_points(registers, tested, |k, position| {
            let arriving: Vec<Expr> = std::iter::once(ctx.offset(Expr::var("p"), last))
                .chain(position[1..].iter().cloned())
                .collect();
            let reads = Rings {
                pipeline: self,
                level,
                owner: Some((k, j)),
                lag: level.lag - last,
            };
            let (mut body, env) = self.arriving_plane(&frame, &io, &arriving, &reads);
            let output = |offset: i64| partial_sum(l, k, j - level.lag + offset, registers);
            body.extend(reordered.sums.planes.iter().map(|plane| {
                let dz = i64::from(plane.offset);
                Stmt::PartialSum(PartialSum {
                    stage: level.stage,
                    env: env.clone(),
                    terms: plane.terms.clone(),
                    var: output(last - dz),
                    accumulate: dz != first,
                    apart: plane.repeated,
                })
            }));
            let finished = Rings {
                pipeline: self,
                level,
                owner: Some((k, j)),
                lag: level.lag,
            };
            let sum = (reordered.sums.sum, Expr::var(output(0)));
            let point = frame.finished_point(&io, &position, region, &finished, sum);
            let lowest = ctx.lit(region.lo[SWEPT]).op(KernelOp::Le, Expr::var("p"));
            body.push(checks.when(lowest, point));
            body
        });
        let note = ", its sum reordered plane by plane";
        let (mut body, active) = self.level_opening(l, Frame::Interior, note, j);
        body.push(checks.when(active, points));
        Stmt::Block(body)
    }

    /// The values a reordered level reads on its arriving plane (block position `arriving`,
    /// through `reads`): one variable per in-plane offset, `z<n>`, bound to every read of the
    /// stage at that offset whatever its plane; and the leaves that bind them.
    pub(super) fn arriving_plane(
        &self,
        frame: &BlockFrame,
        io: &StageIo,
        arriving: &[Expr],
        reads: &Rings,
    ) -> (Vec<Stmt>, ProgramEnv) {
        let program = self.ctx.bound.program();
        let coords = frame.grid_coords(arriving);
        let mut declarations = Vec::new();
        let mut loaded: Vec<(Id<Field>, Vec<i32>, String)> = Vec::new();
        let mut bindings = Vec::new();
        for (field, fp) in &io.reads {
            for offset in &fp.offsets {
                let mut in_plane = offset.clone();
                in_plane[SWEPT] = 0;
                let found = (loaded.iter()).find(|(f, o, _)| f == field && *o == in_plane);
                let var = match found {
                    Some((_, _, var)) => var.clone(),
                    None => {
                        let var = format!("z{}", loaded.len());
                        let value =
                            frame.read(io.stage, *field, &in_plane, arriving, &coords, reads);
                        declarations.push(Stmt::Declare {
                            var: var.clone(),
                            ty: program.fields[*field].ty,
                            value: Some(value),
                        });
                        loaded.push((*field, in_plane, var.clone()));
                        var
                    }
                };
                bindings.push(ReadBinding {
                    field: *field,
                    offset: offset.clone(),
                    value: Expr::var(var),
                });
            }
        }
        let env = ProgramEnv {
            reads: bindings,
            coords,
            step: Expr::var("t_s"),
            computed: Vec::new(),
        };
        (declarations, env)
    }
}
