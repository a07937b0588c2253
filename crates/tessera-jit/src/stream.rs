//! Memory bandwidth of the machine, measured STREAM-style with kernels built by [`crate::compile`].
//!
//! Three `f64` arrays of at least four times the last-level cache (and at least 64 MiB each)
//! are allocated and first touched in parallel with the same static schedule as the kernels, so
//! pages land on the NUMA node of the thread that uses them. Each repetition runs `copy`
//! (`c[i] = a[i]`) then `triad` (`a[i] = b[i] + s*c[i]`); the first repetition is a warm-up and
//! is not counted. Bytes follow the STREAM convention: 16 per element for copy and 24 for triad
//! (write-allocate traffic, which would make them 24 and 32, is not counted).

use crate::{CompileOptions, JitError, compile, cpu_info};

/// The C source of the measurement kernels.
const STREAM_SOURCE: &str = r#"
#include <stdlib.h>
#include <omp.h>

/* Runs `repetitions` rounds of copy and triad on arrays of n doubles with `threads` threads
   (0 = OpenMP default). Returns 0 on success, 1 if allocation failed, 2 if results are wrong. */
int tessera_stream(long n, int threads, int repetitions, double *copy_seconds,
                   double *triad_seconds, int *threads_used) {
    const int team = threads > 0 ? threads : omp_get_max_threads();
    size_t bytes = ((size_t)n * sizeof(double) + 63) / 64 * 64;
    double *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *c = aligned_alloc(64, bytes);
    if (!a || !b || !c) { free(a); free(b); free(c); return 1; }
    #pragma omp parallel num_threads(team)
    {
        #pragma omp single
        *threads_used = omp_get_num_threads();
        #pragma omp for schedule(static)
        for (long i = 0; i < n; i++) { a[i] = 1.0; b[i] = 2.0; c[i] = 0.0; }
    }
    const double s = 3.0;
    double expected = 1.0;
    for (int r = 0; r < repetitions; r++) {
        double start = omp_get_wtime();
        #pragma omp parallel for schedule(static) num_threads(team)
        for (long i = 0; i < n; i++) c[i] = a[i];
        copy_seconds[r] = omp_get_wtime() - start;
        start = omp_get_wtime();
        #pragma omp parallel for schedule(static) num_threads(team)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        triad_seconds[r] = omp_get_wtime() - start;
        expected = 2.0 + s * expected;
    }
    long wrong = 0;
    #pragma omp parallel for schedule(static) num_threads(team) reduction(+:wrong)
    for (long i = 0; i < n; i++) wrong += a[i] != expected || c[i] * s + 2.0 != expected;
    free(a); free(b); free(c);
    return wrong == 0 ? 0 : 2;
}
"#;

/// The kernel's C prototype.
type StreamKernel = unsafe extern "C" fn(i64, i32, i32, *mut f64, *mut f64, *mut i32) -> i32;

/// The smallest array size measured by default (per array).
const MIN_ARRAY_BYTES: u64 = 64 << 20;

/// Bytes counted per element for copy and triad (STREAM convention, no write-allocate).
const COPY_BYTES_PER_ELEMENT: f64 = 16.0;
/// Bytes counted per element for triad.
const TRIAD_BYTES_PER_ELEMENT: f64 = 24.0;

/// How to measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// OpenMP threads; `None` = the OpenMP default (`OMP_NUM_THREADS` or all CPUs).
    pub threads: Option<usize>,
    /// Bytes per array; `None` = [`default_array_bytes`].
    pub array_bytes: Option<u64>,
    /// Timed repetitions, after one warm-up repetition (at least 1).
    pub repetitions: usize,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            threads: None,
            array_bytes: None,
            repetitions: 5,
        }
    }
}

/// Measured bandwidths in GB/s (10^9 bytes per second), STREAM byte counting.
#[derive(Clone, Debug, PartialEq)]
pub struct Bandwidth {
    /// Best triad bandwidth (`a = b + s*c`, 24 bytes per element).
    pub triad_gb_s: f64,
    /// Median triad bandwidth.
    pub triad_median_gb_s: f64,
    /// Best copy bandwidth (`c = a`, 16 bytes per element).
    pub copy_gb_s: f64,
    /// Median copy bandwidth.
    pub copy_median_gb_s: f64,
    /// Threads that ran the kernels.
    pub threads: usize,
    /// Bytes per array.
    pub array_bytes: u64,
    /// Timed repetitions (warm-up excluded).
    pub repetitions: usize,
}

/// The default size of each array: four times the L3 cache, at least 64 MiB.
pub fn default_array_bytes() -> u64 {
    let info = cpu_info();
    let last_level = info.l3_bytes.or(info.l2_bytes).unwrap_or(0);
    last_level.saturating_mul(4).max(MIN_ARRAY_BYTES)
}

/// Measures copy and triad bandwidth with `threads` OpenMP threads (`None` = default).
pub fn measure_bandwidth(threads: Option<usize>) -> Result<Bandwidth, JitError> {
    let config = StreamConfig {
        threads,
        ..StreamConfig::default()
    };
    measure_bandwidth_with(&config, &CompileOptions::default())
}

/// Measures with an explicit configuration, compiling the kernel with `options`.
pub fn measure_bandwidth_with(
    config: &StreamConfig,
    options: &CompileOptions,
) -> Result<Bandwidth, JitError> {
    let array_bytes = config.array_bytes.unwrap_or_else(default_array_bytes);
    let elements = array_bytes / 8;
    let repetitions = config.repetitions.max(1);
    let too_large = |what: &str| JitError::Measurement(format!("{what} is too large"));
    let elements_arg = i64::try_from(elements).map_err(|_| too_large("the array size"))?;
    let threads_arg =
        i32::try_from(config.threads.unwrap_or(0)).map_err(|_| too_large("the thread count"))?;
    let runs = repetitions + 1;
    let runs_arg = i32::try_from(runs).map_err(|_| too_large("the repetition count"))?;
    if elements == 0 {
        return Err(JitError::Measurement(
            "the arrays must hold at least one f64".to_string(),
        ));
    }

    let (library, _) = compile(STREAM_SOURCE, options)?;
    let mut copy_seconds = vec![0.0; runs];
    let mut triad_seconds = vec![0.0; runs];
    let mut threads_used = 0;
    // SAFETY: `StreamKernel` is the prototype of `tessera_stream` above; both output arrays
    // hold `runs` elements, as the kernel writes `repetitions` (= runs) entries into each.
    let status = unsafe {
        let kernel = library.symbol::<StreamKernel>("tessera_stream")?;
        kernel(
            elements_arg,
            threads_arg,
            runs_arg,
            copy_seconds.as_mut_ptr(),
            triad_seconds.as_mut_ptr(),
            &mut threads_used,
        )
    };
    match status {
        0 => {}
        1 => {
            return Err(JitError::Measurement(format!(
                "cannot allocate 3 arrays of {array_bytes} bytes"
            )));
        }
        _ => {
            return Err(JitError::Measurement(
                "the stream kernels computed wrong results".to_string(),
            ));
        }
    }

    let elements = elements as f64;
    let (copy_gb_s, copy_median_gb_s) =
        best_and_median(&copy_seconds[1..], elements * COPY_BYTES_PER_ELEMENT);
    let (triad_gb_s, triad_median_gb_s) =
        best_and_median(&triad_seconds[1..], elements * TRIAD_BYTES_PER_ELEMENT);
    Ok(Bandwidth {
        triad_gb_s,
        triad_median_gb_s,
        copy_gb_s,
        copy_median_gb_s,
        threads: usize::try_from(threads_used).unwrap_or(0),
        array_bytes,
        repetitions,
    })
}

/// Best and median bandwidth in GB/s for `bytes` moved in each of the timings `seconds`.
fn best_and_median(seconds: &[f64], bytes: f64) -> (f64, f64) {
    let mut rates: Vec<f64> = seconds.iter().map(|&s| bytes / s.max(1e-9) / 1e9).collect();
    rates.sort_by(f64::total_cmp);
    let best = rates.last().copied().unwrap_or(0.0);
    let middle = rates.len() / 2;
    let median = match rates.len() {
        0 => 0.0,
        n if n % 2 == 1 => rates[middle],
        _ => (rates[middle - 1] + rates[middle]) / 2.0,
    };
    (best, median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_and_median_of_timings() {
        let (best, median) = best_and_median(&[2.0, 1.0, 4.0], 8e9);
        assert_eq!((best, median), (8.0, 4.0));
        let (best, median) = best_and_median(&[1.0, 2.0, 4.0, 8.0], 8e9);
        assert_eq!((best, median), (8.0, 3.0));
    }

    #[test]
    fn default_arrays_are_at_least_64_mib() {
        assert!(default_array_bytes() >= MIN_ARRAY_BYTES);
    }
}
