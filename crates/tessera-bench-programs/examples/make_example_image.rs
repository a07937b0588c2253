//! Writes `examples/data/shapes.png`, the 8-bit grayscale picture of the blur and Canny
//! examples: `cargo run -p tessera-bench-programs --example make_example_image`.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use tessera_bench_programs::example_image::{HEIGHT, WIDTH, pixels};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/data/shapes.png");
    let mut encoder = png::Encoder::new(
        BufWriter::new(File::create(&path)?),
        WIDTH as u32,
        HEIGHT as u32,
    );
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header()?.write_image_data(&pixels())?;
    println!("wrote {}", path.display());
    Ok(())
}
