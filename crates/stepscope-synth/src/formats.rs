//! A real Kineto trace written in the other profilers' formats: rocprofv3 CSV tables,
//! rocprofv3 JSON, rocmProfileData (RPD) SQLite and rpd2tracing's Chrome-trace JSON.
//!
//! No public trace of those formats holds graph replays, so the replay tests (and the reader
//! benchmarks) write them from a real Kineto trace: its HIP/CUDA runtime calls and its
//! kernels, correlation ids kept, times in ns, in each format's own tables and fields — what
//! that profiler would have written for the same run. Leaving out the kernels of chosen
//! graph launches makes the symptom in each format.

use crate::SynthError;
use rusqlite::{Connection, params};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A runtime call of the trace.
#[derive(Debug, Clone)]
pub struct Call {
    /// API name.
    pub name: String,
    /// Process and thread.
    pub pid: i64,
    /// Thread.
    pub tid: i64,
    /// Start, ns.
    pub start: i64,
    /// End, ns.
    pub end: i64,
    /// Correlation id.
    pub correlation: u64,
}

/// A kernel of the trace.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// Name.
    pub name: String,
    /// GPU.
    pub device: i64,
    /// Stream (queue).
    pub stream: i64,
    /// Start, ns.
    pub start: i64,
    /// End, ns.
    pub end: i64,
    /// Correlation id of its launching call.
    pub correlation: u64,
}

/// A host annotation of the trace (a step marker, as ROCTx ranges carry them).
#[derive(Debug, Clone)]
pub struct Marker {
    /// The annotation's text, e.g. `execute_context_1(4)_generation_0(0)`.
    pub name: String,
    /// Process.
    pub pid: i64,
    /// Thread.
    pub tid: i64,
    /// Start, ns.
    pub start: i64,
    /// End, ns.
    pub end: i64,
}

/// The runtime calls, kernels and host annotations of a Kineto trace.
#[derive(Debug, Clone, Default)]
pub struct Parts {
    /// Runtime (and driver) calls, in file order.
    pub calls: Vec<Call>,
    /// Kernels, in file order.
    pub kernels: Vec<Kernel>,
    /// Host annotations (`user_annotation`), in file order.
    pub markers: Vec<Marker>,
}

fn ns(us: &Value) -> i64 {
    let us = us
        .as_f64()
        .or_else(|| us.as_str().and_then(|s| s.trim().parse().ok()))
        .unwrap_or(0.0);
    (us * 1000.0).round() as i64
}

fn int(value: &Value) -> i64 {
    value
        .as_i64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
        .unwrap_or(0)
}

impl Parts {
    /// The calls and kernels of a Kineto document (`cat` `cuda_runtime`/`cuda_driver`,
    /// `kernel`, case-insensitive).
    pub fn of_kineto(doc: &Value) -> Parts {
        let events = doc
            .get("traceEvents")
            .or(Some(doc))
            .and_then(Value::as_array);
        let mut parts = Parts::default();
        for e in events.into_iter().flatten() {
            let category = e["cat"].as_str().unwrap_or_default().to_ascii_lowercase();
            let (start, name) = (ns(&e["ts"]), e["name"].as_str().unwrap_or_default());
            let end = start + ns(&e["dur"]);
            let correlation = int(&e["args"]["correlation"]).max(0) as u64;
            match category.as_str() {
                "cuda_runtime" | "cuda_driver" => parts.calls.push(Call {
                    name: name.to_owned(),
                    pid: int(&e["pid"]),
                    tid: int(&e["tid"]),
                    start,
                    end,
                    correlation,
                }),
                "kernel" => parts.kernels.push(Kernel {
                    name: name.to_owned(),
                    device: int(&e["args"]["device"]),
                    stream: int(&e["tid"]),
                    start,
                    end,
                    correlation,
                }),
                "user_annotation" if e["ph"] == "X" => parts.markers.push(Marker {
                    name: name.to_owned(),
                    pid: int(&e["pid"]),
                    tid: int(&e["tid"]),
                    start,
                    end,
                }),
                _ => {}
            }
        }
        parts
    }

    /// Correlation ids of the graph launches, in host start order.
    pub fn graph_launches(&self) -> Vec<u64> {
        let mut launches: Vec<(i64, u64)> = self
            .calls
            .iter()
            .filter(|c| c.name.contains("GraphLaunch"))
            .map(|c| (c.start, c.correlation))
            .collect();
        launches.sort_unstable();
        launches.into_iter().map(|(_, c)| c).collect()
    }

    /// The calls and kernels repeated `copies` times in time, each copy after the previous
    /// one ends (plus 1 ms) with its correlation ids shifted past the previous copy's.
    pub fn tiled(&self, copies: usize) -> Parts {
        let starts = self
            .calls
            .iter()
            .map(|c| c.start)
            .chain(self.kernels.iter().map(|k| k.start));
        let ends = self
            .calls
            .iter()
            .map(|c| c.end)
            .chain(self.kernels.iter().map(|k| k.end));
        let (first, last) = (starts.min().unwrap_or(0), ends.max().unwrap_or(0));
        let shift = last - first + 1_000_000;
        let ids = self
            .calls
            .iter()
            .map(|c| c.correlation)
            .chain(self.kernels.iter().map(|k| k.correlation));
        let id_shift = ids.max().unwrap_or(0) + 1;
        let mut tiled = Parts::default();
        for copy in 0..copies {
            let (dt, di) = (shift * copy as i64, id_shift * copy as u64);
            tiled.calls.extend(self.calls.iter().map(|c| Call {
                start: c.start + dt,
                end: c.end + dt,
                correlation: c.correlation + di,
                ..c.clone()
            }));
            tiled.kernels.extend(self.kernels.iter().map(|k| Kernel {
                start: k.start + dt,
                end: k.end + dt,
                correlation: k.correlation + di,
                ..k.clone()
            }));
            tiled.markers.extend(self.markers.iter().map(|m| Marker {
                start: m.start + dt,
                end: m.end + dt,
                ..m.clone()
            }));
        }
        tiled
    }

    /// The same without the kernels of the `skip`-th graph launches (host order).
    pub fn without_replays(&self, skip: &[usize]) -> Parts {
        let launches = self.graph_launches();
        let lost: Vec<u64> = skip
            .iter()
            .filter_map(|i| launches.get(*i).copied())
            .collect();
        Parts {
            calls: self.calls.clone(),
            markers: self.markers.clone(),
            kernels: self
                .kernels
                .iter()
                .filter(|k| !lost.contains(&k.correlation))
                .cloned()
                .collect(),
        }
    }
}

/// rocprofv3 CSV: `<prefix>kernel_trace.csv`, `<prefix>hip_api_trace.csv` and (when the trace
/// has host annotations) `<prefix>marker_api_trace.csv` in `dir` (rocprofv3's column sets);
/// returns the kernel table's path.
pub fn write_rocprof_csv(parts: &Parts, dir: &Path, prefix: &str) -> Result<PathBuf, SynthError> {
    let path = dir.join(format!("{prefix}kernel_trace.csv"));
    let mut kernels = csv::Writer::from_path(&path).map_err(csv_error)?;
    kernels
        .write_record([
            "Kind",
            "Agent_Id",
            "Queue_Id",
            "Thread_Id",
            "Dispatch_Id",
            "Kernel_Id",
            "Kernel_Name",
            "Correlation_Id",
            "Start_Timestamp",
            "End_Timestamp",
        ])
        .map_err(csv_error)?;
    for (index, k) in parts.kernels.iter().enumerate() {
        let row = [
            "KERNEL_DISPATCH".to_owned(),
            k.device.to_string(),
            k.stream.to_string(),
            "1".to_owned(),
            index.to_string(),
            "0".to_owned(),
            k.name.clone(),
            k.correlation.to_string(),
            k.start.to_string(),
            k.end.to_string(),
        ];
        kernels.write_record(&row).map_err(csv_error)?;
    }
    kernels.flush()?;
    write_hip_csv(parts, &dir.join(format!("{prefix}hip_api_trace.csv")))?;
    if !parts.markers.is_empty() {
        write_marker_csv(parts, &dir.join(format!("{prefix}marker_api_trace.csv")))?;
    }
    Ok(path)
}

/// The columns rocprofv3 gives its API tables (HIP calls and ROCTx markers alike).
const API_COLUMNS: [&str; 7] = [
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// An API table of `rows`, in [`API_COLUMNS`].
fn write_api_csv(path: &Path, rows: impl Iterator<Item = [String; 7]>) -> Result<(), SynthError> {
    let mut table = csv::Writer::from_path(path).map_err(csv_error)?;
    table.write_record(API_COLUMNS).map_err(csv_error)?;
    for row in rows {
        table.write_record(&row).map_err(csv_error)?;
    }
    table.flush()?;
    Ok(())
}

/// `hip_api_trace.csv`: the runtime calls.
fn write_hip_csv(parts: &Parts, path: &Path) -> Result<(), SynthError> {
    let rows = parts.calls.iter().map(|c| {
        [
            "HIP_RUNTIME_API".to_owned(),
            c.name.clone(),
            c.pid.to_string(),
            c.tid.to_string(),
            c.correlation.to_string(),
            c.start.to_string(),
            c.end.to_string(),
        ]
    });
    write_api_csv(path, rows)
}

/// `marker_api_trace.csv`: ROCTx ranges, the message in `Function`, with ids after the calls'.
fn write_marker_csv(parts: &Parts, path: &Path) -> Result<(), SynthError> {
    let first_id = parts.calls.iter().map(|c| c.correlation).max().unwrap_or(0) + 1;
    let rows = parts.markers.iter().enumerate().map(|(i, m)| {
        [
            "MARKER_CORE_RANGE_API".to_owned(),
            m.name.clone(),
            m.pid.to_string(),
            m.tid.to_string(),
            (first_id + i as u64).to_string(),
            m.start.to_string(),
            m.end.to_string(),
        ]
    });
    write_api_csv(path, rows)
}

fn csv_error(e: csv::Error) -> SynthError {
    SynthError::Io(std::io::Error::other(e))
}

/// rocprofv3 JSON (`rocprofiler-sdk-tool`): kernel symbols, dispatches and HIP API records
/// sharing `correlation_id.internal`, HIP names in `strings.buffer_records[5]`; host
/// annotations as ROCTx ranges (`marker_api` records, their messages in
/// `strings.marker_api` by correlation id).
pub fn rocprof_json(parts: &Parts) -> Value {
    let mut out = Vec::new();
    write_rocprof_json(parts, &mut out).expect("writing to memory");
    serde_json::from_slice(&out).expect("valid JSON")
}

/// [`rocprof_json`] written record by record (never the whole document in memory).
pub fn write_rocprof_json(parts: &Parts, out: impl Write) -> Result<(), SynthError> {
    let mut out = BufWriter::new(out);
    let JsonHead {
        head,
        operation_of,
        symbol_of,
        first_marker,
    } = rocprof_json_head(parts);
    let head = serde_json::to_string(&head)?;
    write!(
        out,
        "{{\"rocprofiler-sdk-tool\":[{},\"buffer_records\":{{\"memory_copy\":[],\"kernel_dispatch\":",
        head.strip_suffix('}').unwrap_or(&head)
    )?;
    let dispatches = parts.kernels.iter().map(|k| {
        json!({"kind": 11, "operation": 2, "thread_id": 1,
            "correlation_id": {"internal": k.correlation, "external": 0},
            "start_timestamp": k.start, "end_timestamp": k.end,
            "dispatch_info": {"agent_id": {"handle": 7}, "queue_id": {"handle": k.stream}, "kernel_id": symbol_of[k.name.as_str()]}})
    });
    write_array(&mut out, dispatches)?;
    write!(out, ",\"hip_api\":")?;
    let calls = parts.calls.iter().map(|c| {
        json!({"kind": 5, "operation": operation_of[c.name.as_str()], "thread_id": c.tid,
            "correlation_id": {"internal": c.correlation, "external": 0},
            "start_timestamp": c.start, "end_timestamp": c.end})
    });
    write_array(&mut out, calls)?;
    write!(out, ",\"marker_api\":")?;
    let markers = parts.markers.iter().enumerate().map(|(i, m)| {
        json!({"kind": 7, "operation": 1, "thread_id": m.tid,
            "correlation_id": {"internal": first_marker + i as u64, "external": 0},
            "start_timestamp": m.start, "end_timestamp": m.end})
    });
    write_array(&mut out, markers)?;
    write!(out, "}}}}]}}")?;
    out.flush()?;
    Ok(())
}

/// The document's process object without its records, and the ids the records use.
struct JsonHead<'p> {
    head: Value,
    /// The operation of each call name.
    operation_of: HashMap<&'p str, usize>,
    /// The symbol of each kernel name.
    symbol_of: HashMap<&'p str, usize>,
    /// The correlation id of the first marker.
    first_marker: u64,
}

fn rocprof_json_head(parts: &Parts) -> JsonHead<'_> {
    let mut operations: Vec<&str> = Vec::new();
    let mut operation_of: HashMap<&str, usize> = HashMap::new();
    for c in &parts.calls {
        operation_of.entry(&c.name).or_insert_with(|| {
            operations.push(&c.name);
            operations.len() - 1
        });
    }
    let mut symbols =
        vec![json!({"kernel_id": 0, "kernel_name": "", "formatted_kernel_name": "0"})];
    let mut symbol_of: HashMap<&str, usize> = HashMap::new();
    for k in &parts.kernels {
        symbol_of.entry(&k.name).or_insert_with(|| {
            symbols.push(json!({"kernel_id": symbols.len(), "kernel_name": format!("{}.kd", k.name), "formatted_kernel_name": k.name}));
            symbols.len() - 1
        });
    }
    let mut kinds = vec![json!({"kind": "NONE", "operations": []}); 12];
    kinds[5] = json!({"kind": "HIP_RUNTIME_API", "operations": operations});
    kinds[11] = json!({"kind": "KERNEL_DISPATCH", "operations": ["KERNEL_DISPATCH_NONE", "KERNEL_DISPATCH_ENQUEUE", "KERNEL_DISPATCH_COMPLETE"]});
    kinds[7] = json!({"kind": "MARKER_CORE_API", "operations": ["roctxMarkA", "roctxRangePushA", "roctxRangePop", "roctxRangeStartA", "roctxRangeStop"]});
    let first_marker = parts.calls.iter().map(|c| c.correlation).max().unwrap_or(0) + 1;
    let messages: Vec<Value> = parts
        .markers
        .iter()
        .enumerate()
        .map(|(i, m)| json!({"key": first_marker + i as u64, "value": m.name}))
        .collect();
    let head = json!({
        "metadata": {"pid": parts.calls.first().map_or(1, |c| c.pid)},
        "agents": [{"id": {"handle": 7}, "type": 2, "name": "gfx942", "product_name": "AMD Instinct MI300X", "gpu_index": 0}],
        "kernel_symbols": symbols,
        "strings": {"buffer_records": kinds, "marker_api": messages},
    });
    JsonHead {
        head,
        operation_of,
        symbol_of,
        first_marker,
    }
}

/// A JSON array written one item at a time.
fn write_array(out: &mut impl Write, items: impl Iterator<Item = Value>) -> Result<(), SynthError> {
    out.write_all(b"[")?;
    for (index, item) in items.enumerate() {
        if index > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &item)?;
    }
    out.write_all(b"]")?;
    Ok(())
}

/// rpd2tracing's array: the GPU on process "GPU0" (one thread per queue), HIP calls on their
/// threads, one `api_op` flow per call–kernel pair (`s` at 2 µs before the call's end or at
/// the kernel's start, whichever is first, but not before the call; `f` at the kernel's
/// start); numbers as strings of whole µs, as rpd2tracing writes them.
pub fn rpd_json(parts: &Parts) -> Value {
    let mut out = Vec::new();
    write_rpd_json(parts, &mut out).expect("writing to memory");
    serde_json::from_slice(&out).expect("valid JSON")
}

/// [`rpd_json`] written event by event.
pub fn write_rpd_json(parts: &Parts, out: impl Write) -> Result<(), SynthError> {
    let mut out = BufWriter::new(out);
    let us = |ns: i64| (ns / 1000).to_string();
    let mut by_correlation: HashMap<u64, &Call> = HashMap::new();
    for c in &parts.calls {
        by_correlation.insert(c.correlation, c);
    }
    let head = [
        json!({}),
        json!({"name": "process_name", "ph": "M", "pid": "900", "args": {"name": "GPU0"}}),
    ];
    let calls = parts.calls.iter().map(|c| {
        json!({"pid": c.pid.to_string(), "tid": c.tid.to_string(), "name": c.name, "ts": us(c.start), "dur": us(c.end - c.start), "ph": "X", "args": {"desc": ""}})
    });
    let mut flow = 0_u64;
    let kernels = parts.kernels.iter().flat_map(|k| {
        let queue = k.stream.to_string();
        let mut events = vec![json!({"pid": "900", "tid": queue, "name": k.name, "ts": us(k.start), "dur": us(k.end - k.start), "ph": "X", "args": {"desc": "KernelExecution"}})];
        if let Some(call) = by_correlation.get(&k.correlation) {
            flow += 1;
            let at = (call.end / 1000 - 2).min(k.start / 1000).max(call.start / 1000);
            events.push(json!({"pid": call.pid.to_string(), "tid": call.tid.to_string(), "ts": at.to_string(), "cat": "api_op", "name": "api_op", "ph": "s", "id": flow.to_string()}));
            events.push(json!({"pid": "900", "tid": queue, "ts": us(k.start), "cat": "api_op", "name": "api_op", "ph": "f", "id": flow.to_string(), "bp": "e"}));
        }
        events
    });
    write_array(&mut out, head.into_iter().chain(calls).chain(kernels))?;
    out.flush()?;
    Ok(())
}

const RPD_SCHEMA: &str = "
CREATE TABLE rocpd_string(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, string varchar(4096) NOT NULL);
CREATE TABLE rocpd_api(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, pid integer NOT NULL, tid integer NOT NULL,
    start integer NOT NULL, end integer NOT NULL, apiName_id integer NOT NULL, args_id integer NOT NULL);
CREATE TABLE rocpd_op(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, gpuId integer NOT NULL, queueId integer NOT NULL,
    sequenceId integer NOT NULL, completionSignal varchar(18) NOT NULL, start integer NOT NULL,
    end integer NOT NULL, description_id integer NOT NULL, opType_id integer NOT NULL);
CREATE TABLE rocpd_api_ops(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, api_id integer NOT NULL, op_id integer NOT NULL);
CREATE TABLE rocpd_metadata(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, tag varchar(4096) NOT NULL, value varchar(4096) NOT NULL);
INSERT INTO rocpd_metadata(tag, value) VALUES ('schema_version', '2');
";

/// An RPD database (rpdTracer's tables and columns): each call's id is its correlation id,
/// each kernel an op linked to it through `rocpd_api_ops`. As ROCm's tracer files them, the
/// kernels of a graph launch are `Task` ops and eager kernels `KernelExecution` ops; host
/// annotations are `UserMarker` calls with the text in `args` (how rpdTracer stores ROCTx
/// ranges), with ids after the calls'.
pub fn write_rpd(parts: &Parts, path: &Path) -> Result<(), SynthError> {
    let sql = |e: rusqlite::Error| SynthError::Io(std::io::Error::other(e));
    let conn = Connection::open(path).map_err(sql)?;
    conn.execute_batch(RPD_SCHEMA).map_err(sql)?;
    conn.execute_batch("BEGIN").map_err(sql)?;
    let mut strings: HashMap<String, i64> = HashMap::new();
    let mut string = |text: &str| -> Result<i64, rusqlite::Error> {
        if let Some(id) = strings.get(text) {
            return Ok(*id);
        }
        conn.execute("INSERT INTO rocpd_string(string) VALUES (?1)", [text])?;
        let id = conn.last_insert_rowid();
        strings.insert(text.to_owned(), id);
        Ok(id)
    };
    let empty = string("").map_err(sql)?;
    let kernel = string("KernelExecution").map_err(sql)?;
    let task = string("Task").map_err(sql)?;
    let graphs: std::collections::HashSet<u64> = parts.graph_launches().into_iter().collect();
    for c in &parts.calls {
        let name = string(&c.name).map_err(sql)?;
        conn.execute(
            "INSERT INTO rocpd_api(id, pid, tid, start, end, apiName_id, args_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![c.correlation as i64, c.pid, c.tid, c.start, c.end, name, empty],
        )
        .map_err(sql)?;
    }
    for k in &parts.kernels {
        let name = string(&k.name).map_err(sql)?;
        conn.execute(
            "INSERT INTO rocpd_op(gpuId, queueId, sequenceId, completionSignal, start, end, description_id, opType_id) VALUES (?1, ?2, 0, '', ?3, ?4, ?5, ?6)",
            params![k.device, k.stream, k.start, k.end, name, if graphs.contains(&k.correlation) { task } else { kernel }],
        )
        .map_err(sql)?;
        let op = conn.last_insert_rowid();
        conn.execute(
            "INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (?1, ?2)",
            params![k.correlation as i64, op],
        )
        .map_err(sql)?;
    }
    let marker = string("UserMarker").map_err(sql)?;
    let first_id = parts
        .calls
        .iter()
        .map(|c| c.correlation as i64)
        .max()
        .unwrap_or(0)
        + 1;
    for (i, m) in parts.markers.iter().enumerate() {
        let text = string(&m.name).map_err(sql)?;
        conn.execute(
            "INSERT INTO rocpd_api(id, pid, tid, start, end, apiName_id, args_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![first_id + i as i64, m.pid, m.tid, m.start, m.end, marker, text],
        )
        .map_err(sql)?;
    }
    conn.execute_batch("COMMIT").map_err(sql)?;
    Ok(())
}
