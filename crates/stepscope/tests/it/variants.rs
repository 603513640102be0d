//! Real traces with GPU events removed in the test, and the truth about what was removed,
//! computed here from the JSON alone (no stepscope code), so the analysis's figures can be
//! checked against it. No public trace shows the ROCm symptom: it is made from real files.

use crate::common;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use stepscope_analysis::CapturedGraph;
use stepscope_analysis::KernelCategories;
use stepscope_analysis::ReplayCoverage;
use stepscope_analysis::{AnalysisOptions, TraceAnalysis, analyze};
use stepscope_ingest::{ReadOptions, read_trace_bytes};
use stepscope_synth::removal::{read_json, to_json_bytes};

/// The shared traces that hold graph replays, by a short name.
pub const WITH_REPLAYS: [(&str, &str); 5] = [
    (
        "hta",
        "hta/tests/data/negative_queue_length_values_check/rank0.json.gz",
    ),
    (
        "piecewise",
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    ),
    (
        "sglang",
        "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    ),
    (
        "vllm_full",
        "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz",
    ),
    (
        "xdit",
        "tracelens/tests/traces/inference/xdit_flux.1/capture_traces/capture_trace_rank_0.json.gz",
    ),
];

/// A trace document with its graph launches and their GPU events found.
pub struct TraceDoc {
    /// The document.
    pub doc: Value,
    /// Per graph launch (host start order): its GPU events' indices, in GPU start order.
    pub launches: Vec<Vec<usize>>,
}

/// A JSON number, or a number written as a string.
pub fn number(value: &Value) -> Option<f64> {
    value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
}

fn category(event: &Value) -> String {
    event["cat"].as_str().unwrap_or("").to_ascii_lowercase()
}

/// A kernel, memcpy or memset complete event.
pub fn is_gpu(event: &Value) -> bool {
    matches!(
        category(event).as_str(),
        "kernel" | "gpu_memcpy" | "gpu_memset" | "memcpy" | "memset"
    ) && event["ph"] == "X"
}

fn correlation(event: &Value) -> Option<u64> {
    event["args"]["correlation"].as_u64()
}

impl TraceDoc {
    /// Loads a shared trace.
    pub fn load(relative: &str) -> Self {
        Self::from_doc(read_json(&common::shared(relative)).expect("real trace reads"))
    }

    /// Indexes a document.
    pub fn from_doc(doc: Value) -> Self {
        let events = doc["traceEvents"].as_array().expect("object form");
        let mut launches: Vec<(f64, u64)> = events
            .iter()
            .filter(|e| {
                matches!(
                    category(e).as_str(),
                    "cuda_runtime" | "cuda_driver" | "runtime"
                )
            })
            .filter(|e| {
                e["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("GraphLaunch"))
            })
            .filter_map(|e| Some((number(&e["ts"])?, correlation(e)?)))
            .collect();
        launches.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut by_correlation: HashMap<u64, Vec<usize>> = HashMap::new();
        for (index, event) in events.iter().enumerate().filter(|(_, e)| is_gpu(e)) {
            if let Some(c) = correlation(event) {
                by_correlation.entry(c).or_default().push(index);
            }
        }
        let start = |i: &usize| number(&events[*i]["ts"]).unwrap_or(f64::NAN);
        let launches = launches
            .iter()
            .map(|(_, c)| {
                let mut rows = by_correlation.get(c).cloned().unwrap_or_default();
                rows.sort_by(|a, b| start(a).total_cmp(&start(b)));
                rows
            })
            .collect();
        TraceDoc { doc, launches }
    }

    fn events(&self) -> &Vec<Value> {
        self.doc["traceEvents"].as_array().expect("object form")
    }

    /// Nodes per launch.
    pub fn sizes(&self) -> Vec<usize> {
        self.launches.iter().map(Vec::len).collect()
    }

    /// The document without the events at `removed`, and the truth about them.
    pub fn without(&self, removed: &HashSet<usize>) -> (Value, Truth) {
        let events = self.events();
        let duration = |i: usize| number(&events[i]["dur"]).unwrap_or(0.0);
        let gpu_total: f64 = (0..events.len())
            .filter(|&i| is_gpu(&events[i]))
            .map(duration)
            .sum();
        // Only replay nodes count: eager work removed too is not replay time.
        let replay_rows: HashSet<usize> = self.launches.iter().flatten().copied().collect();
        let removed_nodes: Vec<usize> = removed
            .iter()
            .copied()
            .filter(|r| replay_rows.contains(r))
            .collect();
        let removed_time: f64 = removed_nodes.iter().map(|&i| duration(i)).sum();
        let nodes: usize = self.launches.iter().map(Vec::len).sum();
        let lost = |rows: &Vec<usize>| rows.iter().filter(|r| removed.contains(r)).count();
        let truth = Truth {
            completeness: (nodes - removed_nodes.len()) as f64 / nodes.max(1) as f64,
            missing_share: removed_time / gpu_total,
            empty: self
                .launches
                .iter()
                .filter(|rows| !rows.is_empty() && lost(rows) == rows.len())
                .count() as u32,
            short: self
                .launches
                .iter()
                .filter(|rows| lost(rows) > 0 && lost(rows) < rows.len())
                .count() as u32,
            replays: self.launches.len() as u32,
        };
        let mut doc = self.doc.clone();
        let mut index = 0;
        doc["traceEvents"]
            .as_array_mut()
            .expect("object form")
            .retain(|_| {
                index += 1;
                !removed.contains(&(index - 1))
            });
        (doc, truth)
    }
}

/// What was removed, computed from the JSON.
#[derive(Debug, Clone, Copy)]
pub struct Truth {
    /// Remaining replay nodes / original replay nodes.
    pub completeness: f64,
    /// Removed GPU time / all GPU time of the original.
    pub missing_share: f64,
    /// Replays that lost every node.
    pub empty: u32,
    /// Replays that lost some nodes.
    pub short: u32,
    /// Replays.
    pub replays: u32,
}

/// Analyses a document as `stepscope analyze` would.
pub fn analyse(doc: &Value, capture: &[CapturedGraph]) -> TraceAnalysis {
    let trace = read_trace_bytes(&to_json_bytes(doc), &ReadOptions::default())
        .expect("modified trace reads");
    let table = KernelCategories::embedded();
    analyze(
        &trace,
        &AnalysisOptions {
            categories: &table,
            capture,
            ranges: None,
            device: None,
        },
    )
}

/// Checks that the coverage's ranges hold the truth; returns what is wrong.
pub fn ranges_hold(coverage: &ReplayCoverage, truth: &Truth) -> Vec<String> {
    let mut wrong = Vec::new();
    let completeness = coverage.totals.completeness();
    let high = completeness.high.unwrap_or(1.0);
    if !(completeness.low <= truth.completeness + 1e-12 && truth.completeness <= high + 1e-12) {
        wrong.push(format!(
            "completeness {} outside [{}, {high}]",
            truth.completeness, completeness.low
        ));
    }
    if let Some(exact) = completeness.estimate {
        if (exact - truth.completeness).abs() > 1e-12 {
            wrong.push(format!(
                "completeness stated as exactly {exact}, truth {}",
                truth.completeness
            ));
        }
    }
    let share = coverage.totals.missing_share(coverage.recorded_gpu_time);
    let high = share.high.unwrap_or(1.0);
    if !(share.low <= truth.missing_share && truth.missing_share <= high) {
        wrong.push(format!(
            "missing share {} outside [{}, {high}]",
            truth.missing_share, share.low
        ));
    }
    wrong
}
