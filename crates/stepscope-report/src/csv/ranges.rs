//! The `--range` tables: one row per matching annotation name, and its categories and
//! kernels.

use super::{Records, opt, row_header, row_record, strings};
use crate::schema::Document;

/// `ranges.csv`: per file and matching annotation name, its instances and times.
pub(super) fn ranges(document: &Document) -> Records {
    let mut out = vec![strings(&[
        "file",
        "pattern",
        "range",
        "instances",
        "cpu_time_us",
        "gpu_mirror_time_us",
        "events",
        "gpu_time_us",
        "busy_time_us",
    ])];
    for file in &document.files {
        let Some(found) = &file.ranges else {
            continue;
        };
        for r in &found.ranges {
            out.push(vec![
                file.path.clone(),
                found.pattern.clone(),
                r.name.clone(),
                r.instances.to_string(),
                r.cpu_time_us.to_string(),
                opt(r.gpu_mirror_time_us),
                r.events.to_string(),
                r.gpu_time_us.to_string(),
                r.busy_time_us.to_string(),
            ]);
        }
    }
    out
}

/// `range_categories.csv` or `range_kernels.csv`: shares are of the range's GPU time.
pub(super) fn rows(document: &Document, kernels: bool) -> Records {
    let mut header = strings(&["file", "range"]);
    header.extend(strings(row_header(kernels)));
    let mut out = vec![header];
    for file in &document.files {
        let Some(found) = &file.ranges else {
            continue;
        };
        for range in &found.ranges {
            let list = if kernels {
                &range.kernels
            } else {
                &range.categories
            };
            for r in list {
                let lead = vec![file.path.clone(), range.name.clone()];
                out.push(row_record(lead, r, kernels));
            }
        }
    }
    out
}
