//! Arbitrary op arguments through the whole analysis: the first byte picks an op with a
//! performance model, the rest (split at newlines) becomes its `Input Dims`, `Input type`,
//! `Input Strides` and `Concrete Inputs` (as JSON where it parses, else as a string). No
//! panic; every efficiency row has finite, non-negative FLOPs, bytes and rates.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    stepscope_fuzz::efficiency::check(data);
});
