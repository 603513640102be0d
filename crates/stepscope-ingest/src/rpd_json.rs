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
//!
//! The array is read one event at a time (a serde visitor), each kept as a small record with
//! its name interned: the document is never held as JSON values.

use crate::IngestError;
use crate::common::line_offset;
use crate::rpd_ops::op_kind;
use rustc_hash::FxHashMap;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, de};
use std::borrow::Cow;
use stepscope_model::{
    CorrelationId, DamageKind, DamagedEvent, DamagedTable, Duration, GpuEventKind, GpuEventRecord,
    NameId, ProcessId, RuntimeCallKind, RuntimeCallRecord, Severity, StreamId, ThreadId, Timestamp,
    TraceBuilder,
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

/// A number written as a JSON number or a string (`None`: neither, or absent).
#[derive(Debug, Default, Clone, Copy)]
struct Num(Option<f64>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NumVisitor)
    }
}

/// Numbers as they come, strings parsed, anything else `None` (skipped whole).
struct NumVisitor;

impl<'de> Visitor<'de> for NumVisitor {
    type Value = Num;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a number or a string holding one")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
        Ok(Num(Some(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
        Ok(Num(Some(v as f64)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
        Ok(Num(Some(v as f64)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
        Ok(Num(v.trim().parse().ok()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Num, E> {
        Ok(Num(None))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Num, E> {
        Ok(Num(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Num, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(Num(None))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Num, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Num(None))
    }
}

impl Num {
    fn int(self) -> i64 {
        self.0.filter(|n| n.is_finite()).map_or(0, |n| n as i64)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Args<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    desc: Option<Cow<'a, str>>,
}

/// One event, the fields this reader uses (strings borrowed from the input where possible).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event<'a> {
    #[serde(borrow)]
    ph: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    pid: Num,
    tid: Num,
    ts: Num,
    dur: Num,
    id: Num,
    #[serde(borrow)]
    args: Option<Args<'a>>,
}

/// A lane: (pid, tid).
type Lane = (i64, i64);

/// An `X` event kept: lane, time (µs), name and `args.desc`.
#[derive(Debug, Clone, Copy)]
struct Span {
    lane: Lane,
    start: f64,
    dur: f64,
    name: NameId,
    desc: Option<NameId>,
}

/// An `X` event placed on its lane (sorted later), by index into the calls or the ops.
#[derive(Debug, Clone, Copy)]
struct Placed {
    start: f64,
    end: f64,
    row: usize,
}

/// Everything kept while the array streams by.
#[derive(Debug, Default)]
struct Sink {
    gpu_processes: FxHashMap<i64, u32>,
    spans: Vec<Span>,
    starts: FxHashMap<u64, (Lane, f64)>,
    finishes: FxHashMap<u64, (Lane, f64)>,
    events: u64,
    skipped: u64,
    /// `X` events without a usable time: refused as damage, each tied (in [`link`]) to the
    /// call whose flow ends where it starts.
    refused: Vec<Refused>,
}

/// An `X` event refused for its time: where it was, why, and its name.
#[derive(Debug, Clone, Copy)]
struct Refused {
    lane: Lane,
    start: f64,
    kind: DamageKind,
    name: NameId,
}

impl Sink {
    fn take(&mut self, event: Event<'_>, builder: &mut TraceBuilder) {
        self.events += 1;
        let lane = (event.pid.int(), event.tid.int());
        match event.ph.as_ref() {
            "M" if event.name == "process_name" => {
                let name = event.args.and_then(|a| a.name).unwrap_or_default();
                if let Some(gpu) = name.strip_prefix("GPU") {
                    self.gpu_processes
                        .insert(lane.0, gpu.trim().parse().unwrap_or(0));
                }
            }
            "X" => match (event.ts.0, event.dur.0.unwrap_or(0.0)) {
                (Some(start), dur) if start.is_finite() && dur.is_finite() && dur >= 0.0 => {
                    let desc = event.args.and_then(|a| a.desc);
                    self.spans.push(Span {
                        lane,
                        start,
                        dur,
                        name: builder.intern(&event.name),
                        desc: desc.map(|d| builder.intern(&d)),
                    });
                }
                (start, dur) => {
                    self.skipped += 1;
                    let kind = match start {
                        Some(start) if start.is_finite() && dur < 0.0 => {
                            DamageKind::NegativeDuration
                        }
                        _ => DamageKind::InvalidTime,
                    };
                    self.refused.push(Refused {
                        lane,
                        start: start.unwrap_or(f64::NAN),
                        kind,
                        name: builder.intern(&event.name),
                    });
                }
            },
            "s" | "f" if event.cat.as_deref() == Some("api_op") => {
                if let (Some(ts), Some(id)) = (event.ts.0, event.id.0) {
                    let ends = if event.ph == "s" {
                        &mut self.starts
                    } else {
                        &mut self.finishes
                    };
                    ends.insert(id as u64, (lane, ts));
                }
            }
            _ => {}
        }
    }
}

/// Streams the top-level array into a [`Sink`].
struct ArrayVisitor<'s, 'b> {
    sink: &'s mut Sink,
    builder: &'b mut TraceBuilder,
}

impl<'de> Visitor<'de> for ArrayVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(event) = seq.next_element::<Event<'de>>()? {
            self.sink.take(event, self.builder);
        }
        Ok(())
    }
}

/// Reads an rpd2tracing document into `builder`.
///
/// With `allow_truncated`, a break in the JSON keeps the events before it (they are read
/// into the sink as the array streams) and marks the import partial at its byte.
pub fn read(
    bytes: &[u8],
    allow_truncated: bool,
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    // Serde's reader interface, as `read_file` uses, not its slice one: the two place some
    // errors one byte apart, and the same bytes must fail at the same byte from a file or
    // from memory (an inflated `.json.gz`).
    let mut deserializer = serde_json::Deserializer::from_reader(bytes);
    let mut sink = Sink::default();
    let parsed = parse(&mut deserializer, &mut sink, builder);
    finish(sink, (parsed, bytes, allow_truncated), builder)
}

/// [`read`] of a file through a buffer: the text never sits in memory whole; `bytes` are
/// the file's, for the offset of a break.
pub(crate) fn read_file(
    path: &std::path::Path,
    bytes: &[u8],
    allow_truncated: bool,
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    let source = crate::common::open_buffered(path)?;
    let mut deserializer = serde_json::Deserializer::from_reader(source);
    let mut sink = Sink::default();
    let parsed = parse(&mut deserializer, &mut sink, builder);
    finish(sink, (parsed, bytes, allow_truncated), builder)
}

/// Streams the top-level array into `sink`.
fn parse<'de, R: serde_json::de::Read<'de>>(
    deserializer: &mut serde_json::Deserializer<R>,
    sink: &mut Sink,
    builder: &mut TraceBuilder,
) -> Result<(), serde_json::Error> {
    deserializer
        .deserialize_seq(ArrayVisitor { sink, builder })
        .and_then(|()| deserializer.end())
}

/// Links and writes what the array held: the error of a break (unless `allow_truncated`,
/// which marks the import partial at its byte of `bytes`).
fn finish(
    sink: Sink,
    (parsed, bytes, allow_truncated): (Result<(), serde_json::Error>, &[u8], bool),
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    if let Err(error) = parsed {
        let offset = line_offset(bytes, error.line(), error.column());
        if !allow_truncated {
            return Err(IngestError::Json {
                path: None,
                offset,
                message: error.to_string(),
                truncated: error.is_eof(),
            });
        }
        crate::common::mark_truncated(builder, offset);
    }
    builder.counts_mut().events += sink.events;
    let (calls, ops) = split(&sink);
    let (links, lost) = link(&sink, &calls, &ops);
    write(builder, &sink, (&calls, &ops), &links);
    refuse(builder, &sink, &lost);
    let stats = builder.stats_mut();
    stats.add(
        "rpd_json_events_skipped",
        Severity::DataLoss,
        "X events of an rpd2tracing file without a readable time were skipped",
        sink.skipped,
    );
    stats.add(
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

/// Span indices of the calls and of the GPU operations (on `GPU<n>` processes).
fn split(sink: &Sink) -> (Vec<usize>, Vec<usize>) {
    (0..sink.spans.len()).partition(|&i| !sink.gpu_processes.contains_key(&sink.spans[i].lane.0))
}

/// Rows (into `rows`) per lane, sorted by start.
fn by_lane(sink: &Sink, rows: &[usize]) -> FxHashMap<Lane, Vec<Placed>> {
    let mut lanes: FxHashMap<Lane, Vec<Placed>> = FxHashMap::default();
    for (row, &i) in rows.iter().enumerate() {
        let span = &sink.spans[i];
        lanes.entry(span.lane).or_default().push(Placed {
            start: span.start,
            end: span.start + span.dur,
            row,
        });
    }
    for lane in lanes.values_mut() {
        lane.sort_by(|a, b| a.start.total_cmp(&b.start));
    }
    lanes
}

/// Each refused event as damage, with the correlation id of the call whose flow ends where it
/// started (`lost`: refused index → call row), so analysis ties it to that call's replay.
fn refuse(builder: &mut TraceBuilder, sink: &Sink, lost: &FxHashMap<usize, usize>) {
    for (index, refused) in sink.refused.iter().enumerate() {
        let call = lost.get(&index).map_or(0, |call| *call as u64 + 1);
        builder.add_damaged(DamagedEvent {
            kind: refused.kind,
            table: if sink.gpu_processes.contains_key(&refused.lane.0) {
                DamagedTable::Gpu
            } else {
                DamagedTable::Runtime
            },
            correlation: CorrelationId(call),
            name: Some(refused.name),
        });
    }
}

/// Operation row → call row, through the flows; and refused event → call row, for flows
/// that end where an event refused for its time started.
fn link(
    sink: &Sink,
    calls: &[usize],
    ops: &[usize],
) -> (FxHashMap<usize, usize>, FxHashMap<usize, usize>) {
    let call_lanes = by_lane(sink, calls);
    let op_lanes = by_lane(sink, ops);
    let mut taken = vec![false; ops.len()];
    let mut links = FxHashMap::default();
    let mut lost = FxHashMap::default();
    // In time order, so the lookups walk the lanes forward (not at random through memory).
    let mut flows: Vec<(&u64, &(Lane, f64))> = sink.starts.iter().collect();
    flows.sort_unstable_by(|a, b| a.1.1.total_cmp(&b.1.1));
    for (id, (call_lane, at)) in flows {
        let Some((op_lane, op_at)) = sink.finishes.get(id) else {
            continue;
        };
        let call = call_lanes
            .get(call_lane)
            .and_then(|lane| enclosing(lane, *at));
        let op = op_lanes
            .get(op_lane)
            .and_then(|lane| starting_at(lane, *op_at, &taken));
        let Some(call) = call else { continue };
        // An op starting exactly there, else an event refused for its time that did, else
        // the op that holds the time (a flow truncated to whole µs).
        let exact = op.filter(|&o| sink.spans[ops[o]].start == *op_at);
        let refused = || {
            (0..sink.refused.len()).find(|&i| {
                let r = &sink.refused[i];
                r.lane == *op_lane && r.start == *op_at && !lost.contains_key(&i)
            })
        };
        match (exact, op) {
            (Some(op), _) => {
                taken[op] = true;
                links.insert(op, call);
            }
            (None, held) => match (refused(), held) {
                (Some(refused), _) => {
                    lost.insert(refused, call);
                }
                (None, Some(op)) => {
                    taken[op] = true;
                    links.insert(op, call);
                }
                (None, None) => {}
            },
        }
    }
    (links, lost)
}

/// The call on a lane (sorted by start) that holds `at`, or the last that starts by
/// `at` + 2 µs (rpd2tracing puts an asynchronous call's flow 2 µs before its end, which
/// truncation to whole µs can move before a short call's start).
fn enclosing(lane: &[Placed], at: f64) -> Option<usize> {
    // Calls on one thread do not overlap: only the last one started by `at` can hold it.
    let after = lane.partition_point(|p| p.start <= at);
    if let Some(p) = after
        .checked_sub(1)
        .map(|i| &lane[i])
        .filter(|p| p.end >= at)
    {
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
        .or_else(|| {
            first
                .checked_sub(1)
                .map(|i| &lane[i])
                .filter(|p| p.end >= at)
        })
        .map(|p| p.row)
}

fn write(
    builder: &mut TraceBuilder,
    sink: &Sink,
    (calls, ops): (&[usize], &[usize]),
    links: &FxHashMap<usize, usize>,
) {
    let mut processes: FxHashMap<i64, ProcessId> = FxHashMap::default();
    for (row, &i) in calls.iter().enumerate() {
        let span = &sink.spans[i];
        let process = *processes
            .entry(span.lane.0)
            .or_insert_with(|| builder.process_number(span.lane.0));
        let record = RuntimeCallRecord {
            kind: RuntimeCallKind::classify(builder.name(span.name)),
            name: span.name,
            process,
            thread: ThreadId::Number(span.lane.1),
            start: Timestamp::from_micros_f64(span.start),
            duration: Duration::from_micros_f64(span.dur),
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
    for (row, &i) in ops.iter().enumerate() {
        let span = &sink.spans[i];
        let device = sink.gpu_processes.get(&span.lane.0).copied().unwrap_or(0);
        let call = links.get(&row).map(|call| *call as u64 + 1);
        add_op(builder, span, (host, device), call);
    }
}

fn add_op(
    builder: &mut TraceBuilder,
    span: &Span,
    (host, device): (ProcessId, u32),
    call: Option<u64>,
) {
    let desc = span
        .desc
        .map_or("KernelExecution", |d| builder.name(d))
        .to_owned();
    let name = builder.name(span.name).to_owned();
    let (kind, name) = op_kind(&desc, name.clone())
        .work
        .unwrap_or((GpuEventKind::Kernel, name));
    let event = GpuEventRecord {
        kind,
        name: builder.intern(&name),
        process: host,
        device,
        stream: StreamId(u32::try_from(span.lane.1).unwrap_or(0)),
        start: Timestamp::from_micros_f64(span.start),
        duration: Duration::from_micros_f64(span.dur),
        correlation: CorrelationId(call.unwrap_or(0)),
        graph_id: None,
    };
    builder.add_gpu_event(event);
}
