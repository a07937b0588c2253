//! Every program of `benchmarks/`: the directory holds exactly the benchmarks of BENCHMARKS.md,
//! each compiles, checks and binds at its default size and at test sizes, in f32 and (float
//! programs) f64, and declares the fields the specification names.

mod common;

use common::{benchmark_path, load_file, root};
use tessera_analysis::FieldRole;
use tessera_ir::ScalarType;

/// Name, fields (all of them, in declaration order), and whether it has `type real`.
const PROGRAMS: &[(&str, &[&str], bool)] = &[
    ("j1d3pt", &["A"], true),
    ("j1d5pt", &["A"], true),
    ("j1d7pt", &["A"], true),
    ("j2d5pt", &["A"], true),
    ("j2d9pt", &["A"], true),
    ("j2d9pt-box", &["A"], true),
    ("gradient2d", &["A"], true),
    ("gaussian2d", &["A"], true),
    ("life", &["A"], false),
    ("poisson2d", &["u", "f"], true),
    ("fdtd2d", &["ex", "ey", "hz"], true),
    ("rician2d", &["u", "f", "g"], true),
    ("tv2d", &["u", "f", "px", "py"], true),
    ("j3d7pt", &["A"], true),
    ("j3d7pt-periodic", &["A"], true),
    ("j3d27pt", &["A"], true),
    (
        "himeno",
        &[
            "p", "a0", "a1", "a2", "a3", "b0", "b1", "b2", "c0", "c1", "c2", "wrk1", "bnd", "wrk2",
        ],
        true,
    ),
    ("fdtd3d", &["ex", "ey", "ez", "hx", "hy", "hz"], true),
    ("blur", &["img", "out"], false),
    ("blur-clamp", &["img", "out"], false),
    ("canny", &["img", "out", "b", "m", "d", "n"], false),
];

/// Every program name: the named ones and the sixteen families.
fn all_names() -> Vec<String> {
    let mut names: Vec<String> = PROGRAMS.iter().map(|p| p.0.to_string()).collect();
    for shape in ["star", "box"] {
        for dims in [2, 3] {
            for r in 1..=4 {
                names.push(format!("{shape}{dims}d{r}r"));
            }
        }
    }
    names
}

fn fields_of(name: &str) -> (&'static [&'static str], bool) {
    PROGRAMS
        .iter()
        .find(|p| p.0 == name)
        .map_or((&["A"], true), |p| (p.1, p.2))
}

/// Test-size parameters of a program with `dims` axes.
fn test_sizes(name: &str, dims: usize) -> Vec<Vec<(&'static str, i64)>> {
    match (name, dims) {
        ("himeno", _) => vec![
            vec![("NZ", 19), ("NY", 23), ("NX", 17)],
            vec![("NZ", 3), ("NY", 3), ("NX", 3)],
        ],
        (_, 1) => vec![vec![("N", 1001)]],
        (_, 2) => vec![vec![("N", 67)], vec![("N", 53)]],
        _ => vec![vec![("N", 19)], vec![("N", 23)]],
    }
}

#[test]
fn the_directory_holds_exactly_the_benchmarks() {
    let mut found: Vec<String> = std::fs::read_dir(root().join("benchmarks"))
        .expect("benchmarks/ exists")
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    found.sort();
    let mut expected: Vec<String> = all_names().iter().map(|n| format!("{n}.tess")).collect();
    expected.sort();
    assert_eq!(found, expected);
}

#[test]
fn every_program_binds_at_default_and_test_sizes() {
    for name in all_names() {
        let (fields, float) = fields_of(&name);
        let types: &[&[(&str, &str)]] = if float {
            &[&[("real", "f32")], &[("real", "f64")]]
        } else {
            &[&[]]
        };
        for set in types {
            let path = benchmark_path(&name);
            let bound = load_file(&path, set, &[]);
            let program = bound.program();
            let declared: Vec<&str> = program.fields.values().map(|f| f.name.as_str()).collect();
            assert_eq!(declared, fields, "{name}: the fields of BENCHMARKS.md");
            assert!(
                program.default_steps.is_some(),
                "{name} declares its default step count"
            );
            assert!(!program.stages.is_empty(), "{name} has a stage");
            let dims = program.dims();
            let default_extent = if name == "himeno" {
                vec![65, 65, 129]
            } else {
                vec![[0, 1 << 22, 4096, 256][dims]; dims]
            };
            assert_eq!(
                bound.extents, default_extent,
                "{name}: the cpu size by default"
            );
            for field in program.fields.values() {
                let want = match (field.ty, float) {
                    (ScalarType::F32 | ScalarType::F64, true) => {
                        ScalarType::from_name(set[0].1).expect("a type")
                    }
                    (ty, _) => ty,
                };
                assert_eq!(
                    field.ty, want,
                    "{name}: field `{}` follows `real`",
                    field.name
                );
            }
            for sizes in test_sizes(&name, dims) {
                load_file(&path, set, &sizes);
            }
        }
    }
}

#[test]
fn read_only_inputs_are_declared_read_only() {
    for (name, fields, float) in PROGRAMS {
        let set: &[(&str, &str)] = if *float { &[("real", "f32")] } else { &[] };
        let bound = load_file(&benchmark_path(name), set, &[]);
        let checked = bound.checked();
        for (id, field) in bound.program().fields.iter() {
            let read_only = ["f", "img"].contains(&field.name.as_str())
                || (*name == "himeno" && !["p", "wrk2"].contains(&field.name.as_str()));
            assert_eq!(
                field.readonly, read_only,
                "{name}: `{}` readonly",
                field.name
            );
            let role = checked.role(id);
            assert_eq!(
                role == FieldRole::Updated,
                !read_only,
                "{name}: `{}` is written iff not read-only ({role:?})",
                field.name
            );
        }
        assert_eq!(bound.program().fields.len(), fields.len());
    }
}
