//! Tests of the demo generator: the trace must hold exactly the facts it claims.

use std::collections::HashMap;

use serde_json::Value;

use super::*;

fn small() -> DemoSpec {
    DemoSpec {
        decode_steps: 10,
        prefill_every: 4,
        layers: 3,
        batch_size: 8,
        seed: 11,
    }
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("demo output is JSON")
}

fn events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().expect("traceEvents")
}

/// Nanoseconds from a µs float with 3 decimals.
fn ns(v: &Value) -> i64 {
    (v.as_f64().expect("number") * 1000.0).round() as i64
}

fn graph_launches(doc: &Value) -> Vec<&Value> {
    events(doc)
        .iter()
        .filter(|e| e["cat"] == "cuda_runtime" && e["name"] == "hipGraphLaunch")
        .collect()
}

fn kernels_per_correlation(doc: &Value) -> HashMap<u64, usize> {
    let mut counts = HashMap::new();
    for e in events(doc).iter().filter(|e| e["cat"] == "kernel") {
        *counts
            .entry(e["args"]["correlation"].as_u64().expect("corr"))
            .or_default() += 1;
    }
    counts
}

#[test]
fn plan_and_facts() {
    let spec = DemoSpec::default();
    let f = facts(&spec);
    assert_eq!(f.decode_steps, 48);
    assert_eq!(f.prefill_steps, 2);
    assert_eq!(f.replays, 48);
    assert_eq!(f.kernels_per_replay, 36 * 9 + 4);
    assert_eq!(f.replays_kept_with_symptom, 3);
    let one_window = DemoSpec {
        decode_steps: 128,
        prefill_every: 0,
        ..spec
    };
    assert_eq!(facts(&one_window).replays_kept_with_symptom, 1);
    assert_eq!(facts(&one_window).prefill_steps, 0);
}

#[test]
fn header_is_rocm_kineto() {
    let doc = parse(&generate(&small(), Symptom::None));
    assert_eq!(doc["schemaVersion"], 1);
    assert_eq!(doc["deviceProperties"][0]["name"], "AMD Instinct MI300X");
    assert_eq!(doc["hip_runtime_version"], 70_253_211);
    assert_eq!(doc["distributedInfo"]["world_size"], 1);
    assert_eq!(doc["displayTimeUnit"], "ms");
    assert!(doc["baseTimeNanoseconds"].is_u64());
    assert!(doc["traceName"].is_string());
}

#[test]
fn complete_variant_has_every_kernel() {
    let spec = small();
    let f = facts(&spec);
    let doc = parse(&generate(&spec, Symptom::None));
    let counts = kernels_per_correlation(&doc);
    let launches = graph_launches(&doc);
    assert_eq!(launches.len(), f.replays);
    for launch in launches {
        let c = launch["args"]["correlation"].as_u64().expect("corr");
        assert_eq!(counts.get(&c).copied().unwrap_or(0), f.kernels_per_replay);
    }
    let steps = |prefix: &str| {
        events(&doc)
            .iter()
            .filter(|e| e["cat"] == "user_annotation")
            .filter(|e| e["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .count()
    };
    assert_eq!(steps("step[DECODE bs=8]"), f.decode_steps);
    assert_eq!(steps("step[EXTEND bs=4 toks=2048]"), f.prefill_steps);
}

#[test]
fn symptom_variant_keeps_only_synced_replays() {
    let spec = small();
    let f = facts(&spec);
    assert_eq!(f.replays_kept_with_symptom, 3);
    let doc = parse(&generate(&spec, Symptom::RocmReplayLoss));
    let counts = kernels_per_correlation(&doc);
    let launches = graph_launches(&doc);
    assert_eq!(launches.len(), f.replays);
    let with: Vec<usize> = launches
        .iter()
        .map(|l| {
            counts
                .get(&l["args"]["correlation"].as_u64().expect("corr"))
                .copied()
                .unwrap_or(0)
        })
        .collect();
    let kept: Vec<usize> = (0..with.len()).filter(|i| with[*i] > 0).collect();
    // Replays 3 and 7 precede the prefills; 9 is the last.
    assert_eq!(kept, vec![3, 7, 9]);
    assert!(kept.iter().all(|i| with[*i] == f.kernels_per_replay));
    // No flow end may point at a dropped kernel.
    let gpu_flows = events(&doc)
        .iter()
        .filter(|e| e["ph"] == "f" && e["pid"] == u64::from(GPU_DEVICE))
        .count();
    let gpu_events = events(&doc)
        .iter()
        .filter(|e| e["cat"] == "kernel" || e["cat"] == "gpu_memcpy")
        .count();
    assert_eq!(gpu_flows, gpu_events);
}

#[test]
fn deterministic_for_a_seed() {
    let spec = small();
    assert_eq!(
        generate(&spec, Symptom::None),
        generate(&spec, Symptom::None)
    );
    let other = DemoSpec {
        seed: 12,
        ..small()
    };
    assert_ne!(
        generate(&spec, Symptom::None),
        generate(&other, Symptom::None)
    );
    let (complete, lossy) = generate_pair(&spec);
    assert_eq!(complete, generate(&spec, Symptom::None));
    assert!(lossy.len() < complete.len());
}

#[test]
fn gpu_timing_is_consistent() {
    let doc = parse(&generate(&small(), Symptom::None));
    let mut lanes: HashMap<(String, String), Vec<(i64, i64)>> = HashMap::new();
    let mut launch_ts = HashMap::new();
    for e in events(&doc) {
        if e["cat"] == "cuda_runtime" {
            launch_ts.insert(
                e["args"]["correlation"].as_u64().expect("corr"),
                ns(&e["ts"]),
            );
        }
    }
    for e in events(&doc)
        .iter()
        .filter(|e| e["cat"] == "kernel" || e["cat"] == "gpu_memcpy")
    {
        let start = ns(&e["ts"]);
        let launched = launch_ts[&e["args"]["correlation"].as_u64().expect("corr")];
        assert!(start > launched, "GPU work starts after its launch");
        let key = (e["pid"].to_string(), e["tid"].to_string());
        lanes
            .entry(key)
            .or_default()
            .push((start, start + ns(&e["dur"])));
    }
    for spans in lanes.values_mut() {
        spans.sort_unstable();
        for pair in spans.windows(2) {
            assert!(pair[1].0 >= pair[0].1, "overlap on one stream: {pair:?}");
        }
    }
}

#[test]
fn graph_launches_lie_inside_decode_steps() {
    let doc = parse(&generate(&small(), Symptom::RocmReplayLoss));
    let steps: Vec<(i64, i64)> = events(&doc)
        .iter()
        .filter(|e| e["cat"] == "user_annotation")
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("step[DECODE"))
        })
        .map(|e| (ns(&e["ts"]), ns(&e["ts"]) + ns(&e["dur"])))
        .collect();
    for launch in graph_launches(&doc) {
        let (s, e) = (ns(&launch["ts"]), ns(&launch["ts"]) + ns(&launch["dur"]));
        assert!(
            steps.iter().any(|(a, b)| *a <= s && e <= *b),
            "launch at {s} outside steps"
        );
    }
}

#[test]
fn default_demo_shape() {
    let spec = DemoSpec::default();
    let f = facts(&spec);
    let doc = parse(&generate(&spec, Symptom::None));
    let counts = kernels_per_correlation(&doc);
    assert_eq!(graph_launches(&doc).len(), 48);
    assert!(
        counts
            .values()
            .filter(|c| **c == f.kernels_per_replay)
            .count()
            == 48
    );
    // Decode replays take a few ms on the GPU.
    let launch = graph_launches(&doc)[5]["args"]["correlation"]
        .as_u64()
        .expect("corr");
    let mut replay: Vec<(i64, i64)> = events(&doc)
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["args"]["correlation"] == launch)
        .map(|e| (ns(&e["ts"]), ns(&e["ts"]) + ns(&e["dur"])))
        .collect();
    replay.sort_unstable();
    let span_ms = (replay[replay.len() - 1].1 - replay[0].0) as f64 / 1e6;
    assert!(
        (2.0..10.0).contains(&span_ms),
        "decode replay spans {span_ms} ms"
    );
}
