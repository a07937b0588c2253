//! The block tile of the shared-memory strategies (tiled, streaming): which block axis covers
//! each grid axis, how many points a block covers along it, and the code a block runs over
//! its tile (its origin, its threads' offsets, a cooperative loop over a staged array).

use tessera_analysis::{Domain, stage_work};
use tessera_ir::{Id, Stage};

use super::super::{Expr, KernelOp, Stmt};
use super::common::Ctx;
use super::naive::blocks;

/// A block's tile of the fastest grid axes: block axis x covers the fastest grid axis, y the
/// next one (each thread `elements` points along it), z the next.
pub struct Tile {
    /// Number of grid axes.
    dims: usize,
    /// Threads per block along x, y, z.
    pub block: [u32; 3],
    /// Points per thread along the block's y axis.
    pub elements: u32,
}

impl Tile {
    /// The tile of `block` threads over a grid of `dims` axes, `elements` points per thread.
    pub fn new(dims: usize, block: [u32; 3], elements: u32) -> Tile {
        Tile {
            dims,
            block,
            elements,
        }
    }

    /// The tile of the plan's block over the plane axes of a plane sweep: x and y (each thread
    /// `elements` points along y) from 3 axes on, x in 2D.
    pub fn of_planes(ctx: &Ctx) -> Tile {
        let plan = ctx.plan;
        match ctx.dims() {
            d @ 3.. => Tile::new(
                d,
                [plan.block[0], plan.block[1], 1],
                plan.elements_per_thread,
            ),
            d => Tile::new(d, [plan.block[0], 1, 1], 1),
        }
    }

    /// Block axis of grid axis `axis` (x = 0 for the fastest).
    pub fn block_axis(&self, axis: usize) -> usize {
        self.dims - 1 - axis
    }

    /// Points a block covers along grid axis `axis`.
    pub fn size(&self, axis: usize) -> i64 {
        let b = self.block_axis(axis);
        i64::from(self.block[b]) * if b == 1 { i64::from(self.elements) } else { 1 }
    }

    /// Threads per block.
    pub fn threads(&self) -> i64 {
        self.block.iter().map(|&b| i64::from(b)).product()
    }

    /// `tid`: the declaration of the thread's index in its block (x fastest).
    pub fn thread_index(&self, ctx: &Ctx) -> Stmt {
        let block = self.block;
        Stmt::Declare {
            var: "tid".into(),
            ty: ctx.ity,
            value: Some(
                Expr::ThreadIdx(2)
                    .times(ctx.lit(i64::from(block[1])))
                    .plus(Expr::ThreadIdx(1))
                    .times(ctx.lit(i64::from(block[0])))
                    .plus(Expr::ThreadIdx(0)),
            ),
        }
    }

    /// `o_<axis>`: the declarations of the block's origin along each of `axes`.
    pub fn origins(
        &self,
        ctx: &Ctx,
        domain: &Domain,
        axes: impl IntoIterator<Item = usize>,
    ) -> Vec<Stmt> {
        let names = ctx.axis_names();
        axes.into_iter()
            .map(|axis| {
                let origin = Expr::BlockIdx(self.block_axis(axis)).times(ctx.lit(self.size(axis)));
                Stmt::Declare {
                    var: format!("o_{}", names[axis]),
                    ty: ctx.ity,
                    value: Some(ctx.offset(origin, domain.rect.lo[axis])),
                }
            })
            .collect()
    }

    /// The offset of a thread's element `e` from the block's origin along `axis`.
    pub fn thread_offset(&self, ctx: &Ctx, axis: usize, e: u32) -> Expr {
        let b = self.block_axis(axis);
        let offset = Expr::ThreadIdx(b);
        if b == 1 && e > 0 {
            offset.plus(ctx.lit(i64::from(e) * i64::from(self.block[1])))
        } else {
            offset
        }
    }

    /// The offset of a thread's element `e` from the block's origin along `axis`, a thread's
    /// elements being consecutive rows along the block's y axis (so that a thread's stencil
    /// reads of the rows next to an element are its other elements).
    pub fn packed_offset(&self, ctx: &Ctx, axis: usize, e: u32) -> Expr {
        let b = self.block_axis(axis);
        if b == 1 && self.elements > 1 {
            Expr::ThreadIdx(b)
                .times(ctx.lit(i64::from(self.elements)))
                .plus(ctx.lit(i64::from(e)))
        } else {
            Expr::ThreadIdx(b)
        }
    }

    /// Per grid axis, the upper bound a point must be checked against: the domain's end along
    /// those of `axes` where the last block overhangs it, `None` elsewhere.
    pub fn overhang(
        &self,
        domain: &Domain,
        axes: impl IntoIterator<Item = usize>,
    ) -> Vec<Option<i64>> {
        let mut hi = vec![None; self.dims];
        for axis in axes {
            let covered = blocks(Ctx::count(domain, axis), self.size(axis) as u64) as i64;
            if domain.rect.lo[axis] + covered * self.size(axis) > domain.rect.hi[axis] {
                hi[axis] = Some(domain.rect.hi[axis]);
            }
        }
        hi
    }

    /// Blocks per block axis covering `domain` along `axes` (1 along the other block axes).
    pub fn grid(&self, domain: &Domain, axes: impl IntoIterator<Item = usize>) -> [u64; 3] {
        let mut grid = [1u64; 3];
        for axis in axes {
            grid[self.block_axis(axis)] = blocks(Ctx::count(domain, axis), self.size(axis) as u64);
        }
        grid
    }

    /// The loop in which a block's threads (numbered `tid`) share the points of an array of
    /// `dims` (slowest first): each point's local coordinates are declared as `l_<name>` (one
    /// name per dimension), followed by the statements `body` makes of them.
    pub fn cooperative_loop(
        &self,
        ctx: &Ctx,
        dims: &[i64],
        names: &[&str],
        body: impl FnOnce(Vec<Expr>) -> Vec<Stmt>,
    ) -> Stmt {
        shared_loop(ctx, dims, names, self.threads(), body)
    }

    /// [`segmented_loop`] over an array of `dims` with the block's threads.
    pub fn segmented_loop(
        &self,
        ctx: &Ctx,
        dims: &[i64],
        names: &[&str],
        work: u32,
        body: impl FnMut(Vec<Expr>) -> Vec<Stmt>,
    ) -> Stmt {
        segmented_loop(ctx, dims, names, self.threads(), work, body)
    }
}

/// Estimated instructions a column segment costs beyond its points (its index arithmetic and
/// the two extra loads of its column's ends), and what one of its points costs (a 5-point
/// stencil's shared loads, arithmetic and store, from sm_90 SASS).
const SEGMENT_OVERHEAD: i64 = 8;
const SEGMENT_POINT: i64 = 10;

/// The most points of one column a thread computes in a row (see [`segment_rows`]).
const MAX_SEGMENT_ROWS: i64 = 4;

/// The most reads and operations (`tessera_analysis::StageWork::instructions`) the points of
/// one segment may have together: the compiler keeps the values they share live across them,
/// and longer segments of heavy stages (a 27-point box, exact `exp`) spill registers.
const SEGMENT_WORK: u32 = 64;

/// How many points of one column (along the slowest axis) each iteration of a
/// [`segmented_loop`] over `dims` with `threads` threads takes, for a stage of `work` reads
/// and operations per point: the count in 1 to 4 (at most [`SEGMENT_WORK`] in all) whose
/// estimated cost (iterations of the slowest thread times the cost of one) is least, the
/// fewer rows on a tie; 1 for arrays of one axis (consecutive points of a thread would fall in
/// the same shared-memory bank).
pub fn segment_rows(dims: &[i64], threads: i64, work: u32) -> i64 {
    if dims.len() < 2 || dims.iter().any(|&d| d <= 0) {
        return 1;
    }
    let columns: i64 = dims[1..].iter().product();
    let most = i64::from(SEGMENT_WORK / work.max(1)).clamp(1, MAX_SEGMENT_ROWS);
    (1..=most.min(dims[0]))
        .min_by_key(|&rows| {
            let items = columns * div_ceil(dims[0], rows);
            div_ceil(items, threads) * (SEGMENT_OVERHEAD + rows * SEGMENT_POINT)
        })
        .unwrap_or(1)
}

/// The reads and operations of one point of `stage` (the work [`segment_rows`] bounds).
pub fn point_work(ctx: &Ctx, stage: Id<Stage>) -> u32 {
    stage_work(ctx.bound.program(), stage).instructions()
}

/// The most iterations a plane sweep is unrolled by so that its registers (queues, register
/// planes) and ring slots have constant names (the code grows with them).
pub const MOST_UNROLLED_ITERATIONS: i64 = 6;

/// `a / b` rounded up, for positive `b` (the blocks of `b` that cover `a`).
pub fn div_ceil(a: i64, b: i64) -> i64 {
    blocks(a, b as u64) as i64
}

/// The least common multiple of two positive numbers.
pub fn lcm(a: i64, b: i64) -> i64 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x * b
}

/// The loop in which `threads` threads (numbered `tid`) share the points of an array of
/// `dims` (slowest first), each of `work` reads and operations, in column segments of
/// [`segment_rows`] points along the slowest
/// axis: consecutive threads take neighbouring columns, and a thread computes its segment's
/// points one after the other, so that the compiler loads a column value once for the
/// segment's points that read it (a stencil reading its slowest axis at -1, 0, 1 then loads
/// about one value per point there instead of three). `body` makes one point's statements
/// from its local coordinates (`g_<slowest>` plus the point's row, `l_<other>`); each point's
/// statements are a block of their own, and points past the array's end are skipped.
pub fn segmented_loop(
    ctx: &Ctx,
    dims: &[i64],
    names: &[&str],
    threads: i64,
    work: u32,
    mut body: impl FnMut(Vec<Expr>) -> Vec<Stmt>,
) -> Stmt {
    let rows = segment_rows(dims, threads, work);
    if rows == 1 {
        return shared_loop(ctx, dims, names, threads, body);
    }
    let mut radices = dims.to_vec();
    radices[0] = div_ceil(dims[0], rows);
    let digits = ctx.digits("i", &radices);
    let start = format!("g_{}", names[0]);
    let mut statements = vec![Stmt::Declare {
        var: start.clone(),
        ty: ctx.ity,
        value: Some(digits[0].clone().times(ctx.lit(rows))),
    }];
    statements.extend(
        (names.iter().zip(digits).skip(1).rev()).map(|(name, digit)| Stmt::Declare {
            var: format!("l_{name}"),
            ty: ctx.ity,
            value: Some(digit),
        }),
    );
    // Rows below `full` exist in every segment; the last segment may end before the others.
    let full = dims[0] - (radices[0] - 1) * rows;
    for row in 0..rows {
        let position = ctx.offset(Expr::var(&start), row);
        let mut local = vec![position.clone()];
        local.extend(names[1..].iter().map(|n| Expr::var(format!("l_{n}"))));
        let point = Stmt::Block(body(local));
        statements.push(if row < full {
            point
        } else {
            Stmt::when(position.op(KernelOp::Lt, ctx.lit(dims[0])), vec![point])
        });
    }
    Stmt::For {
        var: "i".into(),
        ty: ctx.ity,
        start: Expr::var("tid"),
        end: ctx.lit(radices.iter().product()),
        step: ctx.lit(threads),
        body: statements,
    }
}

/// The loop in which `threads` threads (numbered `tid`) share the points of an array of
/// `dims` (see [`Tile::cooperative_loop`]).
pub fn shared_loop(
    ctx: &Ctx,
    dims: &[i64],
    names: &[&str],
    threads: i64,
    body: impl FnOnce(Vec<Expr>) -> Vec<Stmt>,
) -> Stmt {
    let digits = ctx.digits("i", dims);
    let mut statements: Vec<Stmt> = (names.iter().zip(digits).rev())
        .map(|(name, digit)| Stmt::Declare {
            var: format!("l_{name}"),
            ty: ctx.ity,
            value: Some(digit),
        })
        .collect();
    let local = names.iter().map(|n| Expr::var(format!("l_{n}"))).collect();
    statements.extend(body(local));
    Stmt::For {
        var: "i".into(),
        ty: ctx.ity,
        start: Expr::var("tid"),
        end: ctx.lit(dims.iter().product()),
        step: ctx.lit(threads),
        body: statements,
    }
}

/// Makes the cooperative loop `lp` run zero times unless `cond` holds, keeping any barrier
/// after it unconditional (a barrier under a condition could diverge).
pub fn run_only_when(ctx: &Ctx, lp: &mut Stmt, cond: Expr) {
    if let Stmt::For { end, .. } = lp {
        *end = Expr::Select(Box::new(cond), Box::new(end.clone()), Box::new(ctx.lit(0)));
    }
}
