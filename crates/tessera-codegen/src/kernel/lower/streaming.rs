//! 2.5D streaming (Micikevicius; Schäfer's cached plane sweep; Rawat's streaming with
//! registers at T = 1): a block owns a tile of the plane axes and sweeps the streaming axis
//! (the slowest of the three fastest axes: z in 3D, y in 2D), serially or in concurrent
//! chunks. For every field read at neighbouring planes, each thread keeps a register queue of
//! the planes it reads per *column*: per in-plane offset read at more than the current plane
//! (the point's own column always), so that each iteration loads one new plane per column. A
//! field read straight along the streaming axis only ("diagonal-access free") has one column,
//! and its current plane is staged in shared memory (own points from the queue, halo from
//! global memory) when it is also read at in-plane neighbours; under `plane=cache`
//! ([`PlaneReads::Cache`]) those neighbours are read through the read-only cache, and a field
//! read diagonally across planes (a box stencil) gets a column per in-plane offset (j3d27pt: 9
//! loads per point instead of 27). Other fields are read from global memory through the
//! read-only cache. A thread's elements are consecutive rows of the block's y axis, so a read
//! of the row above or below an element is another element's queue (but at the first and
//! last), and only the first and last elements keep queues of columns rows off: j3d7pt at 4
//! elements loads 3.5 values per point instead of 5, j3d27pt 4.5 instead of 9. Long queues
//! rotate by name in a sweep unrolled by their lengths ([`Sweep::unroll`]) rather than by
//! moves. Values are only moved, never recombined: exact mode stays bitwise. Where the plan
//! asks, outside exact mode, a box sum read through the cache is added up plane by plane as
//! its planes arrive (Rawat's associative reordering, [`Sweep::reordered`]): each column
//! keeps the arriving plane only, and a few partial sums the rest (j3d27pt: 3 registers an
//! element where its queues took 27).

use tessera_analysis::{Domain, Footprint, PlaneSums, plane_sums};
use tessera_ir::{Border, Constant, Field, Id, Stage, UnaryOp};
use tessera_plan::gpu::PlaneReads;

use super::super::{
    Expr, Kernel, KernelOp, PartialSum, ProgramEnv, ReadBinding, SharedArray, Stmt,
};
use super::common::{Ctx, StageIo, field_ident, kernel_name};
use super::naive::blocks;
use super::tile::{MOST_UNROLLED_ITERATIONS, Tile, lcm};

/// Points a block's rows start at a multiple of, along the fastest axis (128 bytes of `f32`).
const ROW_ALIGNMENT: i64 = 32;

/// The most 32-bit registers a thread's register queues of diagonally read fields may take:
/// j3d27pt's 9 columns of 3 planes take 27 per element; a 125-point box's 25 columns of 5
/// planes (125 per element) spilled with two elements per thread, so such a field is read
/// from memory instead.
const DIAGONAL_QUEUE_REGISTERS: i64 = 64;

/// One column of a streamed field: an in-plane offset and the planes read at it, kept in a
/// register queue.
struct Column {
    /// The in-plane offset, per plane axis (all 0: the point's own column).
    offset: Vec<i64>,
    /// Lowest and highest plane read at it, relative to the current one (the own column's
    /// range includes the current plane).
    lo: i64,
    hi: i64,
}

impl Column {
    /// The planes its queue holds.
    fn length(&self) -> i64 {
        self.hi - self.lo + 1
    }
}

/// A field streamed through registers.
struct Streamed {
    field: Id<Field>,
    /// Its columns, the point's own first.
    columns: Vec<Column>,
    /// In-plane footprint box of the reads of the current plane that no column serves (all
    /// of them with a single column), per plane axis.
    min: Vec<i64>,
    max: Vec<i64>,
    /// The shared array holding the current plane with its halo, when read at in-plane
    /// neighbours.
    shared: Option<String>,
}

/// The fewest register moves per iteration for which the sweep is unrolled (see
/// [`Sweep::unroll`]). nvcc unrolls short sweeps itself and renames their queues (j3d7pt's and
/// j2d5pt's 2 moves, j2d9pt-box's 6: unrolled by us they issued 1-4 instructions more per
/// point, sm_90); j3d27pt's 18 and gaussian2d's 20 it leaves moving, or does not unroll at all
/// (94 instructions per point, 62 unrolled by us; gaussian2d 60 and 45).
const FEWEST_MOVES_TO_UNROLL: i64 = 12;

/// The streaming kernel of `stage` and its grid, or why the stage cannot be streamed.
pub fn kernel(ctx: &Ctx, stage: Id<Stage>, io: &StageIo) -> Result<(Kernel, [u64; 3]), String> {
    let sweep = Sweep::new(ctx, stage, io)?;
    let shared = sweep.shared_arrays();
    let step = |u: i64| {
        let mut step = sweep.advance_queues(u);
        if !shared.is_empty() {
            step.push(Stmt::Barrier);
            step.extend(sweep.stage_current_planes(u));
            step.push(Stmt::Barrier);
        }
        step.extend(sweep.points(u));
        step
    };
    let mut body = sweep.prologue(!shared.is_empty());
    body.extend(sweep.loops(step));
    let kernel = Kernel {
        name: kernel_name(ctx, stage, "streaming"),
        strategy: "streaming",
        doc: format!(
            "stage `{}`: plane sweep along {}, register queues and {}{}",
            ctx.bound.program().stages[stage].name,
            sweep.names[sweep.s],
            if shared.is_empty() {
                "in-plane reads through the cache"
            } else {
                "a shared current plane"
            },
            if sweep.reordered.is_some() {
                ", its box sum added up plane by plane"
            } else {
                ""
            }
        ),
        params: io.kernel_params(),
        shared,
        block: sweep.tile.block,
        min_resident_blocks: None,
        body,
    };
    Ok((kernel, sweep.grid()))
}

/// A stage's plane sweep: its axes, its block tile and the fields it streams.
struct Sweep<'a> {
    ctx: &'a Ctx<'a>,
    stage: Id<Stage>,
    io: &'a StageIo,
    domain: Domain,
    /// What the blocks' tiles cover: the domain, its rows starting at a multiple of
    /// [`ROW_ALIGNMENT`] points where no plane is staged in shared memory (see
    /// [`Sweep::aligned_rows`]).
    rows: Domain,
    names: Vec<&'static str>,
    /// The streaming axis.
    s: usize,
    /// The plane axes (the faster ones).
    plane: Vec<usize>,
    tile: Tile,
    /// The fields streamed through registers.
    streamed: Vec<Streamed>,
    /// Iterations the sweep is unrolled by: a multiple of every queue's length, so that a
    /// queue's planes stay in their registers and each iteration's names say which plane
    /// each holds (register `s<slot>` holds plane `z + k` in unrolled iteration `u` where
    /// `slot = (u + k) mod length`); 1 where that takes more than
    /// [`MOST_UNROLLED_ITERATIONS`], where the queues move fewer than
    /// [`FEWEST_MOVES_TO_UNROLL`] registers, or where a plane is staged in shared memory, and
    /// the queues move down a register each iteration.
    unroll: i64,
    /// The stage's box sum, where the sweep adds it up plane by plane ([`Sweep::reorderable`]):
    /// at the iteration computing plane `z`, each element reads the arriving plane
    /// `z + last` at every in-plane offset, adds the terms reading plane offset `dz` into the
    /// partial sum of output plane `z + last - dz` ([`Sweep::partial_sum`], starting it at
    /// the lowest offset) and finishes output `z` from its partial sum.
    reordered: Option<PlaneSums>,
}

impl<'a> Sweep<'a> {
    /// The sweep of `stage`, or why it cannot be streamed.
    fn new(ctx: &'a Ctx<'a>, stage: Id<Stage>, io: &'a StageIo) -> Result<Sweep<'a>, String> {
        let d = ctx.dims();
        if d < 2 {
            return Err("the grid has one axis, so there is no plane to stream".into());
        }
        let s = if d >= 3 { d - 3 } else { d - 2 };
        let domain = ctx.domain(stage).clone();
        ctx.require_dense(&domain, s..d, "streaming does")?;
        let plane: Vec<usize> = (s + 1..d).collect();
        let tile = Tile::of_planes(ctx);
        let mut sweep = Sweep {
            ctx,
            stage,
            io,
            rows: domain.clone(),
            domain,
            names: ctx.axis_names(),
            s,
            plane,
            tile,
            streamed: Vec::new(),
            unroll: 1,
            reordered: None,
        };
        sweep.streamed = (io.reads.iter())
            .filter_map(|(field, fp)| sweep.streamed(*field, fp))
            .collect();
        sweep.reordered = sweep.reorderable();
        if let Some(sums) = sweep.reordered.clone() {
            sweep.keep_arriving_planes(&sums);
        }
        if sweep.diagonal_queue_registers() > DIAGONAL_QUEUE_REGISTERS {
            sweep.streamed.retain(|f| f.columns.len() == 1);
            sweep.reordered = None;
        }
        let lengths = (sweep.streamed.iter()).flat_map(|f| f.columns.iter().map(Column::length));
        let unroll = lengths.fold(1, lcm);
        // A staged plane's barriers would sit in the unrolled iterations' guards: PoCL 3.1
        // corrupted its heap running such kernels (a radius-2 star, chunks of 5 or more), so
        // sweeps that stage a plane keep moving their queues.
        let staged = sweep.streamed.iter().any(|f| f.shared.is_some());
        if !staged
            && unroll <= MOST_UNROLLED_ITERATIONS
            && sweep.queue_moves() >= FEWEST_MOVES_TO_UNROLL
        {
            sweep.unroll = unroll;
        }
        // Partial sums rotate by name, which also lets ptxas fold the loads' address steps.
        if let Some(sums) = &sweep.reordered {
            let (first, last) = sums.span();
            let in_flight = i64::from(last - first) + 1;
            if in_flight <= MOST_UNROLLED_ITERATIONS {
                sweep.unroll = in_flight;
            }
        }
        sweep.rows = sweep.aligned_rows();
        Ok(sweep)
    }

    /// The domain with its rows' first point moved down to a multiple of [`ROW_ALIGNMENT`]
    /// along the fastest axis, so that each warp's row is whole aligned segments (a `[1..N-1]`
    /// stage would otherwise start every row one point past a segment boundary); the points
    /// before the domain are skipped. Kept as it is where a plane is staged in shared memory,
    /// whose halo loads would then reach past the grid's edge.
    /// Along the other plane axes, tiles start at 0 where that takes no more blocks, so that
    /// the last block does not overhang the grid (whose loads would then need clamping).
    fn aligned_rows(&self) -> Domain {
        let mut rows = self.domain.clone();
        if self.streamed.iter().any(|f| f.shared.is_some()) {
            return rows;
        }
        let x = self.ctx.dims() - 1;
        rows.rect.lo[x] -= rows.rect.lo[x].rem_euclid(ROW_ALIGNMENT);
        for &axis in self.plane.iter().filter(|&&a| a != x) {
            let size = self.tile.size(axis) as u64;
            let (lo, hi) = (rows.rect.lo[axis], rows.rect.hi[axis]);
            if lo > 0 && blocks(hi, size) == blocks(hi - lo, size) {
                rows.rect.lo[axis] = 0;
            }
        }
        rows
    }

    /// How `field`, read at `fp`, is streamed; `None` when it is read at its point only, along
    /// the looped axes, or diagonally across planes where planes are staged in shared memory.
    fn streamed(&self, field: Id<Field>, fp: &Footprint) -> Option<Streamed> {
        let s = self.s;
        let at_point_only = fp.offsets.iter().all(|o| o.iter().all(|&v| v == 0));
        let flat_loops = (0..s).all(|a| fp.min[a] == 0 && fp.max[a] == 0);
        let straight = fp
            .offsets
            .iter()
            .all(|o| o[s] == 0 || self.plane.iter().all(|&a| o[a] == 0));
        let staged = self.ctx.plan.plane_reads == PlaneReads::Shared;
        if at_point_only || !flat_loops || (staged && !straight) {
            return None;
        }
        let in_plane_part =
            |o: &Vec<i32>| -> Vec<i64> { self.plane.iter().map(|&a| i64::from(o[a])).collect() };
        // The point's own column always (its current plane is staged or computed at), and
        // one per other in-plane offset read at another plane.
        let mut columns = vec![Column {
            offset: vec![0; self.plane.len()],
            lo: 0,
            hi: 0,
        }];
        for o in fp.offsets.iter().filter(|o| o[s] != 0) {
            let offset = in_plane_part(o);
            if !columns.iter().any(|c| c.offset == offset) {
                let plane = i64::from(o[s]);
                columns.push(Column {
                    offset,
                    lo: plane,
                    hi: plane,
                });
            }
        }
        // Each column's queue holds every plane read at its offset.
        for o in &fp.offsets {
            let offset = in_plane_part(o);
            if let Some(c) = columns.iter_mut().find(|c| c.offset == offset) {
                (c.lo, c.hi) = (c.lo.min(i64::from(o[s])), c.hi.max(i64::from(o[s])));
            }
        }
        let in_plane: Vec<Vec<i64>> = (fp.offsets.iter())
            .filter(|o| o[s] == 0)
            .map(in_plane_part)
            .filter(|c| !columns.iter().skip(1).any(|col| col.offset == *c))
            .collect();
        // The furthest such read along plane axis `j` on the side `pick` chooses (0 when none).
        let reach =
            |j: usize, pick: fn(i64, i64) -> i64| in_plane.iter().map(|c| c[j]).fold(0, pick);
        let min: Vec<i64> = (0..self.plane.len()).map(|j| reach(j, i64::min)).collect();
        let max: Vec<i64> = (0..self.plane.len()).map(|j| reach(j, i64::max)).collect();
        let neighbours = staged && min.iter().chain(&max).any(|&v| v != 0);
        Some(Streamed {
            field,
            columns,
            min,
            max,
            shared: neighbours.then(|| format!("s_{}", field_ident(self.ctx, field))),
        })
    }

    /// The stage's box sum, when the sweep adds it up plane by plane (see [`Sweep::reordered`]):
    /// where the plan asks for it ([`tessera_plan::gpu::GpuPlan::reordered_sums`]) outside
    /// exact mode, with planes read through the cache, for a stage that reads one field,
    /// streamed, and assigns a function of one sum whose terms each read one plane, more than
    /// one plane's terms reading neighbours off the axis (else no load is saved), where no
    /// plane read leaves the grid along the sweep (a border would pick the plane).
    fn reorderable(&self) -> Option<PlaneSums> {
        let ctx = self.ctx;
        let asked = ctx.plan.reordered_sums && ctx.plan.plane_reads == PlaneReads::Cache;
        if !asked || ctx.plan.exact || self.io.reads.len() != 1 {
            return None;
        }
        let sums = plane_sums(ctx.bound.checked(), self.stage, self.s)?;
        let streamed = self.streamed.iter().any(|f| f.field == sums.field);
        let fp = self.sum_footprint();
        let (lo, hi) = (self.domain.rect.lo[self.s], self.domain.rect.hi[self.s]);
        let inside = lo + i64::from(fp.min[self.s]) >= 0
            && hi - 1 + i64::from(fp.max[self.s]) < ctx.extent(self.s);
        (streamed && inside && sums.off_axis_planes() >= 2).then_some(sums)
    }

    /// The footprint of the one field a reordered stage reads: its sum's.
    fn sum_footprint(&self) -> &'a Footprint {
        &self.io.reads[0].1
    }

    /// Gives the field `sums` reads a column per in-plane offset it reads at any plane, each
    /// keeping only the arriving plane (`z + last`; the partial sums keep the rest).
    fn keep_arriving_planes(&mut self, sums: &PlaneSums) {
        let last = i64::from(sums.span().1);
        let fp = self.sum_footprint();
        let mut offsets: Vec<Vec<i64>> = vec![vec![0; self.plane.len()]];
        for o in &fp.offsets {
            let offset: Vec<i64> = self.plane.iter().map(|&a| i64::from(o[a])).collect();
            if !offsets.contains(&offset) {
                offsets.push(offset);
            }
        }
        let f = (self.streamed.iter_mut())
            .find(|f| f.field == sums.field)
            .expect("a reordered stage streams its sum's field");
        f.columns = (offsets.into_iter())
            .map(|offset| Column {
                offset,
                lo: last,
                hi: last,
            })
            .collect();
        f.min = vec![0; self.plane.len()];
        f.max = vec![0; self.plane.len()];
    }

    /// The 32-bit registers of the register queues of the fields with more than one column.
    fn diagonal_queue_registers(&self) -> i64 {
        let program = self.ctx.bound.program();
        (self.streamed.iter())
            .filter(|f| f.columns.len() > 1)
            .map(|f| {
                let words = program.fields[f.field].ty.size_bytes().div_ceil(4) as i64;
                let planes: i64 = (f.columns.iter().enumerate())
                    .flat_map(|(k, c)| {
                        (0..self.tile.elements)
                            .filter(move |&e| self.queue_needed(f, k, e))
                            .map(move |_| c.hi - c.lo + 1)
                    })
                    .sum();
                planes * words
            })
            .sum()
    }

    /// Whether element `e` keeps its own queue of `f`'s column `column`: a column `dy` rows
    /// off along the block's y axis is, for every read, the column at `dy = 0` of the
    /// element `dy` rows away ([`Sweep::other_element`]), unless that is past the thread's
    /// first or last element.
    fn queue_needed(&self, f: &Streamed, column: usize, e: u32) -> bool {
        let Some(y) = (self.plane.iter()).position(|&a| self.tile.block_axis(a) == 1) else {
            return true;
        };
        let c = &f.columns[column];
        let other = i64::from(e) + c.offset[y];
        if c.offset[y] == 0 || !(0..i64::from(self.tile.elements)).contains(&other) {
            return true;
        }
        let mut same_row = c.offset.clone();
        same_row[y] = 0;
        !(f.columns.iter()).any(|d| d.offset == same_row && d.lo <= c.lo && c.hi <= d.hi)
    }

    /// The shared arrays of the current planes, one per streamed field read in-plane.
    fn shared_arrays(&self) -> Vec<SharedArray> {
        let program = self.ctx.bound.program();
        (self.streamed.iter())
            .filter_map(|f| {
                Some(SharedArray {
                    name: f.shared.clone()?,
                    ty: program.fields[f.field].ty,
                    dims: self.plane_dims(f).iter().map(|&n| n as usize).collect(),
                })
            })
            .collect()
    }

    /// The extents of `f`'s shared current plane: the tile with its in-plane halo.
    fn plane_dims(&self, f: &Streamed) -> Vec<i64> {
        (self.plane.iter().enumerate())
            .map(|(j, &a)| self.tile.size(a) + f.max[j] - f.min[j])
            .collect()
    }

    /// The registers the queues move down per iteration where the sweep is not unrolled.
    fn queue_moves(&self) -> i64 {
        let program = self.ctx.bound.program();
        (self.streamed.iter())
            .flat_map(|f| {
                let words = program.fields[f.field].ty.size_bytes().div_ceil(4) as i64;
                (f.columns.iter().enumerate()).map(move |(column, c)| {
                    let queues = (0..self.tile.elements)
                        .filter(|&e| self.queue_needed(f, column, e))
                        .count() as i64;
                    queues * (c.length() - 1) * words
                })
            })
            .sum()
    }

    /// `q<field>_<e>_<m1|p0|p1..>` (`q<field>c<column>_..` past the own column), or with an
    /// unrolled sweep `q<field>_<e>_s<slot>`: the register of `f`'s plane `k` in column
    /// `column` for element `e`, in unrolled iteration `u` (see [`Sweep::unroll`]).
    fn queue(&self, f: &Streamed, column: usize, e: u32, k: i64, u: i64) -> String {
        let k = if self.unroll > 1 {
            format!("s{}", (u + k).rem_euclid(f.columns[column].length()))
        } else if k < 0 {
            format!("m{}", -k)
        } else {
            format!("p{k}")
        };
        match column {
            0 => format!("q{}_{e}_{k}", f.field.index()),
            c => format!("q{}c{c}_{e}_{k}", f.field.index()),
        }
    }

    /// The name of element `e`'s position in the block's tile along plane axis `axis`.
    fn local_name(&self, axis: usize, e: u32) -> String {
        format!("t_{}", self.global_name(axis, e))
    }

    /// The name of element `e`'s grid coordinate along plane axis `axis`.
    fn global_name(&self, axis: usize, e: u32) -> String {
        if self.tile.block_axis(axis) == 1 {
            format!("{}{e}", self.names[axis])
        } else {
            self.names[axis].to_string()
        }
    }

    /// The grid coordinates of element `e` at position `stream` along the streaming axis.
    fn coords(&self, e: u32, stream: Expr) -> Vec<Expr> {
        (0..self.ctx.dims())
            .map(|a| match a {
                a if a < self.s => Expr::var(self.names[a]),
                a if a == self.s => stream.clone(),
                a => Expr::var(self.global_name(a, e)),
            })
            .collect()
    }

    /// The value of streamed field `f` in column `column` for element `e` at `position` along
    /// the streaming axis, loaded from memory: border-resolved along the axes where some load
    /// can leave the grid ([`Sweep::leaves_grid`]), a plain load elsewhere (inside the grid
    /// every border reads the point itself).
    fn load_plane(&self, f: &Streamed, column: usize, e: u32, position: Expr) -> Expr {
        let c = &f.columns[column];
        let resolve: Vec<bool> = (0..self.ctx.dims())
            .map(|a| a >= self.s && self.leaves_grid(c, a))
            .collect();
        let mut coords = self.coords(e, position);
        for (j, &a) in self.plane.iter().enumerate() {
            coords[a] = self.ctx.offset(coords[a].clone(), c.offset[j]);
        }
        self.io.load(
            self.ctx,
            f.field,
            &coords,
            &resolve,
            Some(self.border(f.field)),
        )
    }

    /// Whether a register-queue load of column `c` can land outside the grid along `axis`:
    /// along the streaming axis where the planes it reads reach past the grid's ends from the
    /// domain's, along a plane axis where the blocks' rows, shifted by the column's offset,
    /// reach past the grid.
    fn leaves_grid(&self, c: &Column, axis: usize) -> bool {
        let extent = self.ctx.extent(axis);
        let rect = &self.rows.rect;
        if axis == self.s {
            return rect.lo[axis] + c.lo < 0 || rect.hi[axis] - 1 + c.hi >= extent;
        }
        let shift = (self.plane.iter().position(|&a| a == axis)).map_or(0, |j| c.offset[j]);
        let size = self.tile.size(axis);
        let covered = blocks(Ctx::count(&self.rows, axis), size as u64) as i64 * size;
        rect.lo[axis] + shift < 0 || rect.lo[axis] + shift + covered > extent
    }

    /// The border of `field` in the stage, clamping where it has none (halo of a tile).
    fn border(&self, field: Id<Field>) -> Border {
        self.ctx
            .border(Some(self.stage), field)
            .unwrap_or(Border::Clamp)
    }

    /// The statements before the sweep: the thread index (for staging), the block's origin,
    /// each element's coordinates and the chunk of the streaming axis.
    fn prologue(&self, staging: bool) -> Vec<Stmt> {
        let (ctx, ity) = (self.ctx, self.ctx.ity);
        let mut body = Vec::new();
        if staging {
            body.push(Stmt::Declare {
                var: "tid".into(),
                ty: ity,
                value: Some(
                    Expr::ThreadIdx(1)
                        .times(ctx.lit(i64::from(self.tile.block[0])))
                        .plus(Expr::ThreadIdx(0)),
                ),
            });
        }
        body.extend(
            self.tile
                .origins(ctx, &self.rows, self.plane.iter().copied()),
        );
        body.extend(self.element_coords());
        body.extend(self.chunk_bounds());
        body
    }

    /// `t_<axis>[e]` and `<axis>[e]`: each element's position in the tile and in the grid
    /// (one per element along the block's y axis, shared along x).
    fn element_coords(&self) -> Vec<Stmt> {
        let ity = self.ctx.ity;
        let mut body = Vec::new();
        for e in 0..self.tile.elements {
            for &axis in &self.plane {
                if self.tile.block_axis(axis) == 1 || e == 0 {
                    body.push(Stmt::Declare {
                        var: self.local_name(axis, e),
                        ty: ity,
                        value: Some(self.tile.packed_offset(self.ctx, axis, e)),
                    });
                    let origin = Expr::var(format!("o_{}", self.names[axis]));
                    body.push(Stmt::Declare {
                        var: self.global_name(axis, e),
                        ty: ity,
                        value: Some(origin.plus(Expr::var(self.local_name(axis, e)))),
                    });
                }
            }
        }
        body
    }

    /// Points of the streaming axis per chunk (block along the grid's last block axis).
    fn chunk(&self) -> i64 {
        let count = Ctx::count(&self.domain, self.s);
        self.ctx.plan.stream_chunk.map_or(count, i64::from).max(1)
    }

    /// `s_begin` and `s_end`: the block's chunk of the streaming axis.
    fn chunk_bounds(&self) -> Vec<Stmt> {
        let (ctx, ity) = (self.ctx, self.ctx.ity);
        let chunk = self.chunk();
        let begin = ctx.offset(
            Expr::BlockIdx(self.plane.len()).times(ctx.lit(chunk)),
            self.domain.rect.lo[self.s],
        );
        let end = ctx
            .offset(Expr::var("s_begin"), chunk)
            .op(KernelOp::Min, ctx.lit(self.domain.rect.hi[self.s]));
        vec![
            Stmt::Declare {
                var: "s_begin".into(),
                ty: ity,
                value: Some(begin),
            },
            Stmt::Declare {
                var: "s_end".into(),
                ty: ity,
                value: Some(end),
            },
        ]
    }

    /// The register queues filled before the sweep: every plane but the highest, read at
    /// the chunk's first position (moved down into place by the first iteration, where the
    /// queues move). They are declared empty and filled by assignments, as in the sweep, so
    /// that every read of a queue is a register (what the traffic model counts).
    fn queue_declarations(&self) -> Vec<Stmt> {
        let program = self.ctx.bound.program();
        // Where queues move, the first iteration moves each plane down one register first.
        let moved = i64::from(self.unroll == 1);
        let mut body = Vec::new();
        for f in &self.streamed {
            for (column, c) in f.columns.iter().enumerate() {
                for e in (0..self.tile.elements).filter(|&e| self.queue_needed(f, column, e)) {
                    body.extend((c.lo..=c.hi).map(|k| Stmt::Declare {
                        var: self.queue(f, column, e, k, 0),
                        ty: program.fields[f.field].ty,
                        value: None,
                    }));
                    body.extend((c.lo..c.hi).map(|k| Stmt::Assign {
                        var: self.queue(f, column, e, k + moved, 0),
                        value: self.load_plane(
                            f,
                            column,
                            e,
                            self.ctx.offset(Expr::var("s_begin"), k),
                        ),
                    }));
                }
            }
        }
        body
    }

    /// In unrolled iteration `u`: each queue moved down one plane (where the sweep is not
    /// unrolled), its highest plane loaded from memory.
    fn advance_queues(&self, u: i64) -> Vec<Stmt> {
        let program = self.ctx.bound.program();
        let z = self.names[self.s];
        let mut step = Vec::new();
        for f in &self.streamed {
            step.push(Stmt::Comment(format!(
                "advance the register queue of `{}`",
                program.fields[f.field].name
            )));
            for (column, c) in f.columns.iter().enumerate() {
                for e in (0..self.tile.elements).filter(|&e| self.queue_needed(f, column, e)) {
                    if self.unroll == 1 {
                        step.extend((c.lo..c.hi).map(|k| Stmt::Assign {
                            var: self.queue(f, column, e, k, u),
                            value: Expr::var(self.queue(f, column, e, k + 1, u)),
                        }));
                    }
                    let position = self.ctx.offset(Expr::var(z), c.hi);
                    step.push(Stmt::Assign {
                        var: self.queue(f, column, e, c.hi, u),
                        value: self.load_plane(f, column, e, position),
                    });
                }
            }
        }
        step
    }

    /// The current planes staged in shared memory, field by field, in unrolled iteration `u`.
    fn stage_current_planes(&self, u: i64) -> Vec<Stmt> {
        let program = self.ctx.bound.program();
        let mut step = Vec::new();
        for f in &self.streamed {
            let Some(name) = &f.shared else { continue };
            step.push(Stmt::Comment(format!(
                "current plane of `{}`: own points from registers, halo from memory",
                program.fields[f.field].name
            )));
            step.extend(self.own_points(f, name, u));
            step.push(self.halo(f, name));
        }
        step
    }

    /// Each element's point of `f`'s current plane, stored from its queue into `array`, in
    /// unrolled iteration `u`.
    fn own_points(&self, f: &Streamed, array: &str, u: i64) -> Vec<Stmt> {
        (0..self.tile.elements)
            .map(|e| {
                let index = (self.plane.iter().enumerate())
                    .map(|(j, &a)| self.ctx.offset(Expr::var(self.local_name(a, e)), -f.min[j]))
                    .collect();
                Stmt::SharedStore {
                    array: array.to_string(),
                    index,
                    value: Expr::var(self.queue(f, 0, e, 0, u)),
                }
            })
            .collect()
    }

    /// The block's loop loading the points of `f`'s current plane in `array` that no thread
    /// owns (the halo) from memory.
    fn halo(&self, f: &Streamed, array: &str) -> Stmt {
        let ctx = self.ctx;
        let (d, s) = (ctx.dims(), self.s);
        let dims = self.plane_dims(f);
        self.tile
            .cooperative_loop(ctx, &dims, &self.names[s + 1..], |local| {
                let own = (self.plane.iter().enumerate())
                    .map(|(j, &a)| {
                        ctx.lit(-f.min[j]).op(KernelOp::Le, local[j].clone()).op(
                            KernelOp::And,
                            local[j]
                                .clone()
                                .op(KernelOp::Lt, ctx.lit(-f.min[j] + self.tile.size(a))),
                        )
                    })
                    .reduce(|a, b| a.op(KernelOp::And, b))
                    .expect("a plane axis");
                let mut coords: Vec<Expr> = (0..=s).map(|a| Expr::var(self.names[a])).collect();
                for (j, &a) in self.plane.iter().enumerate() {
                    coords.push(
                        ctx.offset(Expr::var(format!("o_{}", self.names[a])), f.min[j])
                            .plus(local[j].clone()),
                    );
                }
                let resolve: Vec<bool> = (0..d).map(|a| a > s).collect();
                let border = Some(self.border(f.field));
                let value = self.io.load(ctx, f.field, &coords, &resolve, border);
                vec![Stmt::when(
                    Expr::Unary(UnaryOp::Not, Box::new(own)),
                    vec![Stmt::SharedStore {
                        array: array.to_string(),
                        index: local,
                        value,
                    }],
                )]
            })
    }

    /// Every element's point of the current plane computed (where inside the domain), in
    /// unrolled iteration `u`; where the sum is reordered, its partial sums advanced first.
    fn points(&self, u: i64) -> Vec<Stmt> {
        if let Some(sums) = &self.reordered {
            return self.partial_sums(sums, u, true);
        }
        let ctx = self.ctx;
        (0..self.tile.elements)
            .map(|e| {
                let coords = self.coords(e, Expr::var(self.names[self.s]));
                let compute = ctx.point(self.io, &coords, &mut |field, offset| {
                    self.read(e, &coords, field, offset, u)
                });
                Stmt::guarded(self.in_domain(&coords), compute)
            })
            .collect()
    }

    /// Whether the point at `coords` is in the stage's domain, tested along the plane axes
    /// where the blocks' rows start before it or overhang it.
    fn in_domain(&self, coords: &[Expr]) -> Option<Expr> {
        let hi = self.tile.overhang(&self.rows, self.plane.iter().copied());
        let lo: Vec<Option<i64>> = (0..self.ctx.dims())
            .map(|a| {
                (self.rows.rect.lo[a] < self.domain.rect.lo[a]).then_some(self.domain.rect.lo[a])
            })
            .collect();
        self.ctx.within(coords, &lo, &hi)
    }

    /// `a<e>_<k>`, or in an unrolled sweep `a<e>_s<slot>`: element `e`'s partial sum of the
    /// output plane `k` past the current one in unrolled iteration `u` (the sums rotate by
    /// name as the queues do, `slot = (u + k) mod unroll`; else they move down a register each
    /// iteration).
    fn partial_sum(&self, e: u32, k: i64, u: i64) -> String {
        if self.unroll > 1 {
            format!("a{e}_s{}", (u + k).rem_euclid(self.unroll))
        } else {
            format!("a{e}_{k}")
        }
    }

    /// The reordered sum's step for each element (see [`Sweep::reordered`]) in unrolled
    /// iteration `u`: the arriving plane's terms added into the partial sums, the current
    /// plane's point finished from its sum (where inside the domain, and where `finish`: the
    /// warm-up before the sweep finishes none), the partial sums moved down one plane. Every
    /// element adds up its sums, in the domain or not: its loads stay in the grid.
    fn partial_sums(&self, sums: &PlaneSums, u: i64, finish: bool) -> Vec<Stmt> {
        let ctx = self.ctx;
        let (first, last) = sums.span();
        let span = i64::from(last - first);
        let fp = self.sum_footprint();
        let mut body = Vec::new();
        for e in 0..self.tile.elements {
            let coords = self.coords(e, Expr::var(self.names[self.s]));
            let reads = (fp.offsets.iter())
                .map(|offset| {
                    let mut arriving = offset.clone();
                    arriving[self.s] = last;
                    ReadBinding {
                        field: sums.field,
                        offset: offset.clone(),
                        value: self.read(e, &coords, sums.field, &arriving, u),
                    }
                })
                .collect();
            let env = ProgramEnv {
                reads,
                coords: coords.clone(),
                step: Expr::var("t"),
                computed: Vec::new(),
            };
            body.extend(sums.planes.iter().map(|plane| {
                Stmt::PartialSum(PartialSum {
                    stage: self.stage,
                    env: env.clone(),
                    terms: plane.terms.clone(),
                    var: self.partial_sum(e, i64::from(last - plane.offset), u),
                    accumulate: plane.offset != first,
                    apart: plane.repeated,
                })
            }));
            if finish {
                let sum = (sums.sum, Expr::var(self.partial_sum(e, 0, u)));
                let point = ctx.finished_point(self.io, &coords, sum);
                body.push(Stmt::guarded(self.in_domain(&coords), point));
            }
            if self.unroll == 1 {
                body.extend((0..span).map(|k| Stmt::Assign {
                    var: self.partial_sum(e, k, u),
                    value: Expr::var(self.partial_sum(e, k + 1, u)),
                }));
            }
        }
        body
    }

    /// Before a reordered sweep, the partial sums' declarations and its warm-up: the planes
    /// before the chunk's first arriving one loaded and added into the partial sums of the
    /// chunk's first outputs (`span` iterations finishing nothing).
    fn warm_up(&self, sums: &PlaneSums) -> Vec<Stmt> {
        let (ctx, ity) = (self.ctx, self.ctx.ity);
        let (first, last) = sums.span();
        let span = i64::from(last - first);
        let mut body: Vec<Stmt> = (0..self.tile.elements)
            .flat_map(|e| (0..=span).map(move |k| (e, k)))
            .map(|(e, k)| Stmt::Declare {
                var: self.partial_sum(e, k, 0),
                ty: sums.ty,
                value: Some(Expr::Literal(Constant::Float(0.0), sums.ty)),
            })
            .collect();
        // Warm-up iteration `u` (negative) runs at `s_begin + u`, as the unrolled loop's
        // iteration `u` before its first would.
        body.extend((-span..0).map(|u| {
            let mut iteration = vec![Stmt::Declare {
                var: self.names[self.s].to_string(),
                ty: ity,
                value: Some(ctx.offset(Expr::var("s_begin"), u)),
            }];
            iteration.extend(self.advance_queues(u));
            iteration.extend(self.partial_sums(sums, u, false));
            Stmt::Block(iteration)
        }));
        body
    }

    /// The read of `field` at `offset` from element `e`'s point at `coords` in unrolled
    /// iteration `u`: from the register queue of its column when streamed, else from the
    /// shared current plane (from memory under `plane=cache`) in the plane; from memory when
    /// not streamed.
    fn read(&self, e: u32, coords: &[Expr], field: Id<Field>, offset: &[i32], u: i64) -> Expr {
        let ctx = self.ctx;
        let Some(f) = self.streamed.iter().find(|f| f.field == field) else {
            return self.io.load_offset(ctx, field, coords, offset);
        };
        if let Some(value) = self.other_element(f, e, offset, u) {
            return value;
        }
        let in_plane_part: Vec<i64> = self.plane.iter().map(|&a| i64::from(offset[a])).collect();
        let plane = i64::from(offset[self.s]);
        let column = (f.columns.iter())
            .position(|c| c.offset == in_plane_part && (c.lo..=c.hi).contains(&plane));
        if let Some(column) = column {
            return Expr::var(self.queue(f, column, e, plane, u));
        }
        let in_plane = self.plane.iter().any(|&a| offset[a] != 0);
        match (&f.shared, in_plane) {
            (Some(name), true) => {
                let index = (self.plane.iter().enumerate())
                    .map(|(j, &a)| {
                        let local = Expr::var(self.local_name(a, e));
                        ctx.offset(local, i64::from(offset[a]) - f.min[j])
                    })
                    .collect();
                Expr::SharedLoad {
                    array: name.clone(),
                    index,
                }
            }
            // In-plane reads under `plane=cache` (the own column's queue holds every plane
            // read straight along the streaming axis).
            _ => self.io.load_offset(ctx, field, coords, offset),
        }
    }

    /// A read of streamed `f` at `offset` from element `e` that lands on another element of
    /// the same thread (its elements are consecutive rows of the block's y axis): that
    /// element's register queue, where it has the column and plane. Rows read above and below
    /// then come from registers but at the thread's first and last elements.
    fn other_element(&self, f: &Streamed, e: u32, offset: &[i32], u: i64) -> Option<Expr> {
        let y = (self.plane.iter()).position(|&a| self.tile.block_axis(a) == 1)?;
        let other = i64::from(e) + i64::from(offset[self.plane[y]]);
        if other == i64::from(e) || !(0..i64::from(self.tile.elements)).contains(&other) {
            return None;
        }
        let mut column_offset: Vec<i64> =
            self.plane.iter().map(|&a| i64::from(offset[a])).collect();
        column_offset[y] = 0;
        let plane = i64::from(offset[self.s]);
        let column = (f.columns.iter())
            .position(|c| c.offset == column_offset && (c.lo..=c.hi).contains(&plane))?;
        Some(Expr::var(self.queue(f, column, other as u32, plane, u)))
    }

    /// The sweep along the block's chunk of the streaming axis (after the queues are
    /// filled), inside the serial loops over the slower axes: `step(u)` for each position,
    /// `u` its iteration within the unrolled loop's (see [`Sweep::unroll`]). An unrolled sweep
    /// runs whole groups of iterations in its loop, then the chunk's last positions (fewer
    /// than a group), each while the chunk lasts.
    fn loops(&self, step: impl Fn(i64) -> Vec<Stmt>) -> Vec<Stmt> {
        let ctx = self.ctx;
        let z = self.names[self.s];
        let mut sweep = self.queue_declarations();
        if let Some(sums) = &self.reordered {
            sweep.extend(self.warm_up(sums));
        }
        if self.unroll == 1 {
            sweep.push(Stmt::For {
                var: z.to_string(),
                ty: ctx.ity,
                start: Expr::var("s_begin"),
                end: Expr::var("s_end"),
                step: ctx.lit(1),
                body: step(0),
            });
            return ctx.serial_loops(&self.domain, &self.names, 0..self.s, sweep);
        }
        // The position `u` iterations past `s_at`, and its step.
        let iteration = |u: i64| {
            let mut body = vec![Stmt::Declare {
                var: z.to_string(),
                ty: ctx.ity,
                value: Some(ctx.offset(Expr::var("s_at"), u)),
            }];
            body.extend(step(u));
            body
        };
        let length = Expr::var("s_end").op(KernelOp::Sub, Expr::var("s_begin"));
        let rest = length.op(KernelOp::Rem, ctx.lit(self.unroll));
        sweep.push(Stmt::Declare {
            var: "s_rest".into(),
            ty: ctx.ity,
            value: Some(Expr::var("s_end").op(KernelOp::Sub, rest)),
        });
        sweep.push(Stmt::For {
            var: "s_at".into(),
            ty: ctx.ity,
            start: Expr::var("s_begin"),
            end: Expr::var("s_rest"),
            step: ctx.lit(self.unroll),
            body: (0..self.unroll)
                .map(|u| Stmt::Block(iteration(u)))
                .collect(),
        });
        let mut rest = vec![Stmt::Declare {
            var: "s_at".into(),
            ty: ctx.ity,
            value: Some(Expr::var("s_rest")),
        }];
        rest.extend((0..self.unroll - 1).map(|u| {
            Stmt::UniformIf {
                cond: ctx
                    .offset(Expr::var("s_at"), u)
                    .op(KernelOp::Lt, Expr::var("s_end")),
                then: iteration(u),
                otherwise: Vec::new(),
            }
        }));
        sweep.push(Stmt::Block(rest));
        ctx.serial_loops(&self.domain, &self.names, 0..self.s, sweep)
    }

    /// The launch grid: blocks over the plane tiles, and one per chunk of the streaming axis.
    fn grid(&self) -> [u64; 3] {
        let mut grid = self.tile.grid(&self.rows, self.plane.iter().copied());
        let count = Ctx::count(&self.domain, self.s);
        grid[self.plane.len()] = blocks(count, self.chunk() as u64);
        grid
    }
}
