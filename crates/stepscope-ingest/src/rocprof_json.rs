//! rocprofv3 JSON (`--output-format json`, the `rocprofiler-sdk-tool` schema).
//!
//! The document is `{"rocprofiler-sdk-tool": [ one object per profiled process ]}`. Each holds
//! `metadata.pid`, `agents` (GPUs: `id.handle`, `type` 2, `product_name`, `gpu_index`),
//! `kernel_symbols` (`kernel_id` → `formatted_kernel_name`: demangled, without the `.kd` of
//! `kernel_name`), `strings.buffer_records[kind].operations[operation]` (the names of record
//! kinds and operations: `HIP_RUNTIME_API` / `hipGraphLaunch`, `MEMORY_COPY` /
//! `MEMORY_COPY_HOST_TO_DEVICE`) and `buffer_records`: `kernel_dispatch`, `hip_api`,
//! `memory_copy`, each record with `correlation_id.internal` and `start_timestamp` /
//! `end_timestamp` in ns. A dispatch and the HIP call that caused it share
//! `correlation_id.internal`, so `hip_api` records are what link kernels to their launches:
//! a file recorded without `--hip-trace` has none, and then replay coverage cannot be told
//! (`TraceMetadata::linkage_unavailable` says so and how to record it).
//! ROCTx ranges are `marker_api` records, their messages in `strings.marker_api` keyed by
//! `correlation_id.internal`: host annotations, where steps are found.
//! Correlation ids are scoped by the process object they belong to.

use crate::IngestError;
use crate::common::{copy_direction, line_offset};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use stepscope_model::{
    CorrelationId, DamageKind, DamagedEvent, DamagedTable, Duration, GpuEventKind, GpuEventRecord,
    ProcessId, RuntimeCallKind, RuntimeCallRecord, Severity, StreamId, ThreadId, Timestamp,
    TraceBuilder,
};

/// Whether `head` starts like rocprofv3 JSON: an object whose first key is the tool's.
pub fn sniff(head: &[u8]) -> Option<bool> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = head.trim_ascii_start();
    if start.first() != Some(&b'{') {
        return Some(false);
    }
    let window = &start[..start.len().min(4096)];
    Some(window.windows(22).any(|w| w == b"\"rocprofiler-sdk-tool\""))
}

/// Why a rocprofv3 JSON without HIP API records cannot show replays.
pub(crate) const NO_HIP_RECORDS: &str = "this rocprofv3 JSON holds kernel dispatches but no HIP API records, so no dispatch can be linked to the hipGraphLaunch that replayed it; record with rocprofv3 --kernel-trace --hip-trace (or --runtime-trace) --output-format json";

#[derive(Debug, Deserialize)]
struct Document {
    #[serde(rename = "rocprofiler-sdk-tool")]
    processes: Vec<Process>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Process {
    metadata: Metadata,
    agents: Vec<Agent>,
    kernel_symbols: Vec<Symbol>,
    strings: Strings,
    buffer_records: Records,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Metadata {
    pid: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Handle {
    handle: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Agent {
    id: Handle,
    #[serde(rename = "type")]
    kind: i64,
    product_name: String,
    name: String,
    gpu_index: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Symbol {
    kernel_id: u64,
    kernel_name: String,
    formatted_kernel_name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Strings {
    buffer_records: Vec<KindNames>,
    /// ROCTx messages by correlation id: `[{"key": id, "value": text}]` (how the tool writes
    /// its map), or an object `{"id": text}`.
    marker_api: serde_json::Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct KindNames {
    operations: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Records {
    kernel_dispatch: Vec<Dispatch>,
    hip_api: Vec<ApiRecord>,
    marker_api: Vec<ApiRecord>,
    memory_copy: Vec<CopyRecord>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Correlation {
    internal: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Dispatch {
    correlation_id: Correlation,
    start_timestamp: i64,
    end_timestamp: i64,
    dispatch_info: DispatchInfo,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DispatchInfo {
    agent_id: Handle,
    queue_id: Handle,
    kernel_id: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ApiRecord {
    kind: usize,
    operation: usize,
    correlation_id: Correlation,
    start_timestamp: i64,
    end_timestamp: i64,
    thread_id: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CopyRecord {
    kind: usize,
    operation: usize,
    correlation_id: Correlation,
    start_timestamp: i64,
    end_timestamp: i64,
    dst_agent_id: Handle,
    src_agent_id: Handle,
}

/// Reads a rocprofv3 JSON document into `builder`.
///
/// Through serde's reader interface, as `read_file` reads a file, not its slice one: the two
/// place some errors one byte apart (a slice's before the value, a reader's after its first
/// byte), and the same bytes must give the same error whether they come from a file or from
/// memory (an inflated `.json.gz`).
pub fn read(
    bytes: &[u8],
    allow_truncated: bool,
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    let parsed = serde_json::from_reader(bytes);
    finish(parsed, (bytes, allow_truncated), builder)
}

/// Reads a rocprofv3 JSON file through a buffer (the document never sits in memory as text,
/// only as its records); `bytes` are the file's, for the offset of an error and for what a
/// break leaves.
pub(crate) fn read_file(
    path: &std::path::Path,
    (bytes, allow_truncated): (&[u8], bool),
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    let source = crate::common::open_buffered(path)?;
    let parsed = serde_json::from_reader(source);
    finish(parsed, (bytes, allow_truncated), builder)
}

/// The document read, or — with `allow_truncated`, after a break — the records complete
/// before it (the import marked partial at the break's byte); else the break's error.
fn finish(
    parsed: Result<Document, serde_json::Error>,
    (bytes, allow_truncated): (&[u8], bool),
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    let error = match parsed {
        Ok(document) => {
            read_document(&document, builder);
            return Ok(());
        }
        Err(error) => error,
    };
    let failure = json_error(bytes, &error);
    let IngestError::Json { offset, .. } = failure else {
        return Err(failure);
    };
    let offset_end = usize::try_from(offset).map_or(bytes.len(), |o| o.min(bytes.len()));
    let salvaged = allow_truncated
        .then(|| crate::common::close_truncated_json(&bytes[..offset_end]))
        .flatten()
        .and_then(|closed| serde_json::from_slice::<Document>(&closed).ok());
    let Some(document) = salvaged else {
        return Err(failure);
    };
    crate::common::mark_truncated(builder, offset);
    read_document(&document, builder);
    Ok(())
}

fn json_error(bytes: &[u8], e: &serde_json::Error) -> IngestError {
    IngestError::Json {
        path: None,
        offset: line_offset(bytes, e.line(), e.column()),
        message: format!("{e} (rocprofv3 JSON)"),
        truncated: e.is_eof(),
    }
}

fn read_document(document: &Document, builder: &mut TraceBuilder) {
    let mut skipped = 0_u64;
    let mut dispatches = 0_usize;
    let mut calls = 0_usize;
    for (index, process) in document.processes.iter().enumerate() {
        // Correlation ids restart in every process: the object's index scopes them.
        let scope = (index as u64) << 48;
        skipped += read_process(process, scope, builder);
        dispatches += process.buffer_records.kernel_dispatch.len();
        calls += process.buffer_records.hip_api.len();
    }
    builder.stats_mut().add(
        "rocprof_json_records_skipped",
        Severity::DataLoss,
        "Records of a rocprofv3 JSON with an end before their start were skipped",
        skipped,
    );
    if dispatches > 0 && calls == 0 {
        builder.metadata_mut().linkage_unavailable = Some(NO_HIP_RECORDS.to_owned());
    }
}

/// Agent handle → (gpu index, product name) for GPUs.
type Gpus<'d> = FxHashMap<u64, (u32, &'d str)>;

/// Reads one process's records; returns how many were skipped.
fn read_process(process: &Process, scope: u64, builder: &mut TraceBuilder) -> u64 {
    let pid = builder.process_number(process.metadata.pid);
    let gpus = gpu_agents(process);
    note_devices(process, &gpus, builder);
    let names: FxHashMap<u64, &str> = process
        .kernel_symbols
        .iter()
        .map(|s| (s.kernel_id, symbol_name(s)))
        .collect();
    let mut queues = Queues::default();
    let records = &process.buffer_records;
    let mut skipped = 0;
    for dispatch in &records.kernel_dispatch {
        let name = names
            .get(&dispatch.dispatch_info.kernel_id)
            .copied()
            .unwrap_or("unknown kernel");
        let info = &dispatch.dispatch_info;
        let lane = (
            device(&gpus, info.agent_id.handle),
            queues.id(info.queue_id.handle),
        );
        let times = (dispatch.start_timestamp, dispatch.end_timestamp);
        let added = add_gpu(
            builder,
            (GpuEventKind::Kernel, name),
            (pid, lane),
            times,
            scope | dispatch.correlation_id.internal,
        );
        skipped += u64::from(added.is_none());
    }
    let copies = queues.id(0);
    for copy in &records.memory_copy {
        skipped +=
            u64::from(add_copy(builder, process, copy, (pid, scope), (&gpus, copies)).is_none());
    }
    for call in &records.hip_api {
        skipped += u64::from(add_call(builder, process, call, (pid, scope)).is_none());
    }
    add_markers(builder, process, pid);
    skipped
}

/// ROCTx messages by correlation id.
fn marker_messages(strings: &Strings) -> FxHashMap<u64, &str> {
    let id = |key: &serde_json::Value| {
        key.as_u64()
            .or_else(|| key.as_str().and_then(|k| k.parse().ok()))
    };
    match &strings.marker_api {
        serde_json::Value::Array(entries) => entries
            .iter()
            .filter_map(|e| Some((id(&e["key"])?, e["value"].as_str()?)))
            .collect(),
        serde_json::Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| Some((k.parse().ok()?, v.as_str()?)))
            .collect(),
        _ => FxHashMap::default(),
    }
}

/// ROCTx ranges (`marker_api` records) as host annotations named by their message, where
/// steps are found; marks (no length) and ranges without a message name no step.
fn add_markers(builder: &mut TraceBuilder, process: &Process, pid: ProcessId) {
    let messages = marker_messages(&process.strings);
    for marker in &process.buffer_records.marker_api {
        builder.counts_mut().events += 1;
        let message = messages.get(&marker.correlation_id.internal);
        let times = (marker.start_timestamp, marker.end_timestamp);
        let (Some(message), Some(timing)) = (message, span(times)) else {
            continue;
        };
        let lane = (pid, ThreadId::Number(marker.thread_id));
        crate::common::add_marker(builder, message, lane, timing);
    }
}

/// The GPU agents: handle → (gpu index, product name).
fn gpu_agents(process: &Process) -> Gpus<'_> {
    process
        .agents
        .iter()
        .filter(|a| a.kind == 2)
        .map(|a| {
            let name = if a.product_name.is_empty() {
                a.name.as_str()
            } else {
                a.product_name.as_str()
            };
            (a.id.handle, (u32::try_from(a.gpu_index).unwrap_or(0), name))
        })
        .collect()
}

/// A memory copy, on the GPU it copies to (or from), in a stream of its own.
fn add_copy(
    builder: &mut TraceBuilder,
    process: &Process,
    copy: &CopyRecord,
    (pid, scope): (ProcessId, u64),
    (gpus, stream): (&Gpus<'_>, u32),
) -> Option<()> {
    let operation = operation_name(&process.strings, copy.kind, copy.operation);
    let name = format!("Memcpy {}", copy_direction(operation));
    let agent = if gpus.contains_key(&copy.dst_agent_id.handle) {
        copy.dst_agent_id.handle
    } else {
        copy.src_agent_id.handle
    };
    let lane = (device(gpus, agent), stream);
    add_gpu(
        builder,
        (GpuEventKind::Memcpy, &name),
        (pid, lane),
        (copy.start_timestamp, copy.end_timestamp),
        scope | copy.correlation_id.internal,
    )
}

fn note_devices(process: &Process, gpus: &Gpus<'_>, builder: &mut TraceBuilder) {
    let mut used: Vec<(u32, &str)> = process
        .buffer_records
        .kernel_dispatch
        .iter()
        .filter_map(|d| gpus.get(&d.dispatch_info.agent_id.handle).copied())
        .collect();
    used.sort_unstable();
    used.dedup();
    let metadata = builder.metadata_mut();
    for (_, name) in used {
        if !metadata.device_names.iter().any(|n| n == name) {
            metadata.device_names.push(name.to_owned());
        }
    }
}

/// A kernel's name: demangled and without `.kd` where the symbol has it.
fn symbol_name(symbol: &Symbol) -> &str {
    if symbol.formatted_kernel_name.is_empty() {
        symbol
            .kernel_name
            .strip_suffix(".kd")
            .unwrap_or(&symbol.kernel_name)
    } else {
        &symbol.formatted_kernel_name
    }
}

fn operation_name(strings: &Strings, kind: usize, operation: usize) -> &str {
    strings
        .buffer_records
        .get(kind)
        .and_then(|k| k.operations.get(operation))
        .map_or("", String::as_str)
}

fn device(gpus: &Gpus<'_>, agent: u64) -> u32 {
    gpus.get(&agent).map_or(0, |(index, _)| *index)
}

/// Queue handles (addresses) as small stream numbers, in order of first use.
#[derive(Debug, Default)]
struct Queues(FxHashMap<u64, u32>);

impl Queues {
    fn id(&mut self, handle: u64) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(handle).or_insert(next)
    }
}

fn span((start, end): (i64, i64)) -> Option<(Timestamp, Duration)> {
    (end >= start && start >= 0).then(|| {
        (
            Timestamp::from_nanos(start),
            Duration::from_nanos(end - start),
        )
    })
}

/// A record whose times do not make a span, refused as damage with its correlation id and
/// name, so analysis ties it to its replay (as every reader does).
fn refuse(
    builder: &mut TraceBuilder,
    (table, name): (DamagedTable, &str),
    (start, _end): (i64, i64),
    correlation: u64,
) {
    let kind = if start < 0 {
        DamageKind::InvalidTime
    } else {
        DamageKind::NegativeDuration
    };
    let name = Some(builder.intern(name));
    builder.add_damaged(DamagedEvent {
        kind,
        table,
        correlation: CorrelationId(correlation),
        name,
    });
}

fn add_gpu(
    builder: &mut TraceBuilder,
    (kind, name): (GpuEventKind, &str),
    (process, (device, stream)): (ProcessId, (u32, u32)),
    times: (i64, i64),
    correlation: u64,
) -> Option<()> {
    builder.counts_mut().events += 1;
    let Some((start, duration)) = span(times) else {
        refuse(builder, (DamagedTable::Gpu, name), times, correlation);
        return None;
    };
    let event = GpuEventRecord {
        kind,
        name: builder.intern(name),
        process,
        device,
        stream: StreamId(stream),
        start,
        duration,
        correlation: CorrelationId(correlation),
        graph_id: None,
    };
    builder.add_gpu_event(event);
    Some(())
}

fn add_call(
    builder: &mut TraceBuilder,
    process: &Process,
    call: &ApiRecord,
    (pid, scope): (ProcessId, u64),
) -> Option<()> {
    builder.counts_mut().events += 1;
    let name = operation_name(&process.strings, call.kind, call.operation);
    let times = (call.start_timestamp, call.end_timestamp);
    let correlation = scope | call.correlation_id.internal;
    let Some((start, duration)) = span(times) else {
        refuse(builder, (DamagedTable::Runtime, name), times, correlation);
        return None;
    };
    let record = RuntimeCallRecord {
        kind: RuntimeCallKind::classify(name),
        name: builder.intern(name),
        process: pid,
        thread: ThreadId::Number(call.thread_id),
        start,
        duration,
        correlation: CorrelationId(correlation),
        launched_kernel: None,
    };
    builder.add_runtime_call(record);
    Some(())
}
