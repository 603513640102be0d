//! The built-in example for `stepscope demo`: an SGLang-style PyTorch-profiler (Kineto) trace of
//! an LLM server on ROCm (MI300X, Qwen3-8B-like model).
//!
//! Decode steps replay a captured HIP graph (`hipGraphLaunch`, one per `step[DECODE bs=N]`);
//! every few steps a prefill (`step[EXTEND bs=4 toks=2048]`) runs eagerly and starts with a
//! `hipDeviceSynchronize`. With [`Symptom::RocmReplayLoss`] the trace shows what the ROCm
//! profiler records on affected HIP runtimes: only a replay that a host sync follows (the one
//! right before a prefill, and the last one before the profiler stops) keeps its kernels.
//!
//! Output is deterministic for a given [`DemoSpec::seed`].

mod builder;
mod events;
mod kernels;
mod ops;
mod steps;

use std::io::{self, Write};

use serde::Serialize;

use self::builder::{Builder, GPU_DEVICE, GPU_STREAM, HOST_PID, Sink};
use self::events::{Event, Instant, Meta, MetaArgs, Span, SpanArgs, us};
use crate::rng::Rng;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoSpec {
    /// Decode steps, each one graph replay.
    pub decode_steps: usize,
    /// A prefill (`EXTEND`) step follows every this many decode steps (never after the last
    /// one); 0 for none.
    pub prefill_every: usize,
    /// Transformer layers (9 kernels each in a decode replay).
    pub layers: usize,
    /// Decode batch size (`step[DECODE bs=N]`).
    pub batch_size: u32,
    /// Seed of every random choice (durations, gaps).
    pub seed: u64,
}

impl Default for DemoSpec {
    /// 48 decode steps, a prefill every 16, 36 layers (328 kernels per replay), batch 32.
    fn default() -> Self {
        Self {
            decode_steps: 48,
            prefill_every: 16,
            layers: 36,
            batch_size: 32,
            seed: 0x5354_4550,
        }
    }
}

/// Which recording fault the trace shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symptom {
    /// Every replay's kernels are recorded.
    None,
    /// Only replays that a host sync follows keep their kernels (the one before each prefill
    /// step and the last one); the others keep just their `hipGraphLaunch`.
    RocmReplayLoss,
}

/// The truth a demo trace was built from, for checking an analyser against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoFacts {
    /// `step[DECODE ...]` annotations.
    pub decode_steps: usize,
    /// `step[EXTEND ...]` annotations.
    pub prefill_steps: usize,
    /// `hipGraphLaunch` events (one per decode step).
    pub replays: usize,
    /// Kernels of each complete replay.
    pub kernels_per_replay: usize,
    /// Replays that keep their kernels under [`Symptom::RocmReplayLoss`].
    pub replays_kept_with_symptom: usize,
}

/// One scheduler iteration of the demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Decode,
    Extend,
}

/// The order of steps: `prefill_every` decodes, a prefill, and so on, ending with a decode.
fn plan(spec: &DemoSpec) -> Vec<Step> {
    let mut steps = Vec::with_capacity(spec.decode_steps + 8);
    for d in 1..=spec.decode_steps {
        steps.push(Step::Decode);
        if spec.prefill_every > 0 && d % spec.prefill_every == 0 && d < spec.decode_steps {
            steps.push(Step::Extend);
        }
    }
    steps
}

/// For each replay in order: does it keep its kernels under the ROCm symptom?
fn kept_with_symptom(plan: &[Step]) -> Vec<bool> {
    let mut kept = Vec::new();
    for (i, step) in plan.iter().enumerate() {
        if *step == Step::Decode {
            let next = plan.get(i + 1).copied();
            kept.push(next.is_none_or(|s| s == Step::Extend));
        }
    }
    kept
}

/// The facts of the trace [`generate`] makes for `spec`.
pub fn facts(spec: &DemoSpec) -> DemoFacts {
    let plan = plan(spec);
    let kept = kept_with_symptom(&plan);
    DemoFacts {
        decode_steps: spec.decode_steps,
        prefill_steps: plan.iter().filter(|s| **s == Step::Extend).count(),
        replays: spec.decode_steps,
        kernels_per_replay: kernels::forward(spec.layers, false).len(),
        replays_kept_with_symptom: kept.iter().filter(|k| **k).count(),
    }
}

/// The demo trace as Kineto JSON text (object form, one event per line).
pub fn generate(spec: &DemoSpec, symptom: Symptom) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 20);
    write(spec, symptom, &mut out).expect("writing JSON into a Vec<u8> cannot fail");
    out
}

/// The complete trace and the same trace with [`Symptom::RocmReplayLoss`].
pub fn generate_pair(spec: &DemoSpec) -> (Vec<u8>, Vec<u8>) {
    (
        generate(spec, Symptom::None),
        generate(spec, Symptom::RocmReplayLoss),
    )
}

/// Writes the demo trace to `out`.
///
/// # Errors
/// Any error of `out`.
pub fn write(spec: &DemoSpec, symptom: Symptom, mut out: impl Write) -> io::Result<()> {
    let (events, trace_id) = build(spec, symptom);
    write_document(&mut out, &events, &trace_id, spec.seed)
}

/// Host/GPU clock origin of the demo (µs values near those of real ROCm traces).
const START_NS: u64 = 4_909_914_216_204_635;

/// Runs the whole timeline; returns the events in Kineto's order and a trace id.
fn build(spec: &DemoSpec, symptom: Symptom) -> (Vec<Event>, String) {
    let plan = plan(spec);
    let kept = kept_with_symptom(&plan);
    let mut rng = Rng::new(spec.seed);
    let trace_id = format!("{:016X}{:016X}", rng.next_u64(), rng.next_u64());
    let start = START_NS + rng.between(0, 999_999) * 1000;
    let mut b = Builder::new(rng, start);
    b.idle(40.0, 90.0);
    let nodes = kernels::forward(spec.layers, false);
    let mut replay = 0usize;
    for step in &plan {
        match step {
            Step::Decode => {
                #[allow(clippy::cast_precision_loss)]
                let progress = replay as f64 / spec.decode_steps.max(1) as f64;
                b.attn_scale = 1.0 + 0.15 * progress;
                let record = symptom == Symptom::None || kept[replay];
                steps::decode(&mut b, spec.batch_size, &nodes, record);
                replay += 1;
            }
            Step::Extend => steps::extend(&mut b, spec.layers),
        }
    }
    steps::profiler_stop(&mut b);
    let end = b.now.max(b.gpu_free()) + 20_000;
    let op_count = b.out.host.len() as u64;
    let mut events = flatten(std::mem::take(&mut b.out));
    events.extend(trailer(start, end, op_count));
    (events, trace_id)
}

/// The groups in Kineto's order, each sorted by start time.
fn flatten(sink: Sink) -> Vec<Event> {
    let mut out = Vec::new();
    for mut group in [sink.host, sink.python, sink.runtime, sink.flows, sink.gpu] {
        group.sort_by_key(|(ts, _)| *ts);
        out.extend(group.into_iter().map(|(_, e)| e));
    }
    out
}

/// Process/thread metadata, the profiler span and the window markers.
fn trailer(start: u64, end: u64, op_count: u64) -> Vec<Event> {
    let ts = us(start);
    let mut out = metadata(ts);
    out.push(Event::Span(Span {
        ph: "X",
        cat: "Trace",
        ts,
        dur: us(end - start),
        pid: "Spans",
        tid: "PyTorch Profiler",
        name: "PyTorch Profiler (0)",
        args: SpanArgs { op_count },
    }));
    let instant = |name, pid, tid, ts| {
        Event::Instant(Instant {
            name,
            ph: "i",
            s: "g",
            pid,
            tid,
            ts,
        })
    };
    out.push(instant(
        "Iteration Start: PyTorch Profiler",
        "Traces",
        "Trace PyTorch Profiler",
        ts,
    ));
    out.push(instant("Record Window End", "", "", us(end)));
    out
}

/// Names, labels and sort order of the host process/thread and the GPU lane.
fn metadata(ts: f64) -> Vec<Event> {
    let name = |name: String| MetaArgs::Name { name };
    let labels = |labels: String| MetaArgs::Labels { labels };
    let sort = |sort_index: u64| MetaArgs::SortIndex { sort_index };
    let (host, gpu, stream) = (HOST_PID, GPU_DEVICE, GPU_STREAM);
    let rows = [
        ("process_name", host, 0, name("python3".into())),
        ("process_labels", host, 0, labels("CPU".into())),
        ("process_sort_index", host, 0, sort(host.into())),
        ("process_name", gpu, 0, name("python3".into())),
        ("process_labels", gpu, 0, labels(format!("GPU {gpu}"))),
        (
            "process_sort_index",
            gpu,
            0,
            sort(5_000_000 + u64::from(gpu)),
        ),
        (
            "thread_name",
            gpu,
            stream,
            name(format!("stream {stream} ")),
        ),
        ("thread_sort_index", gpu, stream, sort(stream.into())),
        (
            "thread_name",
            host,
            host,
            name(format!("thread {host} (python3)")),
        ),
        ("thread_sort_index", host, host, sort(host.into())),
    ];
    let meta = |(name, pid, tid, args)| {
        let ph = "M";
        Event::Meta(Meta {
            name,
            ph,
            ts,
            pid,
            tid,
            args,
        })
    };
    rows.into_iter().map(meta).collect()
}

/// The document header, in the key order of a real ROCm Kineto trace.
#[derive(Debug, Serialize)]
struct Header {
    #[serde(rename = "schemaVersion")]
    schema_version: u32,
    #[serde(rename = "deviceProperties")]
    device_properties: [DeviceProperties; 1],
    roctracer_version: f64,
    hip_runtime_version: u64,
    #[serde(rename = "distributedInfo")]
    distributed_info: DistributedInfo,
    record_shapes: u32,
    hip_driver_version: u64,
    with_stack: u32,
    trace_id: String,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
    #[serde(rename = "baseTimeNanoseconds")]
    base_time_nanoseconds: u64,
}

#[derive(Debug, Serialize)]
#[allow(non_snake_case)]
struct DeviceProperties {
    id: u32,
    name: &'static str,
    totalGlobalMem: u64,
    computeMajor: u32,
    computeMinor: u32,
    maxThreadsPerBlock: u32,
    maxThreadsPerMultiprocessor: u32,
    regsPerBlock: u32,
    warpSize: u32,
    sharedMemPerBlock: u32,
    numSms: u32,
    maxSharedMemoryPerMultiProcessor: u32,
}

#[derive(Debug, Serialize)]
struct DistributedInfo {
    backend: &'static str,
    rank: u32,
    world_size: u32,
    nccl_version: &'static str,
}

fn header(trace_id: &str) -> Header {
    Header {
        schema_version: 1,
        device_properties: [DeviceProperties {
            id: 0,
            name: "AMD Instinct MI300X",
            totalGlobalMem: 206_141_652_992,
            computeMajor: 9,
            computeMinor: 4,
            maxThreadsPerBlock: 1024,
            maxThreadsPerMultiprocessor: 2048,
            regsPerBlock: 131_072,
            warpSize: 64,
            sharedMemPerBlock: 65_536,
            numSms: 304,
            maxSharedMemoryPerMultiProcessor: 65_536,
        }],
        roctracer_version: 4.1,
        hip_runtime_version: 70_253_211,
        distributed_info: DistributedInfo {
            backend: "nccl",
            rank: 0,
            world_size: 1,
            nccl_version: "2.27.7",
        },
        record_shapes: 1,
        hip_driver_version: 70_253_211,
        with_stack: 1,
        trace_id: trace_id.to_owned(),
        display_time_unit: "ms",
        base_time_nanoseconds: 1_775_078_550_000_000_000,
    }
}

/// Writes `{header..., "traceEvents": [one event per line], "traceName": ...}`.
fn write_document(
    out: &mut impl Write,
    events: &[Event],
    trace_id: &str,
    seed: u64,
) -> io::Result<()> {
    let head = serde_json::to_string_pretty(&header(trace_id))?;
    let head = head.trim_end().trim_end_matches('}').trim_end();
    out.write_all(head.as_bytes())?;
    out.write_all(b",\n  \"traceEvents\": [\n")?;
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            out.write_all(b",\n")?;
        }
        out.write_all(b"  ")?;
        serde_json::to_writer(&mut *out, event)?;
    }
    out.write_all(b"\n  ],\n  \"traceName\": ")?;
    serde_json::to_writer(
        &mut *out,
        &format!("/tmp/sglang-demo-{seed:x}.pt.trace.json"),
    )?;
    out.write_all(b"\n}\n")
}

#[cfg(test)]
mod tests;
