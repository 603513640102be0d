//! rocmProfileData (RPD) SQLite databases, `.rpd` (also gzip/zstd-compressed).
//!
//! The tracer writes HIP API calls to `rocpd_api` (pid, tid, `start`/`end` in ns, the name in
//! the string table `rocpd_string` through `apiName_id`), GPU operations to `rocpd_op`
//! (`gpuId`, `queueId`, times, the kernel name through `description_id`, the kind through
//! `opType_id`: `KernelExecution`, `CopyHostToDevice`…, `FillBuffer`), and which call launched
//! which operations to `rocpd_api_ops` (`api_id`, `op_id`). A `hipGraphLaunch` call is linked
//! there to every operation of its replay, so the call's id serves as the correlation id:
//! each operation carries the id of the call it is linked to (none: an orphan).
//! Operations are GPU work on no host process: they are filed under the process of the
//! calls (RPD traces one process) so links stay within it.
//!
//! Bad data is damage, as in every reader: a call or operation whose time is not a number or
//! ends before it starts, or whose name or type id points at no row of `rocpd_string` (a
//! damaged or cut string table), is refused with its correlation id (the call's id, or the
//! id of the call an operation is linked to), so analysis ties it to its replay; it is never
//! read as an operation of another kind or a call with no name.

use crate::IngestError;
use crate::sqlite::Database;
use rusqlite::Row;
use rustc_hash::FxHashMap;
use stepscope_model::{
    CorrelationId, DamageKind, DamagedEvent, DamagedTable, Duration, GpuEventKind, GpuEventRecord,
    NameId, ProcessId, RuntimeCallKind, RuntimeCallRecord, Severity, StreamId, ThreadId, Timestamp,
    TraceBuilder,
};

// Names are read as string ids and looked up once each (`Strings`): a join per row with the
// string table cost a third of the time.
const API_SQL: &str = "SELECT a.id, a.pid, a.tid, a.start, a.end, a.apiName_id FROM rocpd_api a";

// `rocpd_api_ops` has no index on `op_id`: SQLite builds a transient one for the join.
const OP_SQL: &str =
    "SELECT o.gpuId, o.queueId, o.start, o.end, o.description_id, o.opType_id, ao.api_id
    FROM rocpd_op o
    LEFT JOIN rocpd_api_ops ao ON ao.op_id = o.id";

/// An operation's kind and name (`Ok(None)`: not a kernel, copy or fill; `Err`: an id
/// dangles).
type OpName = Result<Option<(GpuEventKind, NameId)>, ()>;

/// Names and kinds by string id, each looked up in `rocpd_string` once.
struct Names<'d> {
    db: &'d Database,
    calls: FxHashMap<i64, Option<(NameId, RuntimeCallKind)>>,
    ops: FxHashMap<(i64, i64), OpName>,
}

impl<'d> Names<'d> {
    fn new(db: &'d Database) -> Self {
        Names {
            db,
            calls: FxHashMap::default(),
            ops: FxHashMap::default(),
        }
    }

    /// The string of `id`; `None` when `rocpd_string` has no such row (or no text there).
    fn string(&self, id: i64) -> Option<String> {
        self.db
            .conn
            .query_row(
                "SELECT string FROM rocpd_string WHERE id = ?1",
                [id],
                |row| row.get::<_, Option<String>>(0),
            )
            .ok()
            .flatten()
    }

    /// A call's name and kind from its `apiName_id`; `None` when the id dangles.
    fn call(&mut self, id: i64, builder: &mut TraceBuilder) -> Option<(NameId, RuntimeCallKind)> {
        if let Some(known) = self.calls.get(&id) {
            return *known;
        }
        let known = self
            .string(id)
            .map(|name| (builder.intern(&name), RuntimeCallKind::classify(&name)));
        self.calls.insert(id, known);
        known
    }

    /// An operation's kind and name from its `description_id` and `opType_id` (`Ok(None)`:
    /// not a kernel, copy or fill; `Err`: an id dangles).
    fn op(&mut self, ids: (i64, i64), builder: &mut TraceBuilder) -> OpName {
        if let Some(known) = self.ops.get(&ids) {
            return *known;
        }
        let known = match (self.string(ids.1), self.string(ids.0)) {
            (Some(op_type), Some(description)) => Ok(
                op_kind(&op_type, description).map(|(kind, name)| (kind, builder.intern(&name)))
            ),
            _ => Err(()),
        };
        self.ops.insert(ids, known);
        known
    }
}

/// Reads an RPD database into `builder`.
pub fn read(db: &Database, builder: &mut TraceBuilder) -> Result<(), IngestError> {
    for table in ["rocpd_api", "rocpd_op", "rocpd_api_ops", "rocpd_string"] {
        if !db.has_table(table) {
            return Err(IngestError::Sqlite {
                path: db.label.clone(),
                place: format!("table {table}"),
                message: "the table is missing".to_owned(),
                hint: "an RPD file holds rocpd_api, rocpd_op, rocpd_api_ops and rocpd_string; is it complete (rpdTracer writes them when the traced process exits)?",
            });
        }
    }
    let mut process = None;
    let mut names = Names::new(db);
    let skipped_calls = db.for_each_row(("rocpd_api", API_SQL), builder, |row, b| {
        add_call(row, b, &mut process, &mut names)
    })?;
    // Every operation under the calls' process (the first one; RPD traces one).
    let process = process.unwrap_or_else(|| builder.process_label("rpd"));
    let mut other_ops = 0_u64;
    let skipped_ops = db.for_each_row(("rocpd_op", OP_SQL), builder, |row, b| {
        add_op(row, (b, &mut names), process, &mut other_ops)
    })?;
    let stats = builder.stats_mut();
    stats.add(
        "rpd_rows_skipped",
        Severity::DataLoss,
        "Rows of an RPD table with a time that is not a number, an end before its start or a name id missing from rocpd_string were skipped (refused as damage)",
        skipped_calls + skipped_ops,
    );
    stats.add(
        "rpd_other_ops",
        Severity::Info,
        "RPD operations that are neither kernels, copies nor fills (barriers, markers) were not read",
        other_ops,
    );
    let metadata = builder.metadata_mut();
    if metadata.device_names.is_empty() {
        metadata.device_names.push("AMD GPU (RPD)".to_owned());
    }
    Ok(())
}

/// Start and duration of a row's `start`/`end` columns (ns); the damage when not numbers
/// (or a start before 0) or reversed.
fn span(row: &Row<'_>, start: usize) -> Result<(Timestamp, Duration), DamageKind> {
    let invalid = DamageKind::InvalidTime;
    let begin: i64 = row.get(start).map_err(|_| invalid)?;
    let end: i64 = row.get(start + 1).map_err(|_| invalid)?;
    if begin < 0 {
        return Err(invalid);
    }
    if end < begin {
        return Err(DamageKind::NegativeDuration);
    }
    Ok((
        Timestamp::from_nanos(begin),
        Duration::from_nanos(end - begin),
    ))
}

/// Records a refused row as damage of `table`, linked to correlation `id`, with its name
/// when it has one.
fn refuse(
    builder: &mut TraceBuilder,
    (kind, table): (DamageKind, DamagedTable),
    id: Option<i64>,
    name: Option<NameId>,
) {
    let correlation = CorrelationId(id.and_then(|id| u64::try_from(id).ok()).unwrap_or(0));
    builder.add_damaged(DamagedEvent {
        kind,
        table,
        correlation,
        name,
    });
}

fn add_call(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    first: &mut Option<ProcessId>,
    names: &mut Names<'_>,
) -> Option<()> {
    let id: i64 = row.get(0).ok()?;
    let pid: i64 = row.get(1).unwrap_or(0);
    let tid: i64 = row.get(2).unwrap_or(0);
    let named = names.call(row.get(5).unwrap_or(0), builder);
    let refused = |kind, builder: &mut TraceBuilder| {
        let name = named.map(|(name, _)| name);
        refuse(builder, (kind, DamagedTable::Runtime), Some(id), name);
        None
    };
    let (start, duration) = match span(row, 3) {
        Ok(span) => span,
        Err(kind) => return refused(kind, builder),
    };
    let Some((name, kind)) = named else {
        return refused(DamageKind::DanglingReference, builder);
    };
    let process = builder.process_number(pid);
    first.get_or_insert(process);
    let call = RuntimeCallRecord {
        kind,
        name,
        process,
        thread: ThreadId::Number(tid),
        start,
        duration,
        correlation: CorrelationId(u64::try_from(id).unwrap_or(0)),
        launched_kernel: None,
    };
    builder.add_runtime_call(call);
    Some(())
}

fn add_op(
    row: &Row<'_>,
    (builder, names): (&mut TraceBuilder, &mut Names<'_>),
    process: ProcessId,
    other_ops: &mut u64,
) -> Option<()> {
    let gpu: i64 = row.get(0).unwrap_or(0);
    let queue: i64 = row.get(1).unwrap_or(0);
    let api: Option<i64> = row.get(6).ok().flatten();
    let (start, duration) = match span(row, 2) {
        Ok(span) => span,
        Err(kind) => {
            refuse(builder, (kind, DamagedTable::Gpu), api, None);
            return None;
        }
    };
    let ids = (row.get(4).unwrap_or(0), row.get(5).unwrap_or(0));
    let (kind, name) = match names.op(ids, builder) {
        Ok(Some(known)) => known,
        Ok(None) => {
            *other_ops += 1;
            return Some(());
        }
        Err(()) => {
            let damage = (DamageKind::DanglingReference, DamagedTable::Gpu);
            refuse(builder, damage, api, None);
            return None;
        }
    };
    let event = GpuEventRecord {
        kind,
        name,
        process,
        device: u32::try_from(gpu).unwrap_or(0),
        stream: StreamId(u32::try_from(queue).unwrap_or(0)),
        start,
        duration,
        correlation: CorrelationId(api.and_then(|id| u64::try_from(id).ok()).unwrap_or(0)),
        graph_id: None,
    };
    builder.add_gpu_event(event);
    Some(())
}

/// The model's kind and name of an operation type: kernels by their description, copies and
/// fills named as the PyTorch profiler names them.
pub(crate) fn op_kind(op_type: &str, description: String) -> Option<(GpuEventKind, String)> {
    let copy = |direction: &str| Some((GpuEventKind::Memcpy, format!("Memcpy {direction}")));
    match op_type {
        "KernelExecution" => Some((GpuEventKind::Kernel, description)),
        "CopyHostToDevice" => copy("HtoD"),
        "CopyDeviceToHost" => copy("DtoH"),
        "CopyDeviceToDevice" => copy("DtoD"),
        "CopyHostToHost" => copy("HtoH"),
        "FillBuffer" => Some((GpuEventKind::Memset, "Memset (Device)".to_owned())),
        other if other.starts_with("Copy") => copy(other.trim_start_matches("Copy")),
        _ => None,
    }
}
