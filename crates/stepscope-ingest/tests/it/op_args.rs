//! CPU ops keep their argument lists (`Input Dims`, `Input type`, `Input Strides`,
//! `Concrete Inputs`) and `External id`: checked against serde_json's own reading of real
//! shapes-recorded traces, op by op.

use crate::common::options;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use stepscope_ingest::read_trace_bytes;
use stepscope_model::Trace;

const FIELDS: [&str; 4] = [
    "Input Dims",
    "Input type",
    "Input Strides",
    "Concrete Inputs",
];

/// Per op (start in ns, name): its four argument lists as JSON values and its external id.
type OpFacts = BTreeMap<(i64, String), (Vec<Option<Value>>, Option<i64>)>;

fn read_by_serde(bytes: &[u8]) -> OpFacts {
    let doc: Value = serde_json::from_slice(bytes).expect("the trace is JSON");
    let mut ops = OpFacts::new();
    for event in doc["traceEvents"].as_array().expect("traceEvents") {
        if event["cat"] != "cpu_op" || event["ph"] != "X" {
            continue;
        }
        let start = (event["ts"].as_f64().expect("ts") * 1e3).round() as i64;
        let name = event["name"].as_str().expect("name").to_owned();
        let args = &event["args"];
        let lists = FIELDS.iter().map(|f| args.get(*f).cloned()).collect();
        let external = args.get("External id").and_then(Value::as_i64);
        ops.insert((start, name), (lists, external));
    }
    ops
}

fn read_by_stepscope(trace: &Trace) -> OpFacts {
    let ops = &trace.cpu_ops;
    let parse = |text: Option<&str>| text.map(|t| serde_json::from_str(t).expect("kept as JSON"));
    (0..ops.len())
        .map(|row| {
            let args = trace.op_args.get(ops.args[row]);
            let lists = [
                args.input_dims,
                args.input_types,
                args.input_strides,
                args.concrete_inputs,
            ];
            let key = (
                ops.start[row].as_nanos(),
                trace.name(ops.name[row]).to_owned(),
            );
            (key, (lists.map(parse).to_vec(), ops.external_id[row]))
        })
        .collect()
}

/// A carried trace, inflated.
fn inflated(relative: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(&stepscope_testdata::read(relative)[..])
        .read_to_end(&mut bytes)
        .expect("inflates");
    bytes
}

#[test]
fn every_op_keeps_its_argument_lists_and_external_id_as_serde_reads_them() {
    for relative in [
        "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    ] {
        let bytes = inflated(relative);
        let expected = read_by_serde(&bytes);
        assert!(
            expected
                .values()
                .filter(|(lists, _)| lists[0].is_some())
                .count()
                > 500,
            "{relative}: a shapes-recorded trace"
        );
        for threads in [1, 2] {
            let trace = read_trace_bytes(&bytes, &options(threads, false)).expect("reads");
            assert_eq!(
                read_by_stepscope(&trace),
                expected,
                "{relative}, {threads} threads"
            );
            // Distinct lists are stored once: far fewer than the ops.
            assert!(trace.op_args.len() * 3 < trace.cpu_ops.len(), "{relative}");
        }
    }
}

#[test]
fn a_gemm_keeps_its_shapes_as_written() {
    let relative = "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
    let trace = read_trace_bytes(&inflated(relative), &options(1, false)).expect("reads");
    let ops = &trace.cpu_ops;
    let json =
        |text: Option<&str>| -> Value { serde_json::from_str(text.unwrap_or("null")).unwrap() };
    let mm = (0..ops.len())
        .find(|&row| {
            trace.name(ops.name[row]) == "aten::mm"
                && json(trace.op_args.get(ops.args[row]).input_dims)
                    == serde_json::json!([[8944, 1024], [1024, 2816]])
        })
        .expect("TraceLens lists aten::mm with these dims for this trace");
    let args = trace.op_args.get(ops.args[mm]);
    // The text is the file's own, pretty-printed as this trace is.
    assert!(args.input_dims.unwrap().contains('\n'));
    assert_eq!(
        json(args.input_types),
        serde_json::json!(["c10::BFloat16", "c10::BFloat16"])
    );
    assert_eq!(
        json(args.input_strides),
        serde_json::json!([[1024, 1], [1, 1024]])
    );
    assert_eq!(json(args.concrete_inputs), serde_json::json!(["", ""]));
    assert!(ops.external_id[mm].is_some());
}
