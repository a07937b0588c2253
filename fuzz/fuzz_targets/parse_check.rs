//! Parse, check and bind (parameter defaults) never panic; every error has a valid span.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let checked = match tessera_lang::compile(text, "fuzz", &[("real".to_string(), "f64".to_string())]) {
        Ok((checked, _)) => checked,
        Err(diagnostics) => return tessera_fuzz::assert_valid_diagnostics(text, &diagnostics),
    };
    if let Err(diagnostics) = tessera_analysis::bind(Arc::new(checked), &[]) {
        tessera_fuzz::assert_valid_diagnostics(text, &diagnostics);
    }
});
