//! The rows of one rocpd run: regions, kernel dispatches, copies, allocations; with the
//! string, category, kernel-symbol and agent tables they point into.

use super::Tables;
use super::columns::{Joined, column_or_null};
use crate::IngestError;
use crate::sqlite::{Database, refuse, span};
use rusqlite::Row;
use rustc_hash::FxHashMap;
use stepscope_model::{
    CorrelationId, DamageKind, DamagedTable, Duration, GpuEventKind, GpuEventRecord, NameId,
    ProcessId, RuntimeCallKind, RuntimeCallRecord, StreamId, ThreadId, Timestamp, TraceBuilder,
};

/// What was read, for the statistics and the verdict.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Totals {
    pub skipped: u64,
    pub allocations: u64,
    pub other_regions: u64,
    pub hip_calls: u64,
    pub dispatches: u64,
    /// Dispatches that carry the correlation id of the call that launched them.
    pub linked_dispatches: u64,
    /// Regions refused because their name points at no string.
    pub unnamed_regions: u64,
}

impl Totals {
    pub(crate) fn add(&mut self, other: &Totals) {
        self.skipped += other.skipped;
        self.allocations += other.allocations;
        self.other_regions += other.other_regions;
        self.hip_calls += other.hip_calls;
        self.dispatches += other.dispatches;
        self.linked_dispatches += other.linked_dispatches;
        self.unnamed_regions += other.unnamed_regions;
    }
}

/// What an event's category makes a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    /// `HIP_RUNTIME_API`, `HIP_COMPILER_API`, `HIP_RUNTIME_API_EXT`…
    Hip,
    /// `HSA_CORE_API`…
    Hsa,
    /// `MARKER_CORE_RANGE_API`… (ROCTx).
    Marker,
    /// Anything else (RCCL, rocDecode…), or no category.
    Other,
}

impl Category {
    fn of(name: &str) -> Self {
        if name.starts_with("HIP_") {
            Category::Hip
        } else if name.starts_with("HSA_") {
            Category::Hsa
        } else if name.contains("MARKER") {
            Category::Marker
        } else {
            Category::Other
        }
    }
}

/// The lookup tables of a run: strings and categories looked up once each, kernel symbols
/// and agents read whole (they are small).
struct Lookups<'d> {
    db: &'d Database,
    strings_sql: String,
    categories_sql: String,
    calls: FxHashMap<i64, Option<(NameId, RuntimeCallKind)>>,
    categories: FxHashMap<i64, Category>,
    copies: FxHashMap<i64, Option<NameId>>,
    symbols: FxHashMap<i64, NameId>,
    /// GPU agents: id → device index.
    devices: FxHashMap<i64, u32>,
    /// Stream and queue handles (opaque, maybe pointers) → small numbers, in order seen.
    streams: FxHashMap<(bool, i64), u32>,
}

impl<'d> Lookups<'d> {
    fn new(
        db: &'d Database,
        run: &Tables,
        builder: &mut TraceBuilder,
    ) -> Result<Self, IngestError> {
        let strings = run.get("rocpd_string").unwrap_or("rocpd_string");
        let categories_sql = match run.get("rocpd_info_category") {
            Some(table) => format!("SELECT name FROM \"{table}\" WHERE id = ?1"),
            None => format!("SELECT string FROM \"{strings}\" WHERE id = ?1"),
        };
        let mut lookups = Lookups {
            db,
            strings_sql: format!("SELECT string FROM \"{strings}\" WHERE id = ?1"),
            categories_sql,
            calls: FxHashMap::default(),
            categories: FxHashMap::default(),
            copies: FxHashMap::default(),
            symbols: FxHashMap::default(),
            devices: FxHashMap::default(),
            streams: FxHashMap::default(),
        };
        lookups.read_symbols(run, builder)?;
        lookups.read_agents(run, builder)?;
        Ok(lookups)
    }

    /// The text of row `id` that `sql` (one of the lookups' queries) selects.
    fn text(db: &Database, sql: &str, id: i64) -> Option<String> {
        let mut statement = db.conn.prepare(sql).ok()?;
        statement
            .query_row([id], |row| row.get::<_, Option<String>>(0))
            .ok()
            .flatten()
    }

    fn read_symbols(
        &mut self,
        run: &Tables,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let Some(table) = run.get("rocpd_info_kernel_symbol") else {
            return Ok(());
        };
        let columns = self.db.columns(table);
        let sql = format!(
            "SELECT s.id, {}, {} FROM \"{table}\" s",
            column_or_null(&columns, "s", "display_name"),
            column_or_null(&columns, "s", "kernel_name")
        );
        let mut symbols = FxHashMap::default();
        self.db.for_each_row((table, &sql), builder, |row, b| {
            let id: i64 = row.get(0).ok()?;
            let display: Option<String> = row.get(1).ok().flatten();
            let name = display
                .filter(|n| !n.is_empty())
                .or_else(|| row.get::<_, Option<String>>(2).ok().flatten())?;
            symbols.insert(id, b.intern(&name));
            Some(())
        })?;
        self.symbols = symbols;
        Ok(())
    }

    fn read_agents(&mut self, run: &Tables, builder: &mut TraceBuilder) -> Result<(), IngestError> {
        let Some(table) = run.get("rocpd_info_agent") else {
            return Ok(());
        };
        let columns = self.db.columns(table);
        let col = |name: &str| column_or_null(&columns, "a", name);
        let sql = format!(
            "SELECT a.id, {}, coalesce({}, {}, {}, a.id), coalesce({}, {}) FROM \"{table}\" a",
            col("type"),
            col("type_index"),
            col("logical_index"),
            col("absolute_index"),
            col("product_name"),
            col("name")
        );
        let mut devices = FxHashMap::default();
        self.db.for_each_row((table, &sql), builder, |row, b| {
            let id: i64 = row.get(0).ok()?;
            if row.get::<_, Option<String>>(1).ok().flatten().as_deref() != Some("GPU") {
                return Some(());
            }
            let index: i64 = row.get(2).unwrap_or(0);
            devices.insert(id, u32::try_from(index).unwrap_or(0));
            let product: Option<String> = row.get(3).ok().flatten();
            let names = &mut b.metadata_mut().device_names;
            if let Some(product) = product.filter(|p| !names.contains(p)) {
                names.push(product);
            }
            Some(())
        })?;
        self.devices = devices;
        Ok(())
    }

    fn category(&mut self, id: Option<i64>) -> Category {
        let Some(id) = id else {
            return Category::Other;
        };
        if let Some(known) = self.categories.get(&id) {
            return *known;
        }
        let category = Self::text(self.db, &self.categories_sql, id)
            .map_or(Category::Other, |name| Category::of(&name));
        self.categories.insert(id, category);
        category
    }

    fn call(&mut self, id: i64, builder: &mut TraceBuilder) -> Option<(NameId, RuntimeCallKind)> {
        if let Some(known) = self.calls.get(&id) {
            return *known;
        }
        let known = Self::text(self.db, &self.strings_sql, id)
            .map(|name| (builder.intern(&name), RuntimeCallKind::classify(&name)));
        self.calls.insert(id, known);
        known
    }

    fn copy(&mut self, id: i64, builder: &mut TraceBuilder) -> Option<NameId> {
        if let Some(known) = self.copies.get(&id) {
            return *known;
        }
        let known = Self::text(self.db, &self.strings_sql, id)
            .map(|name| builder.intern(&copy_name(&name)));
        self.copies.insert(id, known);
        known
    }

    /// The lane of a stream (`queue: false`) or hardware queue handle.
    fn lane(&mut self, queue: bool, handle: i64) -> StreamId {
        let next = self.streams.len() as u32;
        StreamId(*self.streams.entry((queue, handle)).or_insert(next))
    }

    fn device(&self, agent: Option<i64>) -> Option<u32> {
        agent.and_then(|a| self.devices.get(&a).copied())
    }
}

/// A copy named as the PyTorch profiler names it: `MEMORY_COPY_HOST_TO_DEVICE` →
/// `Memcpy HtoD`.
fn copy_name(name: &str) -> String {
    let direction = name.trim_start_matches("MEMORY_COPY_");
    let short = match direction {
        "HOST_TO_DEVICE" => "HtoD",
        "DEVICE_TO_HOST" => "DtoH",
        "DEVICE_TO_DEVICE" => "DtoD",
        "HOST_TO_HOST" => "HtoH",
        "PEER_TO_PEER" => "PtoP",
        other => other,
    };
    format!("Memcpy {short}")
}

/// The id that links a record to its call: the internal correlation id (`stack_id`), else
/// the external one.
fn link(row: &Row<'_>, stack: usize) -> CorrelationId {
    let positive = |i: usize| {
        row.get::<_, Option<i64>>(i)
            .ok()
            .flatten()
            .filter(|v| *v > 0)
    };
    let id = positive(stack).or_else(|| positive(stack + 1)).unwrap_or(0);
    CorrelationId(u64::try_from(id).unwrap_or(0))
}

/// Reads one run's records into `builder`.
pub(crate) fn read_run(
    db: &Database,
    run: &Tables,
    builder: &mut TraceBuilder,
) -> Result<Totals, IngestError> {
    let mut lookups = Lookups::new(db, run, builder)?;
    let mut totals = Totals::default();
    if let Some(table) = run.get("rocpd_region") {
        read_regions(db, run, table, (&mut lookups, &mut totals), builder)?;
    }
    let mut by_queue = false;
    if let Some(table) = run.get("rocpd_kernel_dispatch") {
        by_queue = read_dispatches(db, run, table, (&mut lookups, &mut totals), builder)?;
    }
    if let Some(table) = run.get("rocpd_memory_copy") {
        read_copies(db, run, table, (&mut lookups, by_queue), builder)
            .map(|skipped| totals.skipped += skipped)?;
    }
    if let Some(table) = run.get("rocpd_memory_allocate") {
        let sql = format!("SELECT 1 FROM \"{table}\"");
        db.for_each_row((table, &sql), builder, |_, _| {
            totals.allocations += 1;
            Some(())
        })?;
    }
    Ok(totals)
}

fn read_regions(
    db: &Database,
    run: &Tables,
    table: &str,
    (lookups, totals): (&mut Lookups<'_>, &mut Totals),
    builder: &mut TraceBuilder,
) -> Result<(), IngestError> {
    let j = Joined::new(db, run, table);
    let sql = format!(
        "SELECT {}, {}, x.start, x.\"end\", {}, {}, {}, {}, {} FROM {}",
        j.owner("pid"),
        j.owner("tid"),
        j.record("name_id"),
        j.event("category_id"),
        j.event("stack_id"),
        j.event("correlation_id"),
        j.event("extdata"),
        j.from
    );
    totals.skipped += db.for_each_row((table, &sql), builder, |row, b| {
        add_region(row, b, lookups, totals)
    })?;
    Ok(())
}

fn add_region(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    lookups: &mut Lookups<'_>,
    totals: &mut Totals,
) -> Option<()> {
    let category = lookups.category(row.get(5).ok().flatten());
    let correlation = link(row, 6);
    let named = lookups.call(row.get(4).unwrap_or(0), builder);
    let refused = |kind, builder: &mut TraceBuilder| {
        let damage = (kind, DamagedTable::Runtime);
        let id = i64::try_from(correlation.0).ok();
        refuse(builder, damage, id, named.map(|(name, _)| name));
        None
    };
    let (start, duration) = match span(row, 2) {
        Ok(span) => span,
        Err(kind) => return refused(kind, builder),
    };
    let process = builder.process_number(row.get(0).unwrap_or(0));
    let thread = ThreadId::Number(row.get(1).unwrap_or(0));
    if category == Category::Marker {
        let span = (process, thread, start, duration);
        add_marker(row, builder, named.map(|(name, _)| name), span, totals);
        return Some(());
    }
    let Some((name, kind)) = named else {
        totals.unnamed_regions += 1;
        return refused(DamageKind::DanglingReference, builder);
    };
    match category {
        Category::Hip => totals.hip_calls += 1,
        // No category (an event table lost or left out): a HIP call by its name.
        Category::Other if builder.name(name).starts_with("hip") => totals.hip_calls += 1,
        Category::Other => totals.other_regions += 1,
        Category::Hsa | Category::Marker => {}
    }
    let call = RuntimeCallRecord {
        kind,
        name,
        process,
        thread,
        start,
        duration,
        correlation,
        launched_kernel: None,
    };
    builder.add_runtime_call(call);
    Some(())
}

/// A ROCTx range as a host annotation named by its message (else the region's name); a mark
/// (no length) or a range with neither names no step and is counted.
fn add_marker(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    region_name: Option<NameId>,
    (process, thread, start, duration): (ProcessId, ThreadId, Timestamp, Duration),
    totals: &mut Totals,
) {
    let extdata: Option<String> = row.get(8).ok().flatten();
    let message = extdata
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|value| value.get("message")?.as_str().map(str::to_owned))
        .filter(|m| !m.is_empty())
        .or_else(|| region_name.map(|name| builder.name(name).to_owned()))
        .unwrap_or_default();
    if !crate::common::add_marker(builder, &message, (process, thread), (start, duration)) {
        totals.other_regions += 1;
    }
}

/// Reads the kernel dispatches; returns whether streams are hardware queues (no dispatch
/// recorded a HIP stream).
fn read_dispatches(
    db: &Database,
    run: &Tables,
    table: &str,
    (lookups, totals): (&mut Lookups<'_>, &mut Totals),
    builder: &mut TraceBuilder,
) -> Result<bool, IngestError> {
    let j = Joined::new(db, run, table);
    let sql = format!(
        "SELECT {}, {}, {}, {}, x.start, x.\"end\", {}, {}, {}, {} FROM {}",
        j.owner("pid"),
        j.owner("agent_id"),
        j.owner("queue_id"),
        j.owner("stream_id"),
        j.record("kernel_id"),
        j.event("stack_id"),
        j.event("correlation_id"),
        j.record("graph_exec_id"),
        j.from
    );
    let first = builder.trace_mut().gpu.len();
    let mut queues: Vec<StreamId> = Vec::new();
    let mut saw_stream = false;
    totals.skipped += db.for_each_row((table, &sql), builder, |row, b| {
        let queue = add_dispatch(row, b, lookups)?;
        totals.dispatches += 1;
        let stack_id = row.get::<_, Option<i64>>(7).ok().flatten();
        totals.linked_dispatches += u64::from(stack_id.is_some_and(|id| id != 0));
        saw_stream |= row.get::<_, Option<i64>>(3).ok().flatten().unwrap_or(0) != 0;
        queues.push(queue);
        Some(())
    })?;
    if saw_stream || queues.is_empty() {
        return Ok(false);
    }
    let streams = &mut builder.trace_mut().gpu.stream;
    for (row, queue) in queues.into_iter().enumerate() {
        if let Some(stream) = streams.get_mut(first + row) {
            *stream = queue;
        }
    }
    Ok(true)
}

/// A GPU row's name and times (from column `start`), or `None` with the row refused as
/// damage tied to its correlation id: times that are not a number or end before they start,
/// or a name id that points at nothing.
fn checked(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    (start, correlation): (usize, CorrelationId),
    name: Option<NameId>,
) -> Option<(NameId, Timestamp, Duration)> {
    let id = i64::try_from(correlation.0).ok();
    let (start, duration) = match span(row, start) {
        Ok(span) => span,
        Err(kind) => {
            refuse(builder, (kind, DamagedTable::Gpu), id, name);
            return None;
        }
    };
    let Some(name) = name else {
        let damage = (DamageKind::DanglingReference, DamagedTable::Gpu);
        refuse(builder, damage, id, None);
        return None;
    };
    Some((name, start, duration))
}

/// Adds one dispatch; returns its queue's lane (for streams read as queues).
fn add_dispatch(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    lookups: &mut Lookups<'_>,
) -> Option<StreamId> {
    let correlation = link(row, 7);
    let name = row
        .get::<_, i64>(6)
        .ok()
        .and_then(|k| lookups.symbols.get(&k).copied());
    let (name, start, duration) = checked(row, builder, (4, correlation), name)?;
    let agent: Option<i64> = row.get(1).ok().flatten();
    let handle = |i: usize| row.get::<_, Option<i64>>(i).ok().flatten().unwrap_or(0);
    let (stream, queue) = (
        lookups.lane(false, handle(3)),
        lookups.lane(true, handle(2)),
    );
    let graph = row
        .get::<_, Option<i64>>(9)
        .ok()
        .flatten()
        .filter(|g| *g > 0);
    let event = GpuEventRecord {
        kind: GpuEventKind::Kernel,
        name,
        process: builder.process_number(row.get(0).unwrap_or(0)),
        device: lookups
            .device(agent)
            .unwrap_or_else(|| u32::try_from(handle(1)).unwrap_or(0)),
        stream,
        start,
        duration,
        correlation,
        graph_id: graph.and_then(|g| u64::try_from(g).ok()),
    };
    builder.add_gpu_event(event);
    Some(queue)
}

fn read_copies(
    db: &Database,
    run: &Tables,
    table: &str,
    (lookups, by_queue): (&mut Lookups<'_>, bool),
    builder: &mut TraceBuilder,
) -> Result<u64, IngestError> {
    let j = Joined::new(db, run, table);
    let sql = format!(
        "SELECT {}, {}, {}, {}, {}, x.start, x.\"end\", {}, {}, {} FROM {}",
        j.owner("pid"),
        j.record("dst_agent_id"),
        j.record("src_agent_id"),
        j.owner("queue_id"),
        j.owner("stream_id"),
        j.record("name_id"),
        j.event("stack_id"),
        j.event("correlation_id"),
        j.from
    );
    db.for_each_row((table, &sql), builder, |row, b| {
        add_copy(row, b, lookups, by_queue)
    })
}

fn add_copy(
    row: &Row<'_>,
    builder: &mut TraceBuilder,
    lookups: &mut Lookups<'_>,
    by_queue: bool,
) -> Option<()> {
    let correlation = link(row, 8);
    let name = lookups.copy(row.get(7).unwrap_or(0), builder);
    let (name, start, duration) = checked(row, builder, (5, correlation), name)?;
    let agent = |i: usize| row.get::<_, Option<i64>>(i).ok().flatten();
    let device = lookups
        .device(agent(1))
        .or_else(|| lookups.device(agent(2)));
    let stream = lookups.lane(by_queue, agent(if by_queue { 3 } else { 4 }).unwrap_or(0));
    let event = GpuEventRecord {
        kind: GpuEventKind::Memcpy,
        name,
        process: builder.process_number(row.get(0).unwrap_or(0)),
        device: device.unwrap_or(0),
        stream,
        start,
        duration,
        correlation,
        graph_id: None,
    };
    builder.add_gpu_event(event);
    Some(())
}
