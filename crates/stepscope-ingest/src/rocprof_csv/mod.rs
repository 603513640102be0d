//! rocprofv3 CSV (`--output-format csv`), and the kernel tables of rocprof v2 / omniperf
//! (`timestamps.csv`).
//!
//! rocprofv3 writes one table per file, named `<prefix>kernel_trace.csv`,
//! `<prefix>hip_api_trace.csv` (`hip_runtime_trace.csv` in its documentation),
//! `<prefix>memory_copy_trace.csv`, `<prefix>marker_api_trace.csv` and others, from one run.
//! `read_tables` reads any of them into one trace: kernel dispatches and memory copies as
//! GPU events, ROCTx ranges (`MARKER_*` domains, the message in `Function`) as host
//! annotations where steps are found, HIP API rows as runtime calls, joined by their `Correlation_Id` (as rocprofv3 writes it, the id a HIP call shares
//! with the dispatches it caused; `hipGraphLaunch` rows included, so graph replays are seen:
//! a replay's dispatches are taken to carry its `hipGraphLaunch`'s correlation id, as the
//! PyTorch profiler's ROCm traces show them — no public rocprofv3 CSV with graph launches
//! exists to confirm it, so the tests derive such tables from a real Kineto trace).
//! Which table a file is comes from its header, not its name; columns are found by name
//! (case-insensitive), so the column sets of rocprofv3's versions and rocprof v2's all read.
//! Timestamps are nanoseconds. rocprof v2 and omniperf end kernel names with ` (.kd)`
//! (the code object's kernel descriptor): stripped, so names match the other formats'.
//! A row that cannot be read (a ragged row, a timestamp that is not a number, an end before
//! its start) is skipped and counted, never fatal, and refused as damage with whatever of its
//! correlation id and name reads, so analysis ties it to the replay it belongs to, as for
//! the Kineto reader (bad data, not a runtime symptom); a table with a column missing is an
//! error naming the file's table and the column.

mod columns;

use crate::IngestError;
use crate::common::copy_direction;
use columns::{Columns, Table};
use stepscope_model::{
    CorrelationId, DamageKind, DamagedEvent, DamagedTable, Duration, GpuEventKind, GpuEventRecord,
    ProcessId, RuntimeCallKind, RuntimeCallRecord, Severity, StreamId, ThreadId, Timestamp,
    TraceBuilder,
};

/// Whether `head` starts like a rocprof CSV table: a header line naming a kernel, HIP API or
/// memory copy table. Without a line break, the whole of `head` is taken as the header (a
/// table with no rows); never `None`, since the header decides.
pub fn sniff(head: &[u8]) -> Option<bool> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    // JSON (every Kineto file) is decided by its first byte, before any line is scanned.
    if matches!(head.trim_ascii_start().first(), Some(b'{' | b'[')) {
        return Some(false);
    }
    // A header line may be long (omniperf: 50 kB of counter names), but not a megabyte.
    let end = head
        .iter()
        .take(1 << 20)
        .position(|b| *b == b'\n')
        .unwrap_or(head.len().min(1 << 20));
    let line = String::from_utf8_lossy(&head[..end]);
    Some(Table::of_header(&split_header(&line)).is_some())
}

/// What a file holds when it looks like rocprof CSV but is not a trace table (counters
/// only, no timestamps), for the error.
pub fn recognise(head: &[u8]) -> Option<&'static str> {
    let end = head.iter().take(1 << 20).position(|b| *b == b'\n')?;
    let line = String::from_utf8_lossy(&head[..end]).to_ascii_lowercase();
    (line.contains("kernel_name") && !line.contains("start_timestamp"))
        .then_some("a rocprof counter table (pmc_perf.csv: counters per dispatch, no timestamps)")
}

fn split_header(line: &str) -> Vec<String> {
    line.trim_end_matches('\r')
        .split(',')
        .map(|field| field.trim().trim_matches('"').to_owned())
        .collect()
}

/// The names rocprofv3 gives its trace tables (after a `<pid>_` or `--output-file` prefix).
pub(crate) const TABLE_FILE_SUFFIXES: [&str; 5] = [
    "kernel_trace.csv",
    "hip_api_trace.csv",
    "hip_runtime_trace.csv",
    "memory_copy_trace.csv",
    "marker_api_trace.csv",
];

/// The other trace tables of the run `path` belongs to: same folder, same prefix, another
/// table name; none when `path` is not named as a rocprofv3 table.
pub fn companion_paths(path: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let Some((prefix, own)) = TABLE_FILE_SUFFIXES
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix).map(|prefix| (prefix, *suffix)))
    else {
        return Vec::new();
    };
    TABLE_FILE_SUFFIXES
        .iter()
        .filter(|suffix| **suffix != own)
        .map(|suffix| path.with_file_name(format!("{prefix}{suffix}")))
        .filter(|companion| companion.is_file())
        .collect()
}

/// Why GPU tables read alone cannot show replays.
pub(crate) const NO_HIP_TABLE: &str = "the kernel table was read without a HIP API table of the same run, so no dispatch can be linked to the hipGraphLaunch that replayed it; record with rocprofv3 --kernel-trace --hip-trace --output-format csv (or --runtime-trace) and give the run's folder, or its kernel_trace.csv with hip_api_trace.csv beside it";

/// One table: its file (streamed through a buffer, so the table never sits in memory
/// whole), or its bytes; named for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TableInput<'a> {
    /// The file (or `input`), for messages.
    pub label: &'a str,
    /// Its bytes (read when there is no `path`).
    pub bytes: &'a [u8],
    /// The file on disk holding the table as it is (plain CSV).
    pub path: Option<&'a std::path::Path>,
}

impl TableInput<'_> {
    /// The table's rows, from its file or its bytes.
    fn reader(&self) -> Result<csv::Reader<Box<dyn std::io::Read + '_>>, IngestError> {
        let source: Box<dyn std::io::Read + '_> = match self.path {
            Some(path) => {
                Box::new(std::fs::File::open(path).map_err(|source| IngestError::Io {
                    path: path.to_owned(),
                    source,
                })?)
            }
            None => Box::new(self.bytes),
        };
        Ok(csv::ReaderBuilder::new()
            .flexible(true)
            .buffer_capacity(1 << 20)
            .from_reader(source))
    }

    /// Whether the table ends with a line break (a last row without one may be cut).
    fn ends_with_line_break(&self) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let Some(path) = self.path else {
            return self.bytes.ends_with(b"\n");
        };
        let mut last = [0_u8];
        std::fs::File::open(path)
            .and_then(|mut file| {
                file.seek(SeekFrom::End(-1))?;
                file.read_exact(&mut last)
            })
            .is_ok_and(|()| last[0] == b'\n')
    }
}

/// Reads rocprof CSV tables of one run into `builder`.
pub(crate) fn read_tables(
    tables: &[TableInput<'_>],
    allow_truncated: bool,
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    let mut saw_gpu_table = false;
    let mut saw_hip_table = false;
    for table in tables {
        let calls_before = builder.trace_mut().runtime.len();
        let annotations_before = builder.trace_mut().annotations.len();
        let kind = read_table(*table, allow_truncated, builder)?;
        saw_gpu_table |= kind != Table::HipApi;
        // An API table of ROCTx ranges only (marker_api_trace.csv) links no dispatch.
        let trace = builder.trace_mut();
        let markers_only =
            trace.runtime.len() == calls_before && trace.annotations.len() > annotations_before;
        saw_hip_table |= kind == Table::HipApi && !markers_only;
    }
    let metadata = builder.metadata_mut();
    if saw_gpu_table && !saw_hip_table {
        metadata.linkage_unavailable = Some(NO_HIP_TABLE.to_owned());
    }
    if metadata.device_names.is_empty() && saw_gpu_table {
        // rocprof runs on AMD GPUs only: the format itself says the platform.
        metadata
            .device_names
            .push("AMD GPU (rocprof CSV)".to_owned());
    }
    Ok(())
}

/// Reads one table; returns which it was. A table whose last row is cut (no line break
/// after it, and it does not read) was cut short: an error, or with `allow_truncated` the
/// rows before it, marked partial.
fn read_table(
    input: TableInput<'_>,
    allow_truncated: bool,
    builder: &mut TraceBuilder,
) -> Result<Table, IngestError> {
    let mut reader = input.reader()?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(input.label, 1, &e.to_string()))?
        .iter()
        .map(str::to_owned)
        .collect();
    let table = Table::of_header(&header).ok_or_else(|| IngestError::Csv {
        path: input.label.to_owned(),
        line: 1,
        message: "the header names no kernel, HIP API or memory copy table".to_owned(),
        hint: "rocprofv3 writes these with --kernel-trace, --hip-trace and --memory-copy-trace (--output-format csv)",
    })?;
    let columns = Columns::find(table, &header).map_err(|missing| IngestError::Csv {
        path: input.label.to_owned(),
        line: 1,
        message: format!("the {} table has no `{missing}` column", table.as_str()),
        hint: "is the file complete, and written by rocprofv3 (or rocprof v2 / omniperf for kernels)?",
    })?;
    // Kernel tables without a process column (rocprofv3's) file their rows under one lane.
    let unnamed_process = columns
        .process
        .is_none()
        .then(|| builder.process_label("rocprof"));
    let mut skipped = 0_u64;
    // The last row that did not read: its line and byte.
    let mut last_failed = None;
    // Rows refused as damage; the last is not damage when the table was cut inside it.
    let mut damaged: Vec<DamagedEvent> = Vec::new();
    for record in reader.records() {
        builder.counts_mut().events += 1;
        let (read, position) = match record {
            Ok(row) => {
                let read = add_row((table, &columns), &row, unnamed_process, builder);
                if let Err(kind) = read {
                    damaged.push(refused_row((table, &columns), &row, kind, builder));
                }
                (read.ok(), row.position().cloned())
            }
            Err(e) => (None, e.position().cloned()),
        };
        last_failed = match read {
            Some(()) => None,
            None => {
                skipped += 1;
                position.map(|p| (p.line(), p.byte()))
            }
        };
    }
    if let Some((line, byte)) = last_failed.filter(|_| !input.ends_with_line_break()) {
        skipped -= 1;
        damaged.pop();
        cut_short(input.label, (line, byte), allow_truncated, builder)?;
    }
    finish_table(builder, damaged, skipped);
    Ok(table)
}

/// Records a table's refused rows as damage, and how many rows were skipped.
fn finish_table(builder: &mut TraceBuilder, damaged: Vec<DamagedEvent>, skipped: u64) {
    damaged
        .into_iter()
        .for_each(|event| builder.add_damaged(event));
    builder.stats_mut().add(
        "rocprof_csv_rows_skipped",
        Severity::DataLoss,
        "Rows of a rocprof CSV table that could not be read (too few fields, a timestamp that is not a number, an end before its start) were skipped (refused as damage)",
        skipped,
    );
}

/// A table that ends inside its last row: the error, or with `allow_truncated` the trace
/// marked partial at that row.
fn cut_short(
    label: &str,
    (line, byte): (u64, u64),
    allow_truncated: bool,
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    if !allow_truncated {
        return Err(IngestError::Csv {
            path: label.to_owned(),
            line,
            message: "the table ends inside this row (no line break after it, and it does not read): the file was cut short".to_owned(),
            hint: "rocprofv3 writes its tables when the profiled process exits (was it still running, or the copy incomplete?); reading with allow-truncated (`--allow-truncated`; in Python `allow_truncated=True`) analyses the rows before the cut",
        });
    }
    let stats = builder.stats_mut();
    stats.truncated_at_byte.get_or_insert(byte);
    stats.add(
        "rocprof_csv_cut_short",
        Severity::Error,
        "A rocprof CSV table ends inside its last row (the file was cut short); the rows before it were read",
        1,
    );
    Ok(())
}

fn csv_error(label: &str, line: u64, message: &str) -> IngestError {
    IngestError::Csv {
        path: label.to_owned(),
        line,
        message: message.to_owned(),
        hint: "is the file complete? rocprofv3 writes its CSV tables when the profiled process exits",
    }
}

/// A row that did not read, as damage: its correlation id and name where they read.
fn refused_row(
    (table, columns): (Table, &Columns),
    row: &csv::StringRecord,
    kind: DamageKind,
    builder: &mut TraceBuilder,
) -> DamagedEvent {
    let correlation = columns
        .correlation
        .and_then(|index| row.get(index)?.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let name = columns
        .name
        .and_then(|index| row.get(index))
        .map(|name| builder.intern(name.trim()));
    DamagedEvent {
        kind,
        table: match table {
            Table::HipApi => DamagedTable::Runtime,
            Table::Kernel | Table::MemoryCopy => DamagedTable::Gpu,
        },
        correlation: CorrelationId(correlation),
        name,
    }
}

/// Adds one row; the damage when a field it needs is missing or not a number
/// ([`DamageKind::InvalidTime`] for times, as for a ragged row) or it ends before it starts.
fn add_row(
    (table, columns): (Table, &Columns),
    row: &csv::StringRecord,
    unnamed_process: Option<ProcessId>,
    builder: &mut TraceBuilder,
) -> Result<(), DamageKind> {
    let number = |index: Option<usize>| -> Option<i64> { row.get(index?)?.trim().parse().ok() };
    let invalid = DamageKind::InvalidTime;
    let start = number(columns.start).ok_or(invalid)?;
    let end = number(columns.end).ok_or(invalid)?;
    if start < 0 {
        return Err(invalid);
    }
    if end < start {
        return Err(DamageKind::NegativeDuration);
    }
    let start_time = Timestamp::from_nanos(start);
    let duration = Duration::from_nanos(end - start);
    let correlation = number(columns.correlation).ok_or(invalid)?;
    let correlation = CorrelationId(u64::try_from(correlation).unwrap_or(0));
    let process = match number(columns.process) {
        Some(pid) => builder.process_number(pid),
        None => unnamed_process.unwrap_or_else(|| builder.process_label("rocprof")),
    };
    match table {
        Table::HipApi => {
            let name = columns.name.and_then(|index| row.get(index));
            let thread = ThreadId::Number(number(columns.thread).unwrap_or(0));
            let domain = columns.domain.and_then(|index| row.get(index));
            let call = (name.ok_or(invalid)?.trim(), domain);
            add_api_row(
                builder,
                call,
                (process, thread),
                (start_time, duration),
                correlation,
            );
        }
        Table::Kernel | Table::MemoryCopy => {
            let name = gpu_name(table, columns, row).ok_or(invalid)?;
            let event = GpuEventRecord {
                kind: if table == Table::Kernel {
                    GpuEventKind::Kernel
                } else {
                    GpuEventKind::Memcpy
                },
                name: builder.intern(&name),
                process,
                device: u32::try_from(number(columns.device).unwrap_or(0)).unwrap_or(0),
                stream: StreamId(u32::try_from(number(columns.queue).unwrap_or(0)).unwrap_or(0)),
                start: start_time,
                duration,
                correlation,
                graph_id: None,
            };
            builder.add_gpu_event(event);
        }
    }
    Ok(())
}

/// An API table row: a HIP call, or a ROCTx range when its domain is a marker one.
fn add_api_row(
    builder: &mut TraceBuilder,
    (name, domain): (&str, Option<&str>),
    (process, thread): (ProcessId, ThreadId),
    (start, duration): (Timestamp, Duration),
    correlation: CorrelationId,
) {
    if domain.is_some_and(|d| d.contains("MARKER")) {
        crate::common::add_marker(builder, name, (process, thread), (start, duration));
        return;
    }
    let call = RuntimeCallRecord {
        kind: RuntimeCallKind::classify(name),
        name: builder.intern(name),
        process,
        thread,
        start,
        duration,
        correlation,
        launched_kernel: None,
    };
    builder.add_runtime_call(call);
}

/// A kernel's name without rocprof v2's ` (.kd)`; a copy's as `Memcpy <direction>`.
fn gpu_name(table: Table, columns: &Columns, row: &csv::StringRecord) -> Option<String> {
    let field = row.get(columns.name?)?.trim();
    Some(match table {
        Table::Kernel => field.strip_suffix(" (.kd)").unwrap_or(field).to_owned(),
        _ => format!("Memcpy {}", copy_direction(field)),
    })
}
