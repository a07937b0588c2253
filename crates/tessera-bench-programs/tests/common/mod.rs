//! Helpers shared by the benchmark tests: load a program of `benchmarks/` or `examples/`, run it
//! on the reference backend, and compare its fields with the plain-Rust formulas bitwise.
#![allow(dead_code, unused_imports, unused_macros)] // each test file uses a different subset of the helpers

mod grid;
mod real;

use std::path::PathBuf;
use std::sync::Arc;

use tessera_analysis::BoundProgram;
use tessera_ir::Constant;
use tessera_plan::PlanRequest;
use tessera_reference::ReferenceBackend;
use tessera_runtime::{Backend, Buffer, FieldSet, RunReport};

pub use grid::*;
pub use real::Real;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The path of `benchmarks/<name>.tess`.
pub fn benchmark_path(name: &str) -> PathBuf {
    root().join("benchmarks").join(format!("{name}.tess"))
}

/// Compiles the file at `path` with `--set` type overrides `types` and binds it to `params`.
pub fn load_file(
    path: &std::path::Path,
    types: &[(&str, &str)],
    params: &[(&str, i64)],
) -> BoundProgram {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a file name");
    let sets: Vec<(String, String)> = types
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let fail = |diagnostics: Vec<tessera_ir::Diagnostic>| -> ! {
        panic!(
            "{} does not compile:\n{}",
            path.display(),
            tessera_lang::render(&diagnostics, &path.display().to_string(), &text, false)
        )
    };
    let parsed = tessera_lang::parse(&text, stem, &sets).unwrap_or_else(|d| fail(d));
    let checked = tessera_analysis::check(&parsed.program).unwrap_or_else(|d| fail(d));
    let values: Vec<(String, Constant)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), Constant::Int(*v)))
        .collect();
    tessera_analysis::bind(Arc::new(checked), &values).unwrap_or_else(|diagnostics| {
        panic!(
            "{} does not bind to {params:?}: {diagnostics:?}",
            path.display()
        )
    })
}

/// A benchmark program bound to a test size.
pub struct Bench {
    /// The bound program.
    pub bound: BoundProgram,
}

impl Bench {
    /// `benchmarks/<name>.tess` with `real` set to `R` and the given sizes.
    pub fn real<R: Real>(name: &str, params: &[(&str, i64)]) -> Bench {
        Bench {
            bound: load_file(&benchmark_path(name), &[("real", R::NAME)], params),
        }
    }

    /// `benchmarks/<name>.tess` as written (programs without a `real` type).
    pub fn plain(name: &str, params: &[(&str, i64)]) -> Bench {
        Bench {
            bound: load_file(&benchmark_path(name), &[], params),
        }
    }

    /// Runs `steps` steps on the reference backend from the declared initial values, with the
    /// fields in `given` replaced by the buffers given.
    pub fn run(&self, given: Vec<(&str, Buffer)>, steps: u64) -> Outcome {
        let program = self.bound.program();
        let given: Vec<(usize, Buffer)> = given
            .into_iter()
            .map(|(name, buffer)| {
                let id = program
                    .field_by_name(name)
                    .unwrap_or_else(|| panic!("the program has no field `{name}`"));
                assert_eq!(
                    buffer.ty(),
                    program.fields[id].ty,
                    "field `{name}` is given with its type"
                );
                assert_eq!(
                    buffer.len(),
                    self.bound.cell_count(),
                    "field `{name}` is given with the grid's size"
                );
                (id.index(), buffer)
            })
            .collect();
        let mut mask = vec![false; program.fields.len()];
        given.iter().for_each(|(index, _)| mask[*index] = true);
        let mut fields = tessera_reference::initial_fields(&self.bound, &mask).expect("fields fit");
        for (index, buffer) in given {
            fields.buffers[index] = buffer;
        }
        let mut executable = ReferenceBackend
            .plan_and_prepare(&self.bound, &PlanRequest::exact())
            .expect("the reference backend prepares every benchmark");
        let report = executable
            .run(&mut fields, 0, steps, &mut ())
            .expect("the reference run succeeds");
        assert_eq!(
            report.steps, steps,
            "every step runs (no stop condition in the benchmarks)"
        );
        Outcome {
            bound: self.bound.clone(),
            fields,
            report,
        }
    }
}

/// The fields and report after a reference run.
pub struct Outcome {
    bound: BoundProgram,
    /// Every field after the run.
    pub fields: FieldSet,
    /// The run's report (reductions).
    pub report: RunReport,
}

impl Outcome {
    /// The buffer of field `name`.
    pub fn buffer(&self, name: &str) -> &Buffer {
        let id = self
            .bound
            .program()
            .field_by_name(name)
            .unwrap_or_else(|| panic!("no field `{name}`"));
        self.fields.buffer(id.index())
    }

    /// Asserts that float field `name` equals `want` bit for bit, boundary included.
    pub fn assert_field<R: Real>(&self, name: &str, want: &[R]) {
        let got = R::slice(self.buffer(name));
        assert_eq!(got.len(), want.len(), "field `{name}` has the grid's size");
        let bad: Vec<usize> = (0..got.len()).filter(|&i| !got[i].same(want[i])).collect();
        if let Some(&first) = bad.first() {
            let point = self.point(first);
            panic!(
                "field `{name}` ({}): {} of {} points differ from the formula; first at {point:?}: reference {:?}, formula {:?}",
                R::NAME,
                bad.len(),
                got.len(),
                got[first],
                want[first]
            );
        }
    }

    /// Asserts that `u8` field `name` equals `want`.
    pub fn assert_bytes(&self, name: &str, want: &[u8]) {
        let Buffer::U8(got) = self.buffer(name) else {
            panic!("field `{name}` is not u8")
        };
        let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
        if let Some(&first) = bad.first() {
            panic!(
                "field `{name}`: {} of {} points differ from the formula; first at {:?}: reference {}, formula {}",
                bad.len(),
                got.len(),
                self.point(first),
                got[first],
                want[first]
            );
        }
    }

    /// The values of reduction `name`, one per step in which it was computed.
    pub fn reduction(&self, name: &str) -> Vec<f64> {
        self.report
            .reductions
            .iter()
            .filter(|r| r.name == name)
            .map(|r| r.value)
            .collect()
    }

    /// The grid point of linear index `i`.
    fn point(&self, mut i: usize) -> Vec<usize> {
        let mut point = vec![0; self.fields.shape.len()];
        for (axis, extent) in self.fields.shape.iter().enumerate().rev() {
            point[axis] = i % extent;
            i /= extent;
        }
        point
    }
}

/// Defines a test module `$name` with one test per float type running `$body::<R>()`.
macro_rules! f32_and_f64 {
    ($name:ident, $body:ident) => {
        mod $name {
            #[test]
            fn f32() {
                super::$body::<f32>();
            }
            #[test]
            fn f64() {
                super::$body::<f64>();
            }
        }
    };
}
