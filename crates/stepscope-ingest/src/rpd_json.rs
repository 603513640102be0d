//! rocmProfileData's Chrome-trace export (`rpd2tracing.py`): a top-level JSON array.
//!
//! Unlike a Kineto trace, nothing carries a `cat` but the flows: GPU operations are `X`
//! events on processes that `process_name` metadata names `GPU<n>` (one thread per queue),
//! `args.desc` holding the operation type (`KernelExecution`, `CopyDeviceToHost`, …); HIP
//! API calls are `X` events on the traced process's threads (`Hip <tid>`). A call is linked to
//! its operations only by `api_op` flows: an `s` on the call's thread inside the call, an `f`
//! (`bp: "e"`) on the GPU thread at the operation's start, sharing an `id` (one per
//! call–operation pair, so a `hipGraphLaunch` has one flow per kernel). Each call gets its own
//! correlation id and each linked operation takes its call's. Numbers are strings of whole
//! microseconds (rpd2tracing divides nanoseconds by 1000, truncating).

use crate::IngestError;
use crate::rpd_sqlite::op_kind;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::Value;
use stepscope_model::{
    CorrelationId, Duration, GpuEventKind, GpuEventRecord, ProcessId, RuntimeCallKind,
    RuntimeCallRecord, Severity, StreamId, ThreadId, Timestamp, TraceBuilder,
};

/// Whether `head` starts like rpd2tracing output: a JSON array whose first events name a
/// `GPU<n>` process or carry `api_op` flows, and no Kineto category.
pub fn sniff(head: &[u8]) -> Option<bool> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if head.trim_ascii_start().first() != Some(&b'[') {
        return Some(false);
    }
    let window = &head[..head.len().min(64 * 1024)];
    let has = |needle: &[u8]| window.windows(needle.len()).any(|w| w == needle);
    let gpu_process = has(b"\"process_name\"") && has(b"{\"name\":\"GPU");
    let kineto =
        has(b"\"cat\":\"kernel\"") || has(b"\"cat\": \"kernel\"") || has(b"\"cat\":\"Kernel\"");
    Some((gpu_process || has(b"\"api_op\"")) && !kineto)
}

/// One event as rpd2tracing writes it (strings or numbers for every number).
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(default)]
    ph: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    cat: Option<String>,
    #[serde(default)]
    pid: Value,
    #[serde(default)]
    tid: Value,
    #[serde(default)]
    ts: Value,
    #[serde(default)]
    dur: Value,
    #[serde(default)]
    id: Value,
    #[serde(default)]
    args: Option<serde_json::Map<String, Value>>,
}

/// A JSON number, or a number written as a string.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn int(value: &Value) -> Option<i64> {
    number(value).filter(|n| n.is_finite()).map(|n| n as i64)
}

/// A lane: (pid, tid).
type Lane = (i64, i64);

/// An event on a lane with its start and end (µs) and its row in the model.
#[derive(Debug, Clone, Copy)]
struct Placed {
    start: f64,
    end: f64,
    row: usize,
}

/// What the first pass found: GPU processes, calls and ops by lane, flow ends by id.
#[derive(Debug, Default)]
struct Layout {
    gpu_processes: FxHashMap<i64, u32>,
    calls: FxHashMap<Lane, Vec<Placed>>,
    ops: FxHashMap<Lane, Vec<Placed>>,
    starts: FxHashMap<String, (Lane, f64)>,
    finishes: FxHashMap<String, (Lane, f64)>,
}

/// Reads an rpd2tracing document into `builder`.
pub fn read(bytes: &[u8], builder: &mut TraceBuilder) -> Result<(), IngestError> {
    let events: Vec<Event> = serde_json::from_slice(bytes).map_err(|e| IngestError::Json {
        path: None,
        offset: line_offset(bytes, e.line(), e.column()),
        message: e.to_string(),
        truncated: e.is_eof(),
    })?;
    builder.counts_mut().events += events.len() as u64;
    let mut layout = Layout::default();
    for event in &events {
        if event.ph == "M" && event.name == "process_name" {
            note_process(event, &mut layout);
        }
    }
    let mut calls = Vec::new();
    let mut ops = Vec::new();
    let mut skipped = 0_u64;
    for event in &events {
        match event.ph.as_str() {
            "X" if place(event, &mut layout, &mut calls, &mut ops).is_none() => skipped += 1,
            "s" | "f" if event.cat.as_deref() == Some("api_op") => note_flow(event, &mut layout),
            _ => {}
        }
    }
    let links = link(&layout);
    write(builder, (&calls, &ops), &links, &layout.gpu_processes);
    builder.stats_mut().add(
        "rpd_json_events_skipped",
        Severity::DataLoss,
        "X events of an rpd2tracing file without a readable time were skipped",
        skipped,
    );
    builder.stats_mut().add(
        "rpd_json_ops_unlinked",
        Severity::Info,
        "GPU operations of an rpd2tracing file with no api_op flow to a HIP call",
        (ops.len() - links.len()) as u64,
    );
    let metadata = builder.metadata_mut();
    if metadata.device_names.is_empty() {
        metadata.device_names.push("AMD GPU (RPD)".to_owned());
    }
    Ok(())
}

/// The byte offset of a 1-based line and column.
pub(crate) fn line_offset(bytes: &[u8], line: usize, column: usize) -> u64 {
    let line_start: usize = bytes
        .split(|b| *b == b'\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    (line_start + column.saturating_sub(1)) as u64
}

fn note_process(event: &Event, layout: &mut Layout) {
    let name = event
        .args
        .as_ref()
        .and_then(|a| a.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let (Some(pid), Some(gpu)) = (int(&event.pid), name.strip_prefix("GPU")) {
        layout
            .gpu_processes
            .insert(pid, gpu.trim().parse().unwrap_or(0));
    }
}

/// A call or an operation read from an `X` event.
#[derive(Debug)]
struct Span<'e> {
    event: &'e Event,
    lane: Lane,
    start: f64,
    dur: f64,
}

/// Files an `X` event as a call or an operation; `None` when its time is unreadable.
fn place<'e>(
    event: &'e Event,
    layout: &mut Layout,
    calls: &mut Vec<Span<'e>>,
    ops: &mut Vec<Span<'e>>,
) -> Option<()> {
    let start = number(&event.ts)?;
    let dur = number(&event.dur).unwrap_or(0.0);
    if !(start.is_finite() && dur.is_finite() && dur >= 0.0) {
        return None;
    }
    let lane = (int(&event.pid).unwrap_or(0), int(&event.tid).unwrap_or(0));
    let span = Span {
        event,
        lane,
        start,
        dur,
    };
    let (list, by_lane) = if layout.gpu_processes.contains_key(&lane.0) {
        (ops, &mut layout.ops)
    } else {
        (calls, &mut layout.calls)
    };
    by_lane.entry(lane).or_default().push(Placed {
        start,
        end: start + dur,
        row: list.len(),
    });
    list.push(span);
    Some(())
}

fn note_flow(event: &Event, layout: &mut Layout) {
    let (Some(ts), Some(id)) = (number(&event.ts), flow_id(&event.id)) else {
        return;
    };
    let lane = (int(&event.pid).unwrap_or(0), int(&event.tid).unwrap_or(0));
    let ends = if event.ph == "s" {
        &mut layout.starts
    } else {
        &mut layout.finishes
    };
    ends.insert(id, (lane, ts));
}

fn flow_id(id: &Value) -> Option<String> {
    match id {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Operation row → call row, through the flows.
fn link(layout: &Layout) -> FxHashMap<usize, usize> {
    let mut calls = layout.calls.clone();
    let mut ops = layout.ops.clone();
    for lane in calls.values_mut().chain(ops.values_mut()) {
        lane.sort_by(|a, b| a.start.total_cmp(&b.start));
    }
    let mut taken = vec![false; ops.values().map(Vec::len).sum::<usize>() + 1];
    let mut links = FxHashMap::default();
    for (id, (call_lane, at)) in &layout.starts {
        let Some((op_lane, op_at)) = layout.finishes.get(id) else {
            continue;
        };
        let call = calls.get(call_lane).and_then(|lane| enclosing(lane, *at));
        let op = ops
            .get(op_lane)
            .and_then(|lane| starting_at(lane, *op_at, &taken));
        if let (Some(call), Some(op)) = (call, op) {
            if let Some(flag) = taken.get_mut(op) {
                *flag = true;
            }
            links.insert(op, call);
        }
    }
    links
}

/// The call on a lane (sorted by start) that holds `at`, or the last that starts by
/// `at` + 2 µs (rpd2tracing puts an asynchronous call's flow 2 µs before its end, which
/// truncation to whole µs can move before a short call's start).
fn enclosing(lane: &[Placed], at: f64) -> Option<usize> {
    let after = lane.partition_point(|p| p.start <= at);
    if let Some(p) = lane[..after].iter().rev().find(|p| p.end >= at) {
        return Some(p.row);
    }
    let within = lane.partition_point(|p| p.start <= at + 2.0);
    within.checked_sub(1).map(|i| lane[i].row)
}

/// The first operation not yet linked that starts at `at` (ops of one queue can share a
/// whole microsecond), else the one that holds it.
fn starting_at(lane: &[Placed], at: f64, taken: &[bool]) -> Option<usize> {
    let first = lane.partition_point(|p| p.start < at);
    let free = |p: &&Placed| !taken.get(p.row).copied().unwrap_or(true);
    lane[first..]
        .iter()
        .take_while(|p| p.start == at)
        .find(free)
        .or_else(|| lane[..first].iter().rev().find(|p| p.end >= at))
        .map(|p| p.row)
}

fn micros(us: f64) -> Timestamp {
    Timestamp::from_nanos((us * 1000.0).round() as i64)
}

fn write(
    builder: &mut TraceBuilder,
    (calls, ops): (&[Span<'_>], &[Span<'_>]),
    links: &FxHashMap<usize, usize>,
    gpus: &FxHashMap<i64, u32>,
) {
    let mut processes: FxHashMap<i64, ProcessId> = FxHashMap::default();
    for (row, call) in calls.iter().enumerate() {
        let process = *processes
            .entry(call.lane.0)
            .or_insert_with(|| builder.process_number(call.lane.0));
        let name = call.event.name.as_str();
        let record = RuntimeCallRecord {
            kind: RuntimeCallKind::classify(name),
            name: builder.intern(name),
            process,
            thread: ThreadId::Number(call.lane.1),
            start: micros(call.start),
            duration: Duration::from_nanos((call.dur * 1000.0).round() as i64),
            correlation: CorrelationId(row as u64 + 1),
            launched_kernel: None,
        };
        builder.add_runtime_call(record);
    }
    // Operations under the process of the calls (rpd2tracing writes one traced process).
    let host = processes
        .values()
        .next()
        .copied()
        .unwrap_or_else(|| builder.process_label("rpd"));
    for (row, op) in ops.iter().enumerate() {
        let device = gpus.get(&op.lane.0).copied().unwrap_or(0);
        let call = links.get(&row).map(|call| *call as u64 + 1);
        add_op(builder, op, (host, device), call);
    }
}

fn add_op(
    builder: &mut TraceBuilder,
    op: &Span<'_>,
    (host, device): (ProcessId, u32),
    call: Option<u64>,
) {
    let desc = op
        .event
        .args
        .as_ref()
        .and_then(|a| a.get("desc"))
        .and_then(Value::as_str)
        .unwrap_or("KernelExecution");
    let (kind, name) = op_kind(desc, op.event.name.clone())
        .unwrap_or((GpuEventKind::Kernel, op.event.name.clone()));
    let event = GpuEventRecord {
        kind,
        name: builder.intern(&name),
        process: host,
        device,
        stream: StreamId(u32::try_from(op.lane.1).unwrap_or(0)),
        start: micros(op.start),
        duration: Duration::from_nanos((op.dur * 1000.0).round() as i64),
        correlation: CorrelationId(call.unwrap_or(0)),
        graph_id: None,
    };
    builder.add_gpu_event(event);
}
