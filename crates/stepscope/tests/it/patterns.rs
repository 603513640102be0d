//! Recording patterns on real traces cut in the test the ways the field loses or misplaces
//! replays (as public issues report them): random parts of every replay kept (the roctracer race), GPU
//! events cut after a point in time (the event cap, CUPTI buffers), every GPU event removed
//! (a dead profiler), replay kernels moved after the last step (a deferred burst), and
//! durations joined to the wrong kernels. Each must give its pattern, the right verdict and
//! the right cures; no unmodified shared trace may show any pattern. No public trace shows
//! these: they are made from real files here.

use crate::common;
use crate::variants::{TraceDoc, WITH_REPLAYS, analyse, is_gpu, number, ranges_hold};
use serde_json::Value;
use std::collections::HashSet;
use stepscope_analysis::TraceAnalysis;
use stepscope_analysis::Verdict;
use stepscope_analysis::{PatternDetail, PatternFinding};
use stepscope_model::patterns::{RecordingPattern, cures};

/// Traces without graph replays, to check they show no pattern either.
const WITHOUT_REPLAYS: [&str; 3] = [
    "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    "hta/tests/data/trace_diff/control/control.json.gz",
    crate::common::VLLM_CPU,
];

/// A small deterministic generator (xorshift64*), so every run cuts the same way.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn found(analysis: &TraceAnalysis, pattern: RecordingPattern) -> Option<&PatternFinding> {
    analysis.patterns.iter().find(|p| p.pattern == pattern)
}

fn names(analysis: &TraceAnalysis) -> Vec<RecordingPattern> {
    analysis.patterns.iter().map(|p| p.pattern).collect()
}

fn events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().expect("object form")
}

fn events_mut(doc: &mut Value) -> &mut Vec<Value> {
    doc["traceEvents"].as_array_mut().expect("object form")
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn no_pattern_on_any_unmodified_shared_trace() {
    let paths = WITH_REPLAYS.iter().map(|(_, p)| *p).chain(WITHOUT_REPLAYS);
    for path in paths {
        let doc = TraceDoc::load(path);
        let analysis = analyse(&doc.doc, &[]);
        assert!(
            analysis.patterns.is_empty(),
            "{path}: {:?}",
            names(&analysis)
        );
        let totals = &analysis.coverage.totals;
        assert_eq!(
            (totals.deferred_replays, totals.implausible_replays),
            (0, 0),
            "{path}"
        );
        assert_ne!(analysis.coverage.verdict, Verdict::Incomplete, "{path}");
    }
}

/// Every replay keeps a random 26–65 % of its nodes, a different part each time.
fn race(doc: &TraceDoc, seed: u64) -> HashSet<usize> {
    let mut random = Seeded(seed);
    let mut removed = HashSet::new();
    for rows in &doc.launches {
        let keep = (rows.len() as f64 * (0.26 + 0.39 * random.unit())).round() as usize;
        let mut order: Vec<usize> = rows.clone();
        for i in (1..order.len()).rev() {
            order.swap(i, (random.next() % (i as u64 + 1)) as usize);
        }
        removed.extend(order.into_iter().skip(keep.max(1)));
    }
    removed
}

#[test]
fn every_replay_keeping_a_different_part_is_partial_not_a_graph_of_its_own() {
    let doc = TraceDoc::load(WITH_REPLAYS[0].1);
    for seed in [1, 2, 3] {
        let (cut, truth) = doc.without(&race(&doc, seed));
        let analysis = analyse(&cut, &[]);
        assert_eq!(
            analysis.coverage.verdict,
            Verdict::Incomplete,
            "seed {seed}"
        );
        let partial = found(&analysis, RecordingPattern::PartialReplays).expect("partial");
        let PatternDetail::PartialReplays {
            in_partial_slots, ..
        } = partial.detail
        else {
            panic!("detail {:?}", partial.detail)
        };
        assert!(
            in_partial_slots > 0,
            "seed {seed}: slots sized by their union"
        );
        assert!(found(&analysis, RecordingPattern::EmptyReplays).is_none());
        assert!(partial.gpu_share.0 > 0.0 && partial.gpu_share.0 <= partial.gpu_share.1);
        let wrong = ranges_hold(&analysis.coverage, &truth);
        assert!(wrong.is_empty(), "seed {seed}: {wrong:?}");
    }
}

#[test]
fn one_step_whose_replays_each_keep_a_different_part_is_partial() {
    // The piecewise vLLM trace: 25 replays in one step, 23 of one 15-kernel graph. Its
    // header says HIP 7.0; made 7.2 here, the runtime of the roctracer race.
    let mut doc = TraceDoc::load(WITH_REPLAYS[1].1);
    doc.doc["hip_runtime_version"] = Value::from(70_253_211u64);
    for seed in [1, 2, 3, 4] {
        let (cut, truth) = doc.without(&race(&doc, seed));
        let analysis = analyse(&cut, &[]);
        assert_eq!(
            analysis.coverage.verdict,
            Verdict::Incomplete,
            "seed {seed}"
        );
        assert_eq!(
            names(&analysis),
            [RecordingPattern::PartialReplays],
            "seed {seed}"
        );
        let wrong = ranges_hold(&analysis.coverage, &truth);
        assert!(wrong.is_empty(), "seed {seed}: {wrong:?}");
        let trace = stepscope_ingest::read_trace_bytes(
            &stepscope_synth::removal::to_json_bytes(&cut),
            &stepscope_ingest::ReadOptions::default(),
        )
        .expect("reads");
        let cure = cures(RecordingPattern::PartialReplays, trace.metadata.platform());
        assert!(cure[0].action.contains("7.2.2"), "{}", cure[0].action);
        assert!(cure[0].action.contains("torch/lib"));
    }
}

/// Removes every GPU event that starts after `fraction` of the time span of the trace's
/// complete events.
fn stopped_at(doc: &TraceDoc, fraction: f64) -> HashSet<usize> {
    let all = events(&doc.doc);
    let times: Vec<f64> = all
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| number(&e["ts"]))
        .collect();
    let (low, high) = times
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &t| (l.min(t), h.max(t)));
    let cut = low + (high - low) * fraction;
    (0..all.len())
        .filter(|&i| is_gpu(&all[i]) && number(&all[i]["ts"]).is_some_and(|t| t > cut))
        .collect()
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn gpu_recording_stopped_early_is_named_with_the_profilers_cure() {
    for (name, path) in WITH_REPLAYS {
        let doc = TraceDoc::load(path);
        for fraction in [0.6, 0.8] {
            let (cut, truth) = doc.without(&stopped_at(&doc, fraction));
            let analysis = analyse(&cut, &[]);
            let what = format!("{name} at {fraction}");
            assert_eq!(analysis.coverage.verdict, Verdict::Incomplete, "{what}");
            assert_eq!(
                names(&analysis),
                [RecordingPattern::RecordingStopped],
                "{what}: the stop explains every lost replay"
            );
            let trace = common::read(path);
            let platform = trace.metadata.platform();
            let found = cures(RecordingPattern::RecordingStopped, platform);
            for cure in &found {
                assert!(!cure.action.contains("DEBUG_"), "{what}: {}", cure.action);
            }
            // The platform's event cap first, then the window's own end: the trace cannot
            // tell them apart.
            let expected = if platform.is_cuda() {
                "CUPTI"
            } else {
                "ROCTRACER_MAX_EVENTS"
            };
            assert!(found[0].action.contains(expected), "{what}: {found:?}");
            assert!(
                found[1..]
                    .iter()
                    .any(|c| c.action.contains("capture range or duration")),
                "{what}: {found:?}"
            );
            let wrong = ranges_hold(&analysis.coverage, &truth);
            assert!(wrong.is_empty(), "{what}: {wrong:?}");
        }
    }
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn no_gpu_event_at_all_is_a_dead_profiler() {
    for (name, path) in WITH_REPLAYS {
        let doc = TraceDoc::load(path);
        let all = events(&doc.doc);
        let removed: HashSet<usize> = (0..all.len()).filter(|&i| is_gpu(&all[i])).collect();
        let (cut, _) = doc.without(&removed);
        let analysis = analyse(&cut, &[]);
        assert_eq!(analysis.coverage.verdict, Verdict::Incomplete, "{name}");
        assert_eq!(names(&analysis), [RecordingPattern::NoGpuEvents], "{name}");
        let platform = common::read(path).metadata.platform();
        let cure = cures(RecordingPattern::NoGpuEvents, platform);
        assert!(cure[0].sources.contains("tokenspeed"), "{name}");
    }
}

/// Moves every replay's GPU events, in order and with their durations, after the last event
/// of the trace (host or GPU).
fn burst_after_the_end(doc: &TraceDoc) -> Value {
    let mut out = doc.doc.clone();
    let end = events(&doc.doc)
        .iter()
        .filter_map(|e| Some(number(&e["ts"])? + number(&e["dur"]).unwrap_or(0.0)))
        .fold(f64::MIN, f64::max);
    let mut at = end + 50.0;
    let all = events_mut(&mut out);
    for rows in &doc.launches {
        for &row in rows {
            all[row]["ts"] = Value::from(at);
            at += number(&all[row]["dur"]).unwrap_or(0.0) + 1.0;
        }
    }
    out
}

#[test]
fn kernels_in_one_burst_after_the_last_step_are_mistimed() {
    // xdit has no steps: nothing says where its replay belongs.
    for (name, path) in &WITH_REPLAYS[..4] {
        let doc = TraceDoc::load(path);
        let original = analyse(&doc.doc, &[]);
        let analysis = analyse(&burst_after_the_end(&doc), &[]);
        assert_eq!(analysis.coverage.verdict, Verdict::Mistimed, "{name}");
        let burst = found(&analysis, RecordingPattern::KernelsAfterStep).expect("burst");
        let replays = doc.launches.len();
        assert_eq!(burst.replays.len(), replays, "{name}");
        assert_eq!(
            burst.detail,
            PatternDetail::KernelsAfterStep {
                after_last_step: replays as u32
            },
            "{name}"
        );
        // The breakdown follows each kernel's launching step, not its time.
        let stages = |a: &TraceAnalysis| -> Vec<(String, i64)> {
            a.breakdown
                .stages
                .iter()
                .map(|s| (format!("{:?}", s.stage), s.gpu_time.as_nanos()))
                .collect()
        };
        assert_eq!(stages(&analysis), stages(&original), "{name}");
    }
}

/// In the replays `which` picks that have two nodes or more, each kernel takes the next
/// one's duration.
fn rotate_durations(doc: &TraceDoc, which: impl Fn(usize) -> bool) -> (Value, Vec<usize>) {
    let mut out = doc.doc.clone();
    let all = events_mut(&mut out);
    let mut rotated = Vec::new();
    for (replay, rows) in doc.launches.iter().enumerate() {
        if rows.len() < 2 || !which(replay) {
            continue;
        }
        let durations: Vec<Value> = rows.iter().map(|&r| all[r]["dur"].clone()).collect();
        for (i, &row) in rows.iter().enumerate() {
            all[row]["dur"] = durations[(i + 1) % rows.len()].clone();
        }
        rotated.push(replay);
    }
    (out, rotated)
}

#[test]
fn kernels_holding_other_kernels_durations_are_mistimed() {
    let doc = TraceDoc::load(WITH_REPLAYS[1].1);
    let (cut, rotated) = rotate_durations(&doc, |replay| replay % 5 == 2);
    let analysis = analyse(&cut, &[]);
    assert_eq!(analysis.coverage.verdict, Verdict::Mistimed);
    let finding = found(&analysis, RecordingPattern::ImplausibleDurations).expect("found");
    assert_eq!(finding.replays, rotated);
    assert_eq!(names(&analysis), [RecordingPattern::ImplausibleDurations]);
    // A graph replayed once has nothing to compare with: no claim either way.
    for (name, path) in [WITH_REPLAYS[2], WITH_REPLAYS[3]] {
        let doc = TraceDoc::load(path);
        let (cut, rotated) = rotate_durations(&doc, |replay| replay == 0);
        assert_eq!(rotated, [0], "{name}");
        let analysis = analyse(&cut, &[]);
        assert_ne!(analysis.coverage.verdict, Verdict::Mistimed, "{name}");
        assert_ne!(analysis.coverage.verdict, Verdict::Incomplete, "{name}");
    }
}

#[test]
fn switch_advice_only_for_empty_replays_the_stop_does_not_explain() {
    use stepscope_ingest::{ReadOptions, read_trace_bytes};
    use stepscope_report::schema::FileReport;
    use stepscope_synth::removal::to_json_bytes;
    // sglang's header says HIP 7.2, where the packet-capture switches cure empty replays.
    let doc = TraceDoc::load(WITH_REPLAYS[2].1);
    let report = |cut: &Value| {
        let trace = read_trace_bytes(&to_json_bytes(cut), &ReadOptions::default()).expect("reads");
        let analysis = analyse(cut, &[]);
        FileReport::new("cut.json", &trace, &analysis, 5)
    };
    let (stopped, _) = doc.without(&stopped_at(&doc, 0.6));
    let file = report(&stopped);
    assert!(
        !file.advice.applies,
        "a stopped recording is not the runtime symptom"
    );
    let pattern = &file.replay_coverage.patterns[0];
    assert_eq!(pattern.pattern, RecordingPattern::RecordingStopped);
    assert!(pattern.cures[0].action.contains("ROCTRACER_MAX_EVENTS"));
    // The trace cannot rule out the profiler's own window or the process's end: named too.
    assert!(
        pattern
            .cures
            .iter()
            .any(|c| c.action.contains("capture range or duration")
                && c.action.contains("process exiting")),
        "{:?}",
        pattern.cures
    );
    // The same replay emptied while the eager work after it stays: the runtime symptom.
    let emptied: HashSet<usize> = doc.launches[0].iter().copied().collect();
    let (empty, _) = doc.without(&emptied);
    let file = report(&empty);
    assert!(file.advice.applies);
    assert_eq!(
        file.replay_coverage.patterns[0].pattern,
        RecordingPattern::EmptyReplays
    );
    assert!(
        file.advice
            .switches
            .iter()
            .any(|s| s.variable == "DEBUG_CLR_GRAPH_PACKET_CAPTURE")
    );
}

#[test]
fn a_gpu_clock_offset_is_not_a_burst() {
    // Every GPU event later by the same amount, in order: an offset clock looks like that,
    // and so does a GPU that ran behind its host. Nothing in the trace says otherwise.
    for (name, path) in &WITH_REPLAYS[..4] {
        let doc = TraceDoc::load(path);
        let mut shifted = doc.doc.clone();
        for event in events_mut(&mut shifted).iter_mut().filter(|e| is_gpu(e)) {
            let ts = number(&event["ts"]).expect("GPU events have a time");
            event["ts"] = Value::from(ts + 5_000_000.0);
        }
        let analysis = analyse(&shifted, &[]);
        assert!(
            analysis.patterns.is_empty(),
            "{name}: {:?}",
            names(&analysis)
        );
        assert_eq!(analysis.coverage.totals.deferred_replays, 0, "{name}");
    }
}

/// The rows of GPU events on the streams of replay `replay` that start after its first
/// kernel and are not its own, and of the calls that launched them: the later work that
/// would show its order is wrong.
fn later_work_on_its_streams(doc: &TraceDoc, replay: usize) -> HashSet<usize> {
    let all = events(&doc.doc);
    let own: HashSet<usize> = doc.launches[replay].iter().copied().collect();
    let lane = |e: &Value| (e["pid"].to_string(), e["tid"].to_string());
    let lanes: HashSet<(String, String)> = own.iter().map(|&r| lane(&all[r])).collect();
    let first = own
        .iter()
        .filter_map(|&r| number(&all[r]["ts"]))
        .fold(f64::MAX, f64::min);
    let later: HashSet<usize> = (0..all.len())
        .filter(|i| !own.contains(i) && is_gpu(&all[*i]) && lanes.contains(&lane(&all[*i])))
        .filter(|&i| number(&all[i]["ts"]).is_some_and(|ts| ts > first))
        .collect();
    let correlation = |e: &Value| e["args"]["correlation"].as_u64();
    let ids: HashSet<u64> = later.iter().filter_map(|&i| correlation(&all[i])).collect();
    let calls = (0..all.len()).filter(|&i| {
        all[i]["cat"]
            .as_str()
            .is_some_and(|c| c.contains("runtime"))
            && correlation(&all[i]).is_some_and(|c| ids.contains(&c))
    });
    later.iter().copied().chain(calls).collect()
}

/// `doc` without the later work on its single replay's streams; with `moved`, the replay's
/// kernels moved after the end of the trace, in order, and `extra` µs later still.
fn lone_replay(doc: &TraceDoc, moved: bool, extra: f64) -> Value {
    let later = later_work_on_its_streams(doc, 0);
    if !moved {
        return doc.without(&later).0;
    }
    let mut shifted = burst_after_the_end(doc);
    for &row in &doc.launches[0] {
        let event = &mut events_mut(&mut shifted)[row];
        let ts = number(&event["ts"]).expect("time");
        event["ts"] = Value::from(ts + extra);
    }
    TraceDoc::from_doc(shifted).without(&later).0
}

#[test]
fn a_lone_replay_long_after_its_launch_on_an_idle_gpu_is_mistimed() {
    // vLLM decode: one replay of 421 kernels. Without the later work on its stream (which
    // would show the order), its file's eager launches start 7.3–7.8 ms after their calls
    // end (the GPU runs behind its host); where it ran, the replay is not late; moved after
    // the end of the trace it starts 17.1 ms after its call on an idle GPU: late.
    let doc = TraceDoc::load(WITH_REPLAYS[3].1);
    assert_eq!(doc.launches.len(), 1);
    let honest = analyse(&lone_replay(&doc, false, 0.0), &[]);
    assert_eq!(honest.coverage.totals.deferred_replays, 0);
    assert_ne!(honest.coverage.verdict, Verdict::Mistimed);
    let late = analyse(&lone_replay(&doc, true, 0.0), &[]);
    assert_eq!(late.coverage.verdict, Verdict::Mistimed);
    assert_eq!(late.coverage.totals.deferred_replays, 1);
    let burst = found(&late, RecordingPattern::KernelsAfterStep).expect("burst");
    assert_eq!(burst.replays, [0]);
    // SGLang decode: its own eager launches waited up to 463 ms on an idle GPU, so a burst
    // 8.5 ms after the launch is within what the file shows; 600 ms later, it is not.
    let doc = TraceDoc::load(WITH_REPLAYS[2].1);
    assert_eq!(doc.launches.len(), 1);
    let near = analyse(&lone_replay(&doc, true, 0.0), &[]);
    assert_eq!(near.coverage.totals.deferred_replays, 0);
    let late = analyse(&lone_replay(&doc, true, 600_000.0), &[]);
    assert_eq!(late.coverage.verdict, Verdict::Mistimed);
    assert_eq!(late.coverage.totals.deferred_replays, 1);
}
