//! rocprofv3's SQLite database ("rocpd", `<host>/<pid>_results.db`), its default output since
//! ROCm 7 (`--output-format rocpd`; CSV and Perfetto files come from it through
//! `rocpd convert`).
//!
//! The reference is rocprofiler-sdk's own schema (`share/rocprofiler-sdk-rocpd/`: table
//! definitions of versions 3.0.0–3.0.5 and 4.1.0) and the tool that writes it
//! (`generateRocpd.cpp`). What is read, and how:
//! - **Table names.** Every table is named `<name>_<uuid>` (the run's UUID, `-` as `_`),
//!   with a view `<name>` over it. Tables are found by that suffix (a database merged from
//!   several runs has one set per UUID, each read as one run); a database without suffixed
//!   tables is read through the plain names.
//! - **Layouts.** In 3.0.x, regions, dispatches and copies carry `pid`, `tid`, `agent_id`,
//!   `queue_id`, `stream_id` themselves and `rocpd_event.category_id` points into
//!   `rocpd_string`; in 4.1.0 they point at a `rocpd_track` row holding those, and categories
//!   are `rocpd_info_category` rows. Each table's columns decide which it is.
//! - **Records.** `rocpd_region` rows are host calls, their kind the event's category:
//!   `HIP_*` (HIP runtime and compiler API) and `HSA_*` calls become runtime calls named by
//!   `name_id`; `*MARKER*` ranges (ROCTx) become host annotations named by the message in
//!   the event's `extdata` (`{"message": …}`), where steps are found. `rocpd_kernel_dispatch`
//!   rows are kernels named by `rocpd_info_kernel_symbol.display_name` (else `kernel_name`)
//!   through `kernel_id`, on the GPU of `rocpd_info_agent` (`type_index`), on their HIP
//!   stream (`stream_id`; the hardware queue when no stream was recorded); from 3.0.2 their
//!   `graph_exec_id` is the graph they replayed. `rocpd_memory_copy` rows are copies;
//!   `rocpd_memory_allocate` rows are counted. Times are ns.
//! - **Links.** A call and the GPU work it launched share the internal correlation id,
//!   which rocprofv3 writes to `rocpd_event.stack_id` (`rocpd convert` prints it as
//!   `Correlation_Id`); `rocpd_event.correlation_id` holds the external id (0 unless an
//!   application pushed one). The internal id is used, the external one where a writer left
//!   `stack_id` empty. Ids are scoped by process.
//!
//! A database with kernel dispatches but no HIP API regions was recorded without HIP API
//! tracing: its replays cannot be seen, and the trace says so (with the rocprofv3 flags
//! that record them). Bad rows are damage as in every reader: a time that is not a number
//! or ends before it starts, a name or kernel id that points at nothing.

mod columns;
mod rows;

use crate::IngestError;
use crate::sqlite::{Database, is_rocpd, names_table};
use stepscope_model::{Severity, TraceBuilder};

/// Why replays cannot be judged in a database without HIP API regions.
pub(crate) const NO_HIP_REGIONS: &str = "the rocpd database holds kernel dispatches but no HIP API calls (rocprofv3 ran without HIP API tracing), so no dispatch can be linked to the hipGraphLaunch that replayed it; record with rocprofv3 --runtime-trace (or --hip-runtime-trace --kernel-trace --memory-copy-trace, or --sys-trace)";

/// The logical tables read, longest name first (so a prefix never takes a longer name's
/// tables).
const TABLES: [&str; 10] = [
    "rocpd_info_kernel_symbol",
    "rocpd_kernel_dispatch",
    "rocpd_memory_allocate",
    "rocpd_info_category",
    "rocpd_memory_copy",
    "rocpd_info_agent",
    "rocpd_string",
    "rocpd_region",
    "rocpd_track",
    "rocpd_event",
];

/// The logical table `table` is: its name, or its name less a UUID suffix.
fn logical(table: &str) -> Option<&'static str> {
    TABLES.into_iter().find(|name| names_table(table, name))
}

/// The tables of one run: each logical table's name in the database.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    names: Vec<(&'static str, String)>,
}

impl Tables {
    /// The database's name for `logical`, if it has that table.
    pub(crate) fn get(&self, logical: &str) -> Option<&str> {
        self.names
            .iter()
            .find(|(name, _)| *name == logical)
            .map(|(_, table)| table.as_str())
    }
}

/// The runs of a database: one per UUID suffix, or the plain names when no table has one.
fn runs(tables: &[String]) -> Vec<Tables> {
    let mut by_suffix: Vec<(String, Tables)> = Vec::new();
    let mut plain = Tables::default();
    for table in tables {
        let Some(name) = logical(table) else { continue };
        let suffix = &table[name.len()..];
        if suffix.is_empty() {
            plain.names.push((name, table.clone()));
            continue;
        }
        match by_suffix
            .iter_mut()
            .find(|(s, _)| s.eq_ignore_ascii_case(suffix))
        {
            Some((_, run)) => run.names.push((name, table.clone())),
            None => {
                let run = Tables {
                    names: vec![(name, table.clone())],
                };
                by_suffix.push((suffix.to_owned(), run));
            }
        }
    }
    by_suffix.sort_by(|a, b| a.0.cmp(&b.0));
    if by_suffix.is_empty() {
        vec![plain]
    } else {
        by_suffix.into_iter().map(|(_, run)| run).collect()
    }
}

/// Reads a rocpd database into `builder`.
pub fn read(db: &Database, builder: &mut TraceBuilder) -> Result<(), IngestError> {
    let tables = db.tables()?;
    if !is_rocpd(&tables) {
        return Err(IngestError::Sqlite {
            path: db.label.clone(),
            place: "its tables".to_owned(),
            message:
                "no rocpd_kernel_dispatch or rocpd_region table (with or without a UUID suffix)"
                    .to_owned(),
            hint: "is it a rocprofv3 database (rocprofv3 --output-format rocpd, <host>/<pid>_results.db)? the automatic format (`--format auto`; in Python `format=None`) tells the SQLite formats apart by their tables",
        });
    }
    let mut totals = rows::Totals::default();
    for run in runs(&tables) {
        let run_totals = rows::read_run(db, &run, builder)?;
        totals.add(&run_totals);
    }
    finish(&totals, builder);
    Ok(())
}

/// What the whole database says: skipped rows, allocations, and no HIP calls at all.
fn finish(totals: &rows::Totals, builder: &mut TraceBuilder) {
    let stats = builder.stats_mut();
    stats.add(
        "rocpd_rows_skipped",
        Severity::DataLoss,
        "Rows of a rocpd table with a time that is not a number, an end before its start, or a name or kernel id that points at nothing were skipped (refused as damage)",
        totals.skipped,
    );
    stats.add(
        "rocpd_memory_allocations",
        Severity::Info,
        "rocpd memory allocation records (allocations, frees, scratch) were counted; they are no GPU work",
        totals.allocations,
    );
    stats.add(
        "rocpd_other_regions",
        Severity::Info,
        "rocpd regions of other categories (RCCL, rocDecode, ROCTx marks without a message) were read as host calls or passed over",
        totals.other_regions,
    );
    let metadata = builder.metadata_mut();
    if let Some(reason) = missing_link(totals) {
        metadata.linkage_unavailable = Some(reason);
    }
    if metadata.device_names.is_empty() {
        metadata.device_names.push("AMD GPU (rocpd)".to_owned());
    }
}

/// Why no dispatch can be linked to its launch, when none can: a link table missing or
/// emptied is damage to the file, named as such (no runtime switch fixes it), and told apart
/// from a recording without HIP API tracing.
fn missing_link(totals: &rows::Totals) -> Option<String> {
    if totals.dispatches == 0 {
        return None;
    }
    if totals.hip_calls == 0 && totals.unnamed_regions > 0 {
        return Some(format!(
            "the rocpd database's {} API calls have no names (its rocpd_string table is missing or lost the rows they point at), so no hipGraphLaunch can be found and no dispatch linked to one; this is damage to the file, not a recording setting or the runtime's symptom: analyse the database rocprofv3 wrote, whole",
            totals.unnamed_regions
        ));
    }
    if totals.hip_calls == 0 {
        return Some(NO_HIP_REGIONS.to_owned());
    }
    if totals.linked_dispatches == 0 {
        return Some(format!(
            "none of the rocpd database's {} kernel dispatches carries the id of the HIP call that launched it (its rocpd_event table is missing, or every stack_id is NULL), so no graph replay can be checked; this is damage to the file, not the runtime's symptom, and no runtime switch fixes it: analyse the database rocprofv3 wrote, whole",
            totals.dispatches
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_found_with_and_without_their_uuid() {
        let uuid = "0199a2b4_6c1e_7f3a_9d2b_5e8c4f1a7b30";
        let names: Vec<String> = [
            format!("rocpd_event_{uuid}"),
            format!("rocpd_event_operation_{uuid}"),
            format!("rocpd_kernel_dispatch_{uuid}"),
            "rocpd_kernel_dispatch".to_owned(),
            "rocpd_events_of_mine".to_owned(),
        ]
        .into();
        assert_eq!(logical(&names[0]), Some("rocpd_event"));
        assert_eq!(
            logical(&names[1]),
            None,
            "a longer table is not rocpd_event"
        );
        assert_eq!(logical(&names[4]), None);
        let runs = runs(&names);
        assert_eq!(runs.len(), 1);
        assert_eq!(
            runs[0].get("rocpd_kernel_dispatch"),
            Some(format!("rocpd_kernel_dispatch_{uuid}").as_str())
        );
        assert!(is_rocpd(&names));
        assert!(!is_rocpd(&["rocpd_api".to_owned(), "rocpd_op".to_owned()]));
    }
}
