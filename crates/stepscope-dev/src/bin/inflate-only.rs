//! `inflate-only FILE`: inflates a `.json.gz` or `.json.zst` trace exactly as `stepscope
//! analyze` does (same decoder, same pieces) and drops the text, printing how many bytes
//! came out. The time it takes is the floor under reading that file on two cores:
//! `scripts/bench-analyze.sh` runs it beside HolisticTraceAnalysis, so the ratio it allows
//! is measured in the same run.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: inflate-only FILE (.json.gz or .json.zst)");
        return ExitCode::from(2);
    };
    match stepscope_ingest::inflate_only(&path) {
        Ok(bytes) => {
            println!("{bytes} bytes inflated from {}", path.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}
