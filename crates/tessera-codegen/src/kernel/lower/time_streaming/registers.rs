//! Register planes (see [`Registers`]): the positions of the plane each thread owns, the
//! registers holding every version's planes there, and the rings they leave or grow.

use super::reordered::partial_sum;
use super::*;

/// The most 32-bit registers a thread's register planes may take (see [`Registers`]); past
/// it, points read their own column from the shared rings too.
pub(super) const REGISTER_PLANES_BUDGET: i64 = 64;

/// The most positions of a plane a thread may own for register planes: each one multiplies
/// its registers (j3d7pt's 32x32 tiles at T = 2 give 6 per thread and took 122 registers,
/// against 64 with the rings alone, halving the blocks a multiprocessor holds).
pub(super) const MOST_OWNED_POSITIONS: i64 = 2;

/// Register planes (Rawat et al.: a point's own column in registers, its neighbours through
/// shared memory). Thread `tid` owns the positions `tid + k * threads` (`k < owned`) of the
/// reach's plane, numbered row-major, in every plane and every level, so that a value it
/// computes or loads at a position is the one it reads there later. It keeps each version's
/// values at each of them in `planes` registers, `v<version>_<k>_s<slot>`, the slot of plane
/// position `q` being `(q - base) mod planes`; the sweep is unrolled by `planes` iterations,
/// a multiple of every ring's planes, which makes every register and every ring slot a
/// constant. The shared rings are still written: neighbours read them.
pub(in crate::kernel::lower) struct Registers {
    /// Slots per version: the most planes any version is read across.
    pub(super) planes: i64,
    /// Positions each thread owns.
    pub(super) owned: i64,
    /// The reach's first position along each plane axis.
    pub(super) lo: Vec<i64>,
    /// The reach's extent along each plane axis.
    pub(super) dims: Vec<i64>,
}

/// The register holding version `version`'s prefetched value at the thread's position `k`
/// in prefetch slot `slot`.
pub(super) fn prefetched(version: usize, k: i64, slot: i64) -> String {
    format!("f{version}_{k}_s{slot}")
}

impl Pipeline<'_> {
    /// Whether some level reads version `k` through its ring when the threads keep register
    /// planes: at an in-plane neighbour (its own column comes from registers, even where a
    /// border picks the plane).
    pub(super) fn read_through_ring(&self, k: usize) -> bool {
        let ctx = self.ctx;
        (self.levels.iter()).any(|level| {
            (ctx.bound.checked().stage_footprints(level.stage).iter()).any(|(field, fp)| {
                level.reads[field.index()] == Some(k)
                    && (fp.offsets.iter()).any(|o| o[1..].iter().any(|&c| c != 0))
            })
        })
    }

    /// Gives the threads register planes where they fit, with the reordered levels' partial
    /// sums where those fit too.
    pub(super) fn keep_registers(&mut self, readers: &[Reader]) {
        let candidates: Vec<Option<Reordered>> = (self.levels.iter())
            .map(|level| self.reorderable(level))
            .collect();
        let sums: i64 = candidates.iter().flatten().map(Reordered::registers).sum();
        if let Some(registers) = self.register_planes(readers, sums) {
            // A level is reordered where its slots suffice and it saves at least as many
            // shared loads per point as its partial sums take registers per thread (a 9-point
            // box saves 4 loads for 6 registers at 2 positions a thread, and is left as
            // written: the registers cost occupancy).
            let worth = |r: &Reordered| {
                r.in_flight() <= registers.planes
                    && r.saved_reads >= r.registers() * registers.owned
            };
            self.reordered = (candidates.into_iter()).map(|r| r.filter(worth)).collect();
            self.registers = Some(registers);
        } else {
            self.registers = self.register_planes(readers, 0);
        }
        self.grow_rings();
    }

    /// Lets steady trips leave out the test of each position a thread owns against a level's
    /// region: every ring spans the reach's plane and the furthest in-plane read past it, so
    /// that a level computing a position outside its region reads and writes inside its
    /// rings. What it computes there is never read by a point of the region (regions shrink by
    /// the reads' reach), nor written out. Only for pipelines whose stages read staged fields
    /// alone: a field read from memory might be read outside the grid there.
    pub(super) fn span_rings_over_reach(&mut self) {
        let ctx = self.ctx;
        let d = ctx.dims();
        let mut pad = vec![0i64; d];
        for level in &self.levels {
            for (_, fp) in ctx.bound.checked().stage_footprints(level.stage) {
                for (a, pad) in pad.iter_mut().enumerate().skip(1) {
                    *pad = (*pad).max(-i64::from(fp.min[a])).max(i64::from(fp.max[a]));
                }
            }
        }
        for version in &mut self.versions {
            for (a, pad) in pad.iter().enumerate().skip(1) {
                version.ring_lo[a] = self.reach.lo[a] - pad;
                version.array.dims[a] = (self.reach.len(a) + 2 * pad) as usize;
            }
        }
        self.whole_planes = true;
    }

    /// Grows each ring whose planes do not divide the register planes' slots to as many
    /// planes as there are slots, so that every ring slot is a constant in the unrolled sweep.
    pub(super) fn grow_rings(&mut self) {
        let Some(planes) = self.registers.as_ref().map(|r| r.planes) else {
            return;
        };
        for version in &mut self.versions {
            if planes % version.array.dims[SWEPT] as i64 != 0 {
                version.array.dims[SWEPT] = planes as usize;
            }
        }
    }

    /// The register planes a block's threads need for `readers`, when they fit in
    /// [`REGISTER_PLANES_BUDGET`] beside `extra` more registers per owned position, and in
    /// [`MOST_OWNED_POSITIONS`].
    pub(super) fn register_planes(&self, readers: &[Reader], extra: i64) -> Option<Registers> {
        let d = self.ctx.dims();
        let program = self.ctx.bound.program();
        let live = |k: usize| self.live_planes(readers, k);
        // Slots: a multiple of every ring's planes (so that ring slots are constants too)
        // holding every version's live planes; or, where that multiple is too many to unroll
        // (rings of 5 and 2 planes: 10), the most live planes, rings that do not divide them
        // grown to them (see `grow_rings`).
        let rings = (self.versions.iter()).fold(1, |acc, v| lcm(acc, v.array.dims[SWEPT] as i64));
        let longest = (0..self.versions.len()).map(live).fold(1, i64::max);
        let planes = match div_ceil(longest, rings) * rings {
            multiple if multiple > MOST_UNROLLED_ITERATIONS => longest,
            multiple => multiple,
        };
        let dims: Vec<i64> = (1..d).map(|a| self.reach.len(a)).collect();
        let owned = div_ceil(dims.iter().product::<i64>(), self.loop_threads);
        let registers: i64 = ((self.versions.iter().enumerate())
            .map(|(k, v)| live(k) * program.fields[v.field].ty.size_bytes().div_ceil(4) as i64)
            .sum::<i64>()
            + extra)
            * owned;
        let fits = owned <= MOST_OWNED_POSITIONS
            && planes <= MOST_UNROLLED_ITERATIONS
            && registers <= REGISTER_PLANES_BUDGET;
        fits.then(|| Registers {
            planes,
            owned,
            lo: (1..d).map(|a| self.reach.lo[a]).collect(),
            dims,
        })
    }

    /// How many iterations before it stores an input plane the sweep loads it (0: as it
    /// stores it), so that the load's latency passes while those iterations compute: with
    /// register planes in shared rings, the plan's distance rounded down to a divisor of the
    /// unrolling, which keeps every prefetch register a constant. Without it the store of the
    /// arriving plane waits for its load, and the iteration's barrier for the store; ptxas
    /// hoists an unrolled trip's loads to its top, so that wait comes once a trip, at the
    /// iteration `prefetch` planes into it.
    pub(super) fn prefetch(&self) -> i64 {
        let asked = i64::from(self.ctx.plan.prefetch);
        match &self.registers {
            Some(registers) if !self.global && asked > 0 => (1..=asked.min(registers.planes))
                .rev()
                .find(|d| registers.planes % d == 0)
                .unwrap_or(1),
            _ => 0,
        }
    }

    /// The declarations of the threads' owned positions (`m<k>`, the flat number, and
    /// `m<k>_<axis>`) and of their register planes, when the pipeline has them.
    pub(super) fn register_declarations(&self) -> Vec<Stmt> {
        let Some(registers) = &self.registers else {
            return Vec::new();
        };
        let (ctx, ity) = (self.ctx, self.ctx.ity);
        let mut body = Vec::new();
        for k in 0..registers.owned {
            let flat = format!("m{k}");
            body.push(Stmt::Declare {
                var: flat.clone(),
                ty: ity,
                value: Some(ctx.offset(Expr::var("tid"), k * self.loop_threads)),
            });
            let digits = ctx.digits(&flat, &registers.dims);
            for ((name, digit), lo) in self.names[1..].iter().zip(digits).zip(&registers.lo) {
                body.push(Stmt::Declare {
                    var: format!("m{k}_{name}"),
                    ty: ity,
                    value: Some(ctx.offset(digit, *lo)),
                });
            }
        }
        let program = ctx.bound.program();
        for (v, version) in self.versions.iter().enumerate() {
            for k in 0..registers.owned {
                for slot in 0..registers.planes {
                    body.push(Stmt::Declare {
                        var: format!("v{v}_{k}_s{slot}"),
                        ty: program.fields[version.field].ty,
                        value: None,
                    });
                }
            }
        }
        for &v in &self.inputs {
            for k in 0..registers.owned {
                for slot in 0..self.prefetch() {
                    body.push(Stmt::Declare {
                        var: prefetched(v, k, slot),
                        ty: program.fields[self.versions[v].field].ty,
                        value: None,
                    });
                }
            }
        }
        // Partial sums start at zero: the first iterations add into outputs below the
        // region's, never finished.
        for (l, reordered) in self.reordered.iter().enumerate() {
            let Some(reordered) = reordered else { continue };
            let ty = reordered.sums.ty;
            for k in 0..registers.owned {
                for slot in 0..registers.planes {
                    body.push(Stmt::Declare {
                        var: partial_sum(l, k, slot, registers),
                        ty,
                        value: Some(Expr::Literal(tessera_ir::Constant::Float(0.0), ty)),
                    });
                }
            }
        }
        body
    }

    /// For each position a thread owns that lies in `rect`'s plane (every one it owns without
    /// `rect`), `body` of its number and block position (at plane `p`), under a test of the
    /// position where it may fall outside.
    pub(super) fn owned_points(
        &self,
        registers: &Registers,
        rect: Option<&Rect>,
        mut body: impl FnMut(i64, Vec<Expr>) -> Vec<Stmt>,
    ) -> Vec<Stmt> {
        let ctx = self.ctx;
        let area: i64 = registers.dims.iter().product();
        (0..registers.owned)
            .map(|k| {
                let coords: Vec<Expr> = (self.names[1..].iter())
                    .map(|name| Expr::var(format!("m{k}_{name}")))
                    .collect();
                let mut tests = Vec::new();
                if (k + 1) * self.loop_threads > area {
                    tests.push(Expr::var(format!("m{k}")).op(KernelOp::Lt, ctx.lit(area)));
                }
                let bounds = rect.map(|rect| (&rect.lo[1..], &rect.hi[1..]));
                for (j, (c, (&lo, &hi))) in (coords.iter())
                    .zip(bounds.into_iter().flat_map(|(lo, hi)| lo.iter().zip(hi)))
                    .enumerate()
                {
                    if lo > registers.lo[j] {
                        tests.push(ctx.lit(lo).op(KernelOp::Le, c.clone()));
                    }
                    if hi < registers.lo[j] + registers.dims[j] {
                        tests.push(c.clone().op(KernelOp::Lt, ctx.lit(hi)));
                    }
                }
                let position = std::iter::once(Expr::var("p")).chain(coords).collect();
                let point = Stmt::Block(body(k, position));
                Stmt::guarded(
                    tests.into_iter().reduce(|a, b| a.op(KernelOp::And, b)),
                    point,
                )
            })
            .collect()
    }
}
