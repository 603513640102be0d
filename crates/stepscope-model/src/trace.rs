//! One trace file's events, ready for analysis, and the builder importers write through.

use crate::{
    AnnotationRecord, Annotations, DamageKind, DamagedEvent, DamagedEvents, FlowPhase, Flows,
    GpuEventRecord, GpuEvents, ImportStats, Interner, NameId, OpArgs, OpArgsId, OpArgsTable,
    ProcessId, RuntimeCallRecord, RuntimeCalls, ThreadId, Timestamp, TraceMetadata,
};
use rustc_hash::FxHashMap;

/// How a process was named in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProcessKey {
    /// A numeric pid (an OS process, or a device index for GPU lanes).
    Number(i64),
    /// A label such as `"Spans"` or `"GPU2"`.
    Label(NameId),
}

/// Event totals seen while reading, whatever was kept.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventCounts {
    /// Every entry of the event list, any phase.
    pub events: u64,
    /// CPU operator events (`cpu_op`, `Operator`), stored in [`Trace::cpu_ops`].
    pub cpu_ops: u64,
    /// Python function events; counted, not stored.
    pub python_functions: u64,
    /// Metadata (`ph: "M"`) events.
    pub metadata: u64,
}

impl EventCounts {
    fn merge(&mut self, other: &EventCounts) {
        self.events += other.events;
        self.cpu_ops += other.cpu_ops;
        self.python_functions += other.python_functions;
        self.metadata += other.metadata;
    }
}

/// A whole trace: interned names, processes, and one columnar table per event kind.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    /// Interned strings.
    pub names: Interner,
    /// Process keys, indexed by [`ProcessId`].
    pub processes: Vec<ProcessKey>,
    /// Process names from `process_name` metadata, indexed by [`ProcessId`].
    pub process_names: Vec<Option<NameId>>,
    /// Kernels, memcpys and memsets.
    pub gpu: GpuEvents,
    /// Host runtime/driver calls.
    pub runtime: RuntimeCalls,
    /// Host-side annotation spans (`user_annotation`).
    pub annotations: Annotations,
    /// Device-side mirrors of annotations (`gpu_user_annotation`).
    pub gpu_annotations: Annotations,
    /// Host CPU operator spans (`cpu_op`: `aten::mm`, `vllm::unified_attention`, ...),
    /// nested per thread; the innermost one around a launch call is its launching op.
    pub cpu_ops: Annotations,
    /// The distinct argument lists of CPU ops (`cpu_ops.args` points here).
    pub op_args: OpArgsTable,
    /// Flow arrows.
    pub flows: Flows,
    /// Header facts.
    pub metadata: TraceMetadata,
    /// Totals seen while reading.
    pub counts: EventCounts,
    /// What the importer skipped or did not understand.
    pub stats: ImportStats,
    /// Events refused for bad data, with their correlation ids (see [`DamagedEvents`]).
    pub damaged: DamagedEvents,
}

impl Trace {
    /// The string behind a name id.
    pub fn name(&self, id: NameId) -> &str {
        self.names.resolve(id)
    }

    /// The earliest and latest time of any stored event, if there is one.
    pub fn time_range(&self) -> Option<(Timestamp, Timestamp)> {
        let starts = self
            .gpu
            .start
            .iter()
            .chain(&self.runtime.start)
            .chain(&self.annotations.start);
        let first = starts.min().copied()?;
        let ends = (0..self.gpu.len())
            .map(|i| self.gpu.end(i))
            .chain((0..self.runtime.len()).map(|i| self.runtime.end(i)))
            .chain((0..self.annotations.len()).map(|i| self.annotations.end(i)));
        Some((first, ends.max().unwrap_or(first)))
    }
}

/// Importers write a [`Trace`] through this.
#[derive(Debug, Default)]
pub struct TraceBuilder {
    trace: Trace,
    process_lookup: FxHashMap<ProcessKey, ProcessId>,
}

impl TraceBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns a string.
    pub fn intern(&mut self, name: &str) -> NameId {
        self.trace.names.intern(name)
    }

    /// The string behind a name id interned here.
    pub fn name(&self, id: NameId) -> &str {
        self.trace.names.resolve(id)
    }

    /// The id of a numeric process, adding it when new.
    pub fn process_number(&mut self, pid: i64) -> ProcessId {
        self.process(ProcessKey::Number(pid))
    }

    /// The id of a labelled process, adding it when new.
    pub fn process_label(&mut self, label: &str) -> ProcessId {
        let name = self.intern(label);
        self.process(ProcessKey::Label(name))
    }

    fn process(&mut self, key: ProcessKey) -> ProcessId {
        if let Some(&id) = self.process_lookup.get(&key) {
            return id;
        }
        let id = ProcessId::from_index(self.trace.processes.len());
        self.trace.processes.push(key);
        self.trace.process_names.push(None);
        self.process_lookup.insert(key, id);
        id
    }

    /// Records a `process_name` metadata event.
    pub fn set_process_name(&mut self, process: ProcessId, name: &str) {
        let name = self.intern(name);
        self.trace.process_names[process.index()] = Some(name);
    }

    /// A thread label, interned.
    pub fn thread_label(&mut self, label: &str) -> ThreadId {
        ThreadId::Label(self.intern(label))
    }

    /// Adds a kernel, memcpy or memset.
    pub fn add_gpu_event(&mut self, event: GpuEventRecord) {
        self.trace.gpu.push(event);
    }

    /// Adds a host runtime/driver call.
    pub fn add_runtime_call(&mut self, call: RuntimeCallRecord) {
        self.trace.runtime.push(call);
    }

    /// Adds a host annotation span.
    pub fn add_annotation(&mut self, span: AnnotationRecord) {
        self.trace.annotations.push(span);
    }

    /// Adds a host CPU operator span.
    pub fn add_cpu_op(&mut self, span: AnnotationRecord) {
        self.trace.cpu_ops.push(span);
    }

    /// Adds a host CPU operator span with the argument lists it was called with and its
    /// `External id`.
    pub fn add_cpu_op_with_args(
        &mut self,
        span: AnnotationRecord,
        args: OpArgs<'_>,
        external_id: Option<i64>,
    ) {
        let args = self.trace.op_args.intern(args);
        self.trace.cpu_ops.push_op(span, args, external_id);
    }

    /// [`Self::add_cpu_op_with_args`] with the lists as bytes (`Input Dims`, `Input type`,
    /// `Input Strides`, `Concrete Inputs`): checked as UTF-8 only when new to the trace; a
    /// list that is not UTF-8 is dropped.
    pub fn add_cpu_op_with_raw_args(
        &mut self,
        span: AnnotationRecord,
        lists: [Option<&[u8]>; 4],
        external_id: Option<i64>,
    ) {
        let args = self.trace.op_args.intern_bytes(lists);
        self.trace.cpu_ops.push_op(span, args, external_id);
    }

    /// Adds a device-side annotation span.
    pub fn add_gpu_annotation(&mut self, span: AnnotationRecord) {
        self.trace.gpu_annotations.push(span);
    }

    /// Adds one end of a flow arrow.
    pub fn add_flow(&mut self, id: u64, phase: FlowPhase, process: ProcessId, start: Timestamp) {
        let flows = &mut self.trace.flows;
        flows.id.push(id);
        flows.phase.push(phase);
        flows.process.push(process);
        flows.start.push(start);
    }

    /// Header facts, to fill in.
    pub fn metadata_mut(&mut self) -> &mut TraceMetadata {
        &mut self.trace.metadata
    }

    /// Event totals, to fill in.
    pub fn counts_mut(&mut self) -> &mut EventCounts {
        &mut self.trace.counts
    }

    /// Import statistics, to fill in.
    pub fn stats_mut(&mut self) -> &mut ImportStats {
        &mut self.trace.stats
    }

    /// Records an event refused for bad data: counted in the import statistics under the
    /// kind's name (severity data loss) and kept with its correlation id for analysis.
    pub fn add_damaged(&mut self, event: DamagedEvent) {
        let kind: DamageKind = event.kind;
        self.trace.stats.add(
            kind.as_str(),
            crate::Severity::DataLoss,
            kind.description(),
            1,
        );
        self.trace.damaged.events.push(event);
    }

    /// The trace built so far, for checks that need every event (validation after import).
    pub fn trace_mut(&mut self) -> &mut Trace {
        &mut self.trace
    }

    /// Appends everything `other` built after what `self` holds, remapping its ids.
    /// Used to join the pieces of a trace read in parallel, in file order.
    pub fn append(&mut self, other: TraceBuilder) {
        if self.holds_no_rows() {
            self.adopt(other);
        } else {
            self.append_rows(other);
        }
    }

    /// Whether nothing `append` remaps is held yet (no name, process or row): header facts
    /// read before a trace's events, counts and statistics at most.
    fn holds_no_rows(&self) -> bool {
        let trace = &self.trace;
        trace.names.is_empty()
            && trace.processes.is_empty()
            && trace.gpu.is_empty()
            && trace.runtime.is_empty()
            && trace.annotations.is_empty()
            && trace.gpu_annotations.is_empty()
            && trace.cpu_ops.is_empty()
            && trace.flows.is_empty()
            && trace.damaged.is_empty()
    }

    /// [`Self::append`] into a builder that holds no rows: `other`'s names, processes and
    /// tables are taken as they are (with nothing before them, their ids stay what they
    /// are), not copied row by row — on the 1.1 GB benchmark trace that copy was 25–35 ms
    /// at the end of every streamed read (the header's builder taking all the events).
    /// What `self` holds (the header's facts, counts and statistics) stays and comes first.
    fn adopt(&mut self, other: TraceBuilder) {
        let TraceBuilder {
            trace: mut taken,
            process_lookup,
        } = other;
        let own = std::mem::take(&mut self.trace);
        taken.metadata = own.metadata;
        let mut counts = own.counts;
        counts.merge(&taken.counts);
        taken.counts = counts;
        let mut stats = own.stats;
        stats.merge(std::mem::take(&mut taken.stats));
        taken.stats = stats;
        self.trace = taken;
        self.process_lookup = process_lookup;
    }

    fn append_rows(&mut self, other: TraceBuilder) {
        let other = other.trace;
        let names: Vec<NameId> = other.names.iter().map(|(_, s)| self.intern(s)).collect();
        let map_name = |id: NameId| names[id.index()];
        let processes: Vec<ProcessId> = other
            .processes
            .iter()
            .map(|&key| self.process(remap_key(key, &names)))
            .collect();
        for (index, name) in other.process_names.iter().enumerate() {
            if let Some(name) = name {
                self.trace.process_names[processes[index].index()] = Some(map_name(*name));
            }
        }
        let map_thread = |t: ThreadId| match t {
            ThreadId::Label(n) => ThreadId::Label(map_name(n)),
            number => number,
        };
        for row in 0..other.gpu.len() {
            let mut event = other.gpu.get(row);
            event.name = map_name(event.name);
            event.process = processes[event.process.index()];
            self.trace.gpu.push(event);
        }
        append_runtime(
            &mut self.trace.runtime,
            &other.runtime,
            &processes,
            map_name,
            map_thread,
        );
        let remap = SpanRemap {
            processes: &processes,
            args: &[],
            map_name: &map_name,
            map_thread: &map_thread,
        };
        self.append_span_tables(&other, remap);
        let flows = &mut self.trace.flows;
        flows.id.extend(&other.flows.id);
        flows.phase.extend(&other.flows.phase);
        flows
            .process
            .extend(other.flows.process.iter().map(|p| processes[p.index()]));
        flows.start.extend(&other.flows.start);
        self.trace.counts.merge(&other.counts);
        self.trace.stats.merge(other.stats);
        self.trace
            .damaged
            .events
            .extend(other.damaged.events.iter().map(|e| DamagedEvent {
                name: e.name.map(map_name),
                ..*e
            }));
    }

    /// The finished trace.
    pub fn finish(self) -> Trace {
        self.trace
    }
}

fn remap_key(key: ProcessKey, names: &[NameId]) -> ProcessKey {
    match key {
        ProcessKey::Label(n) => ProcessKey::Label(names[n.index()]),
        number => number,
    }
}

impl TraceBuilder {
    /// Appends `other`'s annotation and CPU op tables (interning its argument lists here).
    fn append_span_tables(&mut self, other: &Trace, remap: SpanRemap<'_>) {
        let args: Vec<OpArgsId> = other
            .op_args
            .iter()
            .map(|(_, args)| self.trace.op_args.intern(args))
            .collect();
        let remap = SpanRemap {
            args: &args,
            ..remap
        };
        for (target, source) in [
            (&mut self.trace.annotations, &other.annotations),
            (&mut self.trace.gpu_annotations, &other.gpu_annotations),
            (&mut self.trace.cpu_ops, &other.cpu_ops),
        ] {
            append_spans(target, source, &remap);
        }
    }
}

/// How the ids of appended spans map to the target's.
struct SpanRemap<'a> {
    processes: &'a [ProcessId],
    args: &'a [OpArgsId],
    map_name: &'a dyn Fn(NameId) -> NameId,
    map_thread: &'a dyn Fn(ThreadId) -> ThreadId,
}

fn append_spans(target: &mut Annotations, source: &Annotations, remap: &SpanRemap<'_>) {
    for row in 0..source.len() {
        let span = AnnotationRecord {
            name: (remap.map_name)(source.name[row]),
            process: remap.processes[source.process[row].index()],
            thread: (remap.map_thread)(source.thread[row]),
            start: source.start[row],
            duration: source.duration[row],
        };
        let args = remap.args[source.args[row].index()];
        target.push_op(span, args, source.external_id[row]);
    }
}

fn append_runtime(
    target: &mut RuntimeCalls,
    source: &RuntimeCalls,
    processes: &[ProcessId],
    map_name: impl Fn(NameId) -> NameId,
    map_thread: impl Fn(ThreadId) -> ThreadId,
) {
    for row in 0..source.len() {
        target.push(RuntimeCallRecord {
            kind: source.kind[row],
            name: map_name(source.name[row]),
            process: processes[source.process[row].index()],
            thread: map_thread(source.thread[row]),
            start: source.start[row],
            duration: source.duration[row],
            correlation: source.correlation[row],
            launched_kernel: source.launched_kernel[row].map(&map_name),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CorrelationId, Duration, FlowPhase, GpuEventKind, StreamId, Timestamp};

    /// A builder with a row in every table, names, two processes, a process name.
    fn with_rows() -> TraceBuilder {
        let mut builder = TraceBuilder::new();
        let host = builder.process_number(851);
        let device = builder.process_label("GPU 2");
        builder.set_process_name(device, "gpu lane");
        let kernel = builder.intern("triton_poi_fused_0");
        let (start, duration) = (Timestamp::from_nanos(10), Duration::from_nanos(5));
        builder.add_gpu_event(GpuEventRecord {
            kind: GpuEventKind::Kernel,
            name: kernel,
            process: device,
            device: 2,
            stream: StreamId(7),
            start,
            duration,
            correlation: CorrelationId(3),
            graph_id: None,
        });
        let span = AnnotationRecord {
            name: builder.intern("step[DECODE bs=32]"),
            process: host,
            thread: builder.thread_label("main"),
            start,
            duration,
        };
        builder.add_annotation(span);
        let args = OpArgs {
            input_dims: Some("[[8944, 1024], [1024, 2816]]"),
            ..OpArgs::default()
        };
        builder.add_cpu_op_with_args(span, args, Some(215));
        builder.add_gpu_annotation(span);
        builder.add_flow(3, FlowPhase::Start, host, start);
        builder.counts_mut().events = 7;
        builder
            .stats_mut()
            .unknown_fields
            .insert("args.x".into(), 2);
        builder
    }

    #[test]
    fn appending_to_a_builder_without_rows_keeps_its_facts_and_takes_the_rows() {
        let mut header = TraceBuilder::new();
        header.metadata_mut().schema_version = Some(1);
        header
            .stats_mut()
            .unknown_fields
            .insert("header.x".into(), 1);
        header.stats_mut().unknown_fields.insert("args.x".into(), 1);
        header.counts_mut().events = 2;
        let (mut adopted, mut copied) = (header, TraceBuilder::new());
        copied.trace = adopted.trace.clone();
        adopted.append(with_rows());
        copied.append_rows(with_rows());
        let (adopted, copied) = (adopted.finish(), copied.finish());
        assert_eq!(format!("{adopted:?}"), format!("{copied:?}"));
        assert_eq!(adopted.gpu.len(), 1);
        assert_eq!(adopted.metadata.schema_version, Some(1));
        assert_eq!(adopted.stats.unknown_fields["args.x"], 3);
        assert_eq!(adopted.counts.events, 9);
    }

    #[test]
    fn a_builder_with_rows_gets_the_rows_copied_after_its_own() {
        let mut builder = with_rows();
        builder.append(with_rows());
        let trace = builder.finish();
        assert_eq!(trace.gpu.len(), 2);
        assert_eq!(trace.processes.len(), 2);
        assert_eq!(trace.flows.len(), 2);
        // Both ops point at the one argument list, which the append did not duplicate.
        assert_eq!(trace.cpu_ops.args[0], trace.cpu_ops.args[1]);
        assert_eq!(trace.op_args.len(), 2);
        let args = trace.op_args.get(trace.cpu_ops.args[1]);
        assert_eq!(args.input_dims, Some("[[8944, 1024], [1024, 2816]]"));
        assert_eq!(trace.cpu_ops.external_id, [Some(215), Some(215)]);
        assert!(trace.annotations.args.iter().all(|id| id.is_none()));
    }
}
