//! From a raw event to the model: classify by category and phase, convert units once.

use super::raw::{Number, RawEvent, Text};
use stepscope_model::{
    AnnotationRecord, CorrelationId, DamageKind, DamagedEvent, DamagedTable, Duration, FlowPhase,
    GpuEventKind, GpuEventRecord, ProcessId, RuntimeCallKind, RuntimeCallRecord, Severity,
    StreamId, ThreadId, Timestamp, TraceBuilder,
};

/// What stepscope does with an event category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CategoryClass {
    Gpu(GpuEventKind),
    Runtime,
    Annotation,
    GpuAnnotation,
    CpuOp,
    PythonFunction,
    /// Known to the Kineto schema, not needed here.
    Ignored,
    Unknown,
}

fn classify_category(category: &str) -> CategoryClass {
    use CategoryClass as C;
    match category {
        "kernel" | "Kernel" => C::Gpu(GpuEventKind::Kernel),
        "gpu_memcpy" | "Memcpy" => C::Gpu(GpuEventKind::Memcpy),
        "gpu_memset" | "Memset" => C::Gpu(GpuEventKind::Memset),
        "cuda_runtime" | "cuda_driver" | "Runtime" | "Driver" | "hip_runtime" => C::Runtime,
        "user_annotation" => C::Annotation,
        "gpu_user_annotation" => C::GpuAnnotation,
        "cpu_op" | "Operator" | "operator" => C::CpuOp,
        "python_function" | "Python" => C::PythonFunction,
        "ac2g"
        | "async"
        | "Trace"
        | "cpu_instant_event"
        | "fwdbwd"
        | "overhead"
        | "Overhead"
        | "cuda_profiler_range"
        | "Memory"
        | "memory"
        | "mtia_runtime"
        | "mtia_ccp_events"
        | "gpu_op"
        | "python_function_call"
        | "cuda_sync"
        | "Sync" => C::Ignored,
        other => classify_loosely(other.trim()),
    }
}

/// A category written with other case or stray spaces (`"kernel "`, `"KERNEL"`,
/// `"Gpu_Memcpy"`) is read as what it names, not as an unknown one.
fn classify_loosely(category: &str) -> CategoryClass {
    use CategoryClass as C;
    let is = |name: &str| category.eq_ignore_ascii_case(name);
    if is("kernel") {
        C::Gpu(GpuEventKind::Kernel)
    } else if is("gpu_memcpy") || is("memcpy") {
        C::Gpu(GpuEventKind::Memcpy)
    } else if is("gpu_memset") || is("memset") {
        C::Gpu(GpuEventKind::Memset)
    } else if [
        "cuda_runtime",
        "cuda_driver",
        "runtime",
        "driver",
        "hip_runtime",
    ]
    .iter()
    .any(|name| is(name))
    {
        C::Runtime
    } else {
        C::Unknown
    }
}

/// Whether a complete (`X`) event of `category` is only counted, none of its other fields
/// read: the lexer may skip them unread.
pub(crate) fn only_counted(category: &str) -> bool {
    // Most events of a `with_stack` trace: answered before the table.
    category == "python_function"
        || matches!(
            classify_category(category),
            CategoryClass::PythonFunction | CategoryClass::Ignored
        )
}

/// Whether events of `category` are counted as Python functions.
pub(crate) fn is_python_function(category: &str) -> bool {
    classify_category(category) == CategoryClass::PythonFunction
}

/// Adds a complete event of a category that is only counted, with no other field read or
/// wrong, as [`add_event`] adds it: a Python function (`python`) or an ignored one.
#[inline(always)]
pub(crate) fn add_counted(builder: &mut TraceBuilder, python: bool) {
    let counts = builder.counts_mut();
    counts.events += 1;
    counts.python_functions += u64::from(python);
}

/// Adds one event to the builder, counting whatever it cannot use.
pub(crate) fn add_event(builder: &mut TraceBuilder, event: &RawEvent<'_>) {
    builder.counts_mut().events += 1;
    count_unknown_keys(builder, event);
    let phase = event.phase.as_ref().map_or("", |p| &*p.0);
    if phase != "X" && add_incomplete_gpu_or_runtime(builder, event) {
        return;
    }
    match phase {
        "X" => add_complete_event(builder, event),
        "M" => add_metadata_event(builder, event),
        "s" | "f" | "t" => add_flow_event(builder, event, phase),
        "" => builder.stats_mut().add(
            "event_without_phase",
            Severity::Info,
            "Events with no `ph` field; skipped",
            1,
        ),
        _ if !CHROME_PHASES.contains(&phase) => builder.stats_mut().add(
            "unknown_phase_event",
            Severity::Info,
            "Events whose `ph` is not a Chrome trace phase; skipped",
            1,
        ),
        _ => {}
    }
}

/// Every phase of the Chrome trace event format (its spec, "Event Descriptions").
const CHROME_PHASES: [&str; 23] = [
    "B", "E", "X", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "M", "V", "v",
    "R", "c", "(", ")",
];

/// Records a kernel, memcpy, memset or runtime call that is not a complete (`X`) event as
/// damage, and says whether it was one. Kineto writes those only as complete events: one in
/// any other phase (or none) has no usable span, and its replay lost it to bad data.
fn add_incomplete_gpu_or_runtime(builder: &mut TraceBuilder, event: &RawEvent<'_>) -> bool {
    let table = event
        .category
        .as_ref()
        .and_then(|category| must_be_complete(&category.0));
    if let Some(table) = table {
        add_damaged(builder, event, DamageKind::UnknownPhase, table);
    }
    table.is_some()
}

/// The table of a category whose events must be complete (`X`) events.
fn must_be_complete(category: &str) -> Option<DamagedTable> {
    match classify_category(category) {
        CategoryClass::Gpu(_) => Some(DamagedTable::Gpu),
        CategoryClass::Runtime => Some(DamagedTable::Runtime),
        _ => None,
    }
}

/// Records `event` as refused for bad data, with its correlation id and name.
fn add_damaged(
    builder: &mut TraceBuilder,
    event: &RawEvent<'_>,
    kind: DamageKind,
    table: DamagedTable,
) {
    let name = event.name.as_ref().map(|n| builder.intern(&n.0));
    builder.add_damaged(DamagedEvent {
        kind,
        table,
        correlation: correlation_of(event),
        name,
    });
}

fn count_unknown_keys(builder: &mut TraceBuilder, event: &RawEvent<'_>) {
    for key in &event.unknown_keys {
        *builder
            .stats_mut()
            .unknown_fields
            .entry(key.0.to_string())
            .or_default() += 1;
    }
    if event.malformed_fields > 0 {
        builder.stats_mut().add(
            "malformed_field",
            Severity::DataLoss,
            "Event fields whose JSON type was wrong (e.g. a number where a string belongs); the field was dropped",
            u64::from(event.malformed_fields),
        );
    }
}

fn add_complete_event(builder: &mut TraceBuilder, event: &RawEvent<'_>) {
    let Some(category) = event.category.as_ref() else {
        builder.stats_mut().add(
            "event_without_category",
            Severity::Info,
            "Complete events with no `cat` field; not classified",
            1,
        );
        return;
    };
    match classify_category(&category.0) {
        CategoryClass::Gpu(kind) => add_gpu_event(builder, event, kind),
        CategoryClass::Runtime => add_runtime_call(builder, event),
        CategoryClass::Annotation => add_annotation(builder, event, false),
        CategoryClass::GpuAnnotation => add_annotation(builder, event, true),
        CategoryClass::CpuOp => add_cpu_op(builder, event),
        CategoryClass::PythonFunction => builder.counts_mut().python_functions += 1,
        CategoryClass::Ignored => {}
        CategoryClass::Unknown => add_unknown(builder, event, &category.0),
    }
}

/// Counts an event of a category the reader does not know by its name; one that carries a
/// correlation id and a duration is GPU or host work tied to a launch, so it is also
/// recorded as damage against that launch (its replay cannot be vouched complete).
fn add_unknown(builder: &mut TraceBuilder, event: &RawEvent<'_>, category: &str) {
    *builder
        .stats_mut()
        .unknown_categories
        .entry(category.to_string())
        .or_default() += 1;
    if correlation_of(event).0 != 0 && event.dur.is_some() {
        add_damaged(
            builder,
            event,
            DamageKind::UnknownCategory,
            DamagedTable::Gpu,
        );
    }
}

/// Time, length and process of a complete event.
struct Span {
    start: Timestamp,
    duration: Duration,
    process: ProcessId,
}

/// The span of a complete event that would go to `table`, or `None` when its time is
/// unusable (recorded as damage).
fn span(builder: &mut TraceBuilder, event: &RawEvent<'_>, table: DamagedTable) -> Option<Span> {
    match time_of(event, table) {
        Ok((start, duration)) => Some(Span {
            start: Timestamp::from_nanos(start),
            duration: Duration::from_nanos(duration),
            process: process_of(builder, event.pid.as_ref()),
        }),
        Err(kind) => {
            add_damaged(builder, event, kind, table);
            None
        }
    }
}

/// Start and length in nanoseconds, or why they are unusable. Kineto always writes `dur`
/// on GPU events and runtime calls, so a missing one is damage there; an annotation
/// without one is an instant (length 0).
fn time_of(event: &RawEvent<'_>, table: DamagedTable) -> Result<(i64, i64), DamageKind> {
    let start = event
        .ts
        .as_ref()
        .and_then(Number::micros_to_nanos)
        .ok_or(DamageKind::InvalidTime)?;
    let duration = match (&event.dur, table) {
        (Some(dur), _) => dur.micros_to_nanos().ok_or(DamageKind::InvalidTime)?,
        (None, DamagedTable::Annotation) => 0,
        (None, DamagedTable::Gpu | DamagedTable::Runtime) => return Err(DamageKind::InvalidTime),
    };
    if duration < 0 {
        return Err(DamageKind::NegativeDuration);
    }
    Ok((start, duration))
}

fn process_of(builder: &mut TraceBuilder, pid: Option<&Number<'_>>) -> ProcessId {
    match pid {
        Some(number) => match number.as_i64() {
            Some(value) => builder.process_number(value),
            None => match number {
                Number::Text(label) => builder.process_label(label),
                _ => builder.process_label(""),
            },
        },
        None => builder.process_label(""),
    }
}

fn thread_of(builder: &mut TraceBuilder, tid: Option<&Number<'_>>) -> ThreadId {
    match tid {
        Some(number) => match number.as_i64() {
            Some(value) => ThreadId::Number(value),
            None => match number {
                Number::Text(label) => builder.thread_label(label),
                _ => builder.thread_label(""),
            },
        },
        None => builder.thread_label(""),
    }
}

fn name_text<'e>(event: &'e RawEvent<'_>) -> &'e str {
    event.name.as_ref().map_or("", |n| &n.0)
}

fn correlation_of(event: &RawEvent<'_>) -> CorrelationId {
    let value = event
        .args
        .correlation
        .as_ref()
        .and_then(Number::as_i64)
        .unwrap_or(0);
    CorrelationId(u64::try_from(value).unwrap_or(0))
}

/// Stream from `args.stream`, else from a `"stream 7"` thread label, else the numeric tid.
fn stream_of(event: &RawEvent<'_>) -> StreamId {
    let from_args = event.args.stream.as_ref().and_then(Number::as_i64);
    let from_tid = event.tid.as_ref().and_then(|tid| match tid {
        Number::Text(label) => label.trim_start_matches("stream ").trim().parse().ok(),
        other => other.as_i64(),
    });
    let value = from_args.or(from_tid).unwrap_or(0);
    StreamId(u32::try_from(value).unwrap_or(0))
}

fn add_gpu_event(builder: &mut TraceBuilder, event: &RawEvent<'_>, kind: GpuEventKind) {
    let Some(span) = span(builder, event, DamagedTable::Gpu) else {
        return;
    };
    let device = event
        .args
        .device
        .as_ref()
        .or(event.pid.as_ref())
        .and_then(Number::as_i64)
        .and_then(|d| u32::try_from(d).ok())
        .unwrap_or(0);
    let graph_id = event
        .args
        .graph_id
        .as_ref()
        .and_then(Number::as_i64)
        .and_then(|g| u64::try_from(g).ok());
    let name = builder.intern(name_text(event));
    builder.add_gpu_event(GpuEventRecord {
        kind,
        name,
        process: span.process,
        device,
        stream: stream_of(event),
        start: span.start,
        duration: span.duration,
        correlation: correlation_of(event),
        graph_id,
    });
}

fn add_runtime_call(builder: &mut TraceBuilder, event: &RawEvent<'_>) {
    let Some(span) = span(builder, event, DamagedTable::Runtime) else {
        return;
    };
    let text = name_text(event);
    let kind = RuntimeCallKind::classify(text);
    let name = builder.intern(text);
    let thread = thread_of(builder, event.tid.as_ref());
    let launched_kernel = event
        .args
        .kernel
        .as_ref()
        .map(|k: &Text<'_>| builder.intern(&k.0));
    builder.add_runtime_call(RuntimeCallRecord {
        kind,
        name,
        process: span.process,
        thread,
        start: span.start,
        duration: span.duration,
        correlation: correlation_of(event),
        launched_kernel,
    });
}

fn add_annotation(builder: &mut TraceBuilder, event: &RawEvent<'_>, on_gpu: bool) {
    let Some(span) = span(builder, event, DamagedTable::Annotation) else {
        return;
    };
    let name = builder.intern(name_text(event));
    let thread = thread_of(builder, event.tid.as_ref());
    let record = AnnotationRecord {
        name,
        process: span.process,
        thread,
        start: span.start,
        duration: span.duration,
    };
    if on_gpu {
        builder.add_gpu_annotation(record);
    } else {
        builder.add_annotation(record);
    }
}

/// Stores a CPU operator span; one without a usable time is counted and skipped (it only
/// names the launching op of the kernels inside it, so nothing else is lost).
fn add_cpu_op(builder: &mut TraceBuilder, event: &RawEvent<'_>) {
    builder.counts_mut().cpu_ops += 1;
    let Ok((start, duration)) = time_of(event, DamagedTable::Annotation) else {
        builder.stats_mut().add(
            "cpu_op_bad_time",
            Severity::DataLoss,
            "CPU operator events with a missing, unreadable or negative `ts`/`dur`; skipped, so kernels they launched are categorised by name",
            1,
        );
        return;
    };
    let process = process_of(builder, event.pid.as_ref());
    let name = builder.intern(name_text(event));
    let thread = thread_of(builder, event.tid.as_ref());
    let span = AnnotationRecord {
        name,
        process,
        thread,
        start: Timestamp::from_nanos(start),
        duration: Duration::from_nanos(duration),
    };
    let args = &event.args;
    let lists = [
        args.input_dims,
        args.input_types,
        args.input_strides,
        args.concrete_inputs,
    ];
    // As `correlation` is read: a number, or a string holding one.
    let external_id = args
        .external_id
        .and_then(|raw| std::str::from_utf8(raw).ok())
        .and_then(|text| text.trim_matches('"').parse().ok());
    builder.add_cpu_op_with_raw_args(span, lists, external_id);
}

fn add_metadata_event(builder: &mut TraceBuilder, event: &RawEvent<'_>) {
    builder.counts_mut().metadata += 1;
    if name_text(event) == "process_name" {
        if let Some(value) = event.args.name.as_ref() {
            let process = process_of(builder, event.pid.as_ref());
            builder.set_process_name(process, &value.0);
        }
    }
}

fn add_flow_event(builder: &mut TraceBuilder, event: &RawEvent<'_>, phase: &str) {
    let id = event
        .id
        .as_ref()
        .and_then(Number::as_i64)
        .and_then(|v| u64::try_from(v).ok());
    let start = event.ts.as_ref().and_then(Number::micros_to_nanos);
    let (Some(id), Some(start)) = (id, start) else {
        builder.stats_mut().add(
            "flow_without_id",
            Severity::Info,
            "Flow events with no numeric `id` or `ts`; skipped (no analysis needs flows)",
            1,
        );
        return;
    };
    let phase = if phase == "s" {
        FlowPhase::Start
    } else {
        FlowPhase::Finish
    };
    let process = process_of(builder, event.pid.as_ref());
    builder.add_flow(id, phase, process, Timestamp::from_nanos(start));
}
