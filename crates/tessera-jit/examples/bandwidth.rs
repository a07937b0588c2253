//! Prints the host CPU facts and its measured memory bandwidth (default sizes).
//!
//! `cargo run --release -p tessera-jit --example bandwidth [THREADS]`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads = std::env::args()
        .nth(1)
        .map(|arg| arg.parse::<usize>())
        .transpose()?;
    let info = tessera_jit::cpu_info();
    println!("{info:#?}");
    println!(
        "default array size: {} MiB",
        tessera_jit::stream::default_array_bytes() >> 20
    );
    let bandwidth = tessera_jit::measure_bandwidth(threads)?;
    println!("{bandwidth:#?}");
    println!(
        "triad {:.1} GB/s best, {:.1} median; copy {:.1} GB/s best, {:.1} median ({} threads, STREAM byte counting)",
        bandwidth.triad_gb_s,
        bandwidth.triad_median_gb_s,
        bandwidth.copy_gb_s,
        bandwidth.copy_median_gb_s,
        bandwidth.threads
    );
    Ok(())
}
