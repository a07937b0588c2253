//! The host facts planning uses.

use tessera_plan::cpu::CpuMachine;

/// The host as a planning model: usable threads and cache sizes (1 MiB L2 and 32 MiB L3 when
/// the system does not say).
pub fn machine() -> CpuMachine {
    let info = tessera_jit::cpu_info();
    CpuMachine {
        threads: info.available_threads.max(1),
        l2_bytes: info.l2_bytes.unwrap_or(1 << 20),
        l3_bytes: info.l3_bytes.unwrap_or(32 << 20),
    }
}
