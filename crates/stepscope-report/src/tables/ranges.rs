//! The `ranges`, `range_category` and `range_kernels` tables: each file's `--range`
//! breakdown, as the JSON's `ranges` (empty when no range was asked for).

use super::breakdown::{ListedRow, list_table, listed};
use super::coverage::{Keyed, keyed, keyed_table};
use super::ns;
use super::table::Table;
use crate::schema::{Document, Range};

/// One row per annotation name that matched the pattern, in each file.
pub fn ranges(document: &Document, run_id: &str) -> Table {
    let rows = keyed(document, |f| {
        f.ranges.iter().flat_map(|found| {
            found
                .ranges
                .iter()
                .map(move |r| (found.pattern.as_str(), r))
        })
    });
    let mut table = keyed_table("ranges", run_id, &rows);
    table
        .column("pattern", &rows, |r| r.item.0)
        .column("range", &rows, |r| r.item.1.name.as_str())
        .column("instances", &rows, |r| r.item.1.instances)
        .column("cpu_time_ns", &rows, |r| ns(r.item.1.cpu_time_us))
        .column("gpu_mirror_time_ns", &rows, |r| {
            r.item.1.gpu_mirror_time_us.map(ns)
        })
        .column("events", &rows, |r| r.item.1.events)
        .column("gpu_time_ns", &rows, |r| ns(r.item.1.gpu_time_us))
        .column("busy_time_ns", &rows, |r| ns(r.item.1.busy_time_us));
    table
}

fn range_rows<'a>(document: &'a Document, kernels: bool) -> Vec<Keyed<'a, ListedRow<'a>>> {
    keyed(document, move |f| {
        f.ranges.iter().flat_map(move |found| {
            found.ranges.iter().flat_map(move |range: &'a Range| {
                let list = if kernels {
                    &range.kernels
                } else {
                    &range.categories
                };
                listed(range.name.as_str(), list)
            })
        })
    })
}

/// One row per range and kernel category of each file; shares are of the range's GPU time.
pub fn range_category(document: &Document, run_id: &str) -> Table {
    let rows = range_rows(document, false);
    list_table(("range_category", "range"), run_id, &rows, false)
}

/// The top kernels of each range of each file.
pub fn range_kernels(document: &Document, run_id: &str) -> Table {
    let rows = range_rows(document, true);
    list_table(("range_kernels", "range"), run_id, &rows, true)
}
