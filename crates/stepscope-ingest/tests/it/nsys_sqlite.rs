//! Nsight Systems SQLite exports: the four real samples of the trace corpus (`testdata/corpus.tsv`) (export schemas
//! 2.9.1 to 3.25.0), each count pinned to an independent reading with SQL (sqlite3, the
//! file opened read-only; the query is quoted above each number; `16777215` = `0xFFFFFF`),
//! and a cut copy of one.

use crate::common::{ScratchFile, shared};
use std::collections::BTreeMap;
use std::path::Path;
use stepscope_ingest::sqlite::{self, Database};
use stepscope_ingest::{IngestError, Input, ReadOptions, TraceFormat, read_trace_file};
use stepscope_model::{GpuEventKind, Trace};

/// 2 GPUs, 2 python3 processes (pids 111 and 112), a 1 s slice; schema 3.25.0.
const H100: &str = "nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite";
/// 2 kernels on an RTX 3080; schema 3.24.14.
const MOCK: &str = "nsys-ai/tests/fixtures/mock.sqlite";
/// CloverLeaf (CUDA) on Perlmutter; schema 3.13.2.
const CLOVER: &str = "pipit/pipit/tests/data/cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite";
/// saxpy with MPI on Perlmutter; schema 2.9.1, with CUDA backtrace rows.
const SAXPY: &str = "pipit/pipit/tests/data/saxpy-mpi-cuda_nsys_perlmutter0.sqlite";

/// What one sample holds, by SQL.
struct Expected {
    kernels: usize,
    runtime_calls: usize,
    memcpys: usize,
    memsets: usize,
    ranges: usize,
    kernel_ns: i64,
    /// Kernels sharing pid and correlation id with a runtime call.
    linked_kernels: usize,
    backtrace_rows: u64,
}

fn read(relative: &str) -> Trace {
    read_trace_file(&shared(relative), &ReadOptions::default()).expect("the sample reads")
}

fn count(trace: &Trace, kind: GpuEventKind) -> usize {
    trace.gpu.kind.iter().filter(|k| **k == kind).count()
}

#[track_caller]
fn check(trace: &Trace, expected: &Expected) {
    assert_eq!(count(trace, GpuEventKind::Kernel), expected.kernels);
    assert_eq!(trace.runtime.len(), expected.runtime_calls);
    assert_eq!(count(trace, GpuEventKind::Memcpy), expected.memcpys);
    assert_eq!(count(trace, GpuEventKind::Memset), expected.memsets);
    assert_eq!(trace.annotations.len(), expected.ranges);
    let kernel_ns: i64 = (0..trace.gpu.len())
        .filter(|&row| trace.gpu.kind[row] == GpuEventKind::Kernel)
        .map(|row| trace.gpu.duration[row].as_nanos())
        .sum();
    assert_eq!(kernel_ns, expected.kernel_ns);
    let calls: std::collections::HashSet<u64> = trace
        .runtime
        .correlation
        .iter()
        .filter(|c| c.is_some())
        .map(|c| c.0)
        .collect();
    let linked = (0..trace.gpu.len())
        .filter(|&row| trace.gpu.kind[row] == GpuEventKind::Kernel)
        .filter(|&row| calls.contains(&trace.gpu.correlation[row].0))
        .count();
    assert_eq!(linked, expected.linked_kernels, "kernels with a launch");
    assert_eq!(
        trace.stats.get("nsys_backtrace_rows"),
        expected.backtrace_rows
    );
    assert_eq!(trace.stats.get("nsys_rows_skipped"), 0);
    assert!(!trace.stats.is_partial());
    assert!(trace.metadata.platform().is_cuda(), "Nsight traces CUDA");
    assert_eq!(
        trace.metadata.linkage_unavailable, None,
        "no graph launches"
    );
}

/// Memcpy names and counts.
fn copies(trace: &Trace) -> BTreeMap<&str, usize> {
    let mut out = BTreeMap::new();
    for row in 0..trace.gpu.len() {
        if trace.gpu.kind[row] == GpuEventKind::Memcpy {
            *out.entry(trace.name(trace.gpu.name[row])).or_default() += 1;
        }
    }
    out
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn h100_two_processes_read_with_exact_counts() {
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL → 3442
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass <> 67 → 5796 (all rows)
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY → 904; ..._MEMSET → 22
    // SELECT COUNT(*) FROM NVTX_EVENTS WHERE "end" IS NOT NULL → 16782
    // SELECT SUM("end"-start) FROM CUPTI_ACTIVITY_KIND_KERNEL → 44829522
    // Kernels with a runtime row of the same pid and correlation id: 3442 − 1810 orphans:
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (SELECT 1 FROM
    //   CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId AND
    //   ((r.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215)) → 1810
    // (on correlationId alone it would be 1799: 11 kernels share an id with a call of the
    // other process).
    let trace = read(H100);
    check(
        &trace,
        &Expected {
            kernels: 3442,
            runtime_calls: 5796,
            memcpys: 904,
            memsets: 22,
            ranges: 16782,
            kernel_ns: 44_829_522,
            linked_kernels: 1632,
            backtrace_rows: 0,
        },
    );
    // SELECT copyKind, COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind
    // → 1 (HtoD): 450, 2 (DtoH): 4, 8 (DtoD): 450
    let expected = BTreeMap::from([
        ("Memcpy DtoD", 450),
        ("Memcpy DtoH", 4),
        ("Memcpy HtoD", 450),
    ]);
    assert_eq!(copies(&trace), expected);
    // SELECT COUNT(DISTINCT deviceId), COUNT(DISTINCT streamId) FROM CUPTI_ACTIVITY_KIND_KERNEL
    // → 2 (0, 1), 2 (7, 15)
    let mut devices: Vec<(u32, u32)> = (0..trace.gpu.len())
        .map(|row| (trace.gpu.device[row], trace.gpu.stream[row].0))
        .collect();
    devices.sort_unstable();
    devices.dedup();
    assert_eq!(devices, [(0, 7), (1, 15)]);
    // No TARGET_INFO_GPU in this export: the platform comes from the format.
    assert_eq!(trace.metadata.device_names, ["NVIDIA GPU (Nsight Systems)"]);
    // SELECT pid, name FROM PROCESSES WHERE pid IN (111, 112) → python3, python3
    let names: Vec<&str> = trace
        .process_names
        .iter()
        .map(|n| n.map_or("", |n| trace.name(n)))
        .collect();
    assert_eq!(names, ["python3", "python3"]);
    // SELECT COALESCE(text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
    // → 'aten::to, op_id = 317177' among others: PyTorch's emit_nvtx ranges.
    assert!(
        trace
            .annotations
            .name
            .iter()
            .any(|n| trace.name(*n) == "aten::to, op_id = 317177")
    );
}

#[test]
fn mock_reads_with_exact_counts() {
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL → 2
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass <> 67 → 9
    //   (8 of class 0, one driver call cuModuleGetLoadingMode of class 1)
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY → 1 (copyKind 2); no MEMSET, no NVTX_EVENTS
    // SELECT SUM("end"-start) FROM CUPTI_ACTIVITY_KIND_KERNEL → 4129
    let trace = read(MOCK);
    check(
        &trace,
        &Expected {
            kernels: 2,
            runtime_calls: 9,
            memcpys: 1,
            memsets: 0,
            ranges: 0,
            kernel_ns: 4129,
            linked_kernels: 2,
            backtrace_rows: 0,
        },
    );
    assert_eq!(copies(&trace), BTreeMap::from([("Memcpy DtoH", 1)]));
    // SELECT name FROM TARGET_INFO_GPU → NVIDIA GeForce RTX 3080
    assert_eq!(trace.metadata.device_names, ["NVIDIA GeForce RTX 3080"]);
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn cloverleaf_reads_with_exact_counts() {
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL → 1312
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass <> 67 → 3048
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY → 279 (copyKind 1: 254, 2: 25)
    // SELECT SUM("end"-start) FROM CUPTI_ACTIVITY_KIND_KERNEL → 294404540
    let trace = read(CLOVER);
    check(
        &trace,
        &Expected {
            kernels: 1312,
            runtime_calls: 3048,
            memcpys: 279,
            memsets: 0,
            ranges: 0,
            kernel_ns: 294_404_540,
            linked_kernels: 1312,
            backtrace_rows: 0,
        },
    );
    let expected = BTreeMap::from([("Memcpy DtoH", 25), ("Memcpy HtoD", 254)]);
    assert_eq!(copies(&trace), expected);
    // SELECT name FROM TARGET_INFO_GPU ORDER BY cuDevice → 4 × NVIDIA A100-SXM4-80GB
    assert_eq!(
        trace.metadata.device_names,
        ["NVIDIA A100-SXM4-80GB"; 4].map(str::to_owned)
    );
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn saxpy_schema_2_9_skips_the_backtrace_copies_of_its_calls() {
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME → 95, of which
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass <> 67 → 57;
    // the 38 rows of class 67 repeat a call (same globalTid and correlationId) under its
    // name without the suffix: read, each kernel would have two launches.
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL → 5, SUM("end"-start) → 88573480
    // SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY → 15 (copyKind 1: 10, 2: 5)
    // CUPTI_ACTIVITY_KIND_MEMSET: an empty table (non-lazy export)
    // SELECT COUNT(*) FROM NVTX_EVENTS WHERE "end" IS NOT NULL → 22 (of 24 rows)
    let trace = read(SAXPY);
    check(
        &trace,
        &Expected {
            kernels: 5,
            runtime_calls: 57,
            memcpys: 15,
            memsets: 0,
            ranges: 22,
            kernel_ns: 88_573_480,
            linked_kernels: 5,
            backtrace_rows: 38,
        },
    );
    // SELECT s.value, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s
    //   ON s.id = r.nameId WHERE eventClass <> 67 GROUP BY 1 → cudaLaunchKernel_v7000: 5, …;
    // no suffixless `cudaLaunchKernel` (a class-67 name) is left.
    let names: Vec<&str> = trace.runtime.name.iter().map(|n| trace.name(*n)).collect();
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == "cudaLaunchKernel_v7000")
            .count(),
        5
    );
    assert!(!names.contains(&"cudaLaunchKernel"));
    let expected = BTreeMap::from([("Memcpy DtoH", 5), ("Memcpy HtoD", 10)]);
    assert_eq!(copies(&trace), expected);
    // SELECT COALESCE(n.text, s.value), COUNT(*) ... WHERE "end" IS NOT NULL GROUP BY 1
    // → MPI_Send 10, MPI_Recv 5, saxpy 5, MPI_Finalize 1, MPI_Init 1; inline text 5 rows,
    // textId 17 rows.
    let ranges = |name: &str| {
        trace
            .annotations
            .name
            .iter()
            .filter(|n| trace.name(**n) == name)
            .count()
    };
    assert_eq!(
        (ranges("MPI_Send"), ranges("MPI_Recv"), ranges("saxpy")),
        (10, 5, 5)
    );
    // SELECT name FROM TARGET_INFO_GPU → NVIDIA A100-SXM4-40GB
    assert_eq!(trace.metadata.device_names, ["NVIDIA A100-SXM4-40GB"]);
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn copy_names_agree_with_each_files_own_copy_kind_labels() {
    // ENUM_CUDA_MEMCPY_OPER labels ("Host-to-Device", "Unified Device-to-Host"…) in the three
    // schema-3 files, against the names the reader gave the copies of each kind.
    for relative in [H100, MOCK, CLOVER] {
        let db = rusqlite::Connection::open_with_flags(
            shared(relative),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open");
        let mut statement = db
            .prepare(
                "SELECT e.label, COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m
                 JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind GROUP BY e.label",
            )
            .expect("query");
        let by_label: BTreeMap<String, usize> = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("rows")
            .map(|row| {
                let (label, count): (String, i64) = row.expect("row");
                (
                    name_of_label(&label),
                    usize::try_from(count).expect("a count"),
                )
            })
            .collect();
        let read = read(relative);
        let by_reader: BTreeMap<String, usize> = copies(&read)
            .into_iter()
            .map(|(name, count)| (name.to_owned(), count))
            .collect();
        assert_eq!(by_reader, by_label, "{relative}");
    }
}

/// `Host-to-Device` → `Memcpy HtoD`, `Unified Device-to-Host` → `Memcpy DtoH (Unified)`.
fn name_of_label(label: &str) -> String {
    let (unified, direction) = match label.strip_prefix("Unified ") {
        Some(rest) => (true, rest),
        None => (false, label),
    };
    let letters: Vec<String> = direction
        .split("-to-")
        .map(|side| side[..1].to_owned())
        .collect();
    let name = format!("Memcpy {}", letters.join("to"));
    if unified {
        format!("{name} (Unified)")
    } else {
        name
    }
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn every_sample_is_detected_as_an_nsight_export() {
    for relative in [H100, MOCK, CLOVER, SAXPY] {
        let path = shared(relative);
        let bytes = std::fs::read(&path).expect("read");
        // The first bytes of an SQLite file say nothing of its format…
        assert_eq!(TraceFormat::NsysSqlite.sniff(&bytes[..100]), None);
        assert_eq!(TraceFormat::detect(&bytes[..100]), None);
        // …its tables do.
        let label = path.display().to_string();
        let db = open(&label, &path);
        assert_eq!(
            sqlite::detect(&db).expect("schema"),
            Some(TraceFormat::NsysSqlite),
            "{relative}"
        );
    }
    assert_eq!(
        TraceFormat::from_name("nsys-sqlite"),
        Some(TraceFormat::NsysSqlite)
    );
    assert_eq!(
        TraceFormat::NsysSqlite.sniff(b"{\"traceEvents\""),
        Some(false)
    );
}

fn open(label: &str, path: &Path) -> Database {
    sqlite::open(
        &Input {
            label,
            bytes: &[],
            path: Some(path),
        },
        false,
    )
    .expect("opens")
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn a_cut_export_is_an_error_naming_the_file() {
    let bytes = std::fs::read(shared(H100)).expect("read");
    let cut = ScratchFile::new("cut.sqlite", &bytes[..bytes.len() / 2]);
    let label = cut.path().display().to_string();
    match read_trace_file(cut.path(), &ReadOptions::default()) {
        Err(error @ IngestError::Sqlite { .. }) => {
            let message = error.to_string();
            assert!(message.contains(&label), "{message}");
            assert!(message.contains("cut short or corrupt"), "{message}");
        }
        other => panic!("{:?}", other.map(|t| t.gpu.len())),
    }
    // Forced, the same; with --allow-truncated the rows before the break, marked partial,
    // or the same error when the break comes before any table can be read.
    let forced = ReadOptions::default().with_format(Some(TraceFormat::NsysSqlite));
    assert!(matches!(
        read_trace_file(cut.path(), &forced),
        Err(IngestError::Sqlite { .. })
    ));
    let options = crate::common::options(1, true).with_format(Some(TraceFormat::NsysSqlite));
    match read_trace_file(cut.path(), &options) {
        Ok(trace) => {
            // The rows before the cut: some tables may lie wholly before it (here the GPU
            // tables do), but not every row of the file is there.
            assert!(trace.stats.is_partial());
            let whole = read_trace_file(&shared(H100), &ReadOptions::default()).expect("whole");
            assert!(trace.gpu.len() <= whole.gpu.len());
            assert!(trace.counts.events < whole.counts.events);
        }
        Err(IngestError::Sqlite { path, .. }) => assert_eq!(path, label),
        Err(other) => panic!("{other}"),
    }
}

#[test]
fn a_database_without_string_ids_names_the_missing_table() {
    let dir = tempfile::tempdir().expect("temp folder");
    let path = dir.path().join("kernels.sqlite");
    let db = rusqlite::Connection::open(&path).expect("create");
    db.execute_batch(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER, correlationId INTEGER);",
    )
    .expect("schema");
    drop(db);
    let forced = ReadOptions::default().with_format(Some(TraceFormat::NsysSqlite));
    match read_trace_file(&path, &forced) {
        Err(IngestError::Sqlite { place, hint, .. }) => {
            assert_eq!(place, "table StringIds");
            assert!(hint.contains("nsys export --type sqlite"), "{hint}");
        }
        other => panic!("{:?}", other.map(|t| t.gpu.len())),
    }
}
