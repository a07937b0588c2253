//! Choosing a [`GpuPlan`] from [`RunOptions`] and lowering a program for a device.

use tessera_analysis::BoundProgram;
use tessera_codegen::kernel::{
    DeviceLimits, GpuPlan, GpuStrategy, KernelProgram, default_plan, lower, validate,
};
use tessera_runtime::{BackendError, RunOptions};

/// The plan `options` ask for on a device with `limits`: the default plan of
/// [`default_plan`], with the strategy, block (`tile`, slowest axis first: `[.., y, x]`),
/// time tile and exactness overridden.
pub fn plan_for(
    bound: &BoundProgram,
    options: &RunOptions,
    limits: &DeviceLimits,
) -> Result<GpuPlan, BackendError> {
    if options.f64_accuracy {
        return Err(BackendError::Unsupported(
            "GPU backends have no f64 accuracy mode; use `--backend reference` for it".into(),
        ));
    }
    let mut plan = default_plan(bound, limits);
    if let Some(name) = &options.strategy {
        plan.strategy = GpuStrategy::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = GpuStrategy::ALL.iter().map(|s| s.name()).collect();
            BackendError::InvalidOptions(format!(
                "unknown GPU strategy `{name}`; choose one of: {}",
                names.join(", ")
            ))
        })?;
    }
    if let Some(tile) = &options.tile {
        if tile.is_empty() || tile.len() > 3 {
            return Err(BackendError::InvalidOptions(format!(
                "a GPU block has 1 to 3 sizes (slowest axis first, e.g. `--tile 8x32`), not {}",
                tile.len()
            )));
        }
        plan.block = [1, 1, 1];
        for (axis, &size) in tile.iter().rev().enumerate() {
            plan.block[axis] = u32::try_from(size).map_err(|_| {
                BackendError::InvalidOptions(format!("block size {size} is too large"))
            })?;
        }
    }
    if let Some(depth) = options.time_tile {
        plan.time_tile = u32::try_from(depth)
            .map_err(|_| BackendError::InvalidOptions(format!("time tile {depth} is too large")))?;
    }
    plan.exact = options.exact;
    plan.check()
        .map_err(|e| BackendError::InvalidOptions(e.to_string()))?;
    Ok(plan)
}

/// Lowers `bound` under `plan` and checks the result against the device (memory, threads,
/// shared memory) before anything is allocated.
pub fn lower_for_device(
    bound: &BoundProgram,
    plan: &GpuPlan,
    limits: &DeviceLimits,
) -> Result<KernelProgram, BackendError> {
    let program = lower(bound, plan).map_err(|e| BackendError::Unsupported(e.to_string()))?;
    validate(&program, limits).map_err(|e| BackendError::Unsupported(e.to_string()))?;
    Ok(program)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_codegen::kernel::example_programs;
    use tessera_ir::Constant;

    use super::*;

    fn j2d5pt() -> BoundProgram {
        let example = example_programs()
            .into_iter()
            .find(|e| e.name == "j2d5pt")
            .expect("the example exists");
        let checked = tessera_analysis::check(&example.program).expect("checks");
        let sizes = [
            ("NY".to_string(), Constant::Int(40)),
            ("NX".to_string(), Constant::Int(70)),
        ];
        tessera_analysis::bind(Arc::new(checked), &sizes).expect("binds")
    }

    #[test]
    fn options_override_the_default_plan() {
        let bound = j2d5pt();
        let limits = DeviceLimits::typical_gpu();
        let options = RunOptions {
            exact: true,
            strategy: Some("naive".into()),
            tile: Some(vec![4, 16]),
            time_tile: Some(1),
            ..RunOptions::default()
        };
        let plan = plan_for(&bound, &options, &limits).unwrap();
        assert_eq!(
            (plan.strategy, plan.block, plan.exact),
            (GpuStrategy::Naive, [16, 4, 1], true)
        );
        assert!(
            !plan_for(&bound, &RunOptions::default(), &limits)
                .unwrap()
                .exact
        );
    }

    #[test]
    fn bad_options_are_refused_with_the_alternatives() {
        let bound = j2d5pt();
        let limits = DeviceLimits::typical_gpu();
        let refuse =
            |options: RunOptions| plan_for(&bound, &options, &limits).unwrap_err().to_string();
        assert!(
            refuse(RunOptions {
                strategy: Some("diamond".into()),
                ..RunOptions::default()
            })
            .contains("naive, tiled, streaming")
        );
        assert!(
            refuse(RunOptions {
                tile: Some(vec![1, 2, 3, 4]),
                ..RunOptions::default()
            })
            .contains("1 to 3 sizes")
        );
        assert!(
            refuse(RunOptions {
                tile: Some(vec![8, 0]),
                ..RunOptions::default()
            })
            .contains("at least 1")
        );
        assert!(
            refuse(RunOptions {
                time_tile: Some(4),
                ..RunOptions::default()
            })
            .contains("time tile")
        );
        assert!(
            refuse(RunOptions {
                f64_accuracy: true,
                ..RunOptions::default()
            })
            .contains("reference")
        );
    }

    #[test]
    fn a_block_over_the_device_limits_is_refused_before_running() {
        let bound = j2d5pt();
        let plan = GpuPlan {
            block: [64, 32, 1],
            ..GpuPlan::new(GpuStrategy::Tiled)
        };
        let error = lower_for_device(&bound, &plan, &DeviceLimits::typical_gpu()).unwrap_err();
        assert!(matches!(error, BackendError::Unsupported(_)), "{error}");
    }
}
