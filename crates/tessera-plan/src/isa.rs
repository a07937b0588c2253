//! The instruction set the CPU backend's code is written for ([`TargetIsa`]): the vector
//! width and register count the planner and the C generator use, and how to compile for it.

use serde::{Deserialize, Serialize};
use tessera_ir::ScalarType;

/// A CPU instruction set the generated C targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetIsa {
    /// x86-64 with SSE2 up to SSE4.2 (`x86-64-v2`): 16-byte vectors, 16 registers, no FMA.
    Sse2,
    /// AArch64 Advanced SIMD: 16-byte vectors, 32 registers, FMA.
    Neon,
    /// x86-64 with AVX2 and FMA (`x86-64-v3`): 32-byte vectors, 16 registers.
    Avx2,
    /// x86-64 with AVX-512 (`x86-64-v4`): 64-byte vectors, 32 registers.
    Avx512,
}

impl TargetIsa {
    /// Every target, in the order of `--target-isa` help texts.
    pub const ALL: [TargetIsa; 4] = [
        TargetIsa::Avx512,
        TargetIsa::Avx2,
        TargetIsa::Sse2,
        TargetIsa::Neon,
    ];

    /// The name used on the command line and in plans.
    pub fn name(self) -> &'static str {
        match self {
            TargetIsa::Avx512 => "avx512",
            TargetIsa::Avx2 => "avx2",
            TargetIsa::Sse2 => "sse2",
            TargetIsa::Neon => "neon",
        }
    }

    /// Looks a target up by name.
    pub fn from_name(name: &str) -> Option<TargetIsa> {
        TargetIsa::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The best target a CPU with these `/proc/cpuinfo` flags (`flags` on x86, `Features` on
    /// Arm) runs, on architecture `arch` (`std::env::consts::ARCH`).
    pub fn of_host(flags: &str, arch: &str) -> TargetIsa {
        let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
        match arch {
            "aarch64" => TargetIsa::Neon,
            _ if has("avx512f") && has("avx512bw") && has("avx512vl") => TargetIsa::Avx512,
            _ if has("avx2") && has("fma") => TargetIsa::Avx2,
            _ => TargetIsa::Sse2,
        }
    }

    /// Bytes per vector register.
    pub fn vector_bytes(self) -> usize {
        match self {
            TargetIsa::Avx512 => 64,
            TargetIsa::Avx2 => 32,
            TargetIsa::Sse2 | TargetIsa::Neon => 16,
        }
    }

    /// Vector registers the code may keep values in.
    pub fn vector_registers(self) -> usize {
        match self {
            TargetIsa::Avx512 | TargetIsa::Neon => 32,
            TargetIsa::Avx2 | TargetIsa::Sse2 => 16,
        }
    }

    /// Whether it has fused multiply-adds.
    pub fn fma(self) -> bool {
        self != TargetIsa::Sse2
    }

    /// The lanes of one vector for elements of `ty`.
    pub fn lanes(self, ty: ScalarType) -> usize {
        self.vector_bytes() / ty.size_bytes()
    }

    /// Whether code for `self` runs on a CPU whose best target is `host`.
    pub fn runs_on(self, host: TargetIsa) -> bool {
        match (self, host) {
            (TargetIsa::Neon, host) | (host, TargetIsa::Neon) => self == host,
            _ => self <= host,
        }
    }

    /// The `-march` flag of a compilation for this target on another CPU than its own (the
    /// host's own best target compiles with `-march=native`).
    pub fn march(self) -> &'static str {
        match self {
            TargetIsa::Avx512 => "-march=x86-64-v4",
            TargetIsa::Avx2 => "-march=x86-64-v3",
            TargetIsa::Sse2 => "-march=x86-64-v2",
            TargetIsa::Neon => "-march=armv8-a",
        }
    }

    /// One line for `explain`: `avx2: 32-byte vectors (8 f32 / 4 f64 lanes), 16 registers, FMA`.
    pub fn describe(self) -> String {
        format!(
            "{}: {}-byte vectors ({} f32 / {} f64 lanes), {} registers, {}",
            self.name(),
            self.vector_bytes(),
            self.lanes(ScalarType::F32),
            self.lanes(ScalarType::F64),
            self.vector_registers(),
            if self.fma() { "FMA" } else { "no FMA" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_map_to_their_best_target_and_targets_run_on_wider_hosts() {
        let zen2 = "fpu sse2 ssse3 sse4_1 sse4_2 avx fma avx2";
        let skylake_x = "sse2 avx2 fma avx512f avx512dq avx512bw avx512vl";
        assert_eq!(TargetIsa::of_host(zen2, "x86_64"), TargetIsa::Avx2);
        assert_eq!(TargetIsa::of_host(skylake_x, "x86_64"), TargetIsa::Avx512);
        assert_eq!(TargetIsa::of_host("sse2 avx", "x86_64"), TargetIsa::Sse2);
        assert_eq!(TargetIsa::of_host("fp asimd", "aarch64"), TargetIsa::Neon);
        assert!(TargetIsa::Sse2.runs_on(TargetIsa::Avx512));
        assert!(TargetIsa::Avx2.runs_on(TargetIsa::Avx2));
        assert!(!TargetIsa::Avx512.runs_on(TargetIsa::Avx2));
        assert!(!TargetIsa::Neon.runs_on(TargetIsa::Avx512));
        assert_eq!(TargetIsa::Avx2.lanes(ScalarType::F64), 4);
        assert_eq!(
            TargetIsa::Avx2.describe(),
            "avx2: 32-byte vectors (8 f32 / 4 f64 lanes), 16 registers, FMA"
        );
        assert_eq!(TargetIsa::from_name("sse2"), Some(TargetIsa::Sse2));
    }
}
