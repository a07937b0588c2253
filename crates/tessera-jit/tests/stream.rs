//! The bandwidth measurement runs and reports sensible (positive, finite) numbers.

use tempfile::TempDir;
use tessera_jit::stream::{StreamConfig, measure_bandwidth_with};
use tessera_jit::{CompileOptions, JitError};

#[test]
fn small_measurement_reports_positive_bandwidths() {
    let cache = TempDir::new().unwrap();
    let config = StreamConfig {
        threads: Some(2),
        array_bytes: Some(8 << 20),
        repetitions: 3,
    };
    let options = CompileOptions::default().with_cache_dir(cache.path());
    let bandwidth = measure_bandwidth_with(&config, &options).unwrap_or_else(|e| panic!("{e}"));
    for value in [
        bandwidth.triad_gb_s,
        bandwidth.triad_median_gb_s,
        bandwidth.copy_gb_s,
        bandwidth.copy_median_gb_s,
    ] {
        assert!(value.is_finite() && value > 0.0, "{bandwidth:?}");
    }
    assert!(bandwidth.triad_gb_s >= bandwidth.triad_median_gb_s);
    assert!(bandwidth.copy_gb_s >= bandwidth.copy_median_gb_s);
    assert_eq!(bandwidth.threads, 2);
    assert_eq!(bandwidth.array_bytes, 8 << 20);
    assert_eq!(bandwidth.repetitions, 3);
}

#[test]
fn empty_arrays_are_refused() {
    let config = StreamConfig {
        array_bytes: Some(4),
        ..StreamConfig::default()
    };
    let cache = TempDir::new().unwrap();
    let options = CompileOptions::default().with_cache_dir(cache.path());
    let error = measure_bandwidth_with(&config, &options).unwrap_err();
    assert!(matches!(error, JitError::Measurement(_)), "{error:?}");
}
