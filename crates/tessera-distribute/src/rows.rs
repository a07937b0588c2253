//! Reduction rows across ranks: which of a rank's row partials are rows of the global
//! reduction, and where they go in THE row order.
//!
//! The fastest axis is never cut, so every row of a reduction lies whole in one rank's box;
//! a rank's rows are those of its local domain whose points it owns. Combining every rank's
//! rows in the global row order gives the single-process value bitwise.

use tessera_analysis::bind::Domain;
use tessera_analysis::region::Rect;
use tessera_ir::ReduceOp;
use tessera_runtime::reduce::RowPartials;

/// Where each row of a rank's local reduction domain goes: the global row index, or `None`
/// for a row the rank does not own (a halo row) or that the global domain does not have.
pub fn row_targets(
    local_domain: &Domain,
    local: &Rect,
    owned: &Rect,
    global: &Domain,
) -> Vec<Option<usize>> {
    if local_domain.rect.is_empty() {
        return Vec::new();
    }
    let slow = local_domain.rect.dims() - 1;
    let mut points: Vec<Vec<i64>> = vec![Vec::new()];
    for a in 0..slow {
        let indices = axis_indices(local_domain, a);
        points = (points.iter())
            .flat_map(|p| {
                indices.iter().map(move |&i| {
                    let mut q = p.clone();
                    q.push(i + local.lo[a]);
                    q
                })
            })
            .collect();
    }
    points
        .iter()
        .map(|p| global_row(p, owned, global))
        .collect()
}

/// The covered indices of a domain along axis `a`.
fn axis_indices(domain: &Domain, a: usize) -> Vec<i64> {
    (domain.rect.lo[a]..domain.rect.hi[a])
        .step_by(domain.stride[a] as usize)
        .collect()
}

/// The number of rows of a domain (every axis but the fastest).
pub fn row_count(domain: &Domain) -> usize {
    if domain.rect.is_empty() {
        return 0;
    }
    let slow = domain.rect.dims().saturating_sub(1);
    (0..slow).map(|a| axis_indices(domain, a).len()).product()
}

/// The global row index of the row at slow coordinates `point` (global, unwrapped), when the
/// rank owns it and the global domain covers it.
fn global_row(point: &[i64], owned: &Rect, global: &Domain) -> Option<usize> {
    let mut index = 0usize;
    for (a, &p) in point.iter().enumerate() {
        if p < owned.lo[a] || p >= owned.hi[a] {
            return None;
        }
        let (lo, hi, stride) = (global.rect.lo[a], global.rect.hi[a], global.stride[a]);
        if p < lo || p >= hi || (p - lo) % stride != 0 {
            return None;
        }
        let count = ((hi - 1 - lo) / stride + 1) as usize;
        index = index * count + ((p - lo) / stride) as usize;
    }
    Some(index)
}

/// The values of the rows a rank owns, in its local row order (`targets` from
/// [`row_targets`]); refused when the backend gave another number of rows.
pub fn owned_values(targets: &[Option<usize>], rows: &[f64]) -> Result<Vec<f64>, String> {
    if targets.len() != rows.len() {
        return Err(format!(
            "{} row partials for a reduction of {} rows",
            rows.len(),
            targets.len()
        ));
    }
    Ok((targets.iter().zip(rows))
        .filter_map(|(target, value)| target.map(|_| *value))
        .collect())
}

/// The global rows of a reduction from every rank's owned values (by rank: its targets and
/// the values [`owned_values`] kept), in THE row order.
pub fn place<'a>(
    count: usize,
    op: ReduceOp,
    ranks: impl IntoIterator<Item = (&'a [Option<usize>], &'a [f64])>,
) -> Result<RowPartials, String> {
    let mut rows: Vec<Option<f64>> = vec![None; count];
    for (targets, values) in ranks {
        for (row, value) in targets.iter().flatten().zip(values) {
            rows[*row] = Some(*value);
        }
    }
    let rows = rows.into_iter().collect::<Option<Vec<f64>>>();
    let rows = rows.ok_or_else(|| "a row of a reduction belongs to no rank".to_string())?;
    Ok(RowPartials { op, rows })
}
