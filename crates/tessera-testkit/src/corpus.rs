//! The corpus: every program the differential tests run, with the sizes worth running it at.
//!
//! - [`test_programs`]: the programs of `corpus/` (written for the tests: every border mode,
//!   sub-domains and strides, multi-stage and multi-output steps, the step counter, reductions
//!   of each kind, `until`, integer types, 1D to 4D), each with awkward sizes (primes, a tile
//!   ± 1, smaller than a tile, exactly `2r + 1`) and a step count;
//! - [`repository_programs`]: the repository's `benchmarks/` and `examples/` programs at one
//!   small awkward size.
//!
//! Sizes are `--set` style settings (`("N0", "17")`, `("real", "f64")`), so that a case can
//! also choose a type alias or a parameter such as a stop threshold.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tessera_analysis::{BoundProgram, bind, parse_param_value};
use tessera_ir::ScalarType;

/// A program of the corpus with the settings it is tested at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// `star2d1r` for a test program, `benchmarks/j2d5pt` for a repository program.
    pub name: String,
    /// The program's file.
    pub file: PathBuf,
    /// One list of `--set` settings per size to test.
    pub sets: Vec<Vec<(String, String)>>,
    /// Steps to run.
    pub steps: u64,
}

impl Case {
    /// The program bound with the settings of size number `index`.
    pub fn bind(&self, index: usize) -> BoundProgram {
        self.bind_with(&self.sets[index])
    }

    /// The program bound with its size parameters (those of its first size, in order) set to
    /// `extents`, and `more` settings (`("real", "f64")`).
    pub fn bind_extents(&self, extents: &[usize], more: &[(&str, &str)]) -> BoundProgram {
        let mut sets: Vec<(String, String)> = (self.sets[0].iter())
            .zip(extents)
            .map(|((name, _), extent)| (name.clone(), extent.to_string()))
            .collect();
        sets.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.bind_with(&sets)
    }

    /// The program bound with `sets` (`--set` style; panics with the diagnostics when the
    /// program does not check or bind).
    pub fn bind_with(&self, sets: &[(String, String)]) -> BoundProgram {
        let text = std::fs::read_to_string(&self.file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", self.file.display()));
        let stem = self
            .file
            .file_stem()
            .map_or("program".into(), |s| s.to_string_lossy().into_owned());
        bind_source(&stem, &text, sets)
    }
}

/// The program `text` (named `name` in messages) bound with `sets` (`--set` style; panics
/// with the diagnostics when it does not parse, check or bind).
pub fn bind_source(name: &str, text: &str, sets: &[(String, String)]) -> BoundProgram {
    let fail = |what: &str, d: &dyn std::fmt::Debug| -> ! {
        panic!("{name} does not {what} with {sets:?}: {d:?}\n{text}")
    };
    let parsed = tessera_lang::parse(text, name, sets).unwrap_or_else(|d| fail("parse", &d));
    let aliases = parsed.type_overrides_used;
    let checked = tessera_analysis::check(&parsed.program).unwrap_or_else(|d| fail("check", &d));
    let values: Vec<_> = sets
        .iter()
        .filter(|(name, _)| !aliases.contains(name))
        .map(|(param, value)| {
            let constant = parse_param_value(checked.program(), param, value)
                .unwrap_or_else(|d| panic!("{name}: --set {param}={value}: {d:?}"));
            (param.clone(), constant)
        })
        .collect();
    bind(Arc::new(checked), &values).unwrap_or_else(|d| fail("bind", &d))
}

/// The repository's root directory.
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The directory of the test programs.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Settings naming `params` with each row of `values`.
fn sizes(params: &[&str], values: &[&[&str]]) -> Vec<Vec<(String, String)>> {
    values
        .iter()
        .map(|row| {
            params
                .iter()
                .zip(row.iter())
                .map(|(p, v)| (p.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// A test program of `corpus/` with its sizes and steps.
fn test_case(name: &str, sets: Vec<Vec<(String, String)>>, steps: u64) -> Case {
    Case {
        name: name.to_string(),
        file: corpus_dir().join(format!("{name}.tess")),
        sets,
        steps,
    }
}

/// Every program of `corpus/`, with its sizes and steps.
pub fn test_programs() -> Vec<Case> {
    let one =
        |name: &str, values: &[&[&str]], steps| test_case(name, sizes(&["N0"], values), steps);
    let two = |name: &str, values: &[&[&str]], steps| {
        test_case(name, sizes(&["N0", "N1"], values), steps)
    };
    let three = |name: &str, values: &[&[&str]], steps| {
        test_case(name, sizes(&["N0", "N1", "N2"], values), steps)
    };
    let planes = |name: &str, values: &[&[&str]], steps| {
        test_case(name, sizes(&["NY", "NX"], values), steps)
    };
    let volumes = |name: &str, values: &[&[&str]], steps| {
        test_case(name, sizes(&["NZ", "NY", "NX"], values), steps)
    };
    let two_d: &[&[&str]] = &[
        &["33", "31"],
        &["8", "32"],
        &["9", "33"],
        &["20", "17"],
        &["3", "3"],
        &["5", "70"],
    ];
    let three_d: &[&[&str]] = &[
        &["17", "20", "21"],
        &["4", "8", "32"],
        &["5", "9", "33"],
        &["3", "3", "3"],
        &["6", "7", "31"],
    ];
    vec![
        one("star1d2r", &[&["23"], &["5"]], 7),
        one("star1d16r", &[&["70"]], 7),
        one("star1d8r", &[&["17"], &["43"]], 7),
        two(
            "star2d1r",
            &[&["17", "20"], &["3", "3"], &["5", "35"], &["4", "50"]],
            7,
        ),
        two("star2d2r", &[&["13", "8"]], 7),
        two("box2d1r", &[&["5", "8"]], 7),
        two("box2d2r", &[&["6", "41"]], 7),
        three("star3d1r", &[&["7", "9", "11"]], 7),
        three("box3d1r", &[&["3", "3", "3"], &["4", "5", "6"]], 7),
        two("clamp2d", &[&["11", "13"], &["2", "3"]], 7),
        two("mirror2d", &[&["9", "8"]], 7),
        three("constant3d", &[&["5", "4", "7"]], 7),
        two("periodic2d", &[&["9", "10"], &["2", "3"]], 7),
        two("strided", &[&["12", "17"]], 7),
        two("rician", &[&["8", "9"], &["10", "7"]], 7),
        test_case(
            "tv2d_until",
            sizes(
                &["N0", "N1", "limit"],
                &[&["9", "12", "-1e300"], &["6", "5", "1e300"]],
            ),
            7,
        ),
        planes("j2d5pt", two_d, 3),
        planes(
            "heat2d_periodic",
            &[&["20", "17"], &["8", "32"], &["5", "5"], &["9", "33"]],
            3,
        ),
        volumes("j3d7pt", three_d, 3),
        volumes("box3d_constant", three_d, 2),
        planes("fdtd2d", two_d, 4),
        planes("partial_writes2d", two_d, 4),
        planes("unread_output2d", two_d, 5),
        volumes(
            "readonly_offsets3d",
            &[&["8", "5", "8"], &["9", "7", "12"]],
            5,
        ),
        planes("reductions2d", two_d, 4),
        planes("life", two_d, 5),
        test_case(
            "strided1d",
            sizes(&["N"], &[&["41"], &["5"], &["256"], &["257"]]),
            3,
        ),
        test_case(
            "star4d",
            sizes(
                &["NW", "NZ", "NY", "NX"],
                &[&["3", "4", "5", "33"], &["2", "3", "9", "7"]],
            ),
            2,
        ),
        test_case(
            "star1d_r2_constant",
            sizes(&["N"], &[&["5"], &["255"], &["257"], &["101"]]),
            3,
        ),
        planes(
            "box2d_r2_clamp",
            &[&["5", "5"], &["17", "31"], &["9", "33"], &["7", "3"]],
            2,
        ),
        volumes(
            "star3d_r2_periodic",
            &[&["5", "5", "5"], &["11", "9", "33"], &["7", "13", "31"]],
            2,
        ),
        planes("rician2d", &[&["3", "3"], &["19", "23"], &["8", "33"]], 3),
        planes("tv2d", &[&["3", "3"], &["13", "31"], &["9", "32"]], 3),
        planes("decay_until", &[&["11", "13"], &["8", "33"]], 40),
        planes(
            "box2d_r2_until",
            &[&["20", "17"], &["9", "33"], &["31", "23"]],
            40,
        ),
        planes(
            "functions2d",
            &[&["3", "3"], &["17", "21"], &["9", "33"]],
            3,
        ),
        planes(
            "terms2d_mirror",
            &[&["7", "9"], &["19", "23"], &["8", "33"]],
            3,
        ),
        planes(
            "terms2d_strided",
            &[&["5", "5"], &["17", "21"], &["9", "34"]],
            2,
        ),
        volumes(
            "edges3d_mixed",
            &[&["9", "10", "11"], &["5", "6", "33"], &["13", "7", "3"]],
            3,
        ),
        volumes(
            "terms3d_clamp",
            &[&["3", "4", "5"], &["11", "13", "9"], &["6", "7", "33"]],
            2,
        ),
        planes("lbm_d2q9", &[&["29", "37"], &["3", "3"], &["8", "33"]], 6),
        planes(
            "half_heat2d",
            &[&["3", "3"], &["19", "23"], &["9", "33"], &["17", "70"]],
            4,
        ),
        planes(
            "bf16_periodic",
            &[&["20", "17"], &["5", "5"], &["9", "33"]],
            3,
        ),
        planes("half_mixed", &[&["13", "35"], &["4", "5"], &["9", "33"]], 3),
        test_case(
            "math_all",
            sizes(
                &["NY", "NX", "real"],
                &[&["12", "40", "f32"], &["7", "41", "f64"]],
            ),
            3,
        ),
        planes(
            "normalise2d",
            &[&["19", "37"], &["3", "6"], &["11", "33"]],
            5,
        ),
        test_case(
            "fdtd_ricker",
            sizes(
                &["NY", "NX", "real"],
                &[&["21", "19", "f32"], &["9", "33", "f64"]],
            ),
            30,
        ),
        test_case(
            "acoustic2d",
            sizes(
                &["NY", "NX", "real"],
                &[&["21", "19", "f32"], &["9", "33", "f64"]],
            ),
            10,
        ),
        test_case("scan1d", sizes(&["N"], &[&["41"], &["2"], &["97"]]), 3),
        test_case(
            "scan2d",
            sizes(
                &["NY", "NX", "real"],
                &[
                    &["19", "37", "f32"],
                    &["3", "5", "f64"],
                    &["11", "33", "f32"],
                ],
            ),
            4,
        ),
        volumes(
            "scan3d",
            &[&["7", "5", "13"], &["2", "3", "2"], &["5", "11", "33"]],
            3,
        ),
        test_case(
            "receivers2d",
            sizes(
                &["NY", "NX", "real"],
                &[&["29", "43", "f32"], &["33", "47", "f64"]],
            ),
            24,
        ),
        test_case(
            "acoustic2d_select",
            sizes(
                &["NY", "NX", "real"],
                &[
                    &["17", "23", "f32"],
                    &["8", "33", "f64"],
                    &["5", "7", "f32"],
                ],
            ),
            9,
        ),
    ]
}

/// Every program of `benchmarks/` and `examples/` at one small awkward size (every integer
/// parameter set by the grid's rank: 37 in 1D, 19 in 2D, 11 in 3D, and distinct values where
/// a grid has one parameter per axis), for 3 steps.
pub fn repository_programs() -> Vec<Case> {
    let mut cases = Vec::new();
    for directory in ["benchmarks", "examples"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(repository_root().join(directory))
            .unwrap_or_else(|e| panic!("cannot list {directory}/: {e}"))
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|e| e == "tess"))
            .collect();
        files.sort();
        for file in files {
            let stem = file
                .file_stem()
                .map_or(String::new(), |s| s.to_string_lossy().into_owned());
            let mut case = Case {
                name: format!("{directory}/{stem}"),
                file,
                sets: vec![Vec::new()],
                steps: 3,
            };
            case.sets = vec![small_size(&case)];
            cases.push(case);
        }
    }
    cases
}

/// Settings for a small awkward size of a repository program: its integer parameters by the
/// grid's rank.
fn small_size(case: &Case) -> Vec<(String, String)> {
    let program = case.bind_with(&[]).program().clone();
    let (single, per_axis) = match program.extents.len() {
        1 => (37, [37, 37, 37]),
        2 => (19, [19, 23, 23]),
        _ => (11, [9, 11, 13]),
    };
    let integers: Vec<String> = program
        .params
        .values()
        .filter(|p| p.ty == ScalarType::I64)
        .map(|p| p.name.clone())
        .collect();
    integers
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let value = match integers.len() {
                1 => single,
                _ => per_axis[k.min(2)],
            };
            (name.clone(), value.to_string())
        })
        .collect()
}

/// The whole corpus: the test programs, then the repository's.
pub fn corpus() -> Vec<Case> {
    let mut cases = test_programs();
    cases.extend(repository_programs());
    cases
}

/// The case called `name`; panics for an unknown name.
pub fn case(name: &str) -> Case {
    corpus()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("the corpus has no program `{name}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_corpus_is_listed_and_every_case_binds() {
        let listed: Vec<String> = test_programs().iter().map(|c| c.name.clone()).collect();
        for entry in std::fs::read_dir(corpus_dir()).expect("corpus/") {
            let path = entry.expect("an entry").path();
            let stem = path
                .file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            assert!(listed.contains(&stem), "corpus/{stem}.tess has no case");
        }
        for case in corpus() {
            for index in 0..case.sets.len() {
                let bound = case.bind(index);
                assert!(bound.cell_count() > 0, "{} {index}", case.name);
            }
        }
    }
}
