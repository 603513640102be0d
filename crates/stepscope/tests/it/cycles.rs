//! Launch cycles and PyTorch profiler steps, on HTA's real A100 training trace: 14 graphs
//! (7 on the forward thread, 7 on the backward thread) replayed in 5 rounds, each round a
//! `ProfilerStep#N`. Edited in the test to take the steps away, to leave two graphs that
//! alternate, and to lose kernels.

use crate::variants::{TraceDoc, WITH_REPLAYS, analyse, ranges_hold};
use serde_json::Value;
use std::collections::HashSet;
use stepscope_analysis::Evidence;
use stepscope_analysis::StageKey;
use stepscope_analysis::{Framework, Stage};
use stepscope_analysis::{ReplayStatus, Verdict};

const HTA: &str = WITH_REPLAYS[0].1;

/// The HTA trace without its `ProfilerStep#N` annotations.
fn without_steps() -> TraceDoc {
    let mut doc = TraceDoc::load(HTA).doc;
    doc["traceEvents"]
        .as_array_mut()
        .expect("object form")
        .retain(|e| {
            !e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep#"))
        });
    TraceDoc::from_doc(doc)
}

#[test]
fn profiler_steps_are_steps_of_their_own_not_decode() {
    let analysis = analyse(&TraceDoc::load(HTA).doc, &[]);
    assert_eq!(analysis.steps.framework, Some(Framework::Pytorch));
    assert_eq!(analysis.steps.steps.len(), 5);
    let stages: Vec<StageKey> = analysis.breakdown.stages.iter().map(|s| s.stage).collect();
    assert!(stages.contains(&StageKey::Stage(Stage::Step)), "{stages:?}");
    assert!(
        !stages.contains(&StageKey::Stage(Stage::Decode)),
        "{stages:?}"
    );
    let step = analysis
        .breakdown
        .stages
        .iter()
        .find(|s| s.stage == StageKey::Stage(Stage::Step))
        .expect("the step stage");
    assert_eq!(step.steps, 5);
}

#[test]
fn without_steps_the_launch_cycle_of_each_thread_is_the_slot() {
    let doc = without_steps();
    let c = analyse(&doc.doc, &[]).coverage;
    assert_eq!(c.verdict, Verdict::Complete);
    for replay in &c.replays {
        assert!(
            matches!(
                replay.evidence,
                Some(Evidence::CyclePosition {
                    period: 7,
                    other_cycles: 4,
                    ..
                })
            ),
            "{:?}",
            replay.evidence
        );
    }
}

/// Without steps, every kind of loss is placed by the cycle: an emptied replay gets its
/// graph, a halved one is short of it, whichever round it is in (the first included).
#[test]
fn without_steps_losses_are_placed_by_the_cycle() {
    let doc = without_steps();
    let sizes = doc.sizes();
    let big: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] == 9).collect();
    assert_eq!(big.len(), 5, "one 9-node graph, replayed 5 times");
    for (index, &replay) in big.iter().enumerate() {
        let rows = &doc.launches[replay];
        let halve: HashSet<usize> = rows[4..].iter().copied().collect();
        let empty: HashSet<usize> = rows.iter().copied().collect();
        for (removed, status) in [(halve, ReplayStatus::Short), (empty, ReplayStatus::Empty)] {
            let (modified, truth) = doc.without(&removed);
            let c = analyse(&modified, &[]).coverage;
            let r = &c.replays[replay];
            assert_eq!(r.status, status, "round {index}");
            assert_eq!(r.expected.exact(), Some(9), "round {index}");
            assert!(
                matches!(r.evidence, Some(Evidence::CyclePosition { period: 7, .. })),
                "round {index}: {:?}",
                r.evidence
            );
            assert!(
                ranges_hold(&c, &truth).is_empty(),
                "{:?}",
                ranges_hold(&c, &truth)
            );
        }
    }
}

/// Keeps the launches (runtime events and their GPU events) `keep` accepts; drops the rest.
fn keep_launches(doc: &TraceDoc, keep: impl Fn(usize) -> bool) -> Value {
    let events = doc.doc["traceEvents"].as_array().expect("object form");
    let mut drop: HashSet<u64> = HashSet::new();
    let mut launch_correlations: Vec<(f64, u64)> = events
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.contains("GraphLaunch"))
        })
        .filter_map(|e| Some((e["ts"].as_f64()?, e["args"]["correlation"].as_u64()?)))
        .collect();
    launch_correlations.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (index, (_, correlation)) in launch_correlations.iter().enumerate() {
        if !keep(index) {
            drop.insert(*correlation);
        }
    }
    let mut out = doc.doc.clone();
    out["traceEvents"]
        .as_array_mut()
        .expect("object form")
        .retain(|e| {
            !e["args"]["correlation"]
                .as_u64()
                .is_some_and(|c| drop.contains(&c))
        });
    out
}

/// Two graphs that alternate on one thread (A B A B …): an emptied B sits between two A's,
/// and must still be a B — the cycle of 2, not the neighbours, places it.
#[test]
fn an_empty_replay_between_two_replays_of_another_graph_keeps_its_own() {
    let doc = without_steps();
    let sizes = doc.sizes();
    // On the forward thread the 7-launch round starts with a 2-node graph and has a 9-node
    // one at its 6th launch: keep just those two, so they alternate.
    let nine: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] == 9).collect();
    let first = nine[0] - 5;
    assert_eq!(sizes[first], 2);
    let kept: HashSet<usize> = (0..5)
        .flat_map(|round| [first + 14 * round, nine[round]])
        .collect();
    assert!(nine.iter().all(|n| kept.contains(n)));
    let alternating = TraceDoc::from_doc(keep_launches(&doc, |i| kept.contains(&i)));
    assert_eq!(alternating.sizes(), [2, 9, 2, 9, 2, 9, 2, 9, 2, 9]);
    let emptied: HashSet<usize> = alternating.launches[5].iter().copied().collect();
    let (modified, truth) = alternating.without(&emptied);
    let c = analyse(&modified, &[]).coverage;
    let r = &c.replays[5];
    assert_eq!(r.status, ReplayStatus::Empty);
    assert_eq!(r.expected.exact(), Some(9));
    assert!(
        matches!(r.evidence, Some(Evidence::CyclePosition { period: 2, .. })),
        "{:?}",
        r.evidence
    );
    assert!(ranges_hold(&c, &truth).is_empty());
}

/// The forward and backward graphs interleave in time on two threads: each thread's own
/// sequence decides.
#[test]
fn graphs_on_two_threads_are_judged_per_thread() {
    let doc = TraceDoc::load(HTA);
    let sizes = doc.sizes();
    // Keep one forward graph (the round's first launch) and one backward graph (the 2nd
    // launch of the backward thread's 7, 20 nodes).
    let kept: HashSet<usize> = (0..5)
        .flat_map(|round| [14 * round, 14 * round + 8])
        .collect();
    let two = TraceDoc::from_doc(keep_launches(&doc, |i| kept.contains(&i)));
    assert_eq!(
        two.sizes(),
        [2, 20, 2, 20, 2, 20, 2, 20, 2, 20],
        "{sizes:?}"
    );
    for emptied in 0..10 {
        let removed: HashSet<usize> = two.launches[emptied].iter().copied().collect();
        let (modified, truth) = two.without(&removed);
        let c = analyse(&modified, &[]).coverage;
        let want = if emptied % 2 == 0 { 2 } else { 20 };
        assert_eq!(
            c.replays[emptied].expected.exact(),
            Some(want),
            "replay {emptied}"
        );
        assert!(ranges_hold(&c, &truth).is_empty());
    }
}
