//! Tessera's CPU backend (`--backend cpu`): C + OpenMP generated from the bound program through
//! a plan (`tessera_plan::cpu`), compiled at run time by the system C compiler
//! (`tessera_jit`, cached on disk) and called through its exported entry points.
//!
//! Strategies (`CpuPlan::strategy`): `naive`, `parallel`, `blocked`, `overlapped`,
//! `wavefront`; chosen automatically when not given (see [`tessera_plan::cpu::plan_cpu`]).
//!
//! Exact mode (`CpuPlan::exact`) compiles with `-ffp-contract=off -fno-fast-math`: every
//! strategy, tile, time tile and thread count then gives results bitwise equal to the reference
//! backend. Otherwise three value-changing rewrites are allowed, which change results in the
//! last bits: the compiler may contract `a * b + c` into fused multiply-adds
//! (`-ffp-contract=fast`), chains of float additions are summed as balanced trees of their
//! terms (associative reordering: box stencils' dependency chains shrink from n to log2 n
//! additions), and float divisions by a literal become multiplications by its reciprocal (see
//! `tessera_codegen::cfamily::print_stage_relaxed`). Non-exact bits may depend on the tiles
//! (the compiler contracts vectorized loops and their scalar remainders differently).
//!
//! Reductions and `until` stay exact inside time tiles: time tiles end before every step in
//! which a reduction is due, and that step runs alone, folding row partials in the fixed order
//! of `tessera_runtime::reduce`.

mod backend;
mod executable;
mod machine;

pub use backend::CpuBackend;
pub use executable::CpuExecutable;
pub use machine::machine;
pub use tessera_codegen::cpu::emit_c;
