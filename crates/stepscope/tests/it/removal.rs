//! Every shared trace with graph replays, with replays' GPU events removed in many
//! patterns: the verdict, the counts, and figures whose ranges hold the truth computed in
//! the test (`variants::Truth`).

use crate::common;
use crate::variants::{TraceDoc, Truth, WITH_REPLAYS, analyse, ranges_hold};
use std::collections::HashSet;
use stepscope_analysis::Verdict;
use stepscope_analysis::captured_graphs;

/// A way of removing GPU events, by the launches' node lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    None,
    DropAll,
    KeepLast,
    KeepFirst,
    KeepEvery(usize),
    OneEmptied,
    Halved(Which),
    MissingLastKernel,
    TwoNodeKeepsOne,
}

/// Which replay of its graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    First,
    Middle,
    Last,
}

const VARIANTS: [Variant; 13] = [
    Variant::None,
    Variant::DropAll,
    Variant::KeepLast,
    Variant::KeepFirst,
    Variant::KeepEvery(2),
    Variant::KeepEvery(3),
    Variant::OneEmptied,
    Variant::Halved(Which::First),
    Variant::Halved(Which::Middle),
    Variant::Halved(Which::Last),
    Variant::MissingLastKernel,
    Variant::TwoNodeKeepsOne,
    Variant::KeepEvery(5),
];

/// The replays of the graph most replays share (by node count; the larger on ties), in
/// launch order.
fn common_graph(sizes: &[usize]) -> Vec<usize> {
    let best = sizes
        .iter()
        .filter(|&&s| s >= 2)
        .max_by_key(|&&s| (sizes.iter().filter(|&&t| t == s).count(), s))
        .copied()
        .unwrap_or(0);
    (0..sizes.len()).filter(|&i| sizes[i] == best).collect()
}

/// The GPU events `variant` removes, or `None` where it does not apply.
fn removed(doc: &TraceDoc, variant: Variant) -> Option<HashSet<usize>> {
    let launches = &doc.launches;
    let all = |pick: &dyn Fn(usize) -> bool| -> HashSet<usize> {
        (0..launches.len())
            .filter(|&i| pick(i))
            .flat_map(|i| launches[i].iter().copied())
            .collect()
    };
    let graph = common_graph(&doc.sizes());
    let pick = |which: Which| match which {
        Which::First => graph[0],
        Which::Middle => graph[graph.len() / 2],
        Which::Last => graph[graph.len() - 1],
    };
    let last = launches.len() - 1;
    Some(match variant {
        Variant::None => HashSet::new(),
        Variant::DropAll => all(&|_| true),
        Variant::KeepLast => all(&|i| i != last),
        Variant::KeepFirst => all(&|i| i != 0),
        Variant::KeepEvery(k) => all(&|i| i % k != 0),
        Variant::OneEmptied => launches[launches.len() / 2].iter().copied().collect(),
        Variant::Halved(which) => {
            let rows = &launches[pick(which)];
            rows[rows.len() / 2..].iter().copied().collect()
        }
        Variant::MissingLastKernel => launches[pick(Which::Middle)]
            .last()
            .copied()
            .into_iter()
            .collect(),
        Variant::TwoNodeKeepsOne => {
            let two: Vec<usize> = (0..launches.len())
                .filter(|&i| launches[i].len() == 2)
                .collect();
            let replay = *two.get(two.len() / 2)?;
            HashSet::from([launches[replay][1]])
        }
    })
}

/// What the trace can show after `variant`: single replays with no capture cannot show a
/// lost node (their size rests on themselves), the rest can.
fn expected(trace: &str, variant: Variant, truth: &Truth) -> Verdict {
    let lost_nodes = truth.empty + truth.short > 0;
    let single = matches!(trace, "sglang" | "vllm_full");
    match (trace, lost_nodes) {
        ("hta", false) => Verdict::Complete,
        // Piecewise: the first piece and the last layer's piece are each the only replay of
        // their graph; xdit: its capture holds one launch more than the replay recorded.
        (_, false) => Verdict::Unverified,
        _ if truth.empty > 0 => Verdict::Incomplete,
        _ if single && matches!(variant, Variant::Halved(_) | Variant::MissingLastKernel) => {
            Verdict::Unverified
        }
        _ => Verdict::Incomplete,
    }
}

/// Every variant on one trace; returns how many applied.
fn check_trace(name: &str, path: &str) -> usize {
    let mut failures = Vec::new();
    let mut checked = 0;
    {
        let doc = TraceDoc::load(path);
        for variant in VARIANTS {
            let Some(removed) = removed(&doc, variant) else {
                continue;
            };
            let (modified, truth) = doc.without(&removed);
            let coverage = analyse(&modified, &[]).coverage;
            let t = &coverage.totals;
            let want = expected(name, variant, &truth);
            let mut wrong = ranges_hold(&coverage, &truth);
            if coverage.verdict != want {
                wrong.push(format!("verdict {:?}, expected {want:?}", coverage.verdict));
            }
            if (t.replays, t.empty_replays) != (truth.replays, truth.empty) {
                wrong.push(format!(
                    "replays/empty {}/{}, truth {}/{}",
                    t.replays, t.empty_replays, truth.replays, truth.empty
                ));
            }
            let short_seen = if want == Verdict::Unverified {
                0
            } else {
                truth.short
            };
            if t.short_replays != short_seen {
                wrong.push(format!("short {}, expected {short_seen}", t.short_replays));
            }
            if t.damaged_replays != 0 {
                wrong.push("removal called damage".to_owned());
            }
            for w in wrong {
                failures.push(format!("{name} {variant:?}: {w}"));
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    checked
}

// One test per trace, so the harness runs them side by side.
#[test]
fn every_removal_pattern_on_hta_training_graphs() {
    assert_eq!(check_trace(WITH_REPLAYS[0].0, WITH_REPLAYS[0].1), 13);
}

#[test]
fn every_removal_pattern_on_piecewise_vllm() {
    // No 2-node replay: one variant does not apply.
    assert_eq!(check_trace(WITH_REPLAYS[1].0, WITH_REPLAYS[1].1), 12);
}

#[test]
fn every_removal_pattern_on_sglang_decode() {
    assert_eq!(check_trace(WITH_REPLAYS[2].0, WITH_REPLAYS[2].1), 12);
}

#[test]
fn every_removal_pattern_on_vllm_full_decode() {
    assert_eq!(check_trace(WITH_REPLAYS[3].0, WITH_REPLAYS[3].1), 12);
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn every_removal_pattern_on_xdit_with_its_capture() {
    assert_eq!(check_trace(WITH_REPLAYS[4].0, WITH_REPLAYS[4].1), 12);
}

#[test]
fn a_capture_shows_what_a_single_replay_lost() {
    let capture = captured_graphs(&common::read(
        "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz",
    ));
    assert_eq!(capture.iter().map(|c| c.nodes).collect::<Vec<_>>(), [544]);
    let doc = TraceDoc::load(WITH_REPLAYS[2].1);
    let rows = &doc.launches[0];
    let (halved, truth) = doc.without(&rows[272..].iter().copied().collect());
    let coverage = analyse(&halved, &capture).coverage;
    assert_eq!(coverage.verdict, Verdict::Incomplete);
    assert_eq!(coverage.totals.short_replays, 1);
    assert!(ranges_hold(&coverage, &truth).is_empty());
    // Emptied: the capture gives the size, or one less (a launch under capture need not
    // become a node).
    let (emptied, truth) = doc.without(&rows.iter().copied().collect());
    let coverage = analyse(&emptied, &capture).coverage;
    let replay = &coverage.replays[0];
    assert_eq!(
        (replay.expected.low, replay.expected.high),
        (543, Some(544))
    );
    assert_eq!(coverage.capture_matches, 1);
    assert!(ranges_hold(&coverage, &truth).is_empty());
}
