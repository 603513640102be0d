//! The analysed trace as a Chrome-trace JSON that the Perfetto UI and `chrome://tracing` open
//! (`analyze --perfetto FILE`).
//!
//! What is written: every GPU event (kernels, copies, fills) on a thread per device and
//! stream, every runtime call and host annotation (step markers) on its own process and
//! thread, with `args.correlation` as Kineto writes them (so stepscope's own reader reads the
//! file back to the same steps and replays); each graph replay as a slice
//! named with its status (`replay #3 graph 1: EMPTY 0 of 15`) over its kernels, or, when it
//! recorded none, over the time after its launch where they would have run (its graph's
//! recorded time) — the gap is seen, not hidden; each step as a slice; each replay with a
//! problem as an instant event carrying its evidence; each event refused at import for bad
//! data as a zero-length slice at its launch (category `stepscope_damaged`, `args` saying
//! why, its correlation id kept), so that reading the export back ties it to the same replay
//! and gives the same verdict (a category the reader does not know, with a correlation id and
//! a duration, damages the replay that launched it).
//! Perfetto drops `X` events that overlap partially on one thread (google/perfetto #4280):
//! replay and step slices are spread over as many "lanes" (threads) as their overlaps need,
//! so every slice on a thread nests strictly.

use serde_json::{Value, json};
use std::io::{self, BufWriter, Write};
use stepscope_analysis::TraceAnalysis;
use stepscope_analysis::{Replay, ReplayStatus};
use stepscope_model::{Duration, GpuEventKind, ProcessKey, ThreadId, Timestamp, Trace};

/// The process the GPU lanes are filed under, plus the device.
const GPU_PID: i64 = 1_000_000;
/// The process of the replay and step slices and the findings.
const STEPSCOPE_PID: i64 = 2_000_000;

/// What was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfettoSummary {
    /// Trace events written (metadata included).
    pub events: u64,
    /// Replay slices.
    pub replays: u64,
    /// Replay slices with no kernel under them.
    pub empty_replays: u64,
}

/// Writes `trace` and its analysis to `out`.
pub fn write_perfetto(
    trace: &Trace,
    analysis: &TraceAnalysis,
    out: impl Write,
) -> io::Result<PerfettoSummary> {
    let mut writer = EventWriter::new(out)?;
    let mut summary = PerfettoSummary::default();
    write_gpu(trace, &mut writer)?;
    write_runtime(trace, &mut writer)?;
    write_annotations(trace, &mut writer)?;
    let (replays, empty) = write_replays(trace, analysis, &mut writer)?;
    summary.replays = replays;
    summary.empty_replays = empty;
    write_steps(trace, analysis, &mut writer)?;
    write_damaged(trace, &mut writer)?;
    writer.event(&json!({"ph": "M", "name": "process_name", "pid": STEPSCOPE_PID, "args": {"name": "stepscope: replays, steps, findings"}}))?;
    summary.events = writer.finish()?;
    Ok(summary)
}

/// The first bytes of every Perfetto file stepscope writes: a key Perfetto and the trace
/// readers ignore, by which a folder scan knows the file for an export, not a profile.
pub const EXPORT_MARK: &[u8] = b"{\"stepscope_export\":\"perfetto\"";

/// A JSON object with a `traceEvents` array, written one event at a time.
struct EventWriter<W: Write> {
    out: BufWriter<W>,
    events: u64,
}

impl<W: Write> EventWriter<W> {
    fn new(out: W) -> io::Result<Self> {
        let mut out = BufWriter::new(out);
        out.write_all(EXPORT_MARK)?;
        out.write_all(b",\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        Ok(EventWriter { out, events: 0 })
    }

    fn event(&mut self, event: &Value) -> io::Result<()> {
        if self.events > 0 {
            self.out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut self.out, event)?;
        self.events += 1;
        Ok(())
    }

    fn finish(mut self) -> io::Result<u64> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(self.events)
    }
}

fn host_pid(trace: &Trace, process: stepscope_model::ProcessId) -> i64 {
    match trace.processes.get(process.index()) {
        Some(ProcessKey::Number(pid)) => *pid,
        _ => process.index() as i64 + 1,
    }
}

fn tid(thread: ThreadId) -> i64 {
    match thread {
        ThreadId::Number(n) => n,
        ThreadId::Label(name) => 500_000 + name.index() as i64,
    }
}

fn write_gpu<W: Write>(trace: &Trace, writer: &mut EventWriter<W>) -> io::Result<()> {
    let gpu = &trace.gpu;
    let mut lanes = std::collections::BTreeSet::new();
    for row in 0..gpu.len() {
        let category = match gpu.kind[row] {
            GpuEventKind::Kernel => "kernel",
            GpuEventKind::Memcpy => "gpu_memcpy",
            GpuEventKind::Memset => "gpu_memset",
        };
        let pid = GPU_PID + i64::from(gpu.device[row]);
        let stream = i64::from(gpu.stream[row].0);
        lanes.insert((pid, stream, gpu.device[row]));
        writer.event(&json!({
            "ph": "X", "cat": category, "name": trace.name(gpu.name[row]),
            "pid": pid, "tid": stream,
            "ts": gpu.start[row].as_micros_f64(), "dur": gpu.duration[row].as_micros_f64(),
            "args": {"device": gpu.device[row], "stream": stream, "correlation": gpu.correlation[row].0}
        }))?;
    }
    for (pid, stream, device) in lanes {
        writer.event(&json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": format!("GPU {device}")}}))?;
        writer.event(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": stream, "args": {"name": format!("stream {stream}")}}))?;
    }
    Ok(())
}

fn write_runtime<W: Write>(trace: &Trace, writer: &mut EventWriter<W>) -> io::Result<()> {
    let runtime = &trace.runtime;
    for row in 0..runtime.len() {
        writer.event(&json!({
            "ph": "X", "cat": "cuda_runtime", "name": trace.name(runtime.name[row]),
            "pid": host_pid(trace, runtime.process[row]), "tid": tid(runtime.thread[row]),
            "ts": runtime.start[row].as_micros_f64(), "dur": runtime.duration[row].as_micros_f64(),
            "args": {"correlation": runtime.correlation[row].0}
        }))?;
    }
    Ok(())
}

/// The host annotations (step markers among them) as `user_annotation` slices on their
/// threads, as Kineto writes them, so that reading the export back finds the same steps.
fn write_annotations<W: Write>(trace: &Trace, writer: &mut EventWriter<W>) -> io::Result<()> {
    let spans = &trace.annotations;
    for row in 0..spans.len() {
        writer.event(&json!({
            "ph": "X", "cat": "user_annotation", "name": trace.name(spans.name[row]),
            "pid": host_pid(trace, spans.process[row]), "tid": tid(spans.thread[row]),
            "ts": spans.start[row].as_micros_f64(), "dur": spans.duration[row].as_micros_f64(),
        }))?;
    }
    Ok(())
}

/// The thread of the damaged-event slices, in the stepscope process.
const DAMAGED_TID: i64 = 999_999;

/// Each event refused at import, at its launch's start (the trace's first event when no host
/// call has its correlation id), marked with why.
fn write_damaged<W: Write>(trace: &Trace, writer: &mut EventWriter<W>) -> io::Result<()> {
    if trace.damaged.events.is_empty() {
        return Ok(());
    }
    let runtime = &trace.runtime;
    let launches: std::collections::HashMap<u64, Timestamp> = (0..runtime.len())
        .map(|row| (runtime.correlation[row].0, runtime.start[row]))
        .collect();
    let first = trace.gpu.start.iter().chain(&runtime.start).min().copied();
    for damaged in &trace.damaged.events {
        let at = launches.get(&damaged.correlation.0).copied().or(first);
        let table = match damaged.table {
            stepscope_model::DamagedTable::Gpu => "gpu",
            stepscope_model::DamagedTable::Runtime => "runtime",
            stepscope_model::DamagedTable::Annotation => "annotation",
        };
        writer.event(&json!({
            "ph": "X", "cat": "stepscope_damaged",
            "name": damaged.name.map_or("(refused event)", |n| trace.name(n)),
            "pid": STEPSCOPE_PID, "tid": DAMAGED_TID,
            "ts": at.map_or(0.0, Timestamp::as_micros_f64), "dur": 0,
            "args": {
                "correlation": damaged.correlation.0,
                "stepscope_damage": damaged.kind.as_str(),
                "table": table,
                "why": damaged.kind.description(),
            }
        }))?;
    }
    writer.event(&json!({"ph": "M", "name": "thread_name", "pid": STEPSCOPE_PID, "tid": DAMAGED_TID, "args": {"name": "events refused at import (bad data)"}}))
}

/// Threads for slices that may overlap: each slice goes to the first lane free at its start.
#[derive(Debug, Default)]
struct Lanes {
    ends: Vec<Timestamp>,
}

impl Lanes {
    fn place(&mut self, start: Timestamp, end: Timestamp) -> usize {
        match self.ends.iter().position(|e| *e <= start) {
            Some(lane) => {
                self.ends[lane] = end;
                lane
            }
            None => {
                self.ends.push(end);
                self.ends.len() - 1
            }
        }
    }
}

/// A replay's span: its recorded GPU events, or after its launch for as long as its graph
/// ran elsewhere (at least 1 µs) when it recorded none.
fn replay_span(trace: &Trace, analysis: &TraceAnalysis, replay: &Replay) -> (Timestamp, Timestamp) {
    let gpu = &trace.gpu;
    let rows = analysis.links.launched(replay.launch as usize);
    let start = rows.iter().map(|r| gpu.start[*r as usize]).min();
    let end = rows
        .iter()
        .map(|r| gpu.start[*r as usize].offset(gpu.duration[*r as usize]))
        .max();
    if let (Some(start), Some(end)) = (start, end) {
        return (start, end);
    }
    let launch = replay.launch as usize;
    let after = trace.runtime.start[launch].offset(trace.runtime.duration[launch]);
    let reference = replay
        .graph
        .and_then(|g| {
            analysis
                .coverage
                .graphs
                .iter()
                .find(|row| row.graph == Some(g))
        })
        .map_or(Duration::ZERO, |row| row.reference_time);
    let length = Duration::from_nanos(reference.as_nanos().max(1000));
    (after, after.offset(length))
}

fn replay_name(index: usize, replay: &Replay) -> String {
    let graph = replay
        .graph
        .map_or("unknown graph".to_owned(), |g| format!("graph {}", g + 1));
    let expected = match replay.expected.exact() {
        Some(n) => n.to_string(),
        None => format!("≥ {}", replay.expected.low),
    };
    let status = match replay.status {
        ReplayStatus::Complete => "complete",
        ReplayStatus::Unverified => "unverified",
        ReplayStatus::Short => "SHORT",
        ReplayStatus::Empty => "EMPTY",
        ReplayStatus::Damaged => "DAMAGED",
    };
    format!(
        "replay #{index} {graph}: {status} {} of {expected}",
        replay.recorded_nodes
    )
}

fn write_replays<W: Write>(
    trace: &Trace,
    analysis: &TraceAnalysis,
    writer: &mut EventWriter<W>,
) -> io::Result<(u64, u64)> {
    let mut lanes = Lanes::default();
    let mut spans: Vec<(Timestamp, Timestamp, usize)> = analysis
        .coverage
        .replays
        .iter()
        .enumerate()
        .map(|(index, replay)| {
            let (start, end) = replay_span(trace, analysis, replay);
            (start, end, index)
        })
        .collect();
    spans.sort_unstable();
    let mut empty = 0;
    for (start, end, index) in &spans {
        let replay = &analysis.coverage.replays[*index];
        let lane = lanes.place(*start, *end) as i64;
        empty += u64::from(replay.recorded_nodes == 0);
        let args = json!({
            // Graphs are numbered from 1, as in every other output.
            "status": replay.status.as_str(), "graph": replay.graph.map(|g| g + 1),
            "recorded_nodes": replay.recorded_nodes,
            "expected_nodes_low": replay.expected.low, "expected_nodes_high": replay.expected.high,
            "step": replay.step, "launch_row": replay.launch,
        });
        writer.event(&json!({
            "ph": "X", "cat": "stepscope_replay", "name": replay_name(*index, replay),
            "pid": STEPSCOPE_PID, "tid": 100 + lane,
            "ts": start.as_micros_f64(), "dur": end.as_micros_f64() - start.as_micros_f64(),
            "args": args.clone()
        }))?;
        if !matches!(replay.status, ReplayStatus::Complete) {
            writer.event(&json!({
                "ph": "i", "s": "t", "cat": "stepscope_finding",
                "name": format!("{} replay #{index}", replay.status.as_str()),
                "pid": STEPSCOPE_PID, "tid": 100 + lane, "ts": start.as_micros_f64(), "args": args
            }))?;
        }
    }
    for lane in 0..lanes.ends.len() as i64 {
        writer.event(&json!({"ph": "M", "name": "thread_name", "pid": STEPSCOPE_PID, "tid": 100 + lane, "args": {"name": format!("graph replays {lane}")}}))?;
    }
    Ok((spans.len() as u64, empty))
}

fn write_steps<W: Write>(
    trace: &Trace,
    analysis: &TraceAnalysis,
    writer: &mut EventWriter<W>,
) -> io::Result<()> {
    let mut lanes = Lanes::default();
    let mut steps: Vec<_> = analysis.steps.steps.iter().collect();
    steps.sort_by_key(|s| (s.start, s.end));
    for step in steps {
        let lane = lanes.place(step.start, step.end) as i64;
        writer.event(&json!({
            "ph": "X", "cat": "stepscope_step", "name": trace.name(step.name),
            "pid": STEPSCOPE_PID, "tid": 10 + lane,
            "ts": step.start.as_micros_f64(), "dur": step.end.as_micros_f64() - step.start.as_micros_f64(),
        }))?;
    }
    for lane in 0..lanes.ends.len() as i64 {
        writer.event(&json!({"ph": "M", "name": "thread_name", "pid": STEPSCOPE_PID, "tid": 10 + lane, "args": {"name": format!("steps {lane}")}}))?;
    }
    Ok(())
}
