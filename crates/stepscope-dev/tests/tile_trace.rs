//! `tile-trace`, the benchmark's trace multiplier: a real trace repeated in time reads back
//! with every event copied, replays and verdict intact.

use std::path::{Path, PathBuf};
use std::process::Command;
use stepscope_analysis::KernelCategories;
use stepscope_analysis::{AnalysisOptions, TraceAnalysis, analyze};
use stepscope_ingest::{ReadOptions, read_trace_file};
use stepscope_model::Trace;

/// The real piecewise vLLM trace (25 graph replays).
fn piecewise() -> PathBuf {
    stepscope_testdata::trace(
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    )
}

fn read(path: &Path) -> (Trace, TraceAnalysis) {
    let trace = read_trace_file(path, &ReadOptions::default()).expect("reads");
    let table = KernelCategories::embedded();
    let analysis = analyze(&trace, &AnalysisOptions::new(&table));
    (trace, analysis)
}

#[test]
fn tiled_trace_reads_back_with_every_replay_copied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copies = 3;
    let (original, original_analysis) = read(&piecewise());
    // The size of the inflated JSON, to ask for just under three copies of it.
    let mut json = Vec::new();
    let file = std::fs::File::open(piecewise()).expect("open");
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(file), &mut json).expect("gunzip");
    let size = json.len() as u64;
    for gzip in [false, true] {
        let out = dir
            .path()
            .join(if gzip { "tiled.json.gz" } else { "tiled.json" });
        let mut command = Command::new(env!("CARGO_BIN_EXE_tile-trace"));
        command
            .arg(piecewise())
            .args(["--target-bytes", &(copies * size - 1).to_string(), "-o"])
            .arg(&out);
        if gzip {
            command.arg("--gzip");
        }
        let status = command.status().expect("tile-trace runs");
        assert!(status.success());
        let (tiled, analysis) = read(&out);
        let n = copies as usize;
        assert_eq!(tiled.gpu.len(), n * original.gpu.len(), "gzip: {gzip}");
        assert_eq!(
            tiled.runtime.len(),
            n * original.runtime.len(),
            "gzip: {gzip}"
        );
        assert_eq!(
            tiled.cpu_ops.len(),
            n * original.cpu_ops.len(),
            "gzip: {gzip}"
        );
        assert_eq!(
            analysis.coverage.totals.replays,
            copies as u32 * original_analysis.coverage.totals.replays,
            "gzip: {gzip}"
        );
        // The piecewise trace's 12- and 4-kernel graphs replay once each, so their sizes rest
        // on themselves (`unverified`); three copies corroborate them.
        assert_eq!(original_analysis.coverage.verdict.as_str(), "unverified");
        assert_eq!(analysis.coverage.verdict.as_str(), "complete");
    }
}

#[test]
fn tile_trace_refuses_a_bad_size_and_a_missing_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("x.json");
    let bad_size = Command::new(env!("CARGO_BIN_EXE_tile-trace"))
        .arg(piecewise())
        .args(["--target-bytes", "12 parsecs", "-o"])
        .arg(&out)
        .output()
        .expect("runs");
    assert_eq!(bad_size.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_size.stderr).contains("--target-bytes"));
    let missing = Command::new(env!("CARGO_BIN_EXE_tile-trace"))
        .args(["no/such/trace.json", "--target-bytes", "1M", "-o"])
        .arg(&out)
        .output()
        .expect("runs");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/trace.json"));
}
