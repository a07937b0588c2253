//! Basic facts about the host CPU, for reports and for sizing tiles.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// The host CPU as seen by Linux (`/proc/cpuinfo`, `/sys/devices/system/cpu/cpu0/cache`).
///
/// Fields that cannot be read (another OS, a restricted container) are `None`, `"unknown"` or
/// fall back to the thread count the process may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    /// The model name, e.g. `Intel(R) Xeon(R) Processor @ 2.80GHz`.
    pub model_name: String,
    /// Logical CPUs listed by the kernel (hardware threads).
    pub logical_cpus: usize,
    /// Physical cores (distinct socket/core pairs).
    pub physical_cores: usize,
    /// Threads this process may run on at once (affinity mask and cgroup quota applied).
    pub available_threads: usize,
    /// Level 1 data cache of one core, in bytes.
    pub l1d_bytes: Option<u64>,
    /// Level 2 cache as seen by one core, in bytes.
    pub l2_bytes: Option<u64>,
    /// Level 3 cache as seen by one core (usually shared by all), in bytes.
    pub l3_bytes: Option<u64>,
    /// The instruction-set feature flags of the first CPU, space separated.
    pub isa_flags: String,
}

/// Reads the host CPU facts.
pub fn cpu_info() -> CpuInfo {
    let available_threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut info = fs::read_to_string("/proc/cpuinfo")
        .map(|text| parse_cpuinfo(&text, available_threads))
        .unwrap_or_else(|_| CpuInfo {
            model_name: "unknown".to_string(),
            logical_cpus: available_threads,
            physical_cores: available_threads,
            available_threads,
            l1d_bytes: None,
            l2_bytes: None,
            l3_bytes: None,
            isa_flags: String::new(),
        });
    let caches = read_cache_sizes(Path::new("/sys/devices/system/cpu/cpu0/cache"));
    (info.l1d_bytes, info.l2_bytes, info.l3_bytes) = (caches.l1d, caches.l2, caches.l3);
    info
}

/// Parses `/proc/cpuinfo` text (one block per logical CPU); caches are filled in elsewhere.
fn parse_cpuinfo(text: &str, available_threads: usize) -> CpuInfo {
    let mut model_name = None;
    let mut isa_flags = None;
    let mut logical_cpus = 0;
    let mut cores = BTreeSet::new();
    let mut physical_id = "";
    for line in text.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        match name {
            "processor" => logical_cpus += 1,
            "model name" => {
                model_name.get_or_insert_with(|| value.to_string());
            }
            "flags" | "Features" => {
                isa_flags.get_or_insert_with(|| value.to_string());
            }
            "physical id" => physical_id = value,
            "core id" => {
                cores.insert((physical_id.to_string(), value.to_string()));
            }
            _ => {}
        }
    }
    let logical_cpus = if logical_cpus == 0 {
        available_threads
    } else {
        logical_cpus
    };
    CpuInfo {
        model_name: model_name.unwrap_or_else(|| "unknown".to_string()),
        logical_cpus,
        physical_cores: if cores.is_empty() {
            logical_cpus
        } else {
            cores.len()
        },
        available_threads,
        l1d_bytes: None,
        l2_bytes: None,
        l3_bytes: None,
        isa_flags: isa_flags.unwrap_or_default(),
    }
}

/// Cache sizes of one CPU.
#[derive(Debug, Default, PartialEq, Eq)]
struct CacheSizes {
    l1d: Option<u64>,
    l2: Option<u64>,
    l3: Option<u64>,
}

/// Reads `index*/{level,type,size}` under a CPU's sysfs cache directory.
fn read_cache_sizes(dir: &Path) -> CacheSizes {
    let mut sizes = CacheSizes::default();
    let Ok(entries) = fs::read_dir(dir) else {
        return sizes;
    };
    for entry in entries.flatten() {
        let index = entry.path();
        let read = |name: &str| fs::read_to_string(index.join(name)).map(|s| s.trim().to_string());
        let (Ok(level), Ok(kind), Ok(size)) = (read("level"), read("type"), read("size")) else {
            continue;
        };
        let Some(bytes) = parse_size(&size) else {
            continue;
        };
        let slot = match (level.as_str(), kind.as_str()) {
            ("1", "Data" | "Unified") => &mut sizes.l1d,
            ("2", "Data" | "Unified") => &mut sizes.l2,
            ("3", "Data" | "Unified") => &mut sizes.l3,
            _ => continue,
        };
        *slot = Some(bytes);
    }
    sizes
}

/// Parses a sysfs size such as `48K`, `2M` or `1024`.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, multiplier) = match text.char_indices().last()? {
        (at, 'K') => (&text[..at], 1 << 10),
        (at, 'M') => (&text[..at], 1 << 20),
        (at, 'G') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(parse_size("48K"), Some(48 * 1024));
        assert_eq!(parse_size("49152K\n"), Some(48 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("12Q"), None);
    }

    #[test]
    fn cpuinfo_counts_threads_and_cores() {
        let block = |processor: usize, physical: usize, core: usize| {
            format!(
                "processor\t: {processor}\nmodel name\t: Test CPU @ 1GHz\nphysical id\t: {physical}\n\
                 core id\t\t: {core}\nflags\t\t: fpu sse2 avx2\n\n"
            )
        };
        // Two sockets, two cores each, two hyperthreads per core.
        let text: String = (0..8).map(|p| block(p, p / 4, (p / 2) % 2)).collect();
        let info = parse_cpuinfo(&text, 3);
        assert_eq!(info.model_name, "Test CPU @ 1GHz");
        assert_eq!(info.logical_cpus, 8);
        assert_eq!(info.physical_cores, 4);
        assert_eq!(info.available_threads, 3);
        assert_eq!(info.isa_flags, "fpu sse2 avx2");
    }

    #[test]
    fn missing_cpuinfo_fields_fall_back() {
        let info = parse_cpuinfo("garbage\n", 2);
        assert_eq!(info.model_name, "unknown");
        assert_eq!(info.logical_cpus, 2);
        assert_eq!(info.physical_cores, 2);
    }

    #[test]
    fn sysfs_cache_directories_are_read() {
        let dir = tempfile::tempdir().unwrap();
        for (index, level, kind, size) in [
            ("index0", "1", "Data", "48K"),
            ("index1", "1", "Instruction", "32K"),
            ("index2", "2", "Unified", "1280K"),
            ("index3", "3", "Unified", "49152K"),
        ] {
            let path = dir.path().join(index);
            fs::create_dir(&path).unwrap();
            fs::write(path.join("level"), format!("{level}\n")).unwrap();
            fs::write(path.join("type"), format!("{kind}\n")).unwrap();
            fs::write(path.join("size"), format!("{size}\n")).unwrap();
        }
        let sizes = read_cache_sizes(dir.path());
        assert_eq!(
            sizes,
            CacheSizes {
                l1d: Some(48 << 10),
                l2: Some(1280 << 10),
                l3: Some(48 << 20)
            }
        );
    }

    #[test]
    fn this_machine_reports_something() {
        let info = cpu_info();
        assert!(info.logical_cpus >= 1 && info.physical_cores >= 1 && info.available_threads >= 1);
        assert!(!info.model_name.is_empty());
    }
}
