//! Every file of the trace corpus (`testdata/corpus.tsv`) is detected as the format it really is (testdata/SOURCES.md
//! says which each one is), and nothing else is taken for a trace: the TraceLens reference
//! CSVs and the manifest itself detect as no format.

use crate::common::shared;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use stepscope_ingest::{Input, TraceFormat, sqlite};

/// The format testdata/SOURCES.md gives the file, by its place in the folder.
fn expected(name: &str) -> Option<TraceFormat> {
    let table = [
        "kernel_trace.csv",
        "hip_runtime_trace.csv",
        "MI300X_A1/timestamps.csv",
        "MI300X_A1/pmc_perf.csv",
    ];
    if table.iter().any(|t| name.ends_with(t)) {
        Some(TraceFormat::RocprofCsv)
    } else if name.ends_with("matmul_result.json") {
        Some(TraceFormat::RpdJson)
    } else if name.ends_with(".rpd") {
        Some(TraceFormat::RpdSqlite)
    } else if name.ends_with(".sqlite") {
        Some(TraceFormat::NsysSqlite)
    } else if name.contains("908_results") {
        Some(TraceFormat::RocprofJson)
    } else if name.ends_with(".json") || name.ends_with(".json.gz") {
        Some(TraceFormat::KinetoJson)
    } else {
        None
    }
}

/// What stepscope detects: SQLite databases by their tables, anything else by its first
/// 64 KiB (inflated) with a definite sniff.
fn detected(path: &Path) -> Option<TraceFormat> {
    let head = head(path);
    if head.starts_with(sqlite::MAGIC) {
        let label = path.display().to_string();
        let input = Input {
            label: &label,
            bytes: &head,
            path: Some(path),
        };
        let db = sqlite::open(&input, false).expect("opens");
        return sqlite::detect(&db).expect("schema");
    }
    TraceFormat::detect(&head).filter(|f| f.sniff(&head) == Some(true))
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn every_shared_file_is_detected_as_its_real_format() {
    let mut files = Vec::new();
    walk(&shared(""), &mut files);
    files.sort();
    let mut found = BTreeMap::<&str, usize>::new();
    for path in &files {
        let name = path.to_string_lossy();
        assert_eq!(detected(path), expected(&name), "{name}");
        *found
            .entry(expected(&name).map_or("none", TraceFormat::name))
            .or_default() += 1;
    }
    // testdata/SOURCES.md: 4 rocprof CSV tables, 1 rocprofv3 JSON, 1 RPD, 1 rpd2tracing JSON,
    // 4 Nsight Systems SQLite, 29 Kineto JSON; the rest are TraceLens's reference CSVs.
    assert_eq!(found.get("rocprof-csv"), Some(&4), "{found:?}");
    assert_eq!(found.get("rocprof-json"), Some(&1), "{found:?}");
    assert_eq!(found.get("rpd"), Some(&1), "{found:?}");
    assert_eq!(found.get("rpd-json"), Some(&1), "{found:?}");
    assert_eq!(found.get("nsys-sqlite"), Some(&4), "{found:?}");
    assert!(
        found.get("kineto-json").is_some_and(|n| *n >= 25),
        "{found:?}"
    );
}

/// A trace records the format it was read as: the smallest shared file of each format, read
/// whole (compressed Kineto JSON through the streamed reader).
#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn a_trace_records_the_format_it_was_read_as() {
    let mut files = Vec::new();
    walk(&shared(""), &mut files);
    let mut smallest = BTreeMap::<&str, (u64, PathBuf)>::new();
    for path in files {
        let Some(format) = expected(&path.to_string_lossy()) else {
            continue;
        };
        let size = std::fs::metadata(&path).expect("size").len();
        let entry = smallest
            .entry(format.name())
            .or_insert((size, path.clone()));
        if size < entry.0 {
            *entry = (size, path);
        }
    }
    // No public rocpd database exists: one is written from a real trace (see the rocpd tests).
    let dir = tempfile::tempdir().expect("tempdir");
    let rocpd = dir.path().join("1_results.db");
    let piecewise = stepscope_synth::removal::read_json(&shared(
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    ))
    .expect("trace");
    let parts = stepscope_synth::formats::Parts::of_kineto(&piecewise);
    let options = stepscope_synth::rocpd::RocpdOptions::default();
    stepscope_synth::rocpd::write_rocpd(&parts, &rocpd, &options).expect("rocpd");
    smallest.insert(TraceFormat::Rocpd.name(), (0, rocpd));
    assert_eq!(smallest.len(), TraceFormat::ALL.len(), "{smallest:?}");
    for (name, (_, path)) in &smallest {
        let trace = stepscope_ingest::read_trace_file(path, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(trace.metadata.format, Some(*name), "{}", path.display());
    }
    let gz = shared(
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    );
    let trace = stepscope_ingest::read_trace_file(&gz, &Default::default()).expect("reads");
    assert_eq!(trace.metadata.format, Some("kineto-json"));
}

fn head(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).expect("read");
    if bytes.starts_with(&[0x1f, 0x8b]) {
        use std::io::Read;
        let mut out = Vec::new();
        let _ = flate2::read::MultiGzDecoder::new(&bytes[..])
            .take(1 << 16)
            .read_to_end(&mut out);
        return out;
    }
    bytes
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}
