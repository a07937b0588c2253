//! Writes `benchmarks/<family>.tess` for the sixteen generated programs.
//!
//! Run from anywhere: `cargo run -p tessera-bench-programs --example gen_families`.

use std::path::Path;

use tessera_bench_programs::families::Family;

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benchmarks");
    for family in Family::all() {
        let path = dir.join(format!("{}.tess", family.name()));
        std::fs::write(&path, family.source())?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
