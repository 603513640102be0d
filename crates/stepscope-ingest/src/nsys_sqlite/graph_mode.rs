//! Whole-graph records: Nsight Systems' default `--cuda-graph-trace=graph` writes one
//! `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` row per graph replay and no kernel rows for its nodes.
//! A `cudaGraphLaunch` then has no kernels whether or not they ran, so such a file cannot
//! show whether replays were recorded whole: its linkage is unavailable.
//!
//! The evidence must be of a replay recorded that way, not of the setting alone: the real
//! samples `h100_2gpu_1s` and `mock` say `CUDA_GRAPH_TRACE_OPTIONS:MODE = Graph` (the
//! default) and hold no graph launch at all; they keep the normal verdict. A file is in
//! graph mode when it has graph launches without GPU work and either says `MODE = Graph`
//! or holds whole-graph records. Launches whose kernels were recorded (`node` mode) are
//! judged as in any other format.

use crate::sqlite::Database;
use rustc_hash::FxHashSet;
use stepscope_model::{RuntimeCallKind, Severity, TraceBuilder};

/// The table of whole-graph records.
pub(super) const GRAPH_TRACE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";

/// Sets the trace's `linkage_unavailable` when the file recorded its graph replays as
/// whole-graph records, and counts those records.
pub(super) fn check(db: &Database, builder: &mut TraceBuilder) {
    let records = whole_graph_records(db);
    builder.stats_mut().add(
        "nsys_whole_graph_records",
        Severity::Info,
        "Whole-graph records (CUPTI_ACTIVITY_KIND_GRAPH_TRACE, `--cuda-graph-trace=graph`): one per graph replay, without its kernels; not read as GPU events",
        records,
    );
    let graph_setting = capture_setting(db, "CUDA_GRAPH_TRACE_OPTIONS:MODE")
        .is_some_and(|mode| mode.eq_ignore_ascii_case("graph"));
    if !graph_setting && records == 0 {
        return;
    }
    let without_work = launches_without_gpu_work(builder);
    if without_work > 0 {
        builder.metadata_mut().linkage_unavailable = Some(reason(without_work));
    }
}

/// Why a graph-mode file cannot show replays, and how to record one that can.
fn reason(launches: u64) -> String {
    let replays = if launches == 1 {
        "1 graph replay is a whole-graph record without the kernels it ran".to_owned()
    } else {
        format!("{launches} graph replays are whole-graph records without the kernels they ran")
    };
    format!(
        "the file was recorded with Nsight Systems' `--cuda-graph-trace=graph` (its default): {replays}, so whether every replay's kernels were recorded cannot be checked; record with `nsys profile --cuda-graph-trace=node` (then `nsys export --type sqlite`)"
    )
}

/// Rows of the whole-graph table (0 when absent or unreadable).
fn whole_graph_records(db: &Database) -> u64 {
    if !db.has_table(GRAPH_TRACE) {
        return 0;
    }
    db.conn
        .query_row(&format!("SELECT COUNT(*) FROM {GRAPH_TRACE}"), [], |row| {
            row.get::<_, i64>(0)
        })
        .map_or(0, |count| u64::try_from(count).unwrap_or(0))
}

/// A capture setting from `META_DATA_CAPTURE` (schemas from 3.x; 2.9 has none).
fn capture_setting(db: &Database, name: &str) -> Option<String> {
    if !db.has_table("META_DATA_CAPTURE") {
        return None;
    }
    db.conn
        .query_row(
            "SELECT value FROM META_DATA_CAPTURE WHERE name = ?1",
            [name],
            |row| row.get::<_, Option<String>>(0),
        )
        .ok()
        .flatten()
}

/// Graph launches whose correlation id no GPU event carries.
fn launches_without_gpu_work(builder: &mut TraceBuilder) -> u64 {
    let trace = builder.trace_mut();
    let launched: FxHashSet<u64> = trace.gpu.correlation.iter().map(|c| c.0).collect();
    let runtime = &trace.runtime;
    (0..runtime.len())
        .filter(|&row| {
            runtime.kind[row] == RuntimeCallKind::GraphLaunch
                && !launched.contains(&runtime.correlation[row].0)
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_says_how_to_record() {
        let reason = reason(25);
        assert!(reason.contains("--cuda-graph-trace=node"), "{reason}");
        assert!(reason.contains("25 graph replays are"), "{reason}");
        assert!(super::reason(1).contains("1 graph replay is"));
    }
}
