//! rocprofv3 CSV on the real samples of the trace corpus (`testdata/corpus.tsv`), each count pinned to an
//! independent reading (Python's `csv.DictReader`, quoted in each test), and on tables
//! derived from them in temp folders.

use crate::common::shared;
use stepscope_ingest::{IngestError, ReadOptions, TraceFormat, read_trace_bytes, read_trace_file};
use stepscope_model::{GpuEventKind, RuntimeCallKind};

const KERNELS: &str = "rocprofiler-sdk/source/docs/data/kernel_trace.csv";
const HIP: &str = "rocprofiler-sdk/source/docs/data/hip_runtime_trace.csv";
const OMNIPERF: &str = "omniperf/tests/workloads/device_filter/MI300X_A1/timestamps.csv";
/// omniperf's counters per dispatch, with each dispatch's timestamps: a kernel table too.
const COUNTERS: &str = "omniperf/tests/workloads/device_filter/MI300X_A1/pmc_perf.csv";

#[test]
fn the_rocprofv3_sample_tables_read_with_exact_counts() {
    // python3: rows = list(csv.DictReader(open("kernel_trace.csv"))) → 7 rows;
    // sum(int(r["End_Timestamp"]) - int(r["Start_Timestamp"])) → 795453 ns;
    // Counter(r["Kernel_Name"]) → addition 4, subtract 2, multiply 1.
    // hip_runtime_trace.csv: 8 rows (hipGetDevicePropertiesR0600, hipMalloc ×2, hipMemcpy ×2,
    // hipLaunchKernel, hipFree ×2). The two documentation samples come from different runs:
    // their correlation ids (kernels 1451–1550, calls 1–8) do not meet.
    let trace = read_trace_file(&shared(KERNELS), &ReadOptions::default()).expect("reads");
    assert_eq!(trace.gpu.len(), 7);
    assert!(trace.gpu.kind.iter().all(|k| *k == GpuEventKind::Kernel));
    let total: i64 = trace.gpu.duration.iter().map(|d| d.as_nanos()).sum();
    assert_eq!(total, 795_453);
    let additions = trace
        .gpu
        .name
        .iter()
        .filter(|n| trace.name(**n).starts_with("void addition_kernel<float>"))
        .count();
    assert_eq!(additions, 4);
    // Its run's HIP table beside it is read with it (same folder, the documentation's name).
    assert_eq!(trace.runtime.len(), 8);
    let launches = trace
        .runtime
        .kind
        .iter()
        .filter(|k| **k == RuntimeCallKind::EagerLaunch)
        .count();
    assert_eq!(launches, 3, "hipLaunchKernel and the two hipMemcpy");
    assert_eq!(trace.stats.get("rocprof_csv_rows_skipped"), 0);
    assert!(
        trace.metadata.platform().is_hip(),
        "rocprof runs on AMD GPUs"
    );
    // Given the HIP table, the run's kernel table is read with it: the same trace.
    let from_hip = read_trace_file(&shared(HIP), &ReadOptions::default()).expect("reads");
    assert_eq!((from_hip.gpu.len(), from_hip.runtime.len()), (7, 8));
}

#[test]
fn rocprof_v2_kernel_names_lose_their_kd_suffix() {
    // python3: 3 rows of `vecCopy(double*, double*, double*, int, int) (.kd)`, Correlation_ID 0.
    let trace = read_trace_file(&shared(OMNIPERF), &ReadOptions::default()).expect("reads");
    assert_eq!(trace.gpu.len(), 3);
    for name in &trace.gpu.name {
        assert_eq!(
            trace.name(*name),
            "vecCopy(double*, double*, double*, int, int)"
        );
    }
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn omniperf_counters_with_timestamps_are_the_same_dispatches() {
    // python3: pmc_perf.csv's 3 rows carry the Start/End_Timestamp of timestamps.csv's 3 rows.
    let counters = read_trace_file(&shared(COUNTERS), &ReadOptions::default()).expect("reads");
    let timestamps = read_trace_file(&shared(OMNIPERF), &ReadOptions::default()).expect("reads");
    assert_eq!(counters.gpu.start, timestamps.gpu.start);
    assert_eq!(counters.gpu.duration, timestamps.gpu.duration);
}

#[test]
fn a_counter_table_without_timestamps_is_named_not_misread() {
    let table = b"Dispatch_ID,GPU_ID,Kernel_Name,Correlation_ID,SQ_WAVES\n0,1,\"k (.kd)\",0,64\n";
    let error = read_trace_bytes(table, &ReadOptions::default()).expect_err("no timestamps");
    assert!(
        error.to_string().contains("rocprof counter table"),
        "{error}"
    );
}

fn kernel_table(rows: &[&str]) -> Vec<u8> {
    let mut text = String::from(
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n",
    );
    for row in rows {
        text.push_str(row);
        text.push('\n');
    }
    text.into_bytes()
}

#[test]
fn bad_rows_are_skipped_and_counted_and_a_missing_column_is_named() {
    let bytes = kernel_table(&[
        "\"KERNEL_DISPATCH\",1,1,7,1,3,\"k\",10,1000,2000",
        "\"KERNEL_DISPATCH\",1,1,7,2,3,\"k\",11,3000",
        "\"KERNEL_DISPATCH\",1,1,7,3,3,\"k\",12,x,5000",
        "\"KERNEL_DISPATCH\",1,1,7,4,3,\"k\",13,6000,5000",
        "\"KERNEL_DISPATCH\",1,1,7,5,3,\"k\",14,7000,7500",
    ]);
    let trace = read_trace_bytes(&bytes, &ReadOptions::default()).expect("reads");
    assert_eq!(trace.gpu.len(), 2);
    assert_eq!(
        trace.stats.get("rocprof_csv_rows_skipped"),
        3,
        "ragged, not a number, end before start"
    );
    let without = b"\"Kind\",\"Kernel_Name\",\"Start_Timestamp\",\"End_Timestamp\"\n\"KERNEL_DISPATCH\",\"k\",1,2\n";
    let error = read_trace_bytes(without, &ReadOptions::default()).expect_err("no correlation");
    let text = error.to_string();
    assert!(
        text.contains("line 1") && text.contains("`Correlation_Id`") && text.contains("hint:"),
        "{text}"
    );
}

/// The real kernel table cut inside each of its rows: an error naming the file and the cut
/// row's line, or with `allow_truncated` the rows before it, marked partial at that row.
#[test]
fn a_table_cut_inside_a_row_is_an_error_or_partial_when_allowed() {
    let whole = std::fs::read(shared(KERNELS)).expect("read");
    let text = String::from_utf8(whole.clone()).expect("UTF-8");
    let line_starts: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
    // Cut 10 bytes into every data row (lines 2..=8: 7 dispatches; an empty line ends it).
    for (row, start) in line_starts.iter().take(7).enumerate() {
        let cut = &whole[..start + 10];
        let line = row as u64 + 2;
        match read_trace_bytes(cut, &ReadOptions::default()) {
            Err(IngestError::Csv {
                line: at, message, ..
            }) => {
                assert_eq!(at, line, "{message}");
                assert!(message.contains("cut short"), "{message}");
            }
            other => panic!("cut in row {line}: {:?}", other.map(|t| t.gpu.len())),
        }
        let options = ReadOptions::default().with_allow_truncated(true);
        let partial = read_trace_bytes(cut, &options).expect("partial");
        assert_eq!(partial.gpu.len(), row, "the rows before the cut");
        assert_eq!(partial.stats.truncated_at_byte, Some(*start as u64));
        assert_eq!(partial.stats.get("rocprof_csv_cut_short"), 1);
        assert_eq!(partial.stats.get("rocprof_csv_rows_skipped"), 0);
    }
    // The whole table without its last line break is not cut: its last row reads.
    let trimmed = whole.trim_ascii_end();
    let trace = read_trace_bytes(trimmed, &ReadOptions::default()).expect("reads");
    assert_eq!(trace.gpu.len(), 7);
}

#[test]
fn a_forced_format_reads_or_says_why_not() {
    let json = br#"{"traceEvents": []}"#;
    let forced = ReadOptions::default().with_format(Some(TraceFormat::RocprofCsv));
    let error = read_trace_bytes(json, &forced).expect_err("JSON is no CSV table");
    assert!(matches!(error, IngestError::Csv { .. }), "{error}");
    assert_eq!(
        TraceFormat::from_name("rocprof-csv"),
        Some(TraceFormat::RocprofCsv)
    );
    assert_eq!(
        TraceFormat::from_name("kineto-json"),
        Some(TraceFormat::KinetoJson)
    );
}
