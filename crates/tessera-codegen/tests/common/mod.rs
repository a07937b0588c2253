//! Compiling and running a C driver over generated C: the C twins of Rust algorithms are
//! checked against them bitwise this way.

use std::path::Path;
use std::process::Command;

/// Compiles `source` (a program whose `main(argc, argv)` reads the file `argv[1]` and writes
/// `argv[2]`) as `dir/NAME.c` with `flags` after `-std=c11 -Wall -Werror -ffp-contract=off`,
/// runs it on `input` and returns what it wrote.
pub fn run_c_driver(dir: &Path, name: &str, source: &str, flags: &[&str], input: &[u8]) -> Vec<u8> {
    let (c_file, exe) = (dir.join(format!("{name}.c")), dir.join(name));
    let (input_file, output_file) = (dir.join("in.bin"), dir.join("out.bin"));
    std::fs::write(&c_file, source).expect("write the C source");
    let compiler = std::env::var("TESSERA_CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(compiler)
        .args(["-std=c11", "-Wall", "-Werror", "-ffp-contract=off"])
        .args(flags)
        .arg(&c_file)
        .arg("-o")
        .arg(&exe)
        .arg("-lm")
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "{name}.c compiles with {flags:?}");
    std::fs::write(&input_file, input).expect("write the arguments");
    let status = Command::new(&exe)
        .arg(&input_file)
        .arg(&output_file)
        .status()
        .expect("run the driver");
    assert!(status.success(), "the {name} driver runs");
    std::fs::read(&output_file).expect("read the results")
}
