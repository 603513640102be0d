//! Bad data is damage, not a runtime symptom: real traces with one GPU event made invalid
//! in the test give `damaged` replays, the verdict `damaged`, and no switch advice; CUDA
//! traces never get HIP switches.

use crate::variants::{TraceDoc, WITH_REPLAYS, analyse};
use serde_json::{Value, json};
use std::collections::HashSet;
use stepscope_analysis::passes::replay_coverage::{ReplayStatus, Verdict};
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
        assert_eq!(report.replay_coverage.verdict, "damaged", "{name}");
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
    assert_eq!(report.replay_coverage.verdict, "incomplete");
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
