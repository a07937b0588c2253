//! Parsing never panics; errors have valid spans; accepted programs survive the printer
//! round trip (printing the reparsed program gives the same text).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match tessera_lang::parse(text, "fuzz", &[]) {
        Err(diagnostics) => tessera_fuzz::assert_valid_diagnostics(text, &diagnostics),
        Ok(parsed) => {
            let printed = tessera_ir::print_program(&parsed.program);
            let again = tessera_lang::parse(&printed, "fuzz", &[]).expect("printed programs parse");
            assert_eq!(tessera_ir::print_program(&again.program), printed, "print -> parse -> print changed the text");
        }
    }
});
