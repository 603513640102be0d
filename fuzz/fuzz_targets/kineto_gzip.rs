//! Arbitrary bytes as a trace file: plain, gzip or zstd by magic, so inflation runs too.
//! Uncompressed inputs are also read gzip- and zstd-wrapped, and gzip-wrapped and cut.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    stepscope_fuzz::check_file(data);
});
