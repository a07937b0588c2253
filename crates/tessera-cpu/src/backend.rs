//! [`CpuBackend`]: plan, generate, compile, load; explain a plan and measure the host's
//! memory bandwidth.

use std::time::Duration;

use tessera_analysis::BoundProgram;
use tessera_codegen::cpu::scratch_bytes_per_thread;
use tessera_jit::{CompileOptions, JitError};
use tessera_plan::cpu::{CpuPlan, CpuStagePlan, plan_cpu};
use tessera_plan::{BackendPlan, DeviceSelection, Plan, PlanError, PlanRequest};
use tessera_runtime::{
    Backend, BackendError, Bandwidth, Executable, Explanation, MemoryEstimate, Source,
};

use crate::executable::{CpuExecutable, spare_fields};

/// The generated-C backend, named `cpu`.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend {
    /// Compiler, extra flags and cache location (exactness is set from the plan).
    pub compile: CompileOptions,
}

impl CpuBackend {
    /// The compiler options for a plan: exactness, `-fno-math-errno` and `-fno-trapping-math`
    /// (which change no value: the kernels never read `errno` or unmask floating-point traps;
    /// without them gcc calls `sqrtf` and `floorf` per point instead of vectorizing them);
    /// outside exact mode also `-ffp-contract=fast`; for a target below the host's own, that
    /// target's `-march` (after `-march=native`, so that it wins).
    fn compile_options(&self, plan: &CpuPlan) -> CompileOptions {
        let mut options = self.compile.clone();
        options.exact = plan.exact;
        if plan.isa != crate::machine().isa {
            options.extra_flags.push(plan.isa.march().into());
        }
        options.extra_flags.push("-fno-math-errno".into());
        options.extra_flags.push("-fno-trapping-math".into());
        if !plan.exact {
            options.extra_flags.push("-ffp-contract=fast".into());
        }
        options
    }
}

/// The CPU part of `plan`, checked against `program`.
fn cpu_plan_of<'p>(program: &BoundProgram, plan: &'p Plan) -> Result<&'p CpuPlan, BackendError> {
    plan.check_program(program)?;
    plan.backend.cpu().ok_or_else(|| {
        PlanError::field(
            "backend",
            plan.backend_name(),
            "this is the cpu backend; run the plan with `--backend` of its own",
        )
        .into()
    })
}

/// How a stage's rows run, in words.
fn stage_form(form: &CpuStagePlan) -> String {
    let mut text = match (form.column_sums, form.lanes) {
        (true, true) => "column sums on shifted lanes",
        (true, false) => "column sums through a row buffer",
        (false, true) => "shifted lanes",
        (false, false) => "the plain loop",
    }
    .to_string();
    if form.columns_in_registers {
        text.push_str(", columns in registers");
    }
    if form.wide_vectors {
        text.push_str(", 512-bit vectors preferred");
    }
    if form.term_loops {
        text.push_str(", long sums as term loops");
    }
    text
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn plan(&self, program: &BoundProgram, request: &PlanRequest) -> Result<Plan, BackendError> {
        let cpu = plan_cpu(program, request, &crate::machine())?;
        Ok(Plan::new(program, BackendPlan::Cpu(cpu)))
    }

    fn emit(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        _device: &DeviceSelection,
    ) -> Result<Source, BackendError> {
        let cpu = cpu_plan_of(program, plan)?;
        Ok(Source {
            text: tessera_codegen::cpu::emit_c(program, cpu),
            extension: "c",
        })
    }

    fn explain(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        _device: &DeviceSelection,
    ) -> Result<Explanation, BackendError> {
        let cpu = cpu_plan_of(program, plan)?;
        let layout = cpu.layout(program);
        let mut lines: Vec<String> = (program.program().stages.values().zip(&cpu.stages))
            .map(|(stage, form)| match stage.scan_axis() {
                Some(axis) => format!(
                    "stage {}: each line along {} walked in order by one thread (a scan)",
                    stage.name,
                    program.program().axis_names()[axis]
                ),
                None => format!(
                    "stage {}: interior rows by {}",
                    stage.name,
                    stage_form(form)
                ),
            })
            .collect();
        if !layout.scratch_extents.is_empty() {
            let cells: usize = layout.scratch_extents.iter().product();
            let extents: Vec<String> = layout
                .scratch_extents
                .iter()
                .map(|e| e.to_string())
                .collect();
            lines.push(format!(
                "scratch per thread and field: {} points ({cells} cells){}",
                extents.join("x"),
                match layout.stream_rows {
                    0 => String::new(),
                    rows => format!(", {rows} rows per pipeline iteration"),
                }
            ));
        }
        lines.push(format!(
            "indices: {} bits; target {}",
            if layout.index64 { 64 } else { 32 },
            cpu.isa.describe()
        ));
        Ok(Explanation {
            target: String::new(),
            lines,
            bytes_per_point: program.traffic_bytes_per_point() as f64,
            traffic_model: "each field a stage reads counted once, each field a stage writes once; cache reuse assumed perfect".into(),
            roofline_note: "without temporal blocking, up to T times that with time tiles of T steps".into(),
        })
    }

    fn bandwidth(
        &self,
        device: &DeviceSelection,
        threads: Option<usize>,
    ) -> Result<Bandwidth, BackendError> {
        if device.name().is_some() {
            return Err(no_devices());
        }
        let measured = tessera_jit::measure_bandwidth(threads).map_err(jit_error)?;
        Ok(Bandwidth {
            gb_s: measured.triad_gb_s,
            how: format!(
                "STREAM triad, best of {} runs on {} threads",
                measured.repetitions, measured.threads
            ),
        })
    }

    fn memory(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        _device: &DeviceSelection,
    ) -> Result<MemoryEstimate, BackendError> {
        let cpu = cpu_plan_of(program, plan)?;
        let cells = program.cell_count() as u64;
        let spare: u64 = (program.program().fields.values())
            .zip(spare_fields(program, cpu.strategy.fuses_steps()))
            .filter(|(_, spare)| *spare)
            .map(|(f, _)| cells * f.ty.size_bytes() as u64)
            .sum();
        let threads = cpu.threads.max(1) as u64;
        let scratch = scratch_bytes_per_thread(program, cpu, &cpu.layout(program));
        Ok(MemoryEstimate::fields(program)
            .with_host("spare buffers", spare)
            .with_host(format!("scratch ({threads} threads)"), threads * scratch))
    }

    fn prepare(
        &self,
        program: &BoundProgram,
        plan: &Plan,
        device: &DeviceSelection,
    ) -> Result<Box<dyn Executable>, BackendError> {
        if device.name().is_some() {
            return Err(no_devices());
        }
        let cpu = cpu_plan_of(program, plan)?;
        let host = crate::machine().isa;
        if !cpu.isa.runs_on(host) {
            return Err(PlanError::field(
                "cpu.isa",
                cpu.isa.name(),
                format!(
                    "this machine runs {} code at most; plan with `--target-isa {}` (or emit the code)",
                    host.name(),
                    host.name()
                ),
            )
            .into());
        }
        let source = tessera_codegen::cpu::emit_c(program, cpu);
        let options = self.compile_options(cpu);
        let (library, info) =
            tessera_jit::compile(&source, &options).map_err(|e| compile_error(e, &options))?;
        let compile_time = if info.cache_hit {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(info.seconds)
        };
        let executable = CpuExecutable::new(program.clone(), plan.clone(), library, compile_time)
            .map_err(jit_error)?;
        Ok(Box::new(executable))
    }
}

/// The error for a device selection on the CPU.
fn no_devices() -> BackendError {
    BackendError::InvalidOptions(
        "the cpu backend has no devices; drop `--device` or choose a GPU backend".into(),
    )
}

/// Maps a compilation or loading failure to the backend's error kinds: the environment's
/// problems (compiler, cache directory, `TESSERA_CFLAGS`) are the user's to fix (exit 1); code
/// Tessera generated that does not compile or load is an internal error (exit 2).
fn jit_error(error: JitError) -> BackendError {
    match error {
        JitError::CompilerNotFound { .. }
        | JitError::CompilerUnusable { .. }
        | JitError::CacheIo { .. } => BackendError::Unavailable(error.to_string()),
        JitError::CacheNotADirectory { .. } => BackendError::InvalidOptions(error.to_string()),
        JitError::CompileFailed { .. } => match user_cflags() {
            Some(flags) => BackendError::InvalidOptions(format!(
                "{error}\nthe kernel was compiled with TESSERA_CFLAGS={flags:?} in place of the \
                 default optimisation flags; fix the variable (it accepts the compiler's \
                 optimisation flags, e.g. `-O2 -march=native`) or unset it"
            )),
            None => BackendError::Compile(error.to_string()),
        },
        other => BackendError::Runtime(other.to_string()),
    }
}

/// A minimal OpenMP library: what every generated kernel needs from the compiler.
const OPENMP_PROBE: &str =
    "#include <omp.h>\nint tessera_probe(void) { return omp_get_max_threads(); }\n";

/// Maps a failed kernel compile: when the compiler cannot build even [`OPENMP_PROBE`] with the
/// same options, the machine's toolchain is at fault (exit 1, with the compiler's message),
/// else the generated code is (a bug in Tessera).
fn compile_error(error: JitError, options: &CompileOptions) -> BackendError {
    if matches!(error, JitError::CompileFailed { .. })
        && user_cflags().is_none()
        && tessera_jit::compile(OPENMP_PROBE, options).is_err()
    {
        return BackendError::Unavailable(format!(
            "{error}\nthe same compiler cannot build even a minimal OpenMP library with these \
             flags, so the toolchain is at fault, not the generated code: install the \
             compiler's OpenMP support (gcc: libgomp), point TESSERA_CC at a compiler that has \
             it, or run `--backend reference`"
        ));
    }
    jit_error(error)
}

/// The optimisation flags the user set in `TESSERA_CFLAGS` (they replace the defaults).
fn user_cflags() -> Option<String> {
    std::env::var("TESSERA_CFLAGS")
        .ok()
        .filter(|flags| !flags.trim().is_empty())
}
