//! rocmProfileData on the real sample of the trace corpus (`testdata/corpus.tsv`) (one run of a PyTorch matmul
//! script, as an RPD database), each count pinned to an independent reading with Python's
//! `sqlite3` (the query is quoted in each test); and RPD files cut short.

use crate::common::shared;
use stepscope_ingest::{IngestError, ReadOptions, read_trace_bytes, read_trace_file};
use stepscope_model::{GpuEventKind, RuntimeCallKind};

pub const RPD: &str = "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.rpd";

fn count(trace: &stepscope_model::Trace, kind: GpuEventKind) -> usize {
    trace.gpu.kind.iter().filter(|k| **k == kind).count()
}

#[test]
fn the_rpd_sample_reads_with_exact_counts() {
    // SELECT s.string, count(*), sum(o.end - o.start) FROM rocpd_op o
    //   JOIN rocpd_string s ON s.id = o.opType_id GROUP BY s.string
    // → KernelExecution 29 (26399795 ns), CopyDeviceToHost 53, CopyHostToDevice 2,
    //   FillBuffer 1; 85 ops, sum(end - start) over all 183918056 ns.
    // SELECT count(*) FROM rocpd_api → 125;
    // SELECT count(*) FROM rocpd_op WHERE id NOT IN (SELECT op_id FROM rocpd_api_ops) → 0.
    let trace = read_trace_file(&shared(RPD), &ReadOptions::default()).expect("reads");
    assert_eq!(count(&trace, GpuEventKind::Kernel), 29);
    assert_eq!(count(&trace, GpuEventKind::Memcpy), 55);
    assert_eq!(count(&trace, GpuEventKind::Memset), 1);
    let kernel_ns: i64 = (0..trace.gpu.len())
        .filter(|r| trace.gpu.kind[*r] == GpuEventKind::Kernel)
        .map(|r| trace.gpu.duration[r].as_nanos())
        .sum();
    assert_eq!(kernel_ns, 26_399_795);
    let all_ns: i64 = trace.gpu.duration.iter().map(|d| d.as_nanos()).sum();
    assert_eq!(all_ns, 183_918_056);
    // SELECT s.string, count(*) FROM rocpd_api a JOIN rocpd_string s ON s.id = a.apiName_id
    //   WHERE s.string NOT LIKE 'hip%' GROUP BY 1 → CopyApiTable::writeRows,
    //   KernelApiTable::writeRows, MonitorTable::writeRows, OpTable::writeRows,
    //   hcc_activity_callback, 1 each: the tracer's own ranges, read as host annotations;
    //   the other 120 rows are HIP calls.
    assert_eq!(trace.runtime.len(), 120);
    assert_eq!(trace.annotations.len(), 5);
    // SELECT s.string, count(*) FROM rocpd_api a JOIN rocpd_string s ON s.id = a.apiName_id
    //   GROUP BY 1 → hipMemcpyWithStream 55, hipLaunchKernel 28, hipExtModuleLaunchKernel 1,
    //   hipMemsetAsync 1 (the calls that launch GPU work); no name contains "Graph".
    let launches = trace
        .runtime
        .kind
        .iter()
        .filter(|k| **k == RuntimeCallKind::EagerLaunch)
        .count();
    assert_eq!(launches, 85);
    assert!(!trace.runtime.kind.contains(&RuntimeCallKind::GraphLaunch));
    // Every op is linked to its call (rocpd_api_ops is 1:1 here): correlation ids present.
    assert!(trace.gpu.correlation.iter().all(|c| c.is_some()));
    // SELECT count(DISTINCT o.description_id) FROM rocpd_op o JOIN rocpd_string t
    //   ON t.id = o.opType_id WHERE t.string = 'KernelExecution' → 20 kernel names.
    let mut names: Vec<&str> = (0..trace.gpu.len())
        .filter(|r| trace.gpu.kind[*r] == GpuEventKind::Kernel)
        .map(|r| trace.name(trace.gpu.name[r]))
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 20);
    assert!(trace.metadata.platform().is_hip(), "RPD traces AMD GPUs");
    assert_eq!(trace.stats.get("rpd_rows_skipped"), 0);
}

#[test]
fn a_compressed_rpd_reads_the_same() {
    let bytes = std::fs::read(shared(RPD)).expect("read");
    let plain = read_trace_bytes(&bytes, &ReadOptions::default()).expect("plain");
    let dir = tempfile::tempdir().expect("tempdir");
    let gz = dir.path().join("matmul_result.rpd.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &bytes).expect("gzip");
    std::fs::write(&gz, encoder.finish().expect("gzip")).expect("write");
    let inflated = read_trace_file(&gz, &ReadOptions::default()).expect("gz");
    assert_eq!(inflated.gpu.len(), plain.gpu.len());
    assert_eq!(inflated.runtime.len(), plain.runtime.len());
    assert_eq!(inflated.gpu.duration, plain.gpu.duration);
}

/// Cut at every eighth of its length: an error naming the file (never a panic), or with
/// `allow_truncated` a partial trace of no more than the whole file's events.
#[test]
fn an_rpd_cut_short_is_an_error_naming_it_or_partial_when_allowed() {
    let bytes = std::fs::read(shared(RPD)).expect("read");
    let whole = read_trace_bytes(&bytes, &ReadOptions::default()).expect("whole");
    let dir = tempfile::tempdir().expect("tempdir");
    for eighth in 1..8 {
        let cut = &bytes[..bytes.len() * eighth / 8];
        let path = dir.path().join(format!("cut{eighth}.rpd"));
        std::fs::write(&path, cut).expect("write");
        match read_trace_file(&path, &ReadOptions::default()) {
            Err(IngestError::Sqlite { path: named, .. }) => {
                assert_eq!(named, path.display().to_string());
            }
            // A cut that leaves every row of the tables read (trailing pages of indexes).
            Ok(trace) => assert!(trace.gpu.len() <= whole.gpu.len()),
            Err(other) => panic!("cut at {eighth}/8: {other}"),
        }
        let options = ReadOptions::default().with_allow_truncated(true);
        if let Ok(partial) = read_trace_file(&path, &options) {
            assert!(partial.gpu.len() <= whole.gpu.len());
        }
    }
}

/// rpd2tracing JSON cut anywhere: an error at the cut, or with `allow_truncated` the events
/// before it, marked partial at the same byte (the fuzz targets found `--allow-truncated`
/// had no effect on this format).
#[test]
fn an_rpd2tracing_file_cut_short_keeps_what_came_before_when_allowed() {
    let bytes = std::fs::read(shared(
        "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.json",
    ))
    .expect("read");
    let format = Some(stepscope_ingest::TraceFormat::RpdJson);
    let strict = ReadOptions::default().with_format(format);
    let lenient = strict.clone().with_allow_truncated(true);
    let whole = read_trace_bytes(&bytes, &strict).expect("whole");
    let mut fewer = 0;
    for eighth in 1..8 {
        let cut = &bytes[..bytes.len() * eighth / 8];
        let Err(IngestError::Json { offset, .. }) = read_trace_bytes(cut, &strict) else {
            panic!("cut at {eighth}/8 read without an error");
        };
        let partial = read_trace_bytes(cut, &lenient).expect("partial");
        assert_eq!(
            partial.stats.truncated_at_byte,
            Some(offset),
            "cut at {eighth}/8"
        );
        assert!(partial.gpu.len() <= whole.gpu.len());
        fewer += usize::from(
            partial.gpu.len() + partial.runtime.len() < whole.gpu.len() + whole.runtime.len(),
        );
    }
    assert!(fewer > 0, "no cut lost an event: the test cuts nothing");
    assert!(
        read_trace_bytes(&bytes[..bytes.len() / 2], &lenient)
            .is_ok_and(|t| !t.runtime.is_empty() || !t.gpu.is_empty())
    );
}
