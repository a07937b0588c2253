//! Comparison of run results: the first field element that differs (bitwise, or beyond a
//! tolerance), and differences between run reports.

use tessera_runtime::{Buffer, FieldSet, RunReport};

/// The first field element that differs bitwise, described with its position and both
/// values, and how many differ. Two NaNs agree whatever their payloads: IEEE 754 leaves the
/// payload of a NaN an invalid operation makes to the hardware (x86 gives `0xffc00000`, NVIDIA
/// GPUs `0x7fffffff`), so no backend can promise it.
pub fn first_difference(
    names: &[String],
    expected: &FieldSet,
    actual: &FieldSet,
) -> Option<String> {
    first_mismatch(names, expected, actual, &|e, a, i| {
        element_bytes(e, i) == element_bytes(a, i) || (is_nan(e, i) && is_nan(a, i))
    })
}

/// Whether element `i` is a floating-point NaN.
fn is_nan(buffer: &Buffer, i: usize) -> bool {
    buffer.ty().is_float() && buffer.get_f64(i).is_nan()
}

/// The first element whose value differs by more than `tolerance` (relative, absolute below
/// 1) from the expected one: the check of non-exact runs (equal infinities agree).
pub fn first_distant(
    names: &[String],
    expected: &FieldSet,
    actual: &FieldSet,
    tolerance: f64,
) -> Option<String> {
    first_mismatch(names, expected, actual, &|e, a, i| {
        let (x, y) = (e.get_f64(i), a.get_f64(i));
        x == y || (x - y).abs() <= tolerance * x.abs().max(1.0) || (x.is_nan() && y.is_nan())
    })
}

/// The first element of any field for which `agree` is false.
fn first_mismatch(
    names: &[String],
    expected: &FieldSet,
    actual: &FieldSet,
    agree: &dyn Fn(&Buffer, &Buffer, usize) -> bool,
) -> Option<String> {
    for (field, (e, a)) in expected.buffers.iter().zip(&actual.buffers).enumerate() {
        if e.ty() != a.ty() || e.len() != a.len() {
            return Some(format!("field `{}`: type or length differs", names[field]));
        }
        if let Some(i) = (0..e.len()).find(|&i| !agree(e, a, i)) {
            let count = (0..e.len()).filter(|&i| !agree(e, a, i)).count();
            return Some(format!(
                "field `{}` differs at {:?} (linear {i}): expected {}, got {} ({count} of {} cells differ)",
                names[field],
                unravel(i, &expected.shape),
                show(e, i),
                show(a, i),
                e.len()
            ));
        }
    }
    None
}

/// Differences between the steps, early stops and reduction records (bitwise) of two reports.
pub fn report_difference(expected: &RunReport, actual: &RunReport) -> Option<String> {
    if expected.steps != actual.steps || expected.stopped_early != actual.stopped_early {
        return Some(format!(
            "ran {} steps (stopped early: {}), expected {} ({})",
            actual.steps, actual.stopped_early, expected.steps, expected.stopped_early
        ));
    }
    let bits = |r: &RunReport| {
        r.reductions
            .iter()
            .map(|x| (x.step, x.name.clone(), canonical_bits(x.value)))
            .collect::<Vec<_>>()
    };
    if bits(expected) != bits(actual) {
        return Some(format!(
            "reductions differ: expected {:?}, got {:?}",
            expected.reductions, actual.reductions
        ));
    }
    let recordings = |r: &RunReport| {
        (r.receivers.iter())
            .map(|x| (x.step, x.name.clone(), x.values.as_bytes().to_vec()))
            .collect::<Vec<_>>()
    };
    (recordings(expected) != recordings(actual)).then(|| {
        format!(
            "receiver recordings differ: expected {:?}, got {:?}",
            expected.receivers, actual.receivers
        )
    })
}

/// The bits of `value`, every NaN alike (see [`first_difference`]).
fn canonical_bits(value: f64) -> u64 {
    if value.is_nan() {
        f64::NAN.to_bits()
    } else {
        value.to_bits()
    }
}

/// The bytes of element `i`.
fn element_bytes(buffer: &Buffer, i: usize) -> &[u8] {
    let size = buffer.ty().size_bytes();
    &buffer.as_bytes()[i * size..(i + 1) * size]
}

/// The index along each axis of linear index `i` in a row-major grid of `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        index[axis] = i % shape[axis];
        i /= shape[axis];
    }
    index
}

/// Element `i` with its bits for floats.
fn show(buffer: &Buffer, i: usize) -> String {
    match buffer {
        Buffer::F32(v) => format!("{:e} ({:#010x})", v[i], v[i].to_bits()),
        Buffer::F64(v) => format!("{:e} ({:#018x})", v[i], v[i].to_bits()),
        Buffer::F16(v) | Buffer::Bf16(v) => format!("{:e} ({:#06x})", buffer.get_f64(i), v[i]),
        other => other.get_f64(i).to_string(),
    }
}
