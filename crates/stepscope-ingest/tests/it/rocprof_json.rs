//! rocprofv3 JSON on the real sample of the trace corpus (`testdata/corpus.tsv`) (TraceLens's `908_results`, a
//! training run on an MI350X recorded with kernel tracing only), each count pinned to an
//! independent reading with Python's `json` (quoted in each test).

use crate::common::shared;
use stepscope_ingest::{ReadOptions, TraceFormat, read_trace_bytes, read_trace_file};
use stepscope_model::GpuEventKind;

const SAMPLE: &str = "tracelens/tests/rocprof/908_results.json.gz";

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn the_rocprofv3_json_sample_reads_with_exact_counts() {
    // d = json.load(gzip.open(...))["rocprofiler-sdk-tool"][0]
    // len(d["buffer_records"]["kernel_dispatch"]) → 43915;
    // sum(r["end_timestamp"] - r["start_timestamp"] for r in ...) → 4441741378 ns;
    // min start 63857982592000, max end 63873104615494;
    // len({r["dispatch_info"]["kernel_id"] for r in ...}) → 80 kernels, named through
    // kernel_symbols[i]["formatted_kernel_name"] (80 distinct names);
    // len(d["buffer_records"]["hip_api"]) → 0, memory_copy → 0; metadata.pid → 908;
    // every dispatch on agent 37946: product_name "AMD Instinct MI350X".
    let trace = read_trace_file(&shared(SAMPLE), &ReadOptions::default()).expect("reads");
    assert_eq!(trace.gpu.len(), 43_915);
    assert!(trace.gpu.kind.iter().all(|k| *k == GpuEventKind::Kernel));
    let total: i64 = trace.gpu.duration.iter().map(|d| d.as_nanos()).sum();
    assert_eq!(total, 4_441_741_378);
    let first = trace.gpu.start.iter().map(|t| t.as_nanos()).min();
    assert_eq!(first, Some(63_857_982_592_000));
    let last = (0..trace.gpu.len())
        .map(|r| trace.gpu.start[r].as_nanos() + trace.gpu.duration[r].as_nanos())
        .max();
    assert_eq!(last, Some(63_873_104_615_494));
    let mut names: Vec<&str> = trace.gpu.name.iter().map(|n| trace.name(*n)).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 80);
    assert!(names.iter().all(|n| !n.ends_with(".kd")), "formatted names");
    assert!(names.contains(&"__amd_rocclr_copyBuffer"));
    assert_eq!(trace.runtime.len(), 0);
    assert_eq!(trace.metadata.device_names, ["AMD Instinct MI350X"]);
    assert!(trace.metadata.platform().is_hip());
    // No HIP records: the reader says the linkage is not in the file.
    let why = trace
        .metadata
        .linkage_unavailable
        .as_deref()
        .expect("reason");
    assert!(why.contains("--hip-trace"), "{why}");
}

#[test]
fn rocprofv3_json_is_sniffed_as_its_own_format_and_cut_json_is_an_error() {
    let head = br#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":1}}]}"#;
    assert_eq!(TraceFormat::detect(head), Some(TraceFormat::RocprofJson));
    let cut = &head[..30];
    match read_trace_bytes(cut, &ReadOptions::default()) {
        Err(stepscope_ingest::IngestError::Json { truncated, .. }) => assert!(truncated),
        other => panic!("{other:?}"),
    }
}
