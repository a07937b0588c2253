//! The `tessera` command-line tool: run, check, emit, bench and explain stencil programs.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
