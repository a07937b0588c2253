//! Bitwise comparison of run results, with the first difference described.

use tessera_runtime::{Buffer, FieldSet, RunReport};

/// The first field element that differs bitwise, described with its index and both values.
pub fn first_difference(
    names: &[String],
    expected: &FieldSet,
    actual: &FieldSet,
) -> Option<String> {
    for (field, (e, a)) in expected.buffers.iter().zip(&actual.buffers).enumerate() {
        if e.ty() != a.ty() || e.len() != a.len() {
            return Some(format!("field `{}`: type or length differs", names[field]));
        }
        let bytes = e.ty().size_bytes();
        let (eb, ab) = (e.as_bytes(), a.as_bytes());
        if let Some(i) =
            (0..e.len()).find(|&i| eb[i * bytes..(i + 1) * bytes] != ab[i * bytes..(i + 1) * bytes])
        {
            let mismatches = (0..e.len())
                .filter(|&i| eb[i * bytes..(i + 1) * bytes] != ab[i * bytes..(i + 1) * bytes])
                .count();
            return Some(format!(
                "field `{}` differs at {:?} (linear {i}): expected {}, got {} ({mismatches} of {} cells differ)",
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

/// Differences between the reductions, step counts and early stops of two reports.
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
            .map(|x| (x.step, x.name.clone(), x.value.to_bits()))
            .collect::<Vec<_>>()
    };
    (bits(expected) != bits(actual)).then(|| {
        format!(
            "reductions differ: expected {:?}, got {:?}",
            expected.reductions, actual.reductions
        )
    })
}

fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        index[axis] = i % shape[axis];
        i /= shape[axis];
    }
    index
}

fn show(buffer: &Buffer, i: usize) -> String {
    match buffer {
        Buffer::F32(v) => format!("{:e} ({:#010x})", v[i], v[i].to_bits()),
        Buffer::F64(v) => format!("{:e} ({:#018x})", v[i], v[i].to_bits()),
        other => other.get_f64(i).to_string(),
    }
}
