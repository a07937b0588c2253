//! Times the CPU backend's strategies on benchmark programs (`benchmarks/*.tess`).
//!
//! ```text
//! cargo run --release -p tessera-cpu --example cpu_bench -- [ROW ...]
//! ROW = FILE.tess[,NAME=VALUE...][@STEPS]     e.g. benchmarks/j2d5pt.tess,real=f64@100
//! ```
//!
//! Without rows it runs the seven CPU rows of the performance table (docs/performance.md).
//! Environment: `STRATEGIES` (comma-separated, `auto` = the automatic choice; default
//! `naive,parallel,overlapped,wavefront,auto`; an entry `NAME:TILE:T` gives that strategy its
//! own tile and time tile, e.g. `parallel,wavefront:256x64x256:4,wavefront:256x32x256:4`),
//! `REPS` (timed runs, default 5), `EXACT`, `TILE` (e.g. `4096x512`), `T` (time tile),
//! `THREADS`.
//!
//! Per row and strategy it prints the best and median GCells/s over the timed runs (each run
//! is the full step count on the same fields, after a 2-step warm-up run; the strategies' runs
//! are interleaved, so that drifting load affects them alike; the time is the backend's compute
//! time, which excludes setting up the spare buffers), the effective bandwidth
//! of the best run under the traffic model (`BoundProgram::traffic_bytes_per_point`: one read
//! of every field a stage reads and one write of every field a stage writes, per point and
//! step), the roofline bound (triad bandwidth / bytes per point) and the fraction of it
//! reached. Triad bandwidth is measured before and
//! after the rows; the roofline uses the first measurement.

use tessera_analysis::BoundProgram;
use tessera_cpu::CpuBackend;
use tessera_ir::half::storage_bits_from_f32;
use tessera_plan::{Arithmetic, PlanRequest, Strategy};
use tessera_runtime::random::SplitMix64;
use tessera_runtime::{Backend, Buffer, FieldSet};
use tessera_testkit::Case;

/// The rows of docs/performance.md: file, `--set` pairs, steps.
const DEFAULT_ROWS: &[&str] = &[
    "benchmarks/j2d5pt.tess@100",
    "benchmarks/j2d5pt.tess,real=f64@100",
    "benchmarks/j2d9pt-box.tess@100",
    "benchmarks/gaussian2d.tess@20",
    "benchmarks/j3d7pt.tess@50",
    "benchmarks/j3d7pt.tess,real=f64@50",
    "benchmarks/j3d27pt.tess@20",
];

/// One benchmark row: the bound program and its step count.
struct Row {
    label: String,
    bound: BoundProgram,
    steps: u64,
}

fn load(spec: &str) -> Row {
    let (spec, steps) = match spec.split_once('@') {
        Some((s, n)) => (s, Some(n.parse::<u64>().expect("steps after @"))),
        None => (spec, None),
    };
    let mut parts = spec.split(',');
    let path = parts.next().expect("a file");
    let sets: Vec<(String, String)> = parts
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("NAME=VALUE");
            (k.to_string(), v.to_string())
        })
        .collect();
    let case = Case {
        name: path.to_string(),
        file: path.into(),
        sets: vec![sets],
        steps: 0,
    };
    let bound = case.bind(0);
    let steps = steps.or(bound.program().default_steps).unwrap_or(10);
    let stem = std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("program");
    let types: Vec<String> = bound
        .program()
        .fields
        .values()
        .map(|f| f.ty.to_string())
        .collect();
    let size: Vec<String> = bound.extents.iter().map(usize::to_string).collect();
    Row {
        label: format!("{} {} {}x{steps}", stem, types.join("/"), size.join("x")),
        bound,
        steps,
    }
}

/// Seeded values in [0, 1), the same for every strategy.
fn inputs(bound: &BoundProgram) -> FieldSet {
    let mut fields = FieldSet::zeros(bound);
    let mut rng = SplitMix64::new(1);
    for buffer in &mut fields.buffers {
        let ty = buffer.ty();
        match buffer {
            Buffer::F32(v) => v.iter_mut().for_each(|x| *x = rng.next_f64() as f32),
            Buffer::F64(v) => v.iter_mut().for_each(|x| *x = rng.next_f64()),
            Buffer::F16(v) | Buffer::Bf16(v) => v
                .iter_mut()
                .for_each(|x| *x = storage_bits_from_f32(ty, rng.next_f64() as f32)),
            _ => {}
        }
    }
    fields
}

fn env_list(name: &str) -> Option<Vec<usize>> {
    std::env::var(name).ok().map(|t| tile_list(&t))
}

fn tile_list(text: &str) -> Vec<usize> {
    text.split('x').map(|v| v.parse().expect("tile")).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let specs: Vec<String> = if args.is_empty() {
        DEFAULT_ROWS.iter().map(|s| s.to_string()).collect()
    } else {
        args
    };
    let strategies: Vec<String> = std::env::var("STRATEGIES")
        .unwrap_or_else(|_| "naive,parallel,overlapped,wavefront,auto".into())
        .split(',')
        .map(str::to_string)
        .collect();
    let reps: usize = std::env::var("REPS").map_or(5, |r| r.parse().expect("REPS"));
    let exact = std::env::var("EXACT").is_ok();
    let info = tessera_jit::cpu_info();
    println!(
        "{}, {} threads available, L2 {:?} B, L3 {:?} B",
        info.model_name, info.available_threads, info.l2_bytes, info.l3_bytes
    );
    let before = tessera_jit::measure_bandwidth(None).expect("bandwidth");
    println!(
        "triad bandwidth before: {:.1} GB/s best, {:.1} GB/s median ({} threads)",
        before.triad_gb_s, before.triad_median_gb_s, before.threads
    );
    println!(
        "| program | strategy | plan | best GCells/s | median GCells/s | effective GB/s | roofline GCells/s | fraction of roofline |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let backend = CpuBackend::default();
    for spec in &specs {
        let row = load(spec);
        let bytes = row.bound.traffic_bytes_per_point() as f64;
        let roofline = before.triad_gb_s / bytes;
        // Prepare every strategy, then interleave their timed runs so that drifting machine
        // load affects all of them alike.
        let mut runs = Vec::new();
        for name in &strategies {
            let mut parts = name.split(':');
            let strategy = parts
                .next()
                .filter(|s| *s != "auto")
                .map(|s| Strategy::from_name(s).expect("a strategy name"));
            let tile = parts.next().map(tile_list).or_else(|| env_list("TILE"));
            let time_tile = parts
                .next()
                .or(std::env::var("T").ok().as_deref())
                .map(|t| t.parse().expect("T"));
            let name = name.as_str();
            let options = PlanRequest {
                strategy,
                arithmetic: if exact {
                    Arithmetic::Exact
                } else {
                    Arithmetic::Relaxed
                },
                tile,
                time_tile,
                threads: std::env::var("THREADS")
                    .ok()
                    .map(|t| t.parse().expect("THREADS")),
                ..PlanRequest::default()
            };
            match backend.plan_and_prepare(&row.bound, &options) {
                Ok(mut exe) => {
                    let mut fields = inputs(&row.bound);
                    exe.run(&mut fields, 0, 2, &mut ()).expect("warm-up");
                    runs.push((name, exe, fields, Vec::new(), String::new()));
                }
                Err(e) => println!("| {} | {name} | not run: {e} | | | | | |", row.label),
            }
        }
        for _ in 0..reps.max(1) {
            for (_, exe, fields, rates, plan) in &mut runs {
                let report = exe.run(fields, 0, row.steps, &mut ()).expect("runs");
                let cells = row.bound.updated_points() as f64 * report.steps as f64;
                rates.push(cells / report.compute_time.as_secs_f64() / 1e9);
                *plan = report.plan.trim_start_matches("cpu ").to_string();
            }
        }
        for (name, _, _, mut rates, plan) in runs {
            rates.sort_by(f64::total_cmp);
            let best = rates[rates.len() - 1];
            let median = rates[rates.len() / 2];
            println!(
                "| {} | {name} | {plan} | {best:.2} | {median:.2} | {:.1} | {roofline:.2} | {:.2} |",
                row.label,
                best * bytes,
                best / roofline
            );
        }
    }
    let after = tessera_jit::measure_bandwidth(None).expect("bandwidth");
    println!(
        "triad bandwidth after: {:.1} GB/s best, {:.1} GB/s median",
        after.triad_gb_s, after.triad_median_gb_s
    );
}
