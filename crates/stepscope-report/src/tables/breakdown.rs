//! The `stages`, `stage_category` and `kernels` tables: each file's breakdown, as the
//! JSON's `breakdown.stages`.

use super::coverage::{Keyed, keyed, keyed_table};
use super::ns;
use super::table::Table;
use crate::schema::{Document, GpuTimelineTimes, Row, Stage, StageIdleReport};

/// One row per stage of each file.
pub fn stages(document: &Document, run_id: &str) -> Table {
    let rows = keyed(document, |f| f.breakdown.stages.iter());
    let mut table = keyed_table("stages", run_id, &rows);
    table
        .column("stage", &rows, |r| r.item.stage.as_str())
        .column("steps", &rows, |r| r.item.steps)
        .column("events", &rows, |r| r.item.events)
        .column("gpu_time_ns", &rows, |r| ns(r.item.gpu_time_us))
        .column("share_of_total", &rows, |r| r.item.share_of_total)
        .column("busy_time_ns", &rows, |r| ns(r.item.busy_time_us))
        .column("idle_basis", &rows, |r| r.item.idle_basis.as_str())
        .column("window_ns", &rows, |r| ns(r.item.window_us))
        .column("idle_time_ns", &rows, |r| ns(r.item.idle_time_us))
        .column("unrecorded_replays", &rows, |r| r.item.unrecorded_replays)
        .column("missing_work_low_ns", &rows, |r| {
            ns(r.item.missing_work_low_us)
        })
        .column("missing_work_ns", &rows, |r| r.item.missing_work_us.map(ns))
        .column("missing_work_high_ns", &rows, |r| {
            r.item.missing_work_high_us.map(ns)
        });
    let by = |r: &Keyed<'_, &Stage>| r.item.categorised_by.clone();
    table
        .column("by_launching_op_ns", &rows, |r| ns(by(r).launching_op_us))
        .column("by_capturing_op_ns", &rows, |r| ns(by(r).capturing_op_us))
        .column("by_memcpy_memset_ns", &rows, |r| ns(by(r).memcpy_memset_us))
        .column("by_graph_replay_ns", &rows, |r| ns(by(r).graph_replay_us))
        .column("by_no_launch_call_ns", &rows, |r| {
            ns(by(r).no_launch_call_us)
        })
        .column("by_no_launching_op_ns", &rows, |r| {
            ns(by(r).no_launching_op_us)
        })
        .column("by_op_without_rule_ns", &rows, |r| {
            ns(by(r).op_without_rule_us)
        });
    anatomy_columns(&mut table, &rows);
    table
}

/// The stage's GPU timeline and its streams' idle time by cause.
fn anatomy_columns(table: &mut Table, rows: &[Keyed<'_, &Stage>]) {
    // The stage's GPU timeline (null without GPU events).
    let timeline = |r: &Keyed<'_, &Stage>, part: fn(&GpuTimelineTimes) -> f64| {
        r.item.timeline.as_ref().map(|t| ns(part(t)))
    };
    table
        .column("computation_ns", rows, |r| {
            timeline(r, |t| t.computation_us)
        })
        .column("exposed_comm_ns", rows, |r| {
            timeline(r, |t| t.exposed_comm_us)
        })
        .column("exposed_memcpy_ns", rows, |r| {
            timeline(r, |t| t.exposed_memcpy_us)
        })
        .column("timeline_idle_ns", rows, |r| timeline(r, |t| t.idle_us))
        .column("timeline_total_ns", rows, |r| timeline(r, |t| t.total_us));
    // The stage's streams' idle time by cause (null for work of no step, and without step
    // annotations).
    let idle = |r: &Keyed<'_, &Stage>, part: fn(&StageIdleReport) -> f64| {
        let stage = r.item.stage.as_str();
        let causes = r.file.idle_causes.stages.iter().find(|s| s.stage == stage);
        causes.map(|c| ns(part(c)))
    };
    table
        .column("idle_host_wait_ns", rows, |r| idle(r, |c| c.host_wait_us))
        .column("idle_host_wait_after_sync_ns", rows, |r| {
            idle(r, |c| c.host_wait_after_sync_us)
        })
        .column("idle_kernel_wait_ns", rows, |r| {
            idle(r, |c| c.kernel_wait_us)
        })
        .column("idle_other_ns", rows, |r| idle(r, |c| c.other_us))
        .column("idle_between_steps_ns", rows, |r| {
            idle(r, |c| c.between_steps_us)
        });
}

/// A category or kernel row of a list (a stage's or a range's), with the list's name and
/// its 1-based place in it.
pub(super) struct ListedRow<'a> {
    group: &'a str,
    position: usize,
    row: &'a Row,
}

/// `list`'s rows, each with the list's name `group`.
pub(super) fn listed<'a>(group: &'a str, list: &'a [Row]) -> impl Iterator<Item = ListedRow<'a>> {
    list.iter().enumerate().map(move |(i, row)| ListedRow {
        group,
        position: i + 1,
        row,
    })
}

fn stage_rows<'a>(document: &'a Document, kernels: bool) -> Vec<Keyed<'a, ListedRow<'a>>> {
    keyed(document, |f| {
        f.breakdown.stages.iter().flat_map(move |s| {
            let list = if kernels { &s.kernels } else { &s.categories };
            listed(s.stage.as_str(), list)
        })
    })
}

/// The table of listed category rows (`kernels: false`) or kernel rows, the list's name in
/// column `group` (`stage`, `range`).
pub(super) fn list_table(
    (name, group): (&'static str, &'static str),
    run_id: &str,
    rows: &[Keyed<'_, ListedRow<'_>>],
    kernels: bool,
) -> Table {
    let mut table = keyed_table(name, run_id, rows);
    table.column(group, rows, |r| r.item.group);
    if kernels {
        table
            .column("position", rows, |r| r.item.position)
            .column("kernel", rows, |r| r.item.row.name.as_str())
            .column("kernel_id", rows, |r| {
                r.item.row.kernel_id.as_deref().unwrap_or_default()
            });
    }
    table.column("category", rows, |r| r.item.row.category.as_str());
    row_columns(&mut table, rows);
    table
}

/// The columns a category and a kernel row share.
fn row_columns(table: &mut Table, rows: &[Keyed<'_, ListedRow<'_>>]) {
    table
        .column("events", rows, |r| r.item.row.events)
        .column("time_ns", rows, |r| ns(r.item.row.time_us))
        .column("share", rows, |r| r.item.row.share)
        .column("mean_ns", rows, |r| ns(r.item.row.mean_us))
        .column("events_by_op", rows, |r| r.item.row.events_by_op)
        .column("time_by_op_ns", rows, |r| ns(r.item.row.time_by_op_us));
}

/// One row per stage and kernel category of each file.
pub fn stage_category(document: &Document, run_id: &str) -> Table {
    let rows = stage_rows(document, false);
    list_table(("stage_category", "stage"), run_id, &rows, false)
}

/// The top kernels of each stage of each file (`--top`, at least 50, as the JSON).
pub fn kernels(document: &Document, run_id: &str) -> Table {
    let rows = stage_rows(document, true);
    list_table(("kernels", "stage"), run_id, &rows, true)
}
