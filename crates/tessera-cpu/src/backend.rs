//! [`CpuBackend`]: plan, generate, compile, load.

use std::time::Duration;

use tessera_analysis::BoundProgram;
use tessera_jit::{CompileOptions, JitError};
use tessera_plan::cpu::{CpuPlan, CpuRequest, plan_cpu};
use tessera_runtime::{Backend, BackendError, Executable, RunOptions};

use crate::executable::CpuExecutable;

/// The generated-C backend, named `cpu`.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend {
    /// Compiler, extra flags and cache location (exactness is set from the run options).
    pub compile: CompileOptions,
}

impl CpuBackend {
    /// The plan `options` give for `program` on this machine.
    pub fn plan(
        &self,
        program: &BoundProgram,
        options: &RunOptions,
    ) -> Result<CpuPlan, BackendError> {
        if options.device.is_some() {
            return Err(BackendError::InvalidOptions(
                "the cpu backend has no devices; drop `--device` or choose a GPU backend".into(),
            ));
        }
        if options.f64_accuracy {
            return Err(BackendError::Unsupported(
                "the cpu backend has no f64 accuracy mode; use `--backend reference` for it".into(),
            ));
        }
        let request = CpuRequest {
            strategy: options.strategy.clone(),
            tile: options.tile.clone(),
            time_tile: options.time_tile,
            threads: options.threads,
            exact: options.exact,
        };
        plan_cpu(program, &request, &crate::machine())
            .map_err(|e| BackendError::InvalidOptions(e.to_string()))
    }

    /// The compiler options for a plan: exactness, `-fno-math-errno` and `-fno-trapping-math`
    /// (which change no value: the kernels never read `errno` or unmask floating-point traps;
    /// without them gcc calls `sqrtf` and `floorf` per point instead of vectorizing them);
    /// outside exact mode also `-ffp-contract=fast`.
    fn compile_options(&self, plan: &CpuPlan) -> CompileOptions {
        let mut options = self.compile.clone();
        options.exact = plan.exact;
        options.extra_flags.push("-fno-math-errno".into());
        options.extra_flags.push("-fno-trapping-math".into());
        if !plan.exact {
            options.extra_flags.push("-ffp-contract=fast".into());
        }
        options
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn prepare(
        &self,
        program: &BoundProgram,
        options: &RunOptions,
    ) -> Result<Box<dyn Executable>, BackendError> {
        let plan = self.plan(program, options)?;
        let source = tessera_codegen::cpu::emit_c(program, &plan);
        let (library, info) =
            tessera_jit::compile(&source, &self.compile_options(&plan)).map_err(jit_error)?;
        let compile_time = if info.cache_hit {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(info.seconds)
        };
        let executable =
            CpuExecutable::new(program.clone(), plan, library, compile_time).map_err(jit_error)?;
        Ok(Box::new(executable))
    }
}

/// Maps a compilation or loading failure to the backend's error kinds.
fn jit_error(error: JitError) -> BackendError {
    match error {
        JitError::CompilerNotFound { .. } | JitError::CompilerUnusable { .. } => {
            BackendError::Unavailable(error.to_string())
        }
        JitError::CompileFailed { .. } => BackendError::Compile(error.to_string()),
        other => BackendError::Runtime(other.to_string()),
    }
}
