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
mod naive;
mod reduction;
mod streaming;
mod tile;
mod tiled;

use tessera_analysis::BoundProgram;
use tessera_ir::{Field, Id, ReductionPlacement, ScalarType, Stage};
use tessera_plan::PlanError;
use tessera_plan::gpu::{DeviceLimits, GpuPlan, GpuStrategy};

use super::{
    BufferDecl, BufferId, BufferRole, HostOp, HostProgram, KernelProgram, Launch, LaunchArg,
    ReduceReadback, validate,
};
pub(super) use common::Ctx;
use common::StageIo;

/// Lowers `bound` under `plan` into kernels and a host program.
///
/// Stages a strategy cannot tile (strided domains, too few axes) are lowered by the naive
/// strategy; [`KernelProgram::notes`] says which and why. Device limits are checked separately
/// by [`validate`].
pub fn lower(bound: &BoundProgram, plan: &GpuPlan) -> Result<KernelProgram, PlanError> {
    plan.check()?;
    let ctx = Ctx::new(bound, plan);
    let program = bound.program();
    let checked = bound.checked();
    let mut host = HostProgram {
        buffers: Vec::new(),
        step: Vec::new(),
    };
    let mut field_buffers: Vec<Option<BufferId>> = vec![None; program.fields.len()];
    let mut next_buffers: Vec<Option<BufferId>> = vec![None; program.fields.len()];
    for (id, field) in program.fields.iter() {
        if checked.role(id) != tessera_analysis::FieldRole::Unused {
            field_buffers[id.index()] = Some(add_buffer(
                &mut host,
                &field.name,
                field.ty,
                ctx.cells(),
                BufferRole::Field { field: id },
            ));
        }
    }
    let mut kernels = Vec::new();
    let mut notes = Vec::new();
    for (stage_id, stage) in program.stages.iter() {
        let io = StageIo::new(&ctx, stage_id);
        for (field, in_place) in io.outputs() {
            if !in_place && next_buffers[field.index()].is_none() {
                let name = format!("{}.next", program.fields[field].name);
                let ty = program.fields[field].ty;
                next_buffers[field.index()] = Some(add_buffer(
                    &mut host,
                    &name,
                    ty,
                    ctx.cells(),
                    BufferRole::Next { field },
                ));
            }
        }
        let buffer_of = |field: Id<Field>, next: bool| {
            let table = if next { &next_buffers } else { &field_buffers };
            table[field.index()].expect("every used field has a buffer")
        };
        for reduction in checked.stage_reductions(stage_id) {
            let kernel = reduction::kernel(&ctx, reduction, Some(&io));
            push_reduction(&mut host, &mut kernels, kernel, reduction, &ctx, |f| {
                buffer_of(f, false)
            });
        }
        if bound.stage_domain(stage_id).rect.is_empty() {
            notes.push(format!(
                "stage `{}` updates no point with these sizes and is skipped",
                stage.name
            ));
            continue;
        }
        let (kernel, grid) = stage_kernel(&ctx, stage_id, &io, &mut notes);
        let partial = !ctx.covers_grid(stage_id);
        for (field, in_place) in io.outputs() {
            if !in_place && partial {
                host.step.push(HostOp::Copy {
                    from: buffer_of(field, false),
                    to: buffer_of(field, true),
                });
            }
        }
        let args = io.params().iter().map(|p| match p.buffer {
            Some((field, next)) => LaunchArg::Buffer(buffer_of(field, next)),
            None => LaunchArg::Step,
        });
        host.step.push(HostOp::Launch(Launch {
            kernel: kernel.name.clone(),
            grid,
            block: kernel.block,
            args: args.collect(),
            every: 1,
        }));
        for (field, in_place) in io.outputs() {
            if !in_place {
                host.step.push(HostOp::Swap(
                    buffer_of(field, false),
                    buffer_of(field, true),
                ));
            }
        }
        kernels.push(kernel);
    }
    for (reduction, r) in program.reductions.iter() {
        if let ReductionPlacement::AfterStep { .. } = r.placement {
            let kernel = reduction::kernel(&ctx, reduction, None);
            push_reduction(&mut host, &mut kernels, kernel, reduction, &ctx, |f| {
                field_buffers[f.index()].expect("every used field has a buffer")
            });
        }
    }
    Ok(KernelProgram {
        name: program.name.clone(),
        checked: bound.checked_arc().clone(),
        param_values: bound.param_values.clone(),
        extents: bound.extents.clone(),
        plan: plan.clone(),
        index_ty: ctx.ity,
        kernels,
        host,
        notes,
    })
}

/// Lowers one stage by the plan's strategy, or by the naive one where the strategy does not
/// apply (with a note saying why).
fn stage_kernel(
    ctx: &Ctx,
    stage: Id<Stage>,
    io: &StageIo,
    notes: &mut Vec<String>,
) -> (super::Kernel, [u64; 3]) {
    let name = &ctx.bound.program().stages[stage].name;
    let refusal = match ctx.plan.strategy {
        GpuStrategy::Naive => None,
        GpuStrategy::Tiled => match tiled::kernel(ctx, stage, io) {
            Ok(k) => return k,
            Err(why) => Some(why),
        },
        GpuStrategy::Streaming => match streaming::kernel(ctx, stage, io) {
            Ok(k) => return k,
            Err(why) => Some(why),
        },
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

/// Adds a reduction's partials buffer, launch (unless it has no rows) and read-back.
fn push_reduction(
    host: &mut HostProgram,
    kernels: &mut Vec<super::Kernel>,
    lowered: reduction::Lowered,
    reduction: Id<tessera_ir::Reduction>,
    ctx: &Ctx,
    buffer_of: impl Fn(Id<Field>) -> BufferId,
) {
    let r = &ctx.bound.program().reductions[reduction];
    let partials = add_buffer(
        host,
        &format!("partials.{}", r.name),
        ScalarType::F64,
        lowered.rows.max(1),
        BufferRole::Partials { reduction },
    );
    if lowered.rows > 0 {
        let mut args: Vec<LaunchArg> = lowered
            .fields
            .iter()
            .map(|f| LaunchArg::Buffer(buffer_of(*f)))
            .collect();
        args.push(LaunchArg::Buffer(partials));
        args.push(LaunchArg::Step);
        host.step.push(HostOp::Launch(Launch {
            kernel: lowered.kernel.name.clone(),
            grid: lowered.grid,
            block: lowered.kernel.block,
            args,
            every: r.every,
        }));
        kernels.push(lowered.kernel);
    }
    host.step.push(HostOp::Reduce(ReduceReadback {
        reduction,
        name: r.name.clone(),
        op: r.op,
        partials,
        rows: lowered.rows,
        every: r.every,
    }));
}

/// Whether `plan` lowers `bound` into kernels that fit a device with `limits` (the fit test
/// of `tessera_plan::gpu::default_gpu_plan`).
pub fn fits(bound: &BoundProgram, plan: &GpuPlan, limits: &DeviceLimits) -> bool {
    lower(bound, plan).is_ok_and(|p| validate(&p, limits).is_ok())
}
