//! The block tile of the shared-memory strategies (tiled, streaming): which block axis covers
//! each grid axis, how many points a block covers along it, and the code a block runs over
//! its tile (its origin, its threads' offsets, a cooperative loop over a staged array).

use tessera_analysis::Domain;

use super::super::{Expr, Stmt};
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
