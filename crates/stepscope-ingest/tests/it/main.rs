//! Integration tests of the trace readers: generated documents read back exactly and the
//! same at any thread count (property tests), truncated and corrupted input, compressed
//! files, events refused as damage, the checks after every reader, and errors' hints.
//!
//! `cargo test -p stepscope-ingest --test it`; the fuzz targets live in `fuzz/`.

mod alloc;
mod bugs;
mod common;
mod compressed;
mod corruption;
mod damage;
mod edit;
mod errors;
mod formats;
mod generate;
mod nsys_sqlite;
mod op_args;
mod rocprof_csv;
mod rocprof_json;
mod rpd;
mod stream;
mod truncation;
mod valid_docs;
mod validate;
