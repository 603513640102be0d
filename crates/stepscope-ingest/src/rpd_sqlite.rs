//! rocmProfileData (RPD) SQLite databases, `.rpd` (also gzip/zstd-compressed).
//!
//! The tracer writes HIP API calls to `rocpd_api` (pid, tid, `start`/`end` in ns, the name in
//! the string table `rocpd_string` through `apiName_id`), GPU operations to `rocpd_op`
//! (`gpuId`, `queueId`, times, the kernel name through `description_id`, the kind through
//! `opType_id`), and which call launched which operations to `rocpd_api_ops` (`api_id`,
//! `op_id`). A `hipGraphLaunch` call is linked there to every operation of its replay, so the
//! call's id serves as the correlation id: each operation carries the id of the call it is
//! linked to (none: an orphan). Operations are GPU work on no host process: they are filed
//! under the process of the calls (RPD traces one process) so links stay within it.
//!
//! Every operation type is read. Kernels are `KernelExecution` (eager launches) and `Task`
//! (the kernels of a graph replay: 386 of each replay's 418 ops, as reported for a real vLLM
//! trace); copies (`Copy…`) and fills (`Fill…`) are transfers; barrier and marker packets are
//! counted and are no work. A type this reader does not know is counted by name in the import statistics
//! (`unknown_categories`, `rpd opType NAME`) and read as a kernel when its description holds
//! a name. So the GPU time is the sum of `end - start` over the operations read as work.
//!
//! ROCTx ranges are `rocpd_api` rows named `UserMarker` whose `args` (in `rocpd_ustring` in
//! schema 3 files, else `rocpd_string`) hold the message; ranges pushed through rpdTracer's
//! own API (`rangePush(domain, name, args)`, any name that is no HIP, HSA, CUDA or collective
//! call, the tracer's writer ranges too) are named by the row's name. Both are host
//! annotations, where step markers (vLLM, SGLang, ATOM, `ProfilerStep#N`) are found.
//!
//! Bad data is damage, as in every reader: a call or operation whose time is not a number or
//! ends before it starts, or whose name or type id points at no row of `rocpd_string` (a
//! damaged or cut string table), is refused with its correlation id (the call's id, or the
//! id of the call an operation is linked to), so analysis ties it to its replay; it is never
//! read as an operation of another kind or a call with no name.

use crate::IngestError;
use crate::rpd_ops::op_kind;
use crate::sqlite::{Database, refuse, span};
use rusqlite::Row;
use rustc_hash::FxHashMap;
use stepscope_model::{
    AnnotationRecord, CorrelationId, DamageKind, DamagedTable, Duration, GpuEventKind,
    GpuEventRecord, NameId, ProcessId, RuntimeCallKind, RuntimeCallRecord, Severity, StreamId,
    ThreadId, Timestamp, TraceBuilder,
};

// Names are read as string ids and looked up once each (`Strings`): a join per row with the
// string table cost a third of the time.
const API_SQL: &str =
    "SELECT a.id, a.pid, a.tid, a.start, a.end, a.apiName_id, a.args_id FROM rocpd_api a";

/// The API name rpdTracer gives ROCTx ranges and marks; the message is the row's `args`.
const USER_MARKER: &str = "UserMarker";

// `rocpd_api_ops` has no index on `op_id`: SQLite builds a transient one for the join.
const OP_SQL: &str =
    "SELECT o.gpuId, o.queueId, o.start, o.end, o.description_id, o.opType_id, ao.api_id
    FROM rocpd_op o
    LEFT JOIN rocpd_api_ops ao ON ao.op_id = o.id";

/// What an operation of a (description, type) pair is, its name interned (`Err`: an id
/// dangles).
type OpName = Result<OpRead, ()>;

/// [`OpClass`](crate::rpd_ops::OpClass) with the name interned.
#[derive(Debug, Clone, Copy)]
struct OpRead {
    work: Option<(GpuEventKind, NameId)>,
    barrier: bool,
    known: bool,
}

/// Operations read and passed over, by kind, for the import statistics.
#[derive(Debug, Default)]
struct OpTally {
    barriers: u64,
    /// Operations of types this reader does not know, by type id: (read as kernels, not read).
    unknown: FxHashMap<i64, (u64, u64)>,
}

/// Names and kinds by string id, each looked up in `rocpd_string` once.
struct Names<'d> {
    db: &'d Database,
    /// Where `args_id` points: `rocpd_ustring` in schema 3 files, else `rocpd_string`.
    args_table: &'static str,
    calls: FxHashMap<i64, Option<(NameId, RuntimeCallKind)>>,
    ops: FxHashMap<(i64, i64), OpName>,
}

impl<'d> Names<'d> {
    fn new(db: &'d Database) -> Self {
        let args_table = if db.has_table("rocpd_ustring") {
            "rocpd_ustring"
        } else {
            "rocpd_string"
        };
        Names {
            db,
            args_table,
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

    /// A row's arguments (a ROCTx message) from its `args_id`.
    fn args(&self, id: i64) -> Option<String> {
        let sql = format!("SELECT string FROM {} WHERE id = ?1", self.args_table);
        self.db
            .conn
            .query_row(&sql, [id], |row| row.get::<_, Option<String>>(0))
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

    /// What an operation is from its `description_id` and `opType_id` (`Err`: an id
    /// dangles).
    fn op(&mut self, ids: (i64, i64), builder: &mut TraceBuilder) -> OpName {
        if let Some(known) = self.ops.get(&ids) {
            return *known;
        }
        let known = match (self.string(ids.1), self.string(ids.0)) {
            (Some(op_type), Some(description)) => {
                let class = op_kind(&op_type, description);
                Ok(OpRead {
                    work: class.work.map(|(kind, name)| (kind, builder.intern(&name))),
                    barrier: class.barrier,
                    known: class.known,
                })
            }
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
    let mut tally = OpTally::default();
    let skipped_ops = db.for_each_row(("rocpd_op", OP_SQL), builder, |row, b| {
        add_op(row, (b, &mut names), process, &mut tally)
    })?;
    builder.stats_mut().add(
        "rpd_rows_skipped",
        Severity::DataLoss,
        "Rows of an RPD table with a time that is not a number, an end before its start or a name id missing from rocpd_string were skipped (refused as damage)",
        skipped_calls + skipped_ops,
    );
    count_ops(&names, &tally, builder);
    let metadata = builder.metadata_mut();
    if metadata.device_names.is_empty() {
        metadata.device_names.push("AMD GPU (RPD)".to_owned());
    }
    Ok(())
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
    if builder.name(name) == USER_MARKER {
        add_marker(row, builder, names, (process, tid), (start, duration));
        return Some(());
    }
    if !is_api_call(builder.name(name), kind) {
        // A range of another domain (rpdTracer's `rangePush(domain, name, args)`, its own
        // writer ranges): a host annotation named by the row's name.
        let span = AnnotationRecord {
            name,
            process,
            thread: ThreadId::Number(tid),
            start,
            duration,
        };
        builder.add_annotation(span);
        return Some(());
    }
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

/// Puts the operations passed over, and those of unknown types (by type name, in the
/// unknown categories), into the import statistics.
fn count_ops(names: &Names<'_>, tally: &OpTally, builder: &mut TraceBuilder) {
    let stats = builder.stats_mut();
    stats.add(
        "rpd_barrier_ops",
        Severity::Info,
        "RPD barrier and marker packets (waits, no work) were read and left out of the GPU time",
        tally.barriers,
    );
    let (mut as_kernels, mut dropped) = (0, 0);
    for (&type_id, &(read, not_read)) in &tally.unknown {
        let name = names.string(type_id).unwrap_or_default();
        *stats
            .unknown_categories
            .entry(format!("rpd opType {name}"))
            .or_default() += read + not_read;
        as_kernels += read;
        dropped += not_read;
    }
    stats.add(
        "rpd_unknown_op_types_read_as_kernels",
        Severity::Info,
        "RPD operations of a type this reader does not know were read as kernels by the name in their description (the types are listed by name)",
        as_kernels,
    );
    stats.add(
        "rpd_unknown_op_types_not_read",
        Severity::DataLoss,
        "RPD operations of a type this reader does not know, with no name in their description, were not read (the types are listed by name)",
        dropped,
    );
}

/// Whether an API row is a runtime call (HIP, HSA, CUDA, NCCL/RCCL, or a kind the runtime
/// table knows) rather than a range a user or the tracer pushed.
fn is_api_call(name: &str, kind: RuntimeCallKind) -> bool {
    // The CUDA driver's `cuLaunchKernel`, not a user's `custom_step`.
    let driver = name
        .strip_prefix("cu")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()));
    kind != RuntimeCallKind::Other
        || driver
        || ["hip", "hsa", "cuda", "nccl", "rccl", "roctx"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// A ROCTx range (a `UserMarker` row) as a host annotation named by its message, where
/// steps are found; a mark (no length) or a range with no message names no step.
fn add_marker(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    names: &Names<'_>,
    (process, tid): (ProcessId, i64),
    (start, duration): (Timestamp, Duration),
) {
    let message = row
        .get(6)
        .ok()
        .and_then(|id| names.args(id))
        .unwrap_or_default();
    let lane = (process, ThreadId::Number(tid));
    if !crate::common::add_marker(builder, &message, lane, (start, duration)) {
        builder.stats_mut().add(
            "rpd_marks",
            Severity::Info,
            "RPD ROCTx marks (no length) or ranges with no message were read and name no step",
            1,
        );
    }
}

fn add_op(
    row: &Row<'_>,
    (builder, names): (&mut TraceBuilder, &mut Names<'_>),
    process: ProcessId,
    tally: &mut OpTally,
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
    let read = match names.op(ids, builder) {
        Ok(read) => read,
        Err(()) => {
            let damage = (DamageKind::DanglingReference, DamagedTable::Gpu);
            refuse(builder, damage, api, None);
            return None;
        }
    };
    tally.barriers += u64::from(read.barrier);
    if !read.known {
        let counts = tally.unknown.entry(ids.1).or_default();
        match read.work {
            Some(_) => counts.0 += 1,
            None => counts.1 += 1,
        }
    }
    let Some((kind, name)) = read.work else {
        return Some(());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_rows_are_runtime_calls_and_other_names_are_ranges() {
        let call = |name: &str| is_api_call(name, RuntimeCallKind::classify(name));
        for api in [
            "hipGraphLaunch",
            "hsa_queue_create",
            "cudaLaunchKernel",
            "cuLaunchKernel",
            "ncclAllReduce",
        ] {
            assert!(call(api), "{api}");
        }
        for range in [
            "custom_step",
            "step[DECODE bs=32]",
            "OpTable::writeRows",
            "hcc_activity_callback",
        ] {
            assert!(!call(range), "{range}");
        }
    }
}
