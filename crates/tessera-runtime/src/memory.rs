//! How much memory a run needs, part by part, and how much the machine has: a run that does
//! not fit is refused before anything is allocated.
//!
//! The estimate is a model of what the backend allocates (fields, spare buffers, per-thread
//! scratch and rings, device buffers); allocator overhead, generated code and small tables are
//! left out, so a run may need a few megabytes more.

use tessera_analysis::BoundProgram;

use crate::BackendError;

/// One part of a run's memory: `fields 1.60 GB`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPart {
    /// What it holds, in a few words.
    pub what: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The memory a run needs on the host and, for GPU backends, on the device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// Host allocations.
    pub host: Vec<MemoryPart>,
    /// Device allocations (empty without a device).
    pub device: Vec<MemoryPart>,
    /// The device's name and global memory, when the run has one and it is known.
    pub device_memory: Option<(String, u64)>,
}

impl MemoryEstimate {
    /// The fields of `program` on the host, which every backend's run holds.
    pub fn fields(program: &BoundProgram) -> MemoryEstimate {
        MemoryEstimate {
            host: vec![MemoryPart {
                what: "fields".into(),
                bytes: field_bytes(program),
            }],
            ..MemoryEstimate::default()
        }
    }

    /// Adds a host part (nothing when `bytes` is 0).
    pub fn with_host(mut self, what: impl Into<String>, bytes: u64) -> MemoryEstimate {
        if bytes > 0 {
            self.host.push(MemoryPart {
                what: what.into(),
                bytes,
            });
        }
        self
    }

    /// Total host bytes.
    pub fn host_bytes(&self) -> u64 {
        total(&self.host)
    }

    /// Total device bytes.
    pub fn device_bytes(&self) -> u64 {
        total(&self.device)
    }

    /// `1.60 GB on the host (fields 800 MB, spare buffers 800 MB); 1.60 GB on NVIDIA H100
    /// (fields 800 MB, spare buffers 800 MB) of its 85.0 GB`.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} on the host{}",
            bytes_text(self.host_bytes()),
            parts(&self.host)
        );
        if !self.device.is_empty() {
            let device = match &self.device_memory {
                Some((name, _)) => name.as_str(),
                None => "the device",
            };
            text.push_str(&format!(
                "; {} on {device}{}",
                bytes_text(self.device_bytes()),
                parts(&self.device)
            ));
            if let Some((_, has)) = &self.device_memory {
                text.push_str(&format!(" of its {}", bytes_text(*has)));
            }
        }
        text
    }

    /// Refuses a run whose host part exceeds `limit` (`--max-memory`) or `available` (what the
    /// machine has free), or whose device part exceeds the device's memory.
    pub fn check(&self, limit: Option<u64>, available: Option<u64>) -> Result<(), BackendError> {
        let host = self.host_bytes();
        let refuse = |what: String| {
            BackendError::Resources(format!(
                "the run needs {}, more than {what}; use a smaller grid (`--set`), fewer threads or a smaller tile",
                self.describe()
            ))
        };
        if let Some(limit) = limit.filter(|&l| host > l) {
            return Err(refuse(format!(
                "`--max-memory {}` allows",
                bytes_text(limit)
            )));
        }
        if let Some(available) = available.filter(|&a| host > a) {
            return Err(refuse(format!(
                "the {} this process may still allocate (free memory, cgroup and `ulimit -v` limits)",
                bytes_text(available)
            )));
        }
        if let Some((name, has)) = self
            .device_memory
            .as_ref()
            .filter(|(_, has)| self.device_bytes() > *has)
        {
            return Err(refuse(format!("the {} of {name}", bytes_text(*has))));
        }
        Ok(())
    }
}

/// The bytes of every field of `program` (saturating: binding bounds the cell count, not the
/// bytes).
pub fn field_bytes(program: &BoundProgram) -> u64 {
    (program.cell_count() as u64).saturating_mul(program.storage_bytes_per_point() as u64)
}

fn total(parts: &[MemoryPart]) -> u64 {
    parts
        .iter()
        .fold(0u64, |sum, p| sum.saturating_add(p.bytes))
}

/// ` (fields 800 MB, spare buffers 800 MB)`, or nothing for a single part.
fn parts(parts: &[MemoryPart]) -> String {
    if parts.len() < 2 {
        return String::new();
    }
    let listed: Vec<String> = parts
        .iter()
        .map(|p| format!("{} {}", p.what, bytes_text(p.bytes)))
        .collect();
    format!(" ({})", listed.join(", "))
}

/// `512 B`, `73.0 kB`, `1.60 GB`, `4.00 PB`: decimal units, three significant digits.
pub fn bytes_text(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = u;
    }
    let digits = if value < 10.0 {
        2
    } else if value < 100.0 {
        1
    } else {
        0
    };
    format!("{value:.digits$} {unit}")
}

/// Parses a size: bytes, or a number with `k`/`M`/`G`/`T` (powers of 1000, `B` optional) or
/// `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024): `4G`, `512MiB`, `1.5GB`, `1e9`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "k" | "K" | "kB" | "KB" => 1e3,
        "M" | "MB" => 1e6,
        "G" | "GB" => 1e9,
        "T" | "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`; use B, k, M, G, T (powers of 1000) or KiB, MiB, GiB, TiB"
            ));
        }
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a size; e.g. `4G`, `512MiB` or `1e9`"))?;
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes >= u64::MAX as f64 {
        return Err(format!("`{text}` is not a size from 1 byte up"));
    }
    Ok(bytes as u64)
}

/// The memory this process may still allocate: `MemAvailable` of `/proc/meminfo`, or less
/// when a cgroup or an address-space limit (`ulimit -v`) bounds the process; `None` where
/// none can be read.
pub fn available_host_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(mem_available);
    [available, cgroup_headroom(), address_space_headroom()]
        .into_iter()
        .flatten()
        .min()
}

/// What the address-space limit (`ulimit -v`) still allows: the limit less the process's
/// virtual size; `None` without a limit.
fn address_space_headroom() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
        if !ok || limit.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let size = status_kib(&status, "VmSize:")?.saturating_mul(1024);
        Some(limit.rlim_cur.saturating_sub(size))
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    Some(status_kib(meminfo, "MemAvailable:")?.saturating_mul(1024))
}

/// The kibibytes on the line starting with `key` of a `/proc` text (`MemAvailable:  123 kB`).
fn status_kib(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// What the process's cgroup (v2) still allows: `memory.max - memory.current`.
fn cgroup_headroom() -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{name}")).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?;
    let current: u64 = read("memory.current")?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_both_unit_systems() {
        assert_eq!(parse_bytes("4G"), Ok(4_000_000_000));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1.5GB"), Ok(1_500_000_000));
        assert_eq!(parse_bytes("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_bytes(" 100 "), Ok(100));
        for bad in ["", "G", "4Q", "-1G", "nan", "0"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_print_with_three_digits() {
        assert_eq!(bytes_text(512), "512 B");
        assert_eq!(bytes_text(73_984), "74.0 kB");
        assert_eq!(bytes_text(1_600_000_000), "1.60 GB");
        assert_eq!(bytes_text(4_000_000_000_000_000), "4.00 PB");
    }

    #[test]
    fn meminfo_gives_available_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(text), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn an_allocation_without_room_is_an_error() {
        let error =
            crate::Buffer::try_zeros(tessera_ir::ScalarType::F64, usize::MAX / 4).unwrap_err();
        assert!(error.to_string().starts_with("cannot allocate"), "{error}");
        assert!(crate::Buffer::try_zeros(tessera_ir::ScalarType::U8, 3).is_ok());
    }

    #[test]
    fn a_run_over_a_limit_is_refused_naming_estimate_and_limit() {
        let estimate = MemoryEstimate {
            host: vec![
                MemoryPart {
                    what: "fields".into(),
                    bytes: 3_000_000_000,
                },
                MemoryPart {
                    what: "spare buffers".into(),
                    bytes: 1_000_000_000,
                },
            ],
            ..MemoryEstimate::default()
        };
        assert_eq!(
            estimate.describe(),
            "4.00 GB on the host (fields 3.00 GB, spare buffers 1.00 GB)"
        );
        let over = estimate.check(Some(2_000_000_000), None).unwrap_err();
        assert!(
            over.to_string()
                .contains("more than `--max-memory 2.00 GB` allows"),
            "{over}"
        );
        let short = estimate.check(None, Some(1_000_000_000)).unwrap_err();
        assert!(
            short
                .to_string()
                .contains("the 1.00 GB this process may still allocate"),
            "{short}"
        );
        assert!(
            estimate
                .check(Some(5_000_000_000), Some(8_000_000_000))
                .is_ok()
        );
        let gpu = MemoryEstimate {
            device: estimate.host.clone(),
            device_memory: Some(("NVIDIA H100".into(), 2_000_000_000)),
            ..MemoryEstimate::default()
        };
        let device = gpu.check(None, None).unwrap_err();
        assert!(
            device.to_string().contains("the 2.00 GB of NVIDIA H100"),
            "{device}"
        );
    }
}
