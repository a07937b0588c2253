//! Choosing a [`GpuPlan`] from a [`PlanRequest`] and lowering a program for a device.

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{DeviceLimits, GpuPlan, KernelProgram, fits, lower, validate};
use tessera_plan::gpu::{ProgramTraits, plan_gpu};
use tessera_plan::gpu_cost::GpuThroughput;
use tessera_plan::{PlanError, PlanRequest, fusion_refusal};

use crate::cost::{candidates, fastest};

/// The plan `request` asks for on a device with `limits` and `throughput`; `backend` names the
/// backend in messages. Where the request leaves the strategy open on a GPU, the cost model
/// chooses among [`candidates`] (strategy, block and time tile); a device that is no GPU
/// (warps of one: PoCL on a CPU, where work-groups are loops and every barrier costs what it
/// saves elsewhere) runs `naive`, fastest in every PoCL case measured.
pub fn plan_for(
    bound: &BoundProgram,
    request: &PlanRequest,
    backend: &'static str,
    limits: &DeviceLimits,
    throughput: &GpuThroughput,
) -> Result<GpuPlan, PlanError> {
    if request.strategy.is_some() || limits.warp_size <= 1 {
        return plan_requested(bound, request, backend, limits);
    }
    let weighed = candidates(bound, request, backend, limits, throughput);
    match fastest(&weighed) {
        Some(best) => Ok(best.plan.clone()),
        // Nothing fits: the planner's own plan gives its refusal.
        None => plan_requested(bound, request, backend, limits),
    }
}

/// The plan `request` asks for on a device with `limits` ([`plan_gpu`], with the lowering's
/// fit test), without consulting the cost model.
pub fn plan_requested(
    bound: &BoundProgram,
    request: &PlanRequest,
    backend: &'static str,
    limits: &DeviceLimits,
) -> Result<GpuPlan, PlanError> {
    let plan = plan_gpu(
        &ProgramTraits::of(bound),
        request,
        backend,
        limits,
        |plan| fits(bound, plan, limits),
    )?;
    if plan.fuses_steps()
        && let Some(reason) = fusion_refusal(bound)
    {
        return Err(PlanError::Unsupported(format!(
            "the {} strategy fuses steps: {reason}; use `tiled`, `streaming` at one step per launch or `naive`",
            plan.strategy.name()
        )));
    }
    Ok(plan)
}

/// Lowers `bound` under `plan` and checks the result against the device (memory, threads,
/// shared memory) before anything is allocated.
pub fn lower_for_device(
    bound: &BoundProgram,
    plan: &GpuPlan,
    limits: &DeviceLimits,
) -> Result<KernelProgram, PlanError> {
    let program = lower(bound, plan)?;
    validate(&program, limits)?;
    Ok(program)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_codegen::kernel::GpuStrategy;
    use tessera_ir::builder::ProgramBuilder;
    use tessera_ir::{Constant, ScalarType, SizeExpr};

    use super::*;

    /// A 2D copy stencil on a 40x70 grid.
    fn program() -> BoundProgram {
        let mut b = ProgramBuilder::new("p");
        let (ny, nx) = (
            b.param("NY", ScalarType::I64, Constant::Int(40)),
            b.param("NX", ScalarType::I64, Constant::Int(70)),
        );
        b.grid(vec![SizeExpr::Param(ny), SizeExpr::Param(nx)]);
        let u = b.field("u", ScalarType::F32);
        b.set_border(u, tessera_ir::Border::Clamp);
        let mut stage = b.stage("s");
        let left = b.read(u, &[0, -1]);
        stage.assign(u, left);
        b.finish_stage(stage);
        let checked = tessera_analysis::check(&b.finish()).expect("checks");
        tessera_analysis::bind(Arc::new(checked), &[]).expect("binds")
    }

    #[test]
    fn the_default_plan_fits_the_device_and_a_block_over_its_limits_is_refused() {
        let bound = program();
        let limits = DeviceLimits::typical_gpu();
        let throughput = GpuThroughput::of(&limits, None);
        let plan = plan_for(
            &bound,
            &PlanRequest::default(),
            "cuda",
            &limits,
            &throughput,
        )
        .unwrap();
        assert!(lower_for_device(&bound, &plan, &limits).is_ok());
        let wide = GpuPlan {
            block: [64, 32, 1],
            ..GpuPlan::new(GpuStrategy::Tiled)
        };
        let error = lower_for_device(&bound, &wide, &limits).unwrap_err();
        assert!(matches!(error, PlanError::Threads { .. }), "{error}");
    }
}
