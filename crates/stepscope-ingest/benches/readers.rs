//! Every reader's throughput on the same run: the real piecewise vLLM trace (25 graph
//! replays) tiled in time, then written in each format by `stepscope_synth::formats` (the
//! calls and kernels the other profilers would record; rocpd by `stepscope_synth::rocpd`), plus the real rocprofv3 JSON sample
//! and the real Nsight Systems export (no writer for that format outside the tests). MB/s from criterion; events/s = the events each input
//! holds (printed at setup) / the median time.
//!
//! cargo bench -p stepscope-ingest --bench readers
//! STEPSCOPE_BENCH_COPIES=N changes the tiling (default 40).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::path::{Path, PathBuf};
use stepscope_ingest::{ReadOptions, read_trace_file};
use stepscope_synth::formats::{Parts, rocprof_json, rpd_json, write_rocprof_csv, write_rpd};

/// A real trace: the curated set or the corpus (`scripts/fetch-traces.sh`).
fn shared(relative: &str) -> PathBuf {
    stepscope_testdata::find(relative)
}

/// The piecewise trace tiled `copies` times, parsed.
fn tiled(copies: usize) -> serde_json::Value {
    let path = shared(
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    );
    let bytes = stepscope_synth::read_trace_bytes(&path).expect("trace");
    let mut out = Vec::new();
    stepscope_synth::tile::tile(&bytes, copies, &mut out).expect("tile");
    serde_json::from_slice(&out).expect("json")
}

/// One benchmark input: a file (read as `stepscope analyze` reads it) and its size.
struct Case {
    name: String,
    path: PathBuf,
    bytes: u64,
}

fn cases(dir: &Path, copies: usize) -> Vec<Case> {
    let doc = tiled(copies);
    let parts = Parts::of_kineto(&doc);
    let kineto = dir.join("tiled.json");
    std::fs::write(&kineto, serde_json::to_vec(&doc).expect("json")).expect("write");
    let csv = write_rocprof_csv(&parts, dir, "tiled_").expect("csv");
    let rocprof = dir.join("tiled_results.json");
    std::fs::write(
        &rocprof,
        serde_json::to_vec(&rocprof_json(&parts)).expect("json"),
    )
    .expect("write");
    let rpd = dir.join("tiled.rpd");
    write_rpd(&parts, &rpd).expect("rpd");
    let rpd_export = dir.join("tiled_rpd.json");
    std::fs::write(
        &rpd_export,
        serde_json::to_vec(&rpd_json(&parts)).expect("json"),
    )
    .expect("write");
    let rocpd = dir.join("tiled_results.db");
    let options = stepscope_synth::rocpd::RocpdOptions::default();
    stepscope_synth::rocpd::write_rocpd(&parts, &rocpd, &options).expect("rocpd");
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let csv_size = size(&csv) + size(&dir.join("tiled_hip_api_trace.csv"));
    let mut cases = vec![
        ("kineto-json/tiled", kineto.clone(), size(&kineto)),
        ("rocprof-csv/tiled", csv, csv_size),
        ("rocprof-json/tiled", rocprof.clone(), size(&rocprof)),
        ("rpd/tiled", rpd.clone(), size(&rpd)),
        ("rpd-json/tiled", rpd_export.clone(), size(&rpd_export)),
        ("rocpd/tiled", rocpd.clone(), size(&rocpd)),
    ];
    // Real files of those formats (inflated size for the gzip one).
    let real = shared("tracelens/tests/rocprof/908_results.json.gz");
    let inflated = stepscope_synth::read_trace_bytes(&real).map_or(0, |b| b.len() as u64);
    cases.push(("rocprof-json/908_results", real, inflated));
    let nsys = shared("nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite");
    let nsys_size = size(&nsys);
    cases.push(("nsys-sqlite/h100_2gpu_1s", nsys, nsys_size));
    cases
        .into_iter()
        .map(|(name, path, bytes)| Case {
            name: name.to_owned(),
            path,
            bytes,
        })
        .collect()
}

#[allow(clippy::print_stderr)]
fn bench(c: &mut Criterion) {
    let copies = std::env::var("STEPSCOPE_BENCH_COPIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("readers");
    group.sample_size(10);
    for case in cases(dir.path(), copies) {
        let options = ReadOptions::default();
        let trace = read_trace_file(&case.path, &options).expect("reads");
        eprintln!(
            "{}: {:.1} MB, {} events ({} GPU, {} runtime calls)",
            case.name,
            case.bytes as f64 / 1e6,
            trace.counts.events,
            trace.gpu.len(),
            trace.runtime.len()
        );
        group.throughput(Throughput::Bytes(case.bytes));
        group.bench_function(&case.name, |b| {
            b.iter(|| read_trace_file(&case.path, &options).expect("reads"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
