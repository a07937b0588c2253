//! The front end and the checks are linear in the program's size: a generated program of many
//! fields, parameters, stages, lets, long expressions and reductions parses, checks, binds and
//! has its dependencies computed. The guard checks about 2 MB (a quadratic pass makes it tens
//! of times slower, as it made the 12 MB program take minutes); the ignored benchmark checks
//! 12 MB and prints the seconds (`scripts/front-end-bench.sh` runs it in release and times
//! `tessera check` on the file).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

/// Fields read and written by each generated stage.
const FIELDS_PER_STAGE: usize = 16;
/// Lets of each generated stage.
const LETS_PER_STAGE: usize = 4;
/// Field reads in each generated `let`.
const READS_PER_LET: usize = 6;

/// A valid program of `items` parameters, fields and after-step reductions, a stage per
/// [`FIELDS_PER_STAGE`] fields (lets over long sums of reads), and one stage of `items / 4`
/// chained lets.
fn generated_program(items: usize) -> String {
    let mut text = String::from(
        "program big;\nparam H: i64 = 8;\nparam W: i64 = 8;\ngrid [H, W];\nsteps 1;\n",
    );
    for i in 0..items {
        let _ = writeln!(
            text,
            "param c{i}: f32 = 0.5;\nfield f{i}: f32 border clamp;"
        );
    }
    for s in 0..items / FIELDS_PER_STAGE {
        let _ = writeln!(text, "stage s{s} {{");
        for l in 0..LETS_PER_STAGE {
            let reads: Vec<String> = (0..READS_PER_LET)
                .map(|r| {
                    let field = s * FIELDS_PER_STAGE + (l * READS_PER_LET + r) % FIELDS_PER_STAGE;
                    format!(
                        "c{field} * f{field}[{}, {}]",
                        (r % 3) as i64 - 1,
                        (l % 3) as i64 - 1
                    )
                })
                .collect();
            let _ = writeln!(text, "    let a{l} = {};", reads.join(" + "));
        }
        let sum: Vec<String> = (0..LETS_PER_STAGE).map(|l| format!("a{l}")).collect();
        let _ = writeln!(
            text,
            "    f{} = {};\n}}",
            s * FIELDS_PER_STAGE,
            sum.join(" + ")
        );
    }
    text.push_str("stage chain {\n    let b0 = f0;\n");
    for l in 1..items / 4 {
        let _ = writeln!(text, "    let b{l} = b{} + f{l}[1, 0];", l - 1);
    }
    let _ = writeln!(text, "    f0 = b{};\n}}", items / 4 - 1);
    for i in 0..items {
        let _ = writeln!(text, "reduce r{i} = sum(f{i}) every 1;");
    }
    text
}

/// Items of the 12 MB benchmark program.
const BENCHMARK_ITEMS: usize = 80_000;

/// Parses, checks and binds `text` and computes its dependencies; panics on any diagnostic.
fn run_front_end(text: &str) -> usize {
    let parsed = tessera_lang::parse(text, "big", &[]).expect("the generated program parses");
    let checked = tessera_analysis::check(&parsed.program).expect("the generated program checks");
    let dependencies = tessera_analysis::deps::dependencies(&checked).len();
    tessera_analysis::bind(Arc::new(checked), &[]).expect("the generated program binds");
    dependencies
}

#[test]
fn a_two_megabyte_program_of_45_000_names_checks() {
    let items = 15_000;
    let text = generated_program(items);
    assert!(text.len() > 2_000_000, "{} bytes", text.len());
    assert!(run_front_end(&text) >= items);
}

/// The 12 MB benchmark: `TESSERA_BIG_PROGRAM=PATH` also writes the program there.
#[test]
#[ignore = "a benchmark: prints the seconds the front end takes on 12 MB"]
fn twelve_megabytes() {
    let text = generated_program(BENCHMARK_ITEMS);
    if let Some(path) = std::env::var_os("TESSERA_BIG_PROGRAM") {
        std::fs::write(&path, &text).expect("writing the generated program");
    }
    let start = Instant::now();
    run_front_end(&text);
    println!(
        "{:.1} MB: parse + check + bind + deps in {:.2} s",
        text.len() as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
}
