//! The host facts planning uses.

use tessera_plan::TargetIsa;
use tessera_plan::cpu::CpuMachine;

/// The host as a planning model: usable threads, cache sizes (1 MiB L2 and 32 MiB L3 when the
/// system does not say) and the best instruction set it runs.
pub fn machine() -> CpuMachine {
    let info = tessera_jit::cpu_info();
    CpuMachine {
        isa: TargetIsa::of_host(&info.isa_flags, std::env::consts::ARCH),
        threads: info.available_threads.max(1),
        l2_bytes: info.l2_bytes.unwrap_or(1 << 20),
        l3_bytes: info.l3_bytes.unwrap_or(32 << 20),
    }
}
