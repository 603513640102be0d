//! Reads trace files as `stepscope analyze` does and prints what was read and how long it
//! took: the reader alone, without the analysis (the benchmark script times it beside a plain
//! scan of the same data).
//!
//! `cargo run --release -p stepscope-ingest --example read -- FILE...`

use std::io::Write;
use std::time::Instant;
use stepscope_ingest::{ReadOptions, read_trace_file};

fn main() {
    let mut failed = false;
    for path in std::env::args_os().skip(1) {
        let started = Instant::now();
        match read_trace_file(path.as_ref(), &ReadOptions::default()) {
            Ok(trace) => drop(writeln!(
                std::io::stdout(),
                "{}: {} events read ({} GPU events, {} runtime calls, {} annotations) in {:.2} s",
                path.to_string_lossy(),
                trace.counts.events,
                trace.gpu.len(),
                trace.runtime.len(),
                trace.annotations.len(),
                started.elapsed().as_secs_f64()
            )),
            Err(e) => {
                drop(writeln!(
                    std::io::stderr(),
                    "{}: {e}",
                    path.to_string_lossy()
                ));
                failed = true;
            }
        }
    }
    std::process::exit(i32::from(failed));
}
