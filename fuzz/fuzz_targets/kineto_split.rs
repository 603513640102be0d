//! The parallel split of `traceEvents`: the input (two bytes of shift, then event text) is
//! placed between two filler events so the document passes the 4 MiB threshold and the
//! two-thread reader's guessed cut lands inside it; 1 and 2 threads must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

thread_local! {
    static BUFFERS: RefCell<(Vec<u8>, Vec<u8>)> =
        RefCell::new((Vec::new(), stepscope_fuzz::filler_pad()));
}

fuzz_target!(|data: &[u8]| {
    BUFFERS.with_borrow_mut(|(document, pad)| stepscope_fuzz::check_split(data, document, pad));
});
