//! Bad data is damage, not a runtime symptom: real traces with one GPU event made invalid
//! in the test give `damaged` replays, the verdict `damaged`, and no switch advice; CUDA
//! traces never get HIP switches.

use crate::variants::{TraceDoc, WITH_REPLAYS, analyse};
use serde_json::{Value, json};
use std::collections::HashSet;
use stepscope_analysis::{ReplayStatus, Verdict};
use stepscope_ingest::{ReadOptions, read_trace_bytes};
use stepscope_report::schema::FileReport;
use stepscope_synth::removal::to_json_bytes;

const PIECEWISE: &str = WITH_REPLAYS[1].1;

/// The report as `stepscope analyze --json` writes it.
fn report(doc: &Value) -> FileReport {
    let trace = read_trace_bytes(&to_json_bytes(doc), &ReadOptions::default()).expect("reads");
    let analysis = analyse(doc, &[]);
    FileReport::new("edited.json", &trace, &analysis, 10)
}

/// Applies `edit` to one GPU event of replay 10 (a 15-kernel layer piece).
fn damaged(edit: impl Fn(&mut Value)) -> (Value, usize) {
    let doc = TraceDoc::load(PIECEWISE);
    let row = doc.launches[10][6];
    let mut edited = doc.doc.clone();
    edit(&mut edited["traceEvents"][row]);
    (edited, 10)
}

#[test]
fn each_kind_of_bad_data_damages_its_replay_and_gets_no_switch() {
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: [(&str, Edit); 6] = [
        (
            "negative dur",
            Box::new(|e: &mut Value| e["dur"] = json!(-3.5)),
        ),
        ("NaN ts", Box::new(|e: &mut Value| e["ts"] = json!("NaN"))),
        ("null ts", Box::new(|e: &mut Value| e["ts"] = Value::Null)),
        ("unknown ph", Box::new(|e: &mut Value| e["ph"] = json!("Q"))),
        (
            "ts 0 among epoch times",
            Box::new(|e: &mut Value| e["ts"] = json!(0)),
        ),
        (
            "dur of 11 days",
            Box::new(|e: &mut Value| e["dur"] = json!(1e12)),
        ),
    ];
    for (name, edit) in cases {
        let (doc, replay) = damaged(edit);
        let c = analyse(&doc, &[]).coverage;
        assert_eq!(c.verdict, Verdict::Damaged, "{name}");
        let r = &c.replays[replay];
        assert_eq!(r.status, ReplayStatus::Damaged, "{name}");
        assert_eq!(r.damage.map(|d| d.refused_events), Some(1), "{name}");
        assert_eq!(
            r.expected.exact(),
            Some(15),
            "{name}: still placed in its graph"
        );
        assert_eq!(c.totals.short_replays + c.totals.empty_replays, 0, "{name}");
        let report = report(&doc);
        assert!(!report.advice.applies, "{name}");
        assert!(report.advice.switches.is_empty(), "{name}");
        assert_eq!(report.damage.refused_in_replays, 1, "{name}");
        assert_eq!(report.replay_coverage.verdict, Verdict::Damaged, "{name}");
    }
}

#[test]
fn a_correlation_id_two_launches_share_damages_both() {
    let doc = TraceDoc::load(PIECEWISE);
    let mut edited = doc.doc.clone();
    let events = edited["traceEvents"].as_array_mut().expect("object form");
    let launches: Vec<usize> = (0..events.len())
        .filter(|&i| events[i]["name"] == "hipGraphLaunch")
        .collect();
    let (a, b) = (launches[3], launches[4]);
    let shared = events[a]["args"]["correlation"].clone();
    events[b]["args"]["correlation"] = shared;
    let c = analyse(&edited, &[]).coverage;
    assert_eq!(c.verdict, Verdict::Damaged);
    assert_eq!(c.duplicate_correlations, 1);
    let damaged: Vec<usize> = (0..c.replays.len())
        .filter(|&r| c.replays[r].status == ReplayStatus::Damaged)
        .collect();
    assert_eq!(damaged.len(), 2, "{damaged:?}");
    assert!(
        c.replays[damaged[0]]
            .damage
            .is_some_and(|d| d.shared_correlation)
    );
}

#[test]
fn damage_beside_the_symptom_keeps_the_symptom_and_its_advice() {
    // Replay 5 emptied (the symptom), one kernel of replay 10 with a negative duration.
    let doc = TraceDoc::load(PIECEWISE);
    let (mut edited, _) = doc.without(&doc.launches[5].iter().copied().collect::<HashSet<_>>());
    let probe = TraceDoc::from_doc(edited.clone());
    let row = probe.launches[10][2];
    edited["traceEvents"][row]["dur"] = json!(-1.0);
    let c = analyse(&edited, &[]).coverage;
    assert_eq!(c.verdict, Verdict::Incomplete);
    assert_eq!((c.totals.empty_replays, c.totals.damaged_replays), (1, 1));
    let report = report(&edited);
    assert!(report.advice.applies);
}

#[test]
fn cuda_traces_never_get_hip_switches() {
    // HTA's A100 trace names no runtime version, only NVIDIA devices.
    let doc = TraceDoc::load(WITH_REPLAYS[0].1);
    let (emptied, _) = doc.without(&doc.launches[3].iter().copied().collect::<HashSet<_>>());
    let report = report(&emptied);
    assert_eq!(report.replay_coverage.verdict, Verdict::Incomplete);
    assert_eq!(report.platform, "cuda");
    assert!(report.advice.applies);
    assert!(report.advice.switches.is_empty());
    assert!(
        report.advice.reason.contains("CUPTI"),
        "{}",
        report.advice.reason
    );
    assert!(
        !report.advice.reason.contains("DEBUG_"),
        "{}",
        report.advice.reason
    );
}

/// A small trace cut from the real piecewise one: its metadata, four graph launches and their
/// GPU events (under 100 events, too few for the span of the rest to judge an outlier).
fn small_piecewise() -> (Value, usize) {
    let doc = TraceDoc::load(PIECEWISE);
    let events = doc.doc["traceEvents"].as_array().expect("object form");
    let mut keep: Vec<usize> = doc.launches[9..13].iter().flatten().copied().collect();
    let correlations: HashSet<u64> = keep
        .iter()
        .filter_map(|&i| events[i]["args"]["correlation"].as_u64())
        .collect();
    keep.extend((0..events.len()).filter(|&i| {
        let launch = events[i]["name"]
            .as_str()
            .is_some_and(|n| n.contains("GraphLaunch"));
        let owned = events[i]["args"]["correlation"]
            .as_u64()
            .is_some_and(|c| correlations.contains(&c));
        events[i]["ph"] == "M" || (launch && owned)
    }));
    keep.sort_unstable();
    let target = doc.launches[10][6];
    let row = keep.iter().position(|&i| i == target).expect("kept");
    let mut small = doc.doc.clone();
    small["traceEvents"] = Value::Array(keep.iter().map(|&i| events[i].clone()).collect());
    (small, row)
}

/// A time no clock writes is damage in a trace of any size: in a trace of under 100 events a
/// kernel at `ts: 1e29` µs (and one lasting `dur: 1e17` µs, three thousand years) used to
/// widen the span that judges it and pass as complete with an absurd idle time; now
/// it is refused like any other bad time, its replay damaged, and no figure is absurd.
#[test]
fn absurd_times_are_damage_in_a_small_trace() {
    let (small, row) = small_piecewise();
    let count = small["traceEvents"].as_array().expect("events").len();
    assert!(count < 100, "{count} events");
    assert_eq!(analyse(&small, &[]).coverage.verdict, Verdict::Complete);
    for (name, field, value) in [
        ("ts 1e29", "ts", json!(1e29)),
        ("dur 1e17", "dur", json!(1e17)),
    ] {
        let mut edited = small.clone();
        edited["traceEvents"][row][field] = value;
        let c = analyse(&edited, &[]).coverage;
        assert_eq!(c.verdict, Verdict::Damaged, "{name}");
        assert_eq!(c.totals.damaged_replays, 1, "{name}");
        let report = serde_json::to_value(report(&edited)).expect("serialises");
        assert_eq!(report["damage"]["refused_in_replays"], 1, "{name}");
        let text = report["breakdown"].to_string();
        let idle: Vec<f64> = report["breakdown"]["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .filter_map(|s| s["idle_time_us"].as_f64())
            .collect();
        assert!(!idle.is_empty(), "{text}");
        assert!(idle.iter().all(|&us| us < 60e6), "{name}: idle {idle:?} µs");
    }
}
