//! Repeating a real trace N times in time, for the GB-scale parse benchmark.
//!
//! Copy `k` shifts every numeric `ts` by `k × (span of the trace + 1 ms)` (rounded up to whole
//! µs) and offsets `args.correlation`, `args["External id"]`, `args["external id"]` and every
//! integer event `id` (flows) by `k × (largest such id + 1)`, so correlations stay unique and
//! each graph replay keeps its kernels. Events are written one at a time.

use std::io::{BufWriter, Write};

use serde_json::{Map, Number, Value};

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

/// Parses `input` (an object with `traceEvents`, or a top-level array) and writes it to `out`
/// with its events repeated `copies` times in time. An object keeps its other keys (written
/// before `traceEvents`); an array stays an array.
///
/// # Errors
/// [`SynthError::Json`] for invalid JSON, [`SynthError::NotATrace`] when there is no event
/// list, [`SynthError::Io`] when writing fails.
pub fn tile(input: &[u8], copies: usize, out: impl Write) -> Result<TileSummary, SynthError> {
    let doc: Value = serde_json::from_slice(input)?;
    tile_value(doc, copies, out)
}

/// [`tile`] for an already parsed document.
///
/// # Errors
/// As [`tile`], less the parse error.
pub fn tile_value(doc: Value, copies: usize, out: impl Write) -> Result<TileSummary, SynthError> {
    let (header, mut events) = split(doc)?;
    let time_shift_us = time_shift(&events);
    let id_offset = max_id(&events).saturating_add(1);
    let mut w = Counting {
        inner: BufWriter::with_capacity(1 << 20, out),
        bytes: 0,
    };
    open(&mut w, header.as_ref())?;
    for k in 0..copies {
        if k > 0 {
            for event in &mut events {
                shift_event(event, time_shift_us, id_offset);
            }
        }
        for (i, event) in events.iter().enumerate() {
            w.write_all(if k == 0 && i == 0 { b"\n" } else { b",\n" })?;
            serde_json::to_writer(&mut w, event)?;
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

/// The header keys (None for an array document) and the event list.
type Split = (Option<Map<String, Value>>, Vec<Value>);

/// Splits a document into [`Split`].
fn split(doc: Value) -> Result<Split, SynthError> {
    match doc {
        Value::Array(events) => Ok((None, events)),
        Value::Object(mut map) => match map.remove("traceEvents") {
            Some(Value::Array(events)) => Ok((Some(map), events)),
            Some(_) => Err(SynthError::NotATrace("traceEvents is not an array".into())),
            None => Err(SynthError::NotATrace("no traceEvents key".into())),
        },
        _ => Err(SynthError::NotATrace(
            "top level is neither object nor array".into(),
        )),
    }
}

/// Writes the header keys and opens the event array.
fn open(w: &mut impl Write, header: Option<&Map<String, Value>>) -> Result<(), SynthError> {
    let Some(header) = header else {
        w.write_all(b"[")?;
        return Ok(());
    };
    w.write_all(b"{")?;
    for (key, value) in header {
        serde_json::to_writer(&mut *w, key)?;
        w.write_all(b": ")?;
        serde_json::to_writer(&mut *w, value)?;
        w.write_all(b",\n")?;
    }
    w.write_all(b"\"traceEvents\": [")?;
    Ok(())
}

/// `ceil(last end − first start) + 1000` µs over events with a numeric `ts`.
fn time_shift(events: &[Value]) -> u64 {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for event in events {
        let Some(ts) = event.get("ts").and_then(Value::as_f64) else {
            continue;
        };
        let dur = event
            .get("dur")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            .max(0.0);
        lo = lo.min(ts);
        hi = hi.max(ts + dur);
    }
    let span = if hi >= lo { (hi - lo).ceil() } else { 0.0 };
    span as u64 + 1000
}

/// The largest integer id (see [`ARG_IDS`] and event `id`) in the events.
fn max_id(events: &[Value]) -> u64 {
    let mut max = 0;
    for event in events {
        if let Some(id) = event.get("id").and_then(Value::as_u64) {
            max = max.max(id);
        }
        let Some(args) = event.get("args").and_then(Value::as_object) else {
            continue;
        };
        for key in ARG_IDS {
            if let Some(id) = args.get(key).and_then(Value::as_u64) {
                max = max.max(id);
            }
        }
    }
    max
}

/// Moves one event to the next copy: `ts += shift`, ids `+= offset`.
fn shift_event(event: &mut Value, shift: u64, offset: u64) {
    let Some(map) = event.as_object_mut() else {
        return;
    };
    if let Some(ts) = map.get_mut("ts") {
        add_time(ts, shift);
    }
    if let Some(id) = map.get_mut("id") {
        add_id(id, offset);
    }
    if let Some(Value::Object(args)) = map.get_mut("args") {
        for key in ARG_IDS {
            if let Some(id) = args.get_mut(key) {
                add_id(id, offset);
            }
        }
    }
}

fn add_time(ts: &mut Value, shift: u64) {
    let Value::Number(n) = ts else {
        return;
    };
    let moved = if let Some(u) = n.as_u64() {
        Some(Number::from(u.saturating_add(shift)))
    } else if let Some(i) = n.as_i64() {
        Some(Number::from(i.saturating_add(shift as i64)))
    } else {
        n.as_f64().and_then(|f| Number::from_f64(f + shift as f64))
    };
    if let Some(moved) = moved {
        *n = moved;
    }
}

fn add_id(id: &mut Value, offset: u64) {
    if let Some(u) = id.as_u64() {
        *id = Value::from(u.saturating_add(offset));
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
    use std::path::Path;

    use serde_json::json;

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

    const PIECEWISE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces/tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"
    );

    #[test]
    fn real_piecewise_trace_tiled_twice_keeps_every_replay() {
        let input = crate::read_trace_bytes(Path::new(PIECEWISE)).expect("real trace");
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
