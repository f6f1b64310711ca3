#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baremark_fuzz::targets::run_config(data));
