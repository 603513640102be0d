//! Repeating a real trace N times in time, for the GB-scale parse benchmark.
//!
//! Copy `k` shifts every numeric `ts` by `k × (span of the trace + 1 ms)` (rounded up to whole
//! µs) and offsets `args.correlation`, `args["External id"]`, `args["external id"]` and every
//! integer event `id` (flows) by `k × (largest such id + 1)`, so correlations stay unique and
//! each graph replay keeps its kernels. Events are written one at a time, each with its
//! members in the order they were read and the text of the values it does not move, so the
//! tiled file is laid out as the recorded one (Kineto writes `ph` and `cat` first; the reader
//! has a faster path for that).

use std::io::{BufWriter, Write};

use indexmap::IndexMap;
use serde_json::Number;
use serde_json::value::RawValue;

use crate::SynthError;

/// Args keys whose integer values are ids to keep unique across copies.
const ARG_IDS: [&str; 3] = ["correlation", "External id", "external id"];

/// What [`tile`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileSummary {
    /// Copies of the event list written.
    pub copies: usize,
    /// Events in the input.
    pub events_per_copy: usize,
    /// Events written (`copies × events_per_copy`).
    pub events_written: usize,
    /// Bytes of JSON written.
    pub bytes_written: u64,
    /// Time shift between consecutive copies, in µs.
    pub time_shift_us: u64,
    /// Id offset between consecutive copies.
    pub id_offset: u64,
}

/// An object's members in the order they were written, their values as written.
type Members = IndexMap<String, Box<RawValue>>;

/// One event as read: its members in order, with the ones a copy moves parsed.
struct Event {
    members: Members,
    ts: Option<Number>,
    id: Option<u64>,
    /// The args' members, when an id among them moves.
    args: Option<Members>,
    /// The integer values of [`ARG_IDS`] in the args, in that order.
    arg_ids: [Option<u64>; 3],
}

/// Parses `input` (an object with `traceEvents`, or a top-level array) and writes it to `out`
/// with its events repeated `copies` times in time. An object keeps its other keys (written
/// before `traceEvents`); an array stays an array. Every event keeps its members in the order
/// they were written (as Kineto writes them: `ph` and `cat` first) and the text of the values
/// a copy does not move; members are separated as Python's `json.dumps` does (`", "`, `": "`).
///
/// # Errors
/// [`SynthError::Json`] for invalid JSON, [`SynthError::NotATrace`] when there is no event
/// list, [`SynthError::Io`] when writing fails.
pub fn tile(input: &[u8], copies: usize, out: impl Write) -> Result<TileSummary, SynthError> {
    let (header, raw_events) = split(input)?;
    let events = raw_events
        .iter()
        .map(|raw| read_event(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let time_shift_us = time_shift(&events);
    let id_offset = max_id(&events).saturating_add(1);
    let mut w = Counting {
        inner: BufWriter::with_capacity(1 << 20, out),
        bytes: 0,
    };
    open(&mut w, header.as_ref())?;
    for k in 0..copies as u64 {
        for (i, (event, raw)) in events.iter().zip(&raw_events).enumerate() {
            w.write_all(if k == 0 && i == 0 { b"\n" } else { b",\n" })?;
            match event {
                Some(event) => write_event(&mut w, event, k * time_shift_us, k * id_offset)?,
                None => w.write_all(raw.get().as_bytes())?,
            }
        }
    }
    w.write_all(if header.is_some() {
        b"\n]}\n"
    } else {
        b"\n]\n"
    })?;
    w.flush()?;
    Ok(TileSummary {
        copies,
        events_per_copy: events.len(),
        events_written: copies * events.len(),
        bytes_written: w.bytes,
        time_shift_us,
        id_offset,
    })
}

/// The header members (None for an array document) and the events as written.
type Split = (Option<Members>, Vec<Box<RawValue>>);

/// Splits a document into [`Split`].
fn split(input: &[u8]) -> Result<Split, SynthError> {
    let first = input.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'[') => Ok((None, serde_json::from_slice(input)?)),
        Some(b'{') => {
            let mut members: Members = serde_json::from_slice(input)?;
            let events = members
                .shift_remove("traceEvents")
                .ok_or_else(|| SynthError::NotATrace("no traceEvents key".into()))?;
            let events = serde_json::from_str(events.get())
                .map_err(|_| SynthError::NotATrace("traceEvents is not an array".into()))?;
            Ok((Some(members), events))
        }
        _ => {
            // Invalid JSON is told as such; valid JSON of another kind is not a trace.
            serde_json::from_slice::<serde::de::IgnoredAny>(input)?;
            Err(SynthError::NotATrace(
                "top level is neither object nor array".into(),
            ))
        }
    }
}

/// An event object read for tiling; `None` for one that is not an object (copied as is).
fn read_event(raw: &RawValue) -> Result<Option<Event>, SynthError> {
    if !raw.get().starts_with('{') {
        return Ok(None);
    }
    let members: Members = serde_json::from_str(raw.get())?;
    let number = |key: &str| {
        members
            .get(key)
            .and_then(|v| serde_json::from_str::<Number>(v.get()).ok())
    };
    let ts = number("ts");
    let id = number("id").and_then(|n| n.as_u64());
    let (args, arg_ids) = match members.get("args") {
        Some(args) if args.get().starts_with('{') => {
            let args: Members = serde_json::from_str(args.get())?;
            let ids = ARG_IDS.map(|key| args.get(key).and_then(|v| as_u64(v)));
            (ids.iter().any(Option::is_some).then_some(args), ids)
        }
        _ => (None, [None; 3]),
    };
    Ok(Some(Event {
        members,
        ts,
        id,
        args,
        arg_ids,
    }))
}

fn as_u64(raw: &RawValue) -> Option<u64> {
    serde_json::from_str::<Number>(raw.get()).ok()?.as_u64()
}

/// Writes `members` with `value` deciding each member's text (`None`: as read).
fn write_members(
    w: &mut impl Write,
    members: &Members,
    mut value: impl FnMut(&mut dyn Write, &str) -> Result<bool, SynthError>,
) -> Result<(), SynthError> {
    w.write_all(b"{")?;
    for (i, (key, raw)) in members.iter().enumerate() {
        if i > 0 {
            w.write_all(b", ")?;
        }
        serde_json::to_writer(&mut *w, key)?;
        w.write_all(b": ")?;
        if !value(&mut *w, key)? {
            w.write_all(raw.get().as_bytes())?;
        }
    }
    w.write_all(b"}")?;
    Ok(())
}

/// Writes one copy of `event`: `ts + shift`, ids `+ offset`, the rest as read.
fn write_event(
    w: &mut impl Write,
    event: &Event,
    shift: u64,
    offset: u64,
) -> Result<(), SynthError> {
    write_members(w, &event.members, |w, key| match key {
        "ts" => write_moved(w, event.ts.as_ref().and_then(|ts| add_time(ts, shift))),
        "id" => write_moved(
            w,
            event.id.map(|id| Number::from(id.saturating_add(offset))),
        ),
        "args" => match &event.args {
            Some(args) => write_args(w, args, &event.arg_ids, offset).map(|()| true),
            None => Ok(false),
        },
        _ => Ok(false),
    })
}

/// Writes the args with the ids among them `+ offset`.
fn write_args(
    mut w: &mut dyn Write,
    args: &Members,
    ids: &[Option<u64>; 3],
    offset: u64,
) -> Result<(), SynthError> {
    write_members(&mut w, args, |w, key| {
        let moved = ARG_IDS
            .iter()
            .position(|id_key| *id_key == key)
            .and_then(|at| ids[at])
            .map(|id| Number::from(id.saturating_add(offset)));
        write_moved(w, moved)
    })
}

/// Writes `moved` when there is one; whether it did.
fn write_moved(w: &mut dyn Write, moved: Option<Number>) -> Result<bool, SynthError> {
    let Some(moved) = moved else {
        return Ok(false);
    };
    serde_json::to_writer(w, &moved)?;
    Ok(true)
}

/// Writes the header keys and opens the event array.
fn open(w: &mut impl Write, header: Option<&Members>) -> Result<(), SynthError> {
    let Some(header) = header else {
        w.write_all(b"[")?;
        return Ok(());
    };
    w.write_all(b"{")?;
    for (key, value) in header {
        serde_json::to_writer(&mut *w, key)?;
        w.write_all(b": ")?;
        w.write_all(value.get().as_bytes())?;
        w.write_all(b",\n")?;
    }
    w.write_all(b"\"traceEvents\": [")?;
    Ok(())
}

/// `ceil(last end − first start) + 1000` µs over events with a numeric `ts`.
fn time_shift(events: &[Option<Event>]) -> u64 {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for event in events.iter().flatten() {
        let Some(ts) = event.ts.as_ref().and_then(Number::as_f64) else {
            continue;
        };
        let dur = event
            .members
            .get("dur")
            .and_then(|v| serde_json::from_str::<f64>(v.get()).ok())
            .unwrap_or(0.0)
            .max(0.0);
        lo = lo.min(ts);
        hi = hi.max(ts + dur);
    }
    let span = if hi >= lo { (hi - lo).ceil() } else { 0.0 };
    span as u64 + 1000
}

/// The largest integer id (see [`ARG_IDS`] and event `id`) in the events.
fn max_id(events: &[Option<Event>]) -> u64 {
    let mut max = 0;
    for event in events.iter().flatten() {
        max = max.max(event.id.unwrap_or(0));
        max = event
            .arg_ids
            .iter()
            .flatten()
            .fold(max, |max, &id| max.max(id));
    }
    max
}

/// `ts + shift`, of the kind `ts` was (integer or float).
fn add_time(ts: &Number, shift: u64) -> Option<Number> {
    if let Some(u) = ts.as_u64() {
        Some(Number::from(u.saturating_add(shift)))
    } else if let Some(i) = ts.as_i64() {
        Some(Number::from(i.saturating_add(shift as i64)))
    } else {
        ts.as_f64().and_then(|f| Number::from_f64(f + shift as f64))
    }
}

/// A writer that counts the bytes it passes on.
struct Counting<W: Write> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use serde_json::{Value, json};

    use super::*;
    use crate::removal;

    fn small_doc() -> Value {
        json!({
            "schemaVersion": 1,
            "traceEvents": [
                {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 1, "tid": 1,
                 "ts": 100.5, "dur": 10.0, "args": {"correlation": 7, "cid": 215}},
                {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 100.5, "cat": "ac2g", "name": "ac2g"},
                {"ph": "X", "cat": "kernel", "name": "k1", "pid": 2, "tid": 0, "ts": 120.25,
                 "dur": 5.0, "args": {"correlation": 7, "External id": 40}},
                {"ph": "X", "cat": "kernel", "name": "k2", "pid": 2, "tid": 0, "ts": 126,
                 "dur": 5, "args": {"correlation": 7, "External id": 41}},
                {"ph": "f", "id": 7, "pid": 2, "tid": 0, "ts": 120.25, "cat": "ac2g", "name": "ac2g", "bp": "e"},
                {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "ts": "100", "args": {"name": "gpu"}}
            ],
            "traceName": "small"
        })
    }

    #[test]
    fn three_copies_shift_time_and_ids() {
        let input = serde_json::to_vec(&small_doc()).expect("json");
        let mut out = Vec::new();
        let summary = tile(&input, 3, &mut out).expect("tile");
        assert_eq!(summary.events_written, 18);
        assert_eq!(summary.bytes_written, out.len() as u64);
        assert_eq!(summary.id_offset, 42);
        // span 100.5 .. 131 = 30.5 µs → 31 + 1000.
        assert_eq!(summary.time_shift_us, 1031);
        let doc: Value = serde_json::from_slice(&out).expect("output is JSON");
        assert_eq!(doc["schemaVersion"], 1);
        assert_eq!(doc["traceName"], "small");
        let events = doc["traceEvents"].as_array().expect("events");
        assert_eq!(events.len(), 18);
        let kernel_ext: HashSet<u64> = events
            .iter()
            .filter(|e| e["cat"] == "kernel")
            .map(|e| e["args"]["External id"].as_u64().expect("id"))
            .collect();
        assert_eq!(kernel_ext.len(), 6);
        let corrs: HashSet<u64> = events
            .iter()
            .filter_map(|e| e["args"]["correlation"].as_u64())
            .collect();
        assert_eq!(corrs, HashSet::from([7, 49, 91]));
        for k in 0..3u64 {
            let e = &events[6 * k as usize + 2];
            assert_eq!(e["ts"].as_f64(), Some(120.25 + (k * 1031) as f64));
            assert_eq!(
                events[6 * k as usize + 3]["ts"].as_u64(),
                Some(126 + k * 1031)
            );
            assert_eq!(events[6 * k as usize + 4]["id"].as_u64(), Some(7 + k * 42));
            // A string ts is left alone.
            assert_eq!(events[6 * k as usize + 5]["ts"], "100");
        }
        // Copies do not overlap in time: each starts after the previous one ends.
        let end_of_first = 131.0;
        assert!(events[6]["ts"].as_f64().expect("ts") > end_of_first);
    }

    #[test]
    fn events_keep_their_member_order_and_text() {
        let input = br#"{"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k\u00e9", "ts": 5, "dur": 1.50,
             "args": {"grid": [1, 2], "correlation": 3, "queue": null}},
            {"ph":"f","id":3,"ts":5.25,"cat":"ac2g"}, 7
        ], "deviceProperties": [{"id": 0}]}"#;
        let mut out = Vec::new();
        tile(input, 2, &mut out).expect("tile");
        let text = String::from_utf8(out).expect("utf-8");
        let expected = r#"{"deviceProperties": [{"id": 0}],
"traceEvents": [
{"ph": "X", "cat": "kernel", "name": "k\u00e9", "ts": 5, "dur": 1.50, "args": {"grid": [1, 2], "correlation": 3, "queue": null}},
{"ph": "f", "id": 3, "ts": 5.25, "cat": "ac2g"},
7,
{"ph": "X", "cat": "kernel", "name": "k\u00e9", "ts": 1007, "dur": 1.50, "args": {"grid": [1, 2], "correlation": 7, "queue": null}},
{"ph": "f", "id": 7, "ts": 1007.25, "cat": "ac2g"},
7
]}
"#;
        assert_eq!(text, expected);
    }

    #[test]
    fn one_copy_of_a_real_trace_reads_back_equal() {
        let input =
            crate::read_trace_bytes(&stepscope_testdata::trace(PIECEWISE)).expect("real trace");
        let mut out = Vec::new();
        tile(&input, 1, &mut out).expect("tile");
        let back: Value = serde_json::from_slice(&out).expect("json");
        let original: Value = serde_json::from_slice(&input).expect("json");
        assert_eq!(back, original);
        let first_event = String::from_utf8_lossy(&out);
        assert!(first_event.contains("\n{\"ph\": \"X\", \"cat\": \""));
    }

    #[test]
    fn array_input_stays_an_array() {
        let doc = small_doc();
        let input = serde_json::to_vec(&doc["traceEvents"]).expect("json");
        let mut out = Vec::new();
        let summary = tile(&input, 2, &mut out).expect("tile");
        assert_eq!(summary.events_written, 12);
        let back: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(back.as_array().map(Vec::len), Some(12));
        let mut empty = Vec::new();
        tile(&input, 0, &mut empty).expect("tile");
        assert_eq!(
            serde_json::from_slice::<Value>(&empty).expect("json"),
            json!([])
        );
    }

    #[test]
    fn rejects_non_traces() {
        assert!(matches!(
            tile(b"{\"a\": 1}", 2, Vec::new()),
            Err(SynthError::NotATrace(_))
        ));
        assert!(matches!(
            tile(b"{", 2, Vec::new()),
            Err(SynthError::Json(_))
        ));
        assert!(matches!(
            tile(b"3", 2, Vec::new()),
            Err(SynthError::NotATrace(_))
        ));
    }

    const PIECEWISE: &str =
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz";

    #[test]
    fn real_piecewise_trace_tiled_twice_keeps_every_replay() {
        let input =
            crate::read_trace_bytes(&stepscope_testdata::trace(PIECEWISE)).expect("real trace");
        let mut out = Vec::new();
        let summary = tile(&input, 2, &mut out).expect("tile");
        assert_eq!(summary.events_written, 2 * 19_289);
        let doc: Value = serde_json::from_slice(&out).expect("json");
        let launches = removal::graph_launches(&doc);
        assert_eq!(launches.len(), 50);
        let counts: Vec<usize> = launches.iter().map(|l| l.gpu_events).collect();
        let mut one = vec![4];
        one.extend([15; 23]);
        one.push(12);
        assert_eq!(counts, [one.clone(), one].concat());
        let corrs: HashSet<u64> = launches.iter().map(|l| l.correlation).collect();
        assert_eq!(corrs.len(), 50);
        assert!(launches.windows(2).all(|w| w[0].ts < w[1].ts));
    }
}
