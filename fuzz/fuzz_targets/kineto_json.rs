//! Arbitrary bytes as decompressed Kineto JSON: no panic, errors with offsets inside the
//! input, `allow_truncated` keeps a partial trace, and 1 and 2 threads agree.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    stepscope_fuzz::check_bytes(data);
});
