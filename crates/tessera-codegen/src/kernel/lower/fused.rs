//! What the fused kernels (overlapped tiles, streaming time tiles, the wavefront) share: a
//! tile's regions over a pass, their parameters, a block position's grid coordinates, and a
//! stage evaluated at a block position against the arrays (shared or global) a [`Staging`]
//! names.
//!
//! A block position outside the grid stands for its periodic image: it is computed with the
//! image's coordinates, so a periodic read across the edge is a plain neighbour read in shared
//! memory, and a clamped or mirrored read lands on the in-grid point the border names, which
//! lies between the point and the read (or as far on the other side). Stage domains
//! (sub-domains, strides) are checked point by point; a point outside keeps its value.

use tessera_analysis::{
    Domain, Rect, TileRegions, local_tile_regions, stage_reads_step, stage_tables,
};
use tessera_ir::{Border, ExprId, Field, Id, ScalarType, Stage, Table};

use super::super::{
    Expr, Kernel, KernelOp, KernelParam, ParamKind, ProgramEnv, SharedArray, StageEval, Stmt,
};
use super::common::{Ctx, StageIo, field_ident, ident, table_params};

/// Where an argument of the fused kernel's launch comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusedArg {
    /// The buffer holding a field's current values.
    Field(Id<Field>),
    /// The field's ping-pong partner, which receives its values after the pass.
    Next(Id<Field>),
    /// The step counter of the pass's first step.
    Step,
    /// The number of steps of the pass.
    Steps,
    /// An input table's buffer.
    Table(Id<Table>),
    /// The scratch array of this index in [`Fused::scratch`].
    Scratch(usize),
    /// The launch's number within the pass's sweep.
    Iteration,
}

/// The fused kernel of a program: the kernel, its launch grid, its arguments, and the fields
/// it updates (whose buffers are swapped with their partners after the pass).
pub struct Fused {
    /// The kernel.
    pub kernel: Kernel,
    /// Blocks along x, y, z.
    pub grid: [u64; 3],
    /// Its launch arguments, in parameter order.
    pub args: Vec<FusedArg>,
    /// The fields it writes to their partners.
    pub updated: Vec<Id<Field>>,
    /// Launches per pass, each given its number ([`FusedArg::Iteration`]); `None`: one.
    pub sweep: Option<i64>,
    /// Global scratch arrays it takes ([`FusedArg::Scratch`]), row-major.
    pub scratch: Vec<SharedArray>,
}

/// What a fused kernel is besides its body and parameters: [`FusedKernel::with_body`] makes
/// the kernel, its parameters those of the fields ([`fused_params`]).
pub struct FusedKernel<'a> {
    /// The strategy (its name, `-` read `_`, ends the kernel's name).
    pub strategy: &'static str,
    /// What it computes, for the comment above it.
    pub doc: String,
    /// The fields it updates.
    pub updated: Vec<Id<Field>>,
    /// The fields it reads but never updates.
    pub constant: &'a [Id<Field>],
    /// Its shared arrays.
    pub shared: Vec<SharedArray>,
    /// Threads per block.
    pub block: [u32; 3],
    /// See [`Kernel::min_resident_blocks`].
    pub min_resident_blocks: Option<u32>,
    /// Blocks along x, y, z.
    pub grid: [u64; 3],
}

impl FusedKernel<'_> {
    /// The fused kernel of `ctx`'s program running `body`, launched once per pass.
    pub fn with_body(self, ctx: &Ctx, body: Vec<Stmt>) -> Fused {
        let (params, args) = fused_params(ctx, &self.updated, self.constant);
        let name = format!(
            "ts_{}_{}",
            ident(&ctx.bound.program().name),
            self.strategy.replace('-', "_")
        );
        Fused {
            kernel: Kernel {
                name,
                strategy: self.strategy,
                doc: self.doc,
                params,
                shared: self.shared,
                block: self.block,
                min_resident_blocks: self.min_resident_blocks,
                body,
            },
            grid: self.grid,
            args,
            updated: self.updated,
            sweep: None,
            scratch: Vec::new(),
        }
    }
}

/// A tile of `extent` points from the origin, and the regions its blocks compute over the
/// plan's depth ([`local_tile_regions`]).
pub fn tile_regions(ctx: &Ctx, extent: &[i64]) -> (Rect, TileRegions) {
    let depth = ctx.plan.time_tile.max(1) as usize;
    let target = Rect::new(vec![0; extent.len()], extent.to_vec());
    (target, local_tile_regions(ctx.bound, extent, depth))
}

/// A fused kernel's parameters and the arguments bound to them: each updated field's current
/// values and partner, each field read but never updated, `t` (where a stage reads the step
/// counter, see [`step_counter`]) and `steps`, the input tables.
pub fn fused_params(
    ctx: &Ctx,
    updated: &[Id<Field>],
    constant: &[Id<Field>],
) -> (Vec<KernelParam>, Vec<FusedArg>) {
    let program = ctx.bound.program();
    let buffer = |field: Id<Field>, suffix: &str, read_only: bool| KernelParam {
        name: format!("{}{suffix}", field_ident(ctx, field)),
        kind: ParamKind::Buffer {
            ty: program.fields[field].ty,
            read_only,
        },
    };
    let mut params = Vec::new();
    let mut args = Vec::new();
    for &field in updated {
        params.push(buffer(field, "", true));
        args.push(FusedArg::Field(field));
        params.push(buffer(field, "_next", false));
        args.push(FusedArg::Next(field));
    }
    for &field in constant {
        params.push(buffer(field, "", true));
        args.push(FusedArg::Field(field));
    }
    let mut counters = vec![("steps", FusedArg::Steps)];
    if reads_step(ctx) {
        counters.insert(0, ("t", FusedArg::Step));
    }
    for (name, arg) in counters {
        params.push(KernelParam {
            name: name.into(),
            kind: ParamKind::Scalar(ScalarType::I64),
        });
        args.push(arg);
    }
    let mut tables: Vec<Id<Table>> = (program.stages.ids())
        .flat_map(|s| stage_tables(program, s))
        .collect();
    tables.sort();
    tables.dedup();
    params.extend(table_params(ctx, &tables));
    args.extend(tables.into_iter().map(FusedArg::Table));
    (params, args)
}

/// Whether some stage reads the step counter (or a table, indexed by it). Only then does a
/// fused kernel take `t`, so that passes of a program that does not are the same from pass to
/// pass (and can be recorded and replayed).
fn reads_step(ctx: &Ctx) -> bool {
    let program = ctx.bound.program();
    (program.stages.ids()).any(|stage| stage_reads_step(program, stage))
}

/// The declaration of `t_s`, the step counter of step `step` of a pass (`t + step`), which
/// stages evaluate with; none where no stage reads it.
pub fn step_counter(ctx: &Ctx, step: usize) -> Option<Stmt> {
    reads_step(ctx).then(|| Stmt::Declare {
        var: "t_s".into(),
        ty: ScalarType::I64,
        value: Some(Expr::var("t").plus(Expr::int(step as i64, ScalarType::I64))),
    })
}

/// Whether the pass has step `step` (counted from 0): `step < steps`.
pub fn runs_step(step: usize) -> Expr {
    Expr::int(step as i64, ScalarType::I64).op(KernelOp::Lt, Expr::var("steps"))
}

/// Which code a block runs: the general one, or the one for blocks whose halo is in the grid.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Some point may be outside the grid: coordinates are wrapped, reads resolved.
    Edge,
    /// Every point the block touches is inside the grid.
    Interior,
}

/// A field's array and how block positions index it: shifted by `lo`, and along one axis, for
/// a ring of planes, taken modulo the ring's length from a base position.
pub struct Place<'s> {
    /// The array (in global memory: a buffer parameter of its name, laid out row-major).
    pub array: &'s SharedArray,
    /// Whether the array is a buffer in global memory rather than shared memory.
    pub global: bool,
    /// The block position of the array's first element along each axis.
    pub lo: &'s [i64],
    /// `(axis, base, planes)`: positions along `axis` go to slot `(position - base) % planes`.
    pub ring: Option<(usize, i64, i64)>,
    /// The thread's registers holding the ring's planes at its own position, when it keeps
    /// them there (reads of the point's own column come from them).
    pub registers: Option<RegisterPlanes>,
    /// Whether nothing reads the values: stores to it are left out (its array is not
    /// declared).
    pub unread: bool,
}

/// A thread's registers holding one version's values at one position it owns, one per plane
/// slot: `<prefix>_s<slot>`. Slots are static (the sweep is unrolled by their number), so
/// each reader and writer knows its slot: `read` is the slot of the reader's own plane
/// (a read `dz` planes further is slot `read + dz`), `write` the slot a store sets; both are
/// taken modulo `planes`, and modulo its ring's planes (which divide `planes`) they are the
/// ring's slots.
#[derive(Clone)]
pub struct RegisterPlanes {
    /// The registers' common prefix.
    pub prefix: String,
    /// Whether the array (the version's ring) exists: without it a store sets the register
    /// only, and every read is of the point's own column.
    pub ring: bool,
    /// Slots.
    pub planes: i64,
    /// The slot of the reader's plane.
    pub read: i64,
    /// The slot a store sets.
    pub write: i64,
}

impl RegisterPlanes {
    /// The register of slot `slot` (taken modulo the slots).
    pub fn name(&self, slot: i64) -> String {
        format!("{}_s{}", self.prefix, slot.rem_euclid(self.planes))
    }
}

impl Place<'_> {
    /// The index of block position `position` moved by `shift` (a constant offset, or an
    /// expression) along each axis.
    pub fn index(&self, ctx: &Ctx, position: &[Expr], shift: &[Shift]) -> Vec<Expr> {
        (position.iter().zip(shift).enumerate())
            .map(
                |(a, (p, shift))| match (self.ring, &self.registers, shift) {
                    // With register planes the sweep is unrolled: ring slots are constants.
                    (Some((axis, _, planes)), Some(registers), Shift::By(offset)) if axis == a => {
                        ctx.lit((registers.read + offset).rem_euclid(planes))
                    }
                    (Some((axis, base, planes)), ..) if axis == a => shift
                        .apply(ctx, ctx.offset(p.clone(), -base))
                        .op(KernelOp::Rem, ctx.lit(planes)),
                    _ => shift.apply(ctx, ctx.offset(p.clone(), -self.lo[a])),
                },
            )
            .collect()
    }

    /// The index of block position `position`.
    pub fn at(&self, ctx: &Ctx, position: &[Expr]) -> Vec<Expr> {
        self.index(ctx, position, &vec![Shift::By(0); position.len()])
    }

    /// The value at block position `position`.
    pub fn load_at(&self, ctx: &Ctx, position: &[Expr]) -> Expr {
        self.load(ctx, position, &vec![Shift::By(0); position.len()])
    }

    /// The value at block position `position` moved by `shift`.
    pub fn load(&self, ctx: &Ctx, position: &[Expr], shift: &[Shift]) -> Expr {
        if let Some(register) = self.own_column_register(ctx, shift) {
            return register;
        }
        let index = self.index(ctx, position, shift);
        if self.global {
            Expr::Load {
                buffer: self.array.name.clone(),
                index: Box::new(self.linear(ctx, index)),
                cached: false,
            }
        } else {
            Expr::SharedLoad {
                array: self.array.name.clone(),
                index,
            }
        }
    }

    /// The register holding the value `shift` reads, when the thread keeps this array's
    /// planes in registers and `shift` moves along the ring's axis only: by a constant, or
    /// to a plane a border picks (a choice among the registers it may pick).
    fn own_column_register(&self, ctx: &Ctx, shift: &[Shift]) -> Option<Expr> {
        let (registers, (axis, _, _)) = (self.registers.as_ref()?, self.ring?);
        let mut along = &Shift::By(0);
        for (a, shift) in shift.iter().enumerate() {
            match shift {
                shift if a == axis => along = shift,
                Shift::By(0) => {}
                _ => return None,
            }
        }
        let register = |offset: i64| Expr::var(registers.name(registers.read + offset));
        Some(match along {
            Shift::By(offset) => register(*offset),
            Shift::Picked(landed, reach) => {
                (-reach..*reach).rev().fold(register(*reach), |rest, o| {
                    Expr::Select(
                        Box::new(landed.clone().op(KernelOp::Eq, ctx.lit(o))),
                        Box::new(register(o)),
                        Box::new(rest),
                    )
                })
            }
        })
    }

    /// Stores `value` at block position `position` (into the thread's register of the plane
    /// too, when it keeps one).
    pub fn store(&self, ctx: &Ctx, position: &[Expr], value: Expr) -> Stmt {
        if self.unread {
            return Stmt::Block(Vec::new());
        }
        if let Some(registers) = &self.registers {
            let var = registers.name(registers.write);
            if !registers.ring {
                return Stmt::Assign { var, value };
            }
            // The ring slot of the written plane (a constant, as the register's).
            let written = Place {
                registers: Some(RegisterPlanes {
                    read: registers.write,
                    ..registers.clone()
                }),
                ..*self
            };
            return Stmt::Block(vec![
                Stmt::Assign {
                    var: var.clone(),
                    value,
                },
                written.store_at(ctx, written.at(ctx, position), Expr::var(var)),
            ]);
        }
        self.store_at(ctx, self.at(ctx, position), value)
    }

    /// Stores `value` at the array's `index`.
    fn store_at(&self, ctx: &Ctx, index: Vec<Expr>, value: Expr) -> Stmt {
        if self.global {
            Stmt::Store {
                buffer: self.array.name.clone(),
                index: self.linear(ctx, index),
                value,
            }
        } else {
            Stmt::SharedStore {
                array: self.array.name.clone(),
                index,
                value,
            }
        }
    }

    /// The row-major linear index of a global array's `index`.
    fn linear(&self, ctx: &Ctx, index: Vec<Expr>) -> Expr {
        (index.into_iter().zip(&self.array.dims))
            .reduce(|(acc, _), (i, dim)| (acc.times(ctx.lit(*dim as i64)).plus(i), dim))
            .map(|(linear, _)| linear)
            .expect("an array has an axis")
    }
}

/// A move of a read along one axis.
#[derive(Clone)]
pub enum Shift {
    /// By a constant offset.
    By(i64),
    /// By an expression's value, which a border picks at run time between `-reach` and
    /// `reach` (a clamped or mirrored read lands between the point and the read, or as far
    /// on the other side).
    Picked(Expr, i64),
}

impl Shift {
    fn apply(&self, ctx: &Ctx, base: Expr) -> Expr {
        match self {
            Shift::By(offset) => ctx.offset(base, *offset),
            Shift::Picked(e, _) => base.plus(e.clone()),
        }
    }
}

/// Where a fused kernel keeps the fields it updates while it evaluates one stage.
pub trait Staging {
    /// The array holding `field`'s current values; `None` when `field` is read from memory.
    fn current(&self, field: Id<Field>) -> Option<Place<'_>>;
    /// The array receiving `field`'s new values from a stage that could write it in place
    /// (`in_place`), and whether it is the current array.
    fn next(&self, field: Id<Field>, in_place: bool) -> (Place<'_>, bool);
}

/// The block evaluating stages: its context, axis names and frame.
pub struct BlockFrame<'a> {
    /// The lowering context.
    pub ctx: &'a Ctx<'a>,
    /// Axis names, slowest first.
    pub names: &'a [&'static str],
    /// Which code the block runs.
    pub frame: Frame,
    /// The block positions the kernel touches: in the interior frame, the grid holds them.
    pub reach: &'a Rect,
}

impl BlockFrame<'_> {
    /// The grid coordinates a block position stands for: `o + position`, wrapped into the
    /// grid in the edge frame.
    pub fn grid_coords(&self, position: &[Expr]) -> Vec<Expr> {
        (position.iter().enumerate())
            .map(|(a, p)| {
                let global = Expr::var(format!("o_{}", self.names[a])).plus(p.clone());
                match self.frame {
                    Frame::Interior => global,
                    Frame::Edge => self.ctx.resolve_axis(global, a, Border::Periodic),
                }
            })
            .collect()
    }

    /// `io`'s stage at block position `position` (one of `region`'s): its reads, its
    /// evaluation, each output stored where `staging` says; a point outside the stage's
    /// domain keeps its values (copied to the receiving array where that is not the current
    /// one). The domain test is left out where every interior block's `region` is in it.
    pub fn point(
        &self,
        io: &StageIo,
        position: &[Expr],
        region: &Rect,
        staging: &dyn Staging,
    ) -> Vec<Stmt> {
        self.point_from(io, position, region, staging, None)
    }

    /// [`BlockFrame::point`] for a stage whose output is a function of a sum (see
    /// [`tessera_analysis::plane_sums`]) that the kernel has already added up in `sum.1`: the
    /// stage reads nothing more.
    pub fn finished_point(
        &self,
        io: &StageIo,
        position: &[Expr],
        region: &Rect,
        staging: &dyn Staging,
        sum: (ExprId, Expr),
    ) -> Vec<Stmt> {
        self.point_from(io, position, region, staging, Some(sum))
    }

    /// The point of [`BlockFrame::point`], its reads bound to loads, or none read when its
    /// sum is computed.
    fn point_from(
        &self,
        io: &StageIo,
        position: &[Expr],
        region: &Rect,
        staging: &dyn Staging,
        sum: Option<(ExprId, Expr)>,
    ) -> Vec<Stmt> {
        let ctx = self.ctx;
        let mut body: Vec<Stmt> = (self.names.iter().zip(position))
            .map(|(name, p)| Stmt::Declare {
                var: format!("q_{name}"),
                ty: ctx.ity,
                value: Some(p.clone()),
            })
            .collect();
        let position: Vec<Expr> = (self.names.iter())
            .map(|n| Expr::var(format!("q_{n}")))
            .collect();
        body.extend(
            (self.names.iter().zip(self.grid_coords(&position))).map(|(name, c)| Stmt::Declare {
                var: format!("w_{name}"),
                ty: ctx.ity,
                value: Some(c),
            }),
        );
        let coords: Vec<Expr> = (self.names.iter())
            .map(|n| Expr::var(format!("w_{n}")))
            .collect();
        let mut read =
            |field, offset: &[i32]| self.read(io.stage, field, offset, &position, &coords, staging);
        let (mut compute, reads) = match sum {
            Some(_) => (Vec::new(), Vec::new()),
            None => ctx.bind_reads(&io.reads, &mut read),
        };
        let (declarations, outputs) = ctx.output_vars(io);
        compute.extend(declarations);
        compute.push(Stmt::Stage(StageEval {
            stage: io.stage,
            env: ProgramEnv {
                reads,
                coords: coords.clone(),
                step: Expr::var("t_s"),
                computed: sum.into_iter().collect(),
            },
            outputs: outputs.clone(),
            reductions: Vec::new(),
        }));
        let store = |place: Place, value: Expr| place.store(ctx, &position, value);
        for ((field, in_place), (_, var)) in io.outputs().into_iter().zip(&outputs) {
            compute.push(store(
                staging.next(field, in_place).0,
                Expr::var(var.clone()),
            ));
        }
        let tested = (!self.covers_domain(io.stage, region))
            .then(|| in_domain(ctx, io.stage, &coords))
            .flatten();
        let Some(cond) = tested else {
            body.push(Stmt::Block(compute));
            return body;
        };
        // An output with no value before the stage keeps none: no reader reaches it outside
        // the domain (see the streaming pipeline's levels).
        let unchanged = (io.outputs().into_iter())
            .filter_map(|(field, in_place)| {
                let (next, stays) = staging.next(field, in_place);
                let current = staging.current(field)?;
                (!stays).then(|| store(next, current.load_at(ctx, &position)))
            })
            .collect();
        body.push(Stmt::If {
            cond,
            then: compute,
            otherwise: unchanged,
        });
        body
    }

    /// Whether, in this frame, every grid point of `region` (block positions) is in
    /// `stage`'s domain for any block: in the interior frame a block's origin `o` keeps
    /// `o + reach` inside the grid, which bounds `o + region` on each axis.
    fn covers_domain(&self, stage: Id<Stage>, region: &Rect) -> bool {
        if self.frame != Frame::Interior {
            return false;
        }
        let ctx = self.ctx;
        let domain = ctx.domain(stage);
        (0..ctx.dims()).all(|a| {
            let lowest = region.lo[a] - self.reach.lo[a];
            let past_highest = ctx.extent(a) - self.reach.hi[a] + region.hi[a];
            domain.stride[a] == 1
                && domain.rect.lo[a] <= lowest
                && past_highest <= domain.rect.hi[a]
        })
    }

    /// The value of `field` at `offset` from the grid point `coords` (at block position
    /// `position`), as `stage` reads it.
    pub fn read(
        &self,
        stage: Id<Stage>,
        field: Id<Field>,
        offset: &[i32],
        position: &[Expr],
        coords: &[Expr],
        staging: &dyn Staging,
    ) -> Expr {
        let ctx = self.ctx;
        let border = ctx
            .border(Some(stage), field)
            .filter(|_| self.frame == Frame::Edge);
        let moved: Vec<usize> = (0..ctx.dims()).filter(|&a| offset[a] != 0).collect();
        let Some(place) = staging.current(field) else {
            let resolve: Vec<bool> = offset.iter().map(|&o| o != 0).collect();
            return ctx.load(
                &field_ident(ctx, field),
                true,
                field,
                &ctx.shifted(coords, offset),
                &resolve,
                border,
            );
        };
        let shift: Vec<Shift> = (0..ctx.dims())
            .map(|a| match border {
                Some(Border::Clamp | Border::Mirror) if offset[a] != 0 => {
                    let target = ctx.offset(coords[a].clone(), i64::from(offset[a]));
                    let landed = ctx.resolve_axis(target, a, border.expect("a border"));
                    let reach = i64::from(offset[a]).abs();
                    Shift::Picked(landed.op(KernelOp::Sub, coords[a].clone()), reach)
                }
                _ => Shift::By(i64::from(offset[a])),
            })
            .collect();
        let value = place.load(ctx, position, &shift);
        match border {
            Some(Border::Constant(constant)) if !moved.is_empty() => {
                let inside = (moved.iter())
                    .map(|&a| {
                        let target = ctx.offset(coords[a].clone(), i64::from(offset[a]));
                        ctx.lit(0).op(KernelOp::Le, target.clone()).op(
                            KernelOp::And,
                            target.op(KernelOp::Lt, ctx.lit(ctx.extent(a))),
                        )
                    })
                    .reduce(|a, b| a.op(KernelOp::And, b))
                    .expect("some axis moves");
                Expr::Select(
                    Box::new(inside),
                    Box::new(value),
                    Box::new(Expr::Literal(constant, place.array.ty)),
                )
            }
            _ => value,
        }
    }
}

/// Whether grid point `coords` is in `stage`'s domain; `None` when every grid point is.
pub fn in_domain(ctx: &Ctx, stage: Id<Stage>, coords: &[Expr]) -> Option<Expr> {
    let domain = ctx.domain(stage);
    let d = ctx.dims();
    let lo: Vec<Option<i64>> = (0..d)
        .map(|a| (domain.rect.lo[a] > 0).then_some(domain.rect.lo[a]))
        .collect();
    let hi: Vec<Option<i64>> = (0..d)
        .map(|a| (domain.rect.hi[a] < ctx.extent(a)).then_some(domain.rect.hi[a]))
        .collect();
    let strides = (0..d).filter(|&a| domain.stride[a] != 1).map(|a| {
        ctx.offset(coords[a].clone(), -domain.rect.lo[a])
            .op(KernelOp::Rem, ctx.lit(domain.stride[a]))
            .op(KernelOp::Eq, ctx.lit(0))
    });
    ctx.within(coords, &lo, &hi)
        .into_iter()
        .chain(strides)
        .reduce(|a, b| a.op(KernelOp::And, b))
}

/// The whole grid as a domain (block origins start at 0).
pub fn grid_domain(ctx: &Ctx) -> Domain {
    Domain {
        rect: Rect::grid(&ctx.bound.extents),
        stride: vec![1; ctx.dims()],
    }
}

/// The code `code` gives each frame: interior blocks take theirs by a uniform test where a
/// block can be interior (`reach`: what a block touches, in its frame), edge blocks theirs.
pub fn by_frame(ctx: &Ctx, reach: &Rect, code: impl Fn(Frame) -> Vec<Stmt>) -> Vec<Stmt> {
    let edge = code(Frame::Edge);
    match interior_test(ctx, reach) {
        Some(cond) => vec![Stmt::UniformIf {
            cond,
            then: code(Frame::Interior),
            otherwise: edge,
        }],
        None => edge,
    }
}

/// Whether every position a block whose origins are `o_<axis>` touches (`reach`, in its
/// frame) is inside the grid, or `None` when no block's is (the grid is narrower than a
/// block's reach along some axis).
pub fn interior_test(ctx: &Ctx, reach: &Rect) -> Option<Expr> {
    let origins: Vec<Expr> = (ctx.axis_names().iter())
        .map(|n| Expr::var(format!("o_{n}")))
        .collect();
    let lo: Vec<Option<i64>> = reach.lo.iter().map(|&l| Some(-l)).collect();
    let hi: Vec<Option<i64>> = (0..ctx.dims())
        .map(|a| Some(ctx.extent(a) - reach.hi[a] + 1))
        .collect();
    let possible = (0..ctx.dims()).all(|a| lo[a] < hi[a]);
    possible.then(|| ctx.within(&origins, &lo, &hi).expect("some axis"))
}
