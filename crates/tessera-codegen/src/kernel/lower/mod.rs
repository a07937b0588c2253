//! Lowering bound programs into kernel IR: buffers and host operations common to every
//! strategy ([`lower`]), and the per-stage kernels of each strategy (submodules).
//!
//! Every stage gets one kernel. A stage's output is written in place when the stage reads it
//! only at its own point (no other thread can read a value before it is replaced); otherwise it
//! is written to the field's ping-pong partner, which is swapped in after the launch (and,
//! when the stage covers less than the grid, first filled with the current values so the
//! points outside keep them). Reductions get one kernel each (one thread per row, fixed
//! order), launched before their stage (in-stage) or after the step's stages (after-step).

mod common;
mod fused;
mod gather;
mod hazards;
mod naive;
pub(super) mod overlapped;
mod reduction;
mod scan;
mod streaming;
mod tile;
mod tiled;
pub(super) mod time_streaming;
pub(super) mod wavefront;

use tessera_analysis::BoundProgram;
use tessera_ir::{Field, Id, ReductionPlacement, ScalarType, Stage};
use tessera_plan::gpu::{DeviceLimits, GpuPlan, GpuStrategy};
use tessera_plan::{PlanError, fusion_refusal};

use super::{
    BufferDecl, BufferId, BufferRole, FusedPass, HostOp, HostProgram, KernelProgram, Launch,
    LaunchArg, ReceiverGather, ReduceReadback, validate,
};
pub(super) use common::{Ctx, reduction_value_name};
use common::{IoArg, StageIo};

/// Lowers `bound` under `plan` into kernels and a host program.
///
/// Stages a strategy cannot tile (strided domains, too few axes) are lowered by the naive
/// strategy; [`KernelProgram::notes`] says which and why. Under the overlapped strategy the
/// program gets a fused pass, and per-step kernels (tiled) only for the passes that compute
/// reductions. Device limits are checked separately by [`validate`].
pub fn lower(bound: &BoundProgram, plan: &GpuPlan) -> Result<KernelProgram, PlanError> {
    plan.check()?;
    let ctx = Ctx::new(bound, plan);
    let program = bound.program();
    let mut lowering = Lowering {
        ctx: &ctx,
        host: HostProgram {
            buffers: Vec::new(),
            start: Vec::new(),
            step: Vec::new(),
            fused: None,
            receivers: Vec::new(),
        },
        field_buffers: vec![None; program.fields.len()],
        next_buffers: vec![None; program.fields.len()],
        table_buffers: Vec::new(),
        kernels: Vec::new(),
        notes: Vec::new(),
    };
    for (id, field) in program.fields.iter() {
        let recorded = (program.receivers.values()).any(|r| r.field == id);
        if recorded || bound.checked().role(id) != tessera_analysis::FieldRole::Unused {
            lowering.field_buffers[id.index()] = Some(add_buffer(
                &mut lowering.host,
                &field.name,
                field.ty,
                ctx.cells(),
                BufferRole::Field { field: id },
            ));
        }
    }
    for (id, table) in program.tables.iter() {
        let buffer = add_buffer(
            &mut lowering.host,
            &table.name,
            table.ty,
            0,
            BufferRole::Table { table: id },
        );
        lowering.table_buffers.push(buffer);
    }
    if plan.fuses_steps() {
        lowering.fused_pass()?;
    }
    if lowering.host.fused.is_none() || !program.reductions.is_empty() {
        lowering.step_ops();
    }
    for receiver in program.receivers.ids() {
        lowering.receiver_gather(receiver);
    }
    Ok(KernelProgram {
        name: program.name.clone(),
        checked: bound.checked_arc().clone(),
        param_values: bound.param_values.clone(),
        extents: bound.extents.clone(),
        plan: plan.clone(),
        index_ty: ctx.ity,
        kernels: lowering.kernels,
        host: lowering.host,
        notes: lowering.notes,
    })
}

/// A program being lowered: its host program, buffers and kernels so far.
struct Lowering<'a> {
    ctx: &'a Ctx<'a>,
    host: HostProgram,
    /// Each field's buffer (`None`: unused field).
    field_buffers: Vec<Option<BufferId>>,
    /// Each field's ping-pong partner, once some kernel writes it there.
    next_buffers: Vec<Option<BufferId>>,
    /// Each input table's buffer.
    table_buffers: Vec<BufferId>,
    kernels: Vec<super::Kernel>,
    notes: Vec<String>,
}

impl Lowering<'_> {
    /// The buffer holding `field`'s current values (`next`: its partner).
    fn buffer_of(&self, field: Id<Field>, next: bool) -> BufferId {
        let table = if next {
            &self.next_buffers
        } else {
            &self.field_buffers
        };
        table[field.index()].expect("every used field has a buffer")
    }

    /// `field`'s ping-pong partner, added on first use.
    fn add_partner(&mut self, field: Id<Field>) {
        if self.next_buffers[field.index()].is_none() {
            let decl = &self.ctx.bound.program().fields[field];
            let name = format!("{}.next", decl.name);
            self.next_buffers[field.index()] = Some(add_buffer(
                &mut self.host,
                &name,
                decl.ty,
                self.ctx.cells(),
                BufferRole::Next { field },
            ));
        }
    }

    /// The fused kernel (overlapped, or streaming time-tiled) and the fused pass launching it,
    /// each updated field swapped with its partner after the launch.
    fn fused_pass(&mut self) -> Result<(), PlanError> {
        let plan = self.ctx.plan;
        if let Some(reason) = fusion_refusal(self.ctx.bound) {
            return Err(PlanError::Unsupported(format!(
                "the {} strategy fuses steps: {reason}",
                plan.strategy.name()
            )));
        }
        let fused = match plan.strategy {
            GpuStrategy::Streaming => time_streaming::kernel(self.ctx),
            GpuStrategy::Wavefront => wavefront::kernel(self.ctx),
            _ => overlapped::kernel(self.ctx),
        }
        .map_err(PlanError::Unsupported)?;
        for &field in &fused.updated {
            self.add_partner(field);
        }
        let scratch: Vec<BufferId> = (fused.scratch.iter())
            .map(|array| {
                let len = array.dims.iter().product();
                add_buffer(
                    &mut self.host,
                    &array.name,
                    array.ty,
                    len,
                    BufferRole::Scratch,
                )
            })
            .collect();
        let launch = |iteration: i64| {
            let args = (fused.args.iter())
                .map(|arg| match *arg {
                    fused::FusedArg::Field(f) => LaunchArg::Buffer(self.buffer_of(f, false)),
                    fused::FusedArg::Next(f) => LaunchArg::Buffer(self.buffer_of(f, true)),
                    fused::FusedArg::Step => LaunchArg::Step,
                    fused::FusedArg::Steps => LaunchArg::Steps,
                    fused::FusedArg::Table(t) => LaunchArg::Buffer(self.table_buffers[t.index()]),
                    fused::FusedArg::Scratch(k) => LaunchArg::Buffer(scratch[k]),
                    fused::FusedArg::Iteration => LaunchArg::Int(iteration),
                })
                .collect();
            HostOp::Launch(Launch {
                kernel: fused.kernel.name.clone(),
                grid: fused.grid,
                block: fused.kernel.block,
                args,
                every: 1,
            })
        };
        let mut ops: Vec<HostOp> = (0..fused.sweep.unwrap_or(1)).map(launch).collect();
        for &field in &fused.updated {
            ops.push(HostOp::Swap(
                self.buffer_of(field, false),
                self.buffer_of(field, true),
            ));
        }
        self.kernels.push(fused.kernel);
        self.host.fused = Some(FusedPass {
            depth: self.ctx.plan.time_tile,
            ops,
        });
        if !self.ctx.bound.program().reductions.is_empty() {
            self.notes.push(format!(
                "passes that compute reductions run one step at a time with {} kernels",
                single_step(plan.strategy).name()
            ));
        }
        Ok(())
    }

    /// The operations of one step: each stage's kernel (after its in-stage reductions), then
    /// the after-step reductions.
    fn step_ops(&mut self) {
        let ctx = self.ctx;
        let (bound, program, checked) = (ctx.bound, ctx.bound.program(), ctx.bound.checked());
        for (stage_id, stage) in program.stages.iter() {
            let io = StageIo::new(ctx, stage_id);
            for (field, in_place) in io.outputs() {
                if !in_place {
                    self.add_partner(field);
                }
            }
            for reduction in checked.stage_reductions(stage_id) {
                let kernel = reduction::kernel(ctx, reduction, Some(&io));
                self.push_reduction(kernel, reduction);
            }
            if bound.stage_domain(stage_id).rect.is_empty() {
                self.notes.push(format!(
                    "stage `{}` updates no point with these sizes and is skipped",
                    stage.name
                ));
                continue;
            }
            let (kernel, grid) = stage_kernel(ctx, stage_id, &io, &mut self.notes);
            let partial = !ctx.covers_grid(stage_id);
            for (field, in_place) in io.outputs() {
                if !in_place && partial {
                    self.keep_unwritten_points(field);
                }
            }
            let args = io.params().iter().map(|p| match p.arg {
                IoArg::Field(field, next) => LaunchArg::Buffer(self.buffer_of(field, next)),
                IoArg::Step => LaunchArg::Step,
                IoArg::ReductionValue(r) => LaunchArg::ReductionValue(r),
                IoArg::Table(table) => LaunchArg::Buffer(self.table_buffers[table.index()]),
            });
            let launch = HostOp::Launch(Launch {
                kernel: kernel.name.clone(),
                grid,
                block: kernel.block,
                args: args.collect(),
                every: 1,
            });
            self.host.step.push(launch);
            for (field, in_place) in io.outputs() {
                if !in_place {
                    let swap =
                        HostOp::Swap(self.buffer_of(field, false), self.buffer_of(field, true));
                    self.host.step.push(swap);
                }
            }
            self.kernels.push(kernel);
        }
        for (reduction, r) in program.reductions.iter() {
            if let ReductionPlacement::AfterStep { .. } = r.placement {
                let kernel = reduction::kernel(ctx, reduction, None);
                self.push_reduction(kernel, reduction);
            }
        }
    }

    /// Makes the partner of `field`, which a stage writes on part of the grid, hold the field's
    /// values at the points it does not write: copied once at the start when every stage
    /// writing the field covers the same points (no point outside them ever changes), else
    /// before each such stage.
    fn keep_unwritten_points(&mut self, field: Id<Field>) {
        let copy = HostOp::Copy {
            from: self.buffer_of(field, false),
            to: self.buffer_of(field, true),
        };
        if !self.ctx.written_on_one_domain(field) {
            self.host.step.push(copy);
        } else if !self.host.start.contains(&copy) {
            self.host.start.push(copy);
        }
    }

    /// Adds a receiver's points and values buffers and its gather kernel.
    fn receiver_gather(&mut self, receiver: Id<tessera_ir::Receiver>) {
        let r = &self.ctx.bound.program().receivers[receiver];
        let ty = self.ctx.bound.program().fields[r.field].ty;
        let points = add_buffer(
            &mut self.host,
            &format!("receiver.{}.points", r.name),
            self.ctx.ity,
            0,
            BufferRole::ReceiverPoints { receiver },
        );
        let values = add_buffer(
            &mut self.host,
            &format!("receiver.{}.values", r.name),
            ty,
            0,
            BufferRole::ReceiverValues { receiver },
        );
        let kernel = gather::kernel(self.ctx, receiver);
        let launch = Launch {
            kernel: kernel.name.clone(),
            grid: [1, 1, 1],
            block: kernel.block,
            args: vec![
                LaunchArg::Buffer(self.buffer_of(r.field, false)),
                LaunchArg::Buffer(points),
                LaunchArg::Buffer(values),
                LaunchArg::Count,
            ],
            every: r.every,
        };
        self.kernels.push(kernel);
        self.host.receivers.push(ReceiverGather {
            receiver,
            launch,
            points,
            values,
        });
    }

    /// Adds a reduction's partials buffer, launch (unless it has no rows) and read-back.
    fn push_reduction(
        &mut self,
        lowered: reduction::Lowered,
        reduction: Id<tessera_ir::Reduction>,
    ) {
        let r = &self.ctx.bound.program().reductions[reduction];
        let partials = add_buffer(
            &mut self.host,
            &format!("partials.{}", r.name),
            ScalarType::F64,
            lowered.rows.max(1),
            BufferRole::Partials { reduction },
        );
        if lowered.rows > 0 {
            let mut args: Vec<LaunchArg> = (lowered.fields.iter())
                .map(|f| LaunchArg::Buffer(self.buffer_of(*f, false)))
                .collect();
            args.push(LaunchArg::Buffer(partials));
            args.push(LaunchArg::Step);
            args.extend(lowered.values.iter().map(|&r| LaunchArg::ReductionValue(r)));
            args.extend(
                (lowered.tables.iter()).map(|t| LaunchArg::Buffer(self.table_buffers[t.index()])),
            );
            self.host.step.push(HostOp::Launch(Launch {
                kernel: lowered.kernel.name.clone(),
                grid: lowered.grid,
                block: lowered.kernel.block,
                args,
                every: r.every,
            }));
            self.kernels.push(lowered.kernel);
        }
        self.host.step.push(HostOp::Reduce(ReduceReadback {
            reduction,
            name: r.name.clone(),
            op: r.op,
            partials,
            rows: lowered.rows,
            every: r.every,
        }));
    }
}

/// The strategy of the per-stage kernels under `strategy`: a fused strategy's steps that
/// cannot fuse (passes computing reductions) run tiled (overlapped) or streaming (wavefront)
/// kernels.
fn single_step(strategy: GpuStrategy) -> GpuStrategy {
    match strategy {
        GpuStrategy::Overlapped => GpuStrategy::Tiled,
        GpuStrategy::Wavefront => GpuStrategy::Streaming,
        other => other,
    }
}

/// Lowers one stage by the plan's strategy, or by the naive one where the strategy does not
/// apply (with a note saying why); a stage with a scan by its line kernel under every strategy.
fn stage_kernel(
    ctx: &Ctx,
    stage: Id<Stage>,
    io: &StageIo,
    notes: &mut Vec<String>,
) -> (super::Kernel, [u64; 3]) {
    let name = &ctx.bound.program().stages[stage].name;
    if let Some(axis) = ctx.bound.program().stages[stage].scan_axis() {
        if ctx.plan.strategy != GpuStrategy::Naive {
            notes.push(format!(
                "stage `{name}` scans along {}: it runs one thread per line whatever the strategy",
                ctx.axis_names()[axis]
            ));
        }
        return scan::kernel(ctx, stage, io, axis);
    }
    let refusal = match single_step(ctx.plan.strategy) {
        GpuStrategy::Tiled => match tiled::kernel(ctx, stage, io) {
            Ok(k) => return k,
            Err(why) => Some(why),
        },
        GpuStrategy::Streaming => match streaming::kernel(ctx, stage, io) {
            Ok(k) => return k,
            Err(why) => Some(why),
        },
        _ => None,
    };
    if let Some(why) = refusal {
        notes.push(format!("stage `{name}` uses the naive strategy: {why}"));
    }
    naive::kernel(ctx, stage, io)
}

fn add_buffer(
    host: &mut HostProgram,
    name: &str,
    ty: ScalarType,
    len: usize,
    role: BufferRole,
) -> BufferId {
    host.buffers.push(BufferDecl {
        name: name.to_string(),
        ty,
        len,
        role,
    });
    BufferId(host.buffers.len() - 1)
}

/// Whether `plan` lowers `bound` into kernels that fit a device with `limits` (the fit test
/// of `tessera_plan::gpu::default_gpu_plan`).
pub fn fits(bound: &BoundProgram, plan: &GpuPlan, limits: &DeviceLimits) -> bool {
    lower(bound, plan).is_ok_and(|p| validate(&p, limits).is_ok())
}
