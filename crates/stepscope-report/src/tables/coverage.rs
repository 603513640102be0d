//! The `graphs`, `replays` and `findings` tables.

use super::files::numbers;
use super::ns;
use super::table::{Small, Table};
use crate::schema::{Document, EvidenceWire, FileReport, UnverifiedWire};
use stepscope_analysis::FindingKind;

/// A row of one file: the key columns come from `file`.
pub struct Keyed<'a, T> {
    /// The file.
    pub file: &'a FileReport,
    /// The row.
    pub item: T,
}

/// Rows of every file read: `items` of each.
pub fn keyed<'a, T: 'a, I>(
    document: &'a Document,
    items: impl Fn(&'a FileReport) -> I,
) -> Vec<Keyed<'a, T>>
where
    I: IntoIterator<Item = T>,
{
    document
        .files
        .iter()
        .flat_map(|file| {
            items(file)
                .into_iter()
                .map(move |item| Keyed { file, item })
        })
        .collect()
}

/// A table of `rows` with the key columns `run_id`, `file` and `rank`.
pub fn keyed_table<T>(name: &'static str, run_id: &str, rows: &[Keyed<'_, T>]) -> Table {
    let mut table = Table::new(name, rows.len());
    table
        .column("run_id", rows, |_| run_id)
        .column("file", rows, |r| r.file.path.as_str())
        .column("rank", rows, |r| r.file.rank.map(Small));
    table
}

/// One row per graph of each file (and one for its replays of unknown graph), as the
/// JSON's `replay_coverage.graphs`.
pub fn graphs(document: &Document, run_id: &str) -> Table {
    let rows = keyed(document, |f| f.replay_coverage.graphs.iter());
    let mut table = keyed_table("graphs", run_id, &rows);
    table
        .column("graph", &rows, |r| r.item.graph)
        .column("graph_id", &rows, |r| r.item.graph_id)
        .column("first_kernel", &rows, |r| r.item.first_kernel.as_deref())
        .column("expected_nodes_per_replay", &rows, |r| {
            r.item.expected_nodes_per_replay
        })
        .column("expected_nodes_per_replay_low", &rows, |r| {
            r.item.expected_nodes_per_replay_low
        })
        .column("expected_nodes_per_replay_high", &rows, |r| {
            r.item.expected_nodes_per_replay_high
        })
        .column("expected_source", &rows, |r| {
            r.item.expected_source.as_str()
        })
        .column("reference_time_ns", &rows, |r| ns(r.item.reference_time_us));
    numbers(&mut table, &rows, |r| Some(&r.item.numbers));
    table
}

/// One row per graph replay of each file: every replay, not only the problem ones the
/// JSON lists. Files analysed without replay records give none.
pub fn replays(document: &Document, run_id: &str) -> Table {
    let rows = keyed(document, |f| f.replays.iter().flatten());
    let mut table = keyed_table("replays", run_id, &rows);
    table
        .column("replay", &rows, |r| r.item.replay)
        .column("launch_ts_ns", &rows, |r| r.item.launch_ts_ns)
        .column("step", &rows, |r| r.item.step.as_deref())
        .column("graph", &rows, |r| r.item.graph)
        .column("status", &rows, |r| r.item.status.as_str())
        .column("finding", &rows, |r| {
            r.item.finding.map(FindingKind::as_str)
        })
        .column("recorded_nodes", &rows, |r| r.item.recorded_nodes)
        .column("expected_nodes", &rows, |r| {
            let e = &r.item;
            (e.expected_nodes_high == Some(e.expected_nodes_low)).then_some(e.expected_nodes_low)
        })
        .column("expected_nodes_low", &rows, |r| r.item.expected_nodes_low)
        .column("expected_nodes_high", &rows, |r| r.item.expected_nodes_high)
        .column("recorded_time_ns", &rows, |r| r.item.recorded_time_ns)
        .column("missing_time_low_ns", &rows, |r| r.item.missing_time_low_ns)
        .column("missing_time_ns", &rows, |r| r.item.missing_time_ns)
        .column("missing_time_high_ns", &rows, |r| {
            r.item.missing_time_high_ns
        })
        .column("order_mismatch", &rows, |r| r.item.order_mismatch)
        .column("deferred", &rows, |r| r.item.deferred)
        .column("implausible", &rows, |r| r.item.implausible);
    evidence(&mut table, &rows, |r| r.item.evidence.as_ref());
    unverified(&mut table, &rows, |r| r.item.unverified.as_ref());
    table
        .column("refused_events", &rows, |r| r.item.refused_events)
        .column("shared_correlation", &rows, |r| r.item.shared_correlation);
    table
}

/// One row per finding the JSON lists (at most `MAX_FINDINGS` per file).
pub fn findings(document: &Document, run_id: &str) -> Table {
    let rows = keyed(document, |f| f.replay_coverage.findings.iter());
    let mut table = keyed_table("findings", run_id, &rows);
    table
        .column("kind", &rows, |r| r.item.kind.as_str())
        .column("replay", &rows, |r| r.item.replay)
        .column("launch_ts_ns", &rows, |r| ns(r.item.launch_ts_us))
        .column("step", &rows, |r| r.item.step.as_deref())
        .column("graph", &rows, |r| r.item.graph)
        .column("recorded_nodes", &rows, |r| r.item.recorded_nodes)
        .column("expected_nodes", &rows, |r| r.item.expected_nodes)
        .column("expected_nodes_low", &rows, |r| r.item.expected_nodes_low)
        .column("expected_nodes_high", &rows, |r| r.item.expected_nodes_high);
    evidence(&mut table, &rows, |r| r.item.evidence.as_ref());
    table.column("evidence_text", &rows, |r| {
        r.item.evidence.as_ref().map(EvidenceWire::sentence)
    });
    unverified(&mut table, &rows, |r| r.item.unverified.as_ref());
    table
        .column("refused_events", &rows, |r| r.item.refused_events)
        .column("shared_correlation", &rows, |r| r.item.shared_correlation);
    table
}

/// The JSON of a wire value, and the value of its tag field.
fn tagged<T: serde::Serialize>(value: &T, tag: &str) -> (String, Option<String>) {
    let json = serde_json::to_value(value).unwrap_or_default();
    let kind = json[tag].as_str().map(str::to_owned);
    (json.to_string(), kind)
}

/// Evidence as typed columns for what most kinds share, and the whole value as JSON.
fn evidence<R>(table: &mut Table, rows: &[R], get: impl Fn(&R) -> Option<&EvidenceWire>) {
    table
        .column("evidence_kind", rows, |r| {
            get(r).and_then(|e| tagged(e, "kind").1)
        })
        .column("evidence_slot", rows, |r| match get(r) {
            Some(EvidenceWire::StepSlot { slot, .. } | EvidenceWire::PartialSlot { slot, .. }) => {
                Some(slot.clone())
            }
            _ => None,
        })
        .column("evidence_support", rows, |r| match get(r)? {
            EvidenceWire::StepSlot { other_steps: n, .. }
            | EvidenceWire::PartialSlot { recorded: n, .. }
            | EvidenceWire::PartialRun { recorded: n, .. }
            | EvidenceWire::CyclePosition {
                other_cycles: n, ..
            }
            | EvidenceWire::GraphId {
                other_replays: n, ..
            }
            | EvidenceWire::Repeated { other_replays: n } => Some(*n),
            _ => None,
        })
        .column("evidence_nodes", rows, |r| match get(r)? {
            EvidenceWire::Capture { nodes: n }
            | EvidenceWire::PartialSlot { union_nodes: n, .. }
            | EvidenceWire::PartialRun { union_nodes: n, .. } => Some(*n),
            _ => None,
        })
        .column("evidence_json", rows, |r| {
            get(r).map(|e| tagged(e, "kind").0)
        });
}

/// Why a size is unproven: the reason, and the whole value as JSON.
fn unverified<R>(table: &mut Table, rows: &[R], get: impl Fn(&R) -> Option<&UnverifiedWire>) {
    table
        .column("unverified", rows, |r| {
            get(r).and_then(|u| tagged(u, "reason").1)
        })
        .column("unverified_json", rows, |r| {
            get(r).map(|u| tagged(u, "reason").0)
        });
}
