//! `tessera check`: parse, check and bind; print diagnostics (as errors) or a summary.

use tessera::Error;

use super::args::ProgramArgs;
use super::describe::{details, headline};

/// Checks the program; prints `ok: ...` and its description.
pub fn check(args: &ProgramArgs) -> Result<i32, Error> {
    let session = args.load()?;
    println!("ok: {}", headline(&session));
    for line in details(&session) {
        println!("  {line}");
    }
    Ok(0)
}
