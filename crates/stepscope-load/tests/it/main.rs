//! Integration tests of the load generator against `stepscope-test-server`, a real HTTP/SSE
//! server on 127.0.0.1 (instant, paced, or faulty); the real vLLM server is exercised by the
//! binary's end-to-end tests.

mod load;
mod load_failures;
mod load_setup;
mod probe;
