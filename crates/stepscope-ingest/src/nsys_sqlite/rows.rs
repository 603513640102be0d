//! One handler per Nsight Systems table: the SQL that streams its rows, and how a row becomes
//! a model record.
//!
//! Columns came and went across export schemas (2.9 has no `greenContextId`, 3.25 has
//! `graphId`, 2.9 has a legacy `name` column that is always NULL): every column a reader can
//! do without is selected through [`Columns::get`], which writes `NULL` for an absent one.
//! `start`, `end` and `correlationId` are required: a table without them fails to prepare,
//! and the error names the table.

use crate::sqlite::{Database, span};
use rusqlite::Row;
use rusqlite::types::ValueRef;
use rustc_hash::FxHashMap;
use stepscope_model::{
    AnnotationRecord, CorrelationId, DamageKind, DamagedEvent, DamagedTable, GpuEventKind,
    GpuEventRecord, ProcessId, RuntimeCallKind, RuntimeCallRecord, StreamId, ThreadId,
    TraceBuilder,
};

/// The runtime (and driver) API call table.
pub(super) const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
/// NVTX ranges, marks and metadata events.
pub(super) const NVTX: &str = "NVTX_EVENTS";
/// `eventClass` of a runtime row that copies a call to keep its call stack ("CUDA
/// backtrace" in `ENUM_NSYS_EVENT_CLASS`): same thread and correlation id as the call,
/// a slightly wider span and the name without its `_vNNNN` suffix.
const BACKTRACE_CLASS: i64 = 67;

/// What the readers keep across tables.
#[derive(Debug, Default)]
pub(super) struct ReadState {
    /// The model's process of each pid seen.
    pub processes: FxHashMap<i64, ProcessId>,
    /// Runtime rows skipped as backtrace copies.
    pub backtrace_rows: u64,
    /// NVTX ranges with neither `text` nor a `textId` that resolves.
    pub unnamed_ranges: u64,
}

impl ReadState {
    fn process(&mut self, builder: &mut TraceBuilder, pid: i64) -> ProcessId {
        *self
            .processes
            .entry(pid)
            .or_insert_with(|| builder.process_number(pid))
    }
}

/// The pid in a serialized global id (`globalTid`, `globalPid`): bits 24 to 47 (bits 48 and
/// up name the host, bits 0 to 23 the thread).
pub(super) fn pid_of(global: i64) -> i64 {
    (global >> 24) & 0xFF_FFFF
}

/// The tid in a serialized `globalTid`: bits 0 to 23.
fn tid_of(global: i64) -> i64 {
    global & 0xFF_FFFF
}

/// The model's correlation id of a row: CUPTI counts correlation ids per process, so the pid
/// (24 bits) goes into the top bits and the row's id (32 bits in CUPTI) into the low 40.
/// Two processes' kernels and calls with equal ids then never link. 0 (or less) is none.
fn correlation(pid: i64, id: i64) -> CorrelationId {
    let Ok(id) = u64::try_from(id) else {
        return CorrelationId::NONE;
    };
    if id == 0 {
        return CorrelationId::NONE;
    }
    let pid = u64::try_from(pid & 0xFF_FFFF).unwrap_or(0);
    CorrelationId((pid << 40) | (id & ((1 << 40) - 1)))
}

/// The columns of one table, to select optional ones by name.
#[derive(Debug)]
pub(super) struct Columns(Vec<String>);

impl Columns {
    /// The columns `table` has (none when its schema cannot be read).
    pub fn of(db: &Database, table: &str) -> Self {
        Columns(db.columns(table))
    }

    /// `alias.column` (quoted) when the table has the column, else `NULL`.
    pub fn get(&self, alias: &str, column: &str) -> String {
        let lower = column.to_ascii_lowercase();
        if self.0.contains(&lower) {
            format!("{alias}.\"{column}\"")
        } else {
            "NULL".to_owned()
        }
    }

    /// Whether the table has `column`.
    pub fn has(&self, column: &str) -> bool {
        self.0.contains(&column.to_ascii_lowercase())
    }
}

fn integer(row: &Row<'_>, column: usize) -> Option<i64> {
    match row.get_ref(column).ok()? {
        ValueRef::Integer(value) => Some(value),
        _ => None,
    }
}

fn text<'r>(row: &'r Row<'_>, column: usize) -> Option<&'r str> {
    match row.get_ref(column).ok()? {
        ValueRef::Text(bytes) => std::str::from_utf8(bytes).ok(),
        _ => None,
    }
}

/// A row refused for its time, as damage with its correlation id and name, so analysis ties
/// it to its replay (as every reader does).
fn refuse(
    builder: &mut TraceBuilder,
    (kind, table): (DamageKind, DamagedTable),
    correlation: CorrelationId,
    name: &str,
) -> Option<()> {
    let name = Some(builder.intern(name));
    builder.add_damaged(DamagedEvent {
        kind,
        table,
        correlation,
        name,
    });
    None
}

/// The tables of GPU work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GpuTable {
    /// `CUPTI_ACTIVITY_KIND_KERNEL`.
    Kernel,
    /// `CUPTI_ACTIVITY_KIND_MEMCPY`.
    Memcpy,
    /// `CUPTI_ACTIVITY_KIND_MEMSET`.
    Memset,
}

impl GpuTable {
    /// Every GPU table, in reading order.
    pub const ALL: [GpuTable; 3] = [GpuTable::Kernel, GpuTable::Memcpy, GpuTable::Memset];

    /// The table's name.
    pub fn name(self) -> &'static str {
        match self {
            GpuTable::Kernel => "CUPTI_ACTIVITY_KIND_KERNEL",
            GpuTable::Memcpy => "CUPTI_ACTIVITY_KIND_MEMCPY",
            GpuTable::Memset => "CUPTI_ACTIVITY_KIND_MEMSET",
        }
    }

    fn kind(self) -> GpuEventKind {
        match self {
            GpuTable::Kernel => GpuEventKind::Kernel,
            GpuTable::Memcpy => GpuEventKind::Memcpy,
            GpuTable::Memset => GpuEventKind::Memset,
        }
    }

    /// The query: start, end, device, stream, correlation id, global pid, graph id, graph
    /// node id, then the kernel name (demangled, else short) or the copy kind.
    pub fn sql(self, columns: &Columns) -> String {
        let column = |name: &str| columns.get("g", name);
        let (detail, joins) = match self {
            GpuTable::Kernel => (
                "COALESCE(d.value, s.value)".to_owned(),
                format!(
                    " LEFT JOIN StringIds d ON d.id = {} LEFT JOIN StringIds s ON s.id = {}",
                    column("demangledName"),
                    column("shortName")
                ),
            ),
            GpuTable::Memcpy => (column("copyKind"), String::new()),
            GpuTable::Memset => ("NULL".to_owned(), String::new()),
        };
        format!(
            "SELECT g.start, g.\"end\", {}, {}, g.correlationId, {}, {}, {}, {detail} FROM {} g{joins}",
            column("deviceId"),
            column("streamId"),
            column("globalPid"),
            column("graphId"),
            column("graphNodeId"),
            self.name(),
        )
    }
}

/// A copy kind (`CUpti_ActivityMemcpyKind`, as `ENUM_CUDA_MEMCPY_OPER` lists it) named as
/// the PyTorch profiler names copies.
pub(super) fn copy_name(kind: Option<i64>) -> &'static str {
    match kind {
        Some(1) => "Memcpy HtoD",
        Some(2) => "Memcpy DtoH",
        Some(3) => "Memcpy HtoA",
        Some(4) => "Memcpy AtoH",
        Some(5) => "Memcpy AtoA",
        Some(6) => "Memcpy AtoD",
        Some(7) => "Memcpy DtoA",
        Some(8) => "Memcpy DtoD",
        Some(9) => "Memcpy HtoH",
        Some(10) => "Memcpy PtoP",
        Some(11) => "Memcpy HtoD (Unified)",
        Some(12) => "Memcpy DtoH (Unified)",
        Some(13) => "Memcpy DtoD (Unified)",
        _ => "Memcpy",
    }
}

/// Adds one row of a GPU table.
pub(super) fn add_gpu_event(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    table: GpuTable,
    state: &mut ReadState,
) -> Option<()> {
    let device = integer(row, 2).and_then(|d| u32::try_from(d).ok());
    let stream = integer(row, 3).and_then(|s| u32::try_from(s).ok());
    let pid = integer(row, 5).map_or(0, pid_of);
    let correlation = correlation(pid, integer(row, 4).unwrap_or(0));
    // Newer schemas write the graph id; CUPTI also packs it into the top 32 bits of the
    // node id. 0 (or NULL): not launched by a graph.
    let graph_id = integer(row, 6)
        .filter(|id| *id > 0)
        .or_else(|| integer(row, 7).map(|node| node >> 32))
        .and_then(|id| u64::try_from(id).ok())
        .filter(|id| *id > 0);
    let name = match table {
        GpuTable::Kernel => text(row, 8).unwrap_or("unnamed kernel"),
        GpuTable::Memcpy => copy_name(integer(row, 8)),
        GpuTable::Memset => "Memset (Device)",
    };
    let (start, duration) = match span(row, 0) {
        Ok(span) => span,
        Err(kind) => return refuse(builder, (kind, DamagedTable::Gpu), correlation, name),
    };
    let event = GpuEventRecord {
        kind: table.kind(),
        name: builder.intern(name),
        process: state.process(builder, pid),
        device: device.unwrap_or(0),
        stream: StreamId(stream.unwrap_or(0)),
        start,
        duration,
        correlation,
        graph_id,
    };
    builder.add_gpu_event(event);
    Some(())
}

/// The runtime query: start, end, global tid, correlation id, name, event class, name id.
pub(super) fn runtime_sql(columns: &Columns) -> String {
    // Schema 2.9 kept a `name` column beside `nameId`, always NULL in the files seen.
    let name = if columns.has("name") {
        "COALESCE(s.value, r.name)"
    } else {
        "s.value"
    };
    format!(
        "SELECT r.start, r.\"end\", {}, r.correlationId, {name}, {}, {} FROM {RUNTIME} r LEFT JOIN StringIds s ON s.id = {}",
        columns.get("r", "globalTid"),
        columns.get("r", "eventClass"),
        columns.get("r", "nameId"),
        columns.get("r", "nameId"),
    )
}

/// Adds one runtime row, or skips a backtrace copy of a call.
pub(super) fn add_runtime_call(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    state: &mut ReadState,
) -> Option<()> {
    if integer(row, 5) == Some(BACKTRACE_CLASS) {
        state.backtrace_rows += 1;
        return Some(());
    }
    let global = integer(row, 2).unwrap_or(0);
    let pid = pid_of(global);
    let correlation = correlation(pid, integer(row, 3).unwrap_or(0));
    let name = match text(row, 4) {
        Some(name) => name,
        // A name id that `StringIds` does not hold: a damaged export, and the call may have
        // been a graph launch (analysis counts it so when GPU work is linked to it).
        None if integer(row, 6).is_some() => {
            builder.add_damaged(DamagedEvent {
                kind: DamageKind::DanglingReference,
                table: DamagedTable::Runtime,
                correlation,
                name: None,
            });
            return None;
        }
        None => "",
    };
    let (start, duration) = match span(row, 0) {
        Ok(span) => span,
        Err(kind) => return refuse(builder, (kind, DamagedTable::Runtime), correlation, name),
    };
    let call = RuntimeCallRecord {
        kind: RuntimeCallKind::classify(name),
        name: builder.intern(name),
        process: state.process(builder, pid),
        thread: ThreadId::Number(tid_of(global)),
        start,
        duration,
        correlation,
        launched_kernel: None,
    };
    builder.add_runtime_call(call);
    Some(())
}

/// The NVTX query: the ranges (rows with an end; marks and domain or thread names have
/// none), with start, end, global tid and name (inline `text`, else registered `textId`).
pub(super) fn nvtx_sql(columns: &Columns) -> String {
    format!(
        "SELECT n.start, n.\"end\", COALESCE({}, {}), COALESCE({}, s.value) FROM {NVTX} n LEFT JOIN StringIds s ON s.id = {} WHERE n.\"end\" IS NOT NULL",
        columns.get("n", "globalTid"),
        columns.get("n", "endGlobalTid"),
        columns.get("n", "text"),
        columns.get("n", "textId"),
    )
}

/// Adds one NVTX range as a host annotation on its thread, where step detection looks.
pub(super) fn add_range(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    state: &mut ReadState,
) -> Option<()> {
    let (start, duration) = span(row, 0).ok()?;
    let global = integer(row, 2).unwrap_or(0);
    let Some(name) = text(row, 3) else {
        state.unnamed_ranges += 1;
        return Some(());
    };
    let span = AnnotationRecord {
        name: builder.intern(name),
        process: state.process(builder, pid_of(global)),
        thread: ThreadId::Number(tid_of(global)),
        start,
        duration,
    };
    builder.add_annotation(span);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_ids_split_into_pid_and_tid() {
        // h100 sample: globalTid 281476838981743 is pid 111, tid 111 (bit 48 set).
        assert_eq!(pid_of(281_476_838_981_743), 111);
        assert_eq!(tid_of(281_476_838_981_743), 111);
        // Its kernels' globalPid: the same with the low 24 bits cleared.
        assert_eq!(pid_of(281_476_838_981_632), 111);
    }

    #[test]
    fn correlation_ids_are_scoped_by_process() {
        assert_ne!(correlation(111, 1_452_809), correlation(112, 1_452_809));
        assert_eq!(correlation(111, 1_452_809), correlation(111, 1_452_809));
        assert_eq!(correlation(111, 0), CorrelationId::NONE);
        assert_eq!(correlation(111, -5), CorrelationId::NONE);
        assert!(correlation(0, 7).is_some());
        assert!(correlation(0xFF_FFFF, u32::MAX.into()).is_some());
    }

    #[test]
    fn copy_kinds_as_the_pytorch_profiler_names_them() {
        assert_eq!(copy_name(Some(1)), "Memcpy HtoD");
        assert_eq!(copy_name(Some(2)), "Memcpy DtoH");
        assert_eq!(copy_name(Some(8)), "Memcpy DtoD");
        assert_eq!(copy_name(Some(10)), "Memcpy PtoP");
        assert_eq!(copy_name(None), "Memcpy");
        assert_eq!(copy_name(Some(99)), "Memcpy");
    }
}
