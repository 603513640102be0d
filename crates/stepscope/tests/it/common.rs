//! Helpers shared by the integration tests.

use std::path::PathBuf;
use stepscope_ingest::{KinetoJsonOptions, ReadOptions, read_trace_file};
use stepscope_model::Trace;

/// `../shared/traces` beside the checkout (CI lays it out the same way).
pub fn shared_traces() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    assert!(
        root.is_dir(),
        "expected the shared traces at {}",
        root.display()
    );
    root
}

/// A file under `../shared/traces`.
pub fn shared(relative: &str) -> PathBuf {
    shared_traces().join(relative)
}

/// Reads a shared trace with `threads` parse threads.
pub fn read_with_threads(relative: &str, threads: usize) -> Trace {
    let options =
        ReadOptions::default().with_kineto(KinetoJsonOptions::default().with_threads(threads));
    read_trace_file(&shared(relative), &options).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Reads a shared trace with the default options.
pub fn read(relative: &str) -> Trace {
    read_with_threads(relative, 0)
}
