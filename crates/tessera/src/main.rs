//! The `tessera` command-line tool: run, check, emit, bench, explain and verify stencil
//! programs.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
