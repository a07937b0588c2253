//! Prints the random program of each seed given (`tessera_testkit::random`), to reproduce a
//! failure of the random-program suites: `cargo run -p tessera-testkit --example
//! random_program -- 17 > random_17.tess`.

use tessera_testkit::random::RandomProgram;

fn main() {
    for arg in std::env::args().skip(1) {
        let Ok(seed) = arg.parse::<u64>() else {
            eprintln!("error: `{arg}` is not a seed (an unsigned integer)");
            std::process::exit(1);
        };
        let program = RandomProgram::new(seed);
        println!("// steps: {}\n{}", program.steps, program.text);
    }
}
