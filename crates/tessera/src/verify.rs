//! Verification of a backend against the reference: run both on copies of the same fields,
//! then compare every field cell, every reduction value and every receiver recording — bitwise, in ulps, and against a
//! tolerance.

use std::collections::BTreeMap;

use tessera_plan::{Arithmetic, DeviceSelection, Plan, PlanRequest};
use tessera_runtime::{Backend, Buffer, Executable, FieldSet, RunReport, receiver_series};

use crate::error::Error;
use crate::session::Session;

/// Per-field agreement of two runs.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldComparison {
    /// The scalar field's name as in the program (`u`, `E.ex`).
    pub name: String,
    /// Cells compared.
    pub cells: usize,
    /// Cells whose values are not bit-identical.
    pub differing: usize,
    /// The largest absolute difference (infinite for a NaN against a number).
    pub max_abs: f64,
    /// The largest difference relative to the expected value.
    pub max_rel: f64,
    /// The largest distance in units in the last place (integers: the absolute difference).
    pub max_ulp: u64,
    /// The grid index of the first differing cell, slowest axis first.
    pub first_difference: Option<Vec<usize>>,
    /// What decides whether the field is within a tolerance.
    errors: ErrorFrontier,
}

/// Per-reduction agreement (every recorded evaluation, matched by (step, name)).
#[derive(Clone, Debug, PartialEq)]
pub struct ReductionComparison {
    /// The reduction's name.
    pub name: String,
    /// Steps at which either run recorded it.
    pub evaluations: usize,
    /// Evaluations whose values are not bit-identical or that one run lacks.
    pub differing: usize,
    /// The largest absolute difference.
    pub max_abs: f64,
    /// The largest difference relative to the expected value.
    pub max_rel: f64,
    /// The largest distance in units in the last place (of f64, the type reductions are
    /// recorded in).
    pub max_ulp: u64,
    /// What decides whether the reduction is within a tolerance.
    errors: ErrorFrontier,
}

/// What `verify` found.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Every scalar field of the program, in the program's order.
    pub fields: Vec<FieldComparison>,
    /// Every reduction of the program, in the program's order.
    pub reductions: Vec<ReductionComparison>,
    /// Every receiver of the program, in the program's order: its recordings as cells of
    /// shape `(recordings, points)` (all differing when the runs recorded at other steps).
    pub receivers: Vec<FieldComparison>,
    /// Steps the expected run (the reference) executed.
    pub expected_steps: u64,
    /// Steps the actual run executed.
    pub actual_steps: u64,
}

/// Tolerances of a non-exact comparison: a value agrees when `|a - e| <= atol + rtol * |e|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// The default for programs with `f32` fields.
    pub const F32: Tolerance = Tolerance {
        rtol: 1e-4,
        atol: 1e-6,
    };

    /// The default for programs without `f32` fields.
    pub const F64: Tolerance = Tolerance {
        rtol: 1e-6,
        atol: 1e-12,
    };

    /// The default for `session`'s program: [`Tolerance::F32`] when any field is `f32`, else
    /// [`Tolerance::F64`].
    pub fn default_for(session: &Session) -> Tolerance {
        let fields = &session.program().fields;
        if fields.values().any(|f| f.ty == tessera_ir::ScalarType::F32) {
            Tolerance::F32
        } else {
            Tolerance::F64
        }
    }

    /// Whether a value that differs by `abs` from an expected value of magnitude `magnitude`
    /// agrees.
    fn accepts(self, abs: f64, magnitude: f64) -> bool {
        abs.is_finite() && abs <= self.atol + self.rtol * magnitude
    }
}

impl std::fmt::Display for Tolerance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rtol={:e} atol={:e}", self.rtol, self.atol)
    }
}

/// Runs `backend` under `plan` and the `reference` backend on copies of the same `fields` for
/// `steps` steps from t = 0, and compares them.
pub fn verify(
    session: &Session,
    backend: &dyn Backend,
    plan: &Plan,
    fields: &FieldSet,
    steps: u64,
) -> Result<Comparison, Error> {
    let mut executable = session.prepare(backend, plan, &DeviceSelection::Default)?;
    verify_executable(session, executable.as_mut(), fields, steps)
}

/// Like [`verify`], for a backend's plan already compiled (on the device of the caller's
/// choice).
pub fn verify_executable(
    session: &Session,
    executable: &mut dyn Executable,
    fields: &FieldSet,
    steps: u64,
) -> Result<Comparison, Error> {
    let reference = crate::backend("reference")?;
    let request = PlanRequest {
        arithmetic: Arithmetic::exact_if(executable.plan().is_exact()),
        ..PlanRequest::default()
    };
    let reference_plan = session.plan(reference.as_ref(), &request)?;
    let mut oracle = session.prepare(
        reference.as_ref(),
        &reference_plan,
        &DeviceSelection::Default,
    )?;
    let expected = run_on_copy(oracle.as_mut(), fields, steps)?;
    let actual = run_on_copy(executable, fields, steps)?;
    Ok(Comparison::compare(
        session,
        (&expected.0, &expected.1),
        (&actual.0, &actual.1),
    ))
}

/// Runs `steps` steps from t = 0 on a copy of `fields`; returns the copy and the report.
fn run_on_copy(
    executable: &mut dyn Executable,
    fields: &FieldSet,
    steps: u64,
) -> Result<(FieldSet, RunReport), Error> {
    let mut copy = fields.clone();
    let report = executable.run(&mut copy, 0, steps, &mut ())?;
    Ok((copy, report))
}

impl Comparison {
    /// Compares the `actual` fields and report with the `expected` ones (both holding the
    /// fields of `session`'s program), field by field and reduction by reduction.
    pub fn compare(
        session: &Session,
        expected: (&FieldSet, &RunReport),
        actual: (&FieldSet, &RunReport),
    ) -> Comparison {
        let program = session.program();
        let fields = program
            .fields
            .iter()
            .map(|(id, field)| {
                FieldComparison::of(
                    &field.name,
                    &expected.0.shape,
                    expected.0.buffer(id.index()),
                    actual.0.buffer(id.index()),
                )
            })
            .collect();
        let reductions = program
            .reductions
            .values()
            .map(|r| ReductionComparison::of(&r.name, expected.1, actual.1))
            .collect();
        let actual_series = receiver_series(program, &actual.1.receivers);
        let receivers = (receiver_series(program, &expected.1.receivers).iter())
            .zip(&actual_series)
            .map(|(e, a)| {
                let none = Buffer::zeros(e.values.ty(), 0);
                let recorded = if a.steps == e.steps { &a.values } else { &none };
                FieldComparison::of(&e.name, &[e.steps.len(), e.points], &e.values, recorded)
            })
            .collect();
        Comparison {
            fields,
            reductions,
            receivers,
            expected_steps: expected.1.steps,
            actual_steps: actual.1.steps,
        }
    }

    /// Whether every field cell and reduction value is bit-identical and both runs executed
    /// the same steps.
    pub fn is_bitwise(&self) -> bool {
        self.expected_steps == self.actual_steps
            && self.fields.iter().all(FieldComparison::is_bitwise)
            && self.reductions.iter().all(ReductionComparison::is_bitwise)
            && self.receivers.iter().all(FieldComparison::is_bitwise)
    }

    /// Whether `|a - e| <= atol + rtol * |e|` holds for every field cell and reduction value
    /// (two NaNs agree, equal infinities agree) and both runs executed the same steps.
    pub fn within(&self, tolerance: Tolerance) -> bool {
        self.expected_steps == self.actual_steps
            && self.fields.iter().all(|f| f.within(tolerance))
            && self.reductions.iter().all(|r| r.within(tolerance))
            && self.receivers.iter().all(|r| r.within(tolerance))
    }

    /// What fails the check, in one line: a different step count, else the field or reduction
    /// with the largest relative difference among those not bit-identical (`tolerance`
    /// `None`) or beyond `tolerance`; `None` when the check passes.
    pub fn worst_failure(&self, tolerance: Option<Tolerance>) -> Option<String> {
        if self.expected_steps != self.actual_steps {
            return Some(format!(
                "ran {} steps, the reference {}",
                self.actual_steps, self.expected_steps
            ));
        }
        let fails = |bitwise: bool, within: &dyn Fn(Tolerance) -> bool| match tolerance {
            None => !bitwise,
            Some(t) => !within(t),
        };
        let fields = (self.fields.iter())
            .filter(|f| fails(f.is_bitwise(), &|t| f.within(t)))
            .map(|f| (f.max_rel, f.max_abs, f.summary("field")));
        let receivers = (self.receivers.iter())
            .filter(|r| fails(r.is_bitwise(), &|t| r.within(t)))
            .map(|r| (r.max_rel, r.max_abs, r.summary("receiver")));
        let reductions = (self.reductions.iter())
            .filter(|r| fails(r.is_bitwise(), &|t| r.within(t)))
            .map(|r| (r.max_rel, r.max_abs, r.summary()));
        fields
            .chain(reductions)
            .chain(receivers)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)))
            .map(|(_, _, summary)| summary)
    }

    /// A table: one line per field and reduction with max abs / max rel / max ulp / differing
    /// cells, and the steps of both runs.
    pub fn describe(&self) -> String {
        let mut rows = vec![[
            "".to_string(),
            "differing".to_string(),
            "max abs".to_string(),
            "max rel".to_string(),
            "max ulp".to_string(),
        ]];
        for f in &self.fields {
            rows.push(row(
                format!("field {}", f.name),
                f.differing,
                f.cells,
                (f.max_abs, f.max_rel, f.max_ulp),
            ));
        }
        for r in &self.reductions {
            rows.push(row(
                format!("reduction {}", r.name),
                r.differing,
                r.evaluations,
                (r.max_abs, r.max_rel, r.max_ulp),
            ));
        }
        for r in &self.receivers {
            rows.push(row(
                format!("receiver {}", r.name),
                r.differing,
                r.cells,
                (r.max_abs, r.max_rel, r.max_ulp),
            ));
        }
        let widths: Vec<usize> = (0..5)
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut text = String::new();
        for cells in &rows {
            let mut line = format!("{:<w$}", cells[0], w = widths[0]);
            for (cell, width) in cells.iter().zip(&widths).skip(1) {
                line.push_str(&format!("  {cell:>width$}"));
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text.push_str(&format!(
            "steps: {} (reference {})\n",
            self.actual_steps, self.expected_steps
        ));
        text
    }
}

/// One line of the table of [`Comparison::describe`].
fn row(
    label: String,
    differing: usize,
    of: usize,
    (abs, rel, ulp): (f64, f64, u64),
) -> [String; 5] {
    [
        label,
        format!("{differing} of {of}"),
        format!("{abs:.3e}"),
        format!("{rel:.3e}"),
        ulp_text(ulp),
    ]
}

/// An ulp distance, `max` for a NaN against a number.
fn ulp_text(ulp: u64) -> String {
    if ulp == u64::MAX {
        "max".to_string()
    } else {
        ulp.to_string()
    }
}

impl FieldComparison {
    /// Compares the buffers of field `name` on a grid of `shape`.
    fn of(name: &str, shape: &[usize], expected: &Buffer, actual: &Buffer) -> FieldComparison {
        let tally = tally_buffers(expected, actual);
        FieldComparison {
            name: name.to_string(),
            cells: expected.len(),
            differing: tally.differing,
            max_abs: tally.max_abs,
            max_rel: tally.max_rel,
            max_ulp: tally.max_ulp,
            first_difference: tally.first.map(|i| unravel(i, shape)),
            errors: tally.errors,
        }
    }

    /// Whether every cell is bit-identical.
    pub fn is_bitwise(&self) -> bool {
        self.differing == 0
    }

    /// Whether every cell is within `tolerance` of the expected one.
    pub fn within(&self, tolerance: Tolerance) -> bool {
        self.errors.within(tolerance)
    }

    /// `field `u`: 12 of 4096 cells differ, max abs .., max rel .., max 3 ulp, first at [0, 5]`
    /// (`kind`: `field`, or `receiver` for a receiver's recordings).
    fn summary(&self, kind: &str) -> String {
        let first = (self.first_difference.as_ref())
            .map(|index| format!(", first at {index:?}"))
            .unwrap_or_default();
        format!(
            "{kind} `{}`: {} of {} cells differ, max abs {:.3e}, max rel {:.3e}, max ulp {}{first}",
            self.name,
            self.differing,
            self.cells,
            self.max_abs,
            self.max_rel,
            ulp_text(self.max_ulp)
        )
    }
}

impl ReductionComparison {
    /// Compares the values of reduction `name` in the two reports, step by step.
    fn of(name: &str, expected: &RunReport, actual: &RunReport) -> ReductionComparison {
        let mut pairs: BTreeMap<u64, (Option<f64>, Option<f64>)> = BTreeMap::new();
        for record in expected.reductions.iter().filter(|r| r.name == name) {
            pairs.entry(record.step).or_default().0 = Some(record.value);
        }
        for record in actual.reductions.iter().filter(|r| r.name == name) {
            pairs.entry(record.step).or_default().1 = Some(record.value);
        }
        let mut tally = Tally::default();
        for (i, pair) in pairs.values().enumerate() {
            let difference = match *pair {
                (Some(e), Some(a)) => Difference::of_f64(e, a),
                _ => Difference::MISSING,
            };
            tally.add(i, difference);
        }
        ReductionComparison {
            name: name.to_string(),
            evaluations: pairs.len(),
            differing: tally.differing,
            max_abs: tally.max_abs,
            max_rel: tally.max_rel,
            max_ulp: tally.max_ulp,
            errors: tally.errors,
        }
    }

    /// Whether every evaluation is bit-identical (and present in both runs).
    pub fn is_bitwise(&self) -> bool {
        self.differing == 0
    }

    /// Whether every evaluation is within `tolerance` of the expected one.
    pub fn within(&self, tolerance: Tolerance) -> bool {
        self.errors.within(tolerance)
    }

    /// `reduction `total`: 3 of 10 evaluations differ, max abs .., max rel .., max ulp 2`.
    fn summary(&self) -> String {
        format!(
            "reduction `{}`: {} of {} evaluations differ, max abs {:.3e}, max rel {:.3e}, max ulp {}",
            self.name,
            self.differing,
            self.evaluations,
            self.max_abs,
            self.max_rel,
            ulp_text(self.max_ulp)
        )
    }
}

/// The statistics of every element of two buffers.
fn tally_buffers(expected: &Buffer, actual: &Buffer) -> Tally {
    let mut tally = Tally::default();
    for (i, difference) in differences(expected, actual).enumerate() {
        tally.add(i, difference);
    }
    tally
}

/// How each element of `actual` differs from that of `expected` (a type or length mismatch:
/// every element beyond any tolerance).
fn differences<'a>(
    expected: &'a Buffer,
    actual: &'a Buffer,
) -> Box<dyn Iterator<Item = Difference> + 'a> {
    let missing = || Box::new((0..expected.len()).map(|_| Difference::MISSING));
    if expected.len() != actual.len() {
        return missing();
    }
    match (expected, actual) {
        (Buffer::F32(e), Buffer::F32(a)) => {
            Box::new(e.iter().zip(a).map(|(&e, &a)| Difference::of_f32(e, a)))
        }
        (Buffer::F64(e), Buffer::F64(a)) => {
            Box::new(e.iter().zip(a).map(|(&e, &a)| Difference::of_f64(e, a)))
        }
        // `f16`/`bf16` compared as their (exact, one-to-one) `f32` values: ulps are f32 ulps.
        (Buffer::F16(_), Buffer::F16(_)) | (Buffer::Bf16(_), Buffer::Bf16(_)) => Box::new(
            (0..expected.len())
                .map(|i| Difference::of_f32(expected.get_f64(i) as f32, actual.get_f64(i) as f32)),
        ),
        (Buffer::U8(e), Buffer::U8(a)) => {
            Box::new((e.iter().zip(a)).map(|(&e, &a)| Difference::of_integers(e.into(), a.into())))
        }
        (Buffer::I32(e), Buffer::I32(a)) => {
            Box::new((e.iter().zip(a)).map(|(&e, &a)| Difference::of_integers(e.into(), a.into())))
        }
        (Buffer::I64(e), Buffer::I64(a)) => {
            Box::new((e.iter().zip(a)).map(|(&e, &a)| Difference::of_integers(e, a)))
        }
        _ => missing(),
    }
}

/// The index along each axis of linear index `i` in a row-major grid of `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        index[axis] = i % shape[axis].max(1);
        i /= shape[axis].max(1);
    }
    index
}

/// How one actual value differs from its expected value.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Difference {
    /// Bit-identical.
    identical: bool,
    /// `|actual - expected|`: 0 for two NaNs and for equal infinities, infinite for a NaN
    /// against a number and for an infinity against another value.
    abs: f64,
    /// `|expected|`.
    magnitude: f64,
    /// The distance in units in the last place ([`u64::MAX`] for a NaN against a number).
    ulp: u64,
}

impl Difference {
    /// A value one side lacks (or cannot be compared): beyond any tolerance.
    const MISSING: Difference = Difference {
        identical: false,
        abs: f64::INFINITY,
        magnitude: 0.0,
        ulp: u64::MAX,
    };

    /// Two `f64` values. Two NaNs are identical whatever their payloads: IEEE 754 leaves the
    /// payload of a NaN an invalid operation makes to the hardware (x86 and NVIDIA GPUs differ).
    fn of_f64(expected: f64, actual: f64) -> Difference {
        Difference {
            identical: expected.to_bits() == actual.to_bits()
                || (expected.is_nan() && actual.is_nan()),
            abs: abs_difference(expected, actual),
            magnitude: expected.abs(),
            ulp: ulp_distance_f64(expected, actual),
        }
    }

    /// Two `f32` values, compared in `f32`'s ulps (two NaNs identical, as in `of_f64`).
    fn of_f32(expected: f32, actual: f32) -> Difference {
        Difference {
            identical: expected.to_bits() == actual.to_bits()
                || (expected.is_nan() && actual.is_nan()),
            abs: abs_difference(expected.into(), actual.into()),
            magnitude: expected.abs().into(),
            ulp: ulp_distance_f32(expected, actual),
        }
    }

    /// Two integers: the ulp distance is the absolute difference.
    fn of_integers(expected: i64, actual: i64) -> Difference {
        Difference {
            identical: expected == actual,
            abs: (actual as f64 - expected as f64).abs(),
            magnitude: (expected as f64).abs(),
            ulp: expected.abs_diff(actual),
        }
    }

    /// `abs / magnitude` (0 when equal, infinite against an expected 0).
    fn relative(&self) -> f64 {
        if self.abs == 0.0 {
            0.0
        } else {
            self.abs / self.magnitude
        }
    }
}

/// `|actual - expected|`, with two NaNs and equal infinities agreeing and a NaN or an infinity
/// against anything else infinitely far.
fn abs_difference(expected: f64, actual: f64) -> f64 {
    if expected == actual || (expected.is_nan() && actual.is_nan()) {
        0.0
    } else if expected.is_finite() && actual.is_finite() {
        (actual - expected).abs()
    } else {
        f64::INFINITY
    }
}

/// The distance of two `f64` values in ulps: between their positions in the ordered integer
/// representation (-0 and +0 are 0 apart; two NaNs 0, a NaN and a number [`u64::MAX`]).
fn ulp_distance_f64(a: f64, b: f64) -> u64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => 0,
        (false, false) => {
            let ordered = |x: f64| {
                let bits = x.to_bits() as i64;
                if bits < 0 { i64::MIN - bits } else { bits }
            };
            ordered(a).abs_diff(ordered(b))
        }
        _ => u64::MAX,
    }
}

/// The distance of two `f32` values in `f32` ulps, like [`ulp_distance_f64`].
fn ulp_distance_f32(a: f32, b: f32) -> u64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => 0,
        (false, false) => {
            let ordered = |x: f32| {
                let bits = x.to_bits() as i32;
                if bits < 0 { i32::MIN - bits } else { bits }
            };
            ordered(a).abs_diff(ordered(b)).into()
        }
        _ => u64::MAX,
    }
}

/// The running statistics of paired values.
#[derive(Clone, Debug, Default)]
struct Tally {
    /// Pairs not bit-identical.
    differing: usize,
    /// The largest absolute difference.
    max_abs: f64,
    /// The largest relative difference.
    max_rel: f64,
    /// The largest ulp distance.
    max_ulp: u64,
    /// The position of the first pair not bit-identical.
    first: Option<usize>,
    /// What decides tolerance checks.
    errors: ErrorFrontier,
}

impl Tally {
    /// Counts the pair at position `i`.
    fn add(&mut self, i: usize, difference: Difference) {
        if difference.identical {
            return;
        }
        self.differing += 1;
        self.first.get_or_insert(i);
        self.max_abs = self.max_abs.max(difference.abs);
        self.max_rel = self.max_rel.max(difference.relative());
        self.max_ulp = self.max_ulp.max(difference.ulp);
        self.errors.add(difference);
    }
}

/// The differences that decide every tolerance check: whether one is beyond any tolerance,
/// and the others that no other one dominates (a difference dominates another when it is at
/// least as large at an expected magnitude at most as large), so that `within` is exact
/// without keeping every difference.
#[derive(Clone, Debug, Default, PartialEq)]
struct ErrorFrontier {
    /// A NaN against a number, an infinity against another value, or a missing value.
    beyond_any: bool,
    /// Expected magnitude (as bits, ordered like the non-negative values) to the largest
    /// absolute difference there; the differences grow with the magnitude.
    worst: BTreeMap<u64, f64>,
}

impl ErrorFrontier {
    /// Takes one more difference into account.
    fn add(&mut self, difference: Difference) {
        if !difference.abs.is_finite() {
            self.beyond_any = true;
            return;
        }
        if difference.abs == 0.0 {
            return;
        }
        let key = difference.magnitude.to_bits();
        let dominated =
            (self.worst.range(..=key).next_back()).is_some_and(|(_, &abs)| abs >= difference.abs);
        if dominated {
            return;
        }
        let superseded: Vec<u64> = (self.worst.range(key..))
            .take_while(|(_, abs)| **abs <= difference.abs)
            .map(|(&k, _)| k)
            .collect();
        for k in superseded {
            self.worst.remove(&k);
        }
        self.worst.insert(key, difference.abs);
    }

    /// Whether every difference is within `tolerance`.
    fn within(&self, tolerance: Tolerance) -> bool {
        !self.beyond_any
            && (self.worst.iter()).all(|(&key, &abs)| tolerance.accepts(abs, f64::from_bits(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = "grid [2, 3];\nfield u: f32;\nfield k: i32;\nstage s { u = u + 1.0; }\nreduce total = sum(u);\n";

    fn session() -> Session {
        Session::from_text(PROGRAM, "t.tess", "t", &[]).unwrap()
    }

    fn fields(u: [f32; 6], k: [i32; 6]) -> FieldSet {
        FieldSet {
            shape: vec![2, 3],
            buffers: vec![Buffer::from(u.to_vec()), Buffer::from(k.to_vec())],
            tables: Vec::new(),
            receiver_points: Vec::new(),
        }
    }

    fn report(steps: u64, totals: &[f64]) -> RunReport {
        RunReport {
            steps,
            reductions: (totals.iter().enumerate())
                .map(|(step, &value)| tessera_runtime::ReductionRecord {
                    step: step as u64,
                    name: "total".into(),
                    value,
                })
                .collect(),
            ..RunReport::default()
        }
    }

    const ONES: [f32; 6] = [1.0; 6];

    #[test]
    fn ulp_distances_order_signs_zeros_nans_and_infinities() {
        assert_eq!(ulp_distance_f64(0.0, -0.0), 0);
        assert_eq!(ulp_distance_f32(0.0, -0.0), 0);
        assert_eq!(ulp_distance_f64(1.0, 1.0 + f64::EPSILON), 1);
        assert_eq!(ulp_distance_f32(1.0, 1.0 + f32::EPSILON), 1);
        let tiny = f64::from_bits(1);
        assert_eq!(ulp_distance_f64(-tiny, tiny), 2);
        assert_eq!(ulp_distance_f64(f64::MAX, f64::INFINITY), 1);
        assert_eq!(ulp_distance_f32(f32::MAX, f32::INFINITY), 1);
        assert_eq!(ulp_distance_f64(f64::NAN, f64::NAN), 0);
        assert_eq!(ulp_distance_f64(f64::NAN, 1.0), u64::MAX);
        assert_eq!(ulp_distance_f32(0.0, f32::NAN), u64::MAX);
        assert_eq!(
            ulp_distance_f64(f64::NEG_INFINITY, f64::INFINITY),
            2 * f64::INFINITY.to_bits()
        );
    }

    #[test]
    fn identical_runs_are_bitwise_and_within_zero_tolerance() {
        let f = fields(ONES, [1, 2, 3, 4, 5, 6]);
        let r = report(2, &[6.0, 12.0]);
        let c = Comparison::compare(&session(), (&f, &r), (&f, &r));
        assert!(
            c.is_bitwise()
                && c.within(Tolerance {
                    rtol: 0.0,
                    atol: 0.0
                })
        );
        assert_eq!(c.worst_failure(None), None);
        assert_eq!((c.fields.len(), c.reductions[0].evaluations), (2, 2));
        assert!(c.describe().contains("field u"), "{}", c.describe());
    }

    #[test]
    fn small_differences_fail_bitwise_and_pass_a_tolerance() {
        let session = session();
        let e = fields([1.0, 1.0, 1.0, 1.0, 1.0, 0.0], [0; 6]);
        let a = fields([1.0, 1.0, 1.0, 1.0, 1.0 + f32::EPSILON, -0.0], [0; 6]);
        let r = report(1, &[6.0]);
        let c = Comparison::compare(&session, (&e, &r), (&a, &r));
        let u = &c.fields[0];
        assert_eq!((u.differing, u.max_ulp), (2, 1));
        assert_eq!(u.first_difference, Some(vec![1, 1]));
        assert_eq!(u.max_abs, f32::EPSILON as f64);
        assert!(!c.is_bitwise());
        assert!(c.within(Tolerance {
            rtol: 1e-6,
            atol: 0.0
        }));
        assert!(!c.within(Tolerance {
            rtol: 1e-8,
            atol: 0.0
        }));
        assert!(c.within(Tolerance {
            rtol: 0.0,
            atol: 1e-6
        }));
        assert!(
            (c.worst_failure(None).unwrap()).starts_with("field `u`: 2 of 6 cells differ"),
            "{:?}",
            c.worst_failure(None)
        );
        assert_eq!(c.worst_failure(Some(Tolerance::F32)), None);
    }

    #[test]
    fn nans_and_infinities_agree_only_with_themselves() {
        let session = session();
        let r = report(0, &[]);
        let nan_inf = fields([f32::NAN, f32::INFINITY, 1.0, 1.0, 1.0, 1.0], [0; 6]);
        let c = Comparison::compare(&session, (&nan_inf, &r), (&nan_inf, &r));
        assert!(c.is_bitwise());
        let loose = Tolerance {
            rtol: 1.0,
            atol: 1e30,
        };
        for (i, value) in [
            (0, 1.0),
            (1, f32::NEG_INFINITY),
            (1, 1.0),
            (2, f32::INFINITY),
        ] {
            let mut u = [f32::NAN, f32::INFINITY, 1.0, 1.0, 1.0, 1.0];
            u[i] = value;
            let c = Comparison::compare(&session, (&nan_inf, &r), (&fields(u, [0; 6]), &r));
            assert!(!c.within(loose), "{i} {value}");
            assert_eq!(c.fields[0].max_abs, f64::INFINITY);
        }
    }

    #[test]
    fn integers_reductions_and_steps_count() {
        let session = session();
        let f = fields(ONES, [1, 2, 3, 4, 5, 6]);
        let g = fields(ONES, [1, 2, 3, 4, 5, 9]);
        let r = report(2, &[6.0, 12.0]);
        let c = Comparison::compare(&session, (&f, &r), (&g, &r));
        assert_eq!((c.fields[1].max_ulp, c.fields[1].max_abs), (3, 3.0));
        assert!(c.within(Tolerance {
            rtol: 0.5,
            atol: 0.0
        }));
        let shorter = report(1, &[6.0]);
        let c = Comparison::compare(&session, (&f, &r), (&f, &shorter));
        assert_eq!(
            (c.reductions[0].differing, c.reductions[0].max_ulp),
            (1, u64::MAX)
        );
        assert!(!c.within(Tolerance {
            rtol: 1.0,
            atol: 1.0
        }));
        assert_eq!(
            c.worst_failure(None).unwrap(),
            "ran 1 steps, the reference 2"
        );
        let off = report(2, &[6.0, 12.5]);
        let c = Comparison::compare(&session, (&f, &r), (&f, &off));
        assert!(c.within(Tolerance {
            rtol: 0.05,
            atol: 0.0
        }));
        assert!(!c.within(Tolerance {
            rtol: 0.01,
            atol: 0.0
        }));
        assert!(c.describe().contains("reduction total"), "{}", c.describe());
    }

    #[test]
    fn the_frontier_decides_like_every_difference() {
        let mut rng = tessera_runtime::random::SplitMix64::new(3);
        let differences: Vec<Difference> = (0..500)
            .map(|_| Difference::of_f64(rng.next_f64() * 10.0, rng.next_f64() * 10.0))
            .collect();
        let mut frontier = ErrorFrontier::default();
        differences.iter().for_each(|&d| frontier.add(d));
        for rtol in [0.0, 0.1, 0.5, 1.0, 3.0] {
            for atol in [0.0, 0.5, 2.0, 9.0] {
                let t = Tolerance { rtol, atol };
                let every = differences.iter().all(|d| t.accepts(d.abs, d.magnitude));
                assert_eq!(frontier.within(t), every, "{t}");
            }
        }
        assert!(frontier.worst.len() < 100);
    }

    #[test]
    fn the_reference_in_f64_accuracy_differs_from_its_exact_order_within_f32_tolerance() {
        let text = "grid [4, 5];\nsteps 3;\nfield u: f32 border clamp = f32(x + 3 * y) * 0.1;\nstage s { u = u * 0.3 + u[0, 1] * 0.7; }\nreduce total = sum(u);\n";
        let session = Session::from_text(text, "t.tess", "t", &[]).unwrap();
        let fields = session.initial_fields(&[]).unwrap();
        let reference = crate::backend("reference").unwrap();
        let exact = session
            .plan(reference.as_ref(), &PlanRequest::exact())
            .unwrap();
        let c = verify(&session, reference.as_ref(), &exact, &fields, 3).unwrap();
        assert!(c.is_bitwise(), "{}", c.describe());
        assert_eq!((c.actual_steps, c.reductions[0].evaluations), (3, 3));
        let request = PlanRequest {
            arithmetic: Arithmetic::F64,
            ..PlanRequest::default()
        };
        let f64_plan = session.plan(reference.as_ref(), &request).unwrap();
        let c = verify(&session, reference.as_ref(), &f64_plan, &fields, 3).unwrap();
        assert!(
            !c.is_bitwise() && c.within(Tolerance::F32),
            "{}",
            c.describe()
        );
    }

    #[test]
    fn receivers_are_compared_recording_by_recording() {
        let session = Session::from_text(
            "grid [3];\nfield u: f32;\nreceiver r = u at [[0], [2]];\n",
            "r.tess",
            "r",
            &[],
        )
        .unwrap();
        let receiver = session.program().receivers.ids().next().unwrap();
        let report = |values: [[f32; 2]; 2]| RunReport {
            steps: 2,
            receivers: (values.iter().enumerate())
                .map(|(step, v)| tessera_runtime::ReceiverRecord {
                    step: step as u64,
                    receiver,
                    name: "r".into(),
                    values: Buffer::from(v.to_vec()),
                })
                .collect(),
            ..RunReport::default()
        };
        let fields = session.initial_fields(&[]).unwrap();
        let expected = report([[1.0, 2.0], [3.0, 4.0]]);
        let same = Comparison::compare(&session, (&fields, &expected), (&fields, &expected));
        assert!(same.is_bitwise());
        let actual = report([[1.0, 2.0], [3.0, 4.5]]);
        let c = Comparison::compare(&session, (&fields, &expected), (&fields, &actual));
        assert!(!c.is_bitwise());
        let r = &c.receivers[0];
        assert_eq!(
            (r.cells, r.differing, r.first_difference.clone()),
            (4, 1, Some(vec![1, 1]))
        );
        assert!(
            c.worst_failure(None)
                .unwrap()
                .starts_with("receiver `r`: 1 of 4 cells differ")
        );
        assert!(c.describe().contains("receiver r"));
    }

    #[test]
    fn grid_indices_are_row_major() {
        assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
        assert_eq!(unravel(7, &[2, 2, 3]), vec![1, 0, 1]);
    }
}
