//! Nsight Systems SQLite exports (`nsys export --type sqlite`), export schemas 2.9 to 3.25.
//!
//! Tables read, each only when present (lazy exports leave out tables that had no rows):
//! - `CUPTI_ACTIVITY_KIND_RUNTIME`: CUDA runtime and driver calls (`start`/`end` in ns,
//!   `globalTid`, `correlationId`, the name through `nameId` → `StringIds`, with `_vNNNN`
//!   suffixes such as `cudaLaunchKernel_v7000`). Rows of `eventClass` 67 ("CUDA backtrace")
//!   are copies of a call kept for its call stack and are skipped (counted), so a kernel
//!   links to one call.
//! - `CUPTI_ACTIVITY_KIND_KERNEL` (name: `demangledName`, else `shortName`),
//!   `CUPTI_ACTIVITY_KIND_MEMCPY` (named from `copyKind`: `Memcpy HtoD`…) and
//!   `CUPTI_ACTIVITY_KIND_MEMSET` (`Memset (Device)`), with `deviceId`, `streamId` and
//!   `globalPid`.
//! - `NVTX_EVENTS` ranges (rows with an `end`) as host annotations on their thread, where
//!   step annotations live in an Nsight trace; the name is `text`, else `textId`.
//! - `TARGET_INFO_GPU` for device names, `PROCESSES` for process names.
//!
//! Global ids hold the pid in bits 24 to 47 and the tid in bits 0 to 23. CUPTI counts
//! correlation ids per process, so the model's id joins pid and id: a kernel never links to
//! another process's call (in a real two-process file, 11 kernels share their id with a call
//! of the other process).
//!
//! A file recorded with `--cuda-graph-trace=graph` cannot show replays' kernels: see
//! `graph_mode`.

mod graph_mode;
mod rows;

use crate::IngestError;
use crate::sqlite::Database;
use rows::{Columns, GpuTable, NVTX, RUNTIME, ReadState};
use stepscope_model::{Severity, TraceBuilder};

/// The device name when the file lists none: the format itself says the platform (Nsight
/// Systems traces CUDA only).
const UNNAMED_DEVICE: &str = "NVIDIA GPU (Nsight Systems)";

/// Reads an Nsight Systems export into `builder`.
pub fn read(db: &Database, builder: &mut TraceBuilder) -> Result<(), IngestError> {
    check_tables(db)?;
    let mut state = ReadState::default();
    let mut skipped = 0;
    if db.has_table(RUNTIME) {
        let sql = rows::runtime_sql(&Columns::of(db, RUNTIME));
        skipped += db.for_each_row((RUNTIME, &sql), builder, |row, b| {
            rows::add_runtime_call(row, b, &mut state)
        })?;
    }
    for table in GpuTable::ALL {
        if db.has_table(table.name()) {
            let sql = table.sql(&Columns::of(db, table.name()));
            skipped += db.for_each_row((table.name(), &sql), builder, |row, b| {
                rows::add_gpu_event(row, b, table, &mut state)
            })?;
        }
    }
    if db.has_table(NVTX) {
        let sql = rows::nvtx_sql(&Columns::of(db, NVTX));
        skipped += db.for_each_row((NVTX, &sql), builder, |row, b| {
            rows::add_range(row, b, &mut state)
        })?;
    }
    name_processes(db, builder, &state);
    name_devices(db, builder);
    graph_mode::check(db, builder);
    add_stats(builder, &state, skipped);
    Ok(())
}

/// A missing table every export of a CUDA trace has is an error naming it; so is a schema
/// that cannot be read (a cut file).
fn check_tables(db: &Database) -> Result<(), IngestError> {
    let tables = db.tables()?;
    let has = |name: &str| tables.iter().any(|t| t.eq_ignore_ascii_case(name));
    let missing = |table: &str, hint: &'static str| IngestError::Sqlite {
        path: db.label.clone(),
        place: format!("table {table}"),
        message: "the table is missing".to_owned(),
        hint,
    };
    if !has("StringIds") {
        return Err(missing(
            "StringIds",
            "an Nsight Systems export holds its names in StringIds; export the report with `nsys export --type sqlite REPORT.nsys-rep`",
        ));
    }
    if !has(RUNTIME) && !has(GpuTable::Kernel.name()) {
        return Err(missing(
            GpuTable::Kernel.name(),
            "the export has neither CUDA kernels nor CUDA API calls; record with `nsys profile --trace=cuda,nvtx --cuda-graph-trace=node`",
        ));
    }
    Ok(())
}

/// Process names from `PROCESSES`, for the processes events were read for.
fn name_processes(db: &Database, builder: &mut TraceBuilder, state: &ReadState) {
    if !db.has_table("PROCESSES") {
        return;
    }
    let Ok(mut statement) = db.conn.prepare("SELECT globalPid, name FROM PROCESSES") else {
        return;
    };
    let Ok(mut found) = statement.query([]) else {
        return;
    };
    while let Ok(Some(row)) = found.next() {
        let (Ok(Some(global)), Ok(Some(name))) = (
            row.get::<_, Option<i64>>(0),
            row.get::<_, Option<String>>(1),
        ) else {
            continue;
        };
        if let Some(&process) = state.processes.get(&rows::pid_of(global)) {
            builder.set_process_name(process, &name);
        }
    }
}

/// Device names from `TARGET_INFO_GPU` in CUDA device order, or one that says NVIDIA.
fn name_devices(db: &Database, builder: &mut TraceBuilder) {
    let mut names = Vec::new();
    if db.has_table("TARGET_INFO_GPU") {
        let columns = Columns::of(db, "TARGET_INFO_GPU");
        let sql = format!(
            "SELECT name FROM TARGET_INFO_GPU g ORDER BY {}, {}",
            columns.get("g", "cuDevice"),
            columns.get("g", "id")
        );
        if let Ok(mut statement) = db.conn.prepare(&sql) {
            if let Ok(found) = statement.query_map([], |row| row.get::<_, Option<String>>(0)) {
                names.extend(found.flatten().flatten());
            }
        }
    }
    let metadata = builder.metadata_mut();
    if names.is_empty() {
        names.push(UNNAMED_DEVICE.to_owned());
    }
    metadata.device_names = names;
}

fn add_stats(builder: &mut TraceBuilder, state: &ReadState, skipped: u64) {
    let stats = builder.stats_mut();
    stats.add(
        "nsys_rows_skipped",
        Severity::DataLoss,
        "Rows of an Nsight Systems table with a time that is not an integer or an end before its start were skipped",
        skipped,
    );
    stats.add(
        "nsys_backtrace_rows",
        Severity::Info,
        "Runtime rows of event class 67 (CUDA backtrace) copy a call to keep its call stack; they were skipped so that each call counts once",
        state.backtrace_rows,
    );
    stats.add(
        "nsys_unnamed_nvtx_ranges",
        Severity::DataLoss,
        "NVTX ranges without a name (no text, no registered string) were skipped",
        state.unnamed_ranges,
    );
}
