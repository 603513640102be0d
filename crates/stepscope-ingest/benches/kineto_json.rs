//! Kineto JSON parse throughput on real traces of the public corpus (`scripts/fetch-traces.sh`), at 1 and 2 threads.
//! Set `STEPSCOPE_BENCH_TRACE=path` to add a file of your own (e.g. a tiled 1 GB trace).
//!
//! cargo bench -p stepscope-ingest --bench kineto_json

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::io::Read;
use std::path::{Path, PathBuf};
use stepscope_ingest::{ReadOptions, read_trace_bytes};

/// A real trace: the curated set or the corpus (`scripts/fetch-traces.sh`).
fn shared(relative: &str) -> PathBuf {
    stepscope_testdata::find(relative)
}

fn inflate(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).expect("bench trace exists");
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return raw;
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(&raw[..])
        .read_to_end(&mut out)
        .expect("gzip inflates");
    out
}

fn bench(c: &mut Criterion) {
    let mut inputs = vec![
        (
            "mtia_rank_0",
            shared("hta/tests/data/mtia_trace_single_rank/mtia_rank_0.json.gz"),
        ),
        (
            "xdit_sd_3.5",
            shared("tracelens/tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz"),
        ),
    ];
    if let Some(extra) = std::env::var_os("STEPSCOPE_BENCH_TRACE") {
        inputs.push(("custom", PathBuf::from(extra)));
    }
    let mut group = c.benchmark_group("kineto_json");
    group.sample_size(10);
    for (name, path) in inputs {
        let bytes = inflate(&path);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        for threads in [1, 2] {
            let options = ReadOptions::default().with_threads(threads);
            group.bench_function(format!("{name}/{threads}t"), |b| {
                b.iter(|| read_trace_bytes(&bytes, &options).expect("parses"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
