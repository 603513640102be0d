//! Column-wise event tables: one `Vec` per field, one row per event.

use crate::{
    CorrelationId, Duration, NameId, OpArgsId, ProcessId, RuntimeCallKind, StreamId, ThreadId,
    Timestamp,
};

/// What a GPU event moved or computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GpuEventKind {
    /// A compute kernel.
    Kernel,
    /// A memory copy.
    Memcpy,
    /// A memory fill.
    Memset,
}

impl GpuEventKind {
    /// A short stable name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kernel => "kernel",
            Self::Memcpy => "memcpy",
            Self::Memset => "memset",
        }
    }
}

/// One GPU event, as an importer hands it to the builder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuEventRecord {
    /// Kernel, memcpy or memset.
    pub kind: GpuEventKind,
    /// Interned kernel or operation name.
    pub name: NameId,
    /// Process lane the profiler filed it under.
    pub process: ProcessId,
    /// Device index.
    pub device: u32,
    /// Stream (queue) on the device.
    pub stream: StreamId,
    /// Start on the GPU.
    pub start: Timestamp,
    /// Length.
    pub duration: Duration,
    /// Correlation with the host call that launched it.
    pub correlation: CorrelationId,
    /// CUDA graph id (`graph id` arg, Kineto ≥ 2026-02), where the profiler wrote one.
    pub graph_id: Option<u64>,
}

/// GPU events (kernels, memcpys, memsets), column-wise.
#[derive(Debug, Default, Clone)]
#[allow(missing_docs)] // each column is documented on `GpuEventRecord`
pub struct GpuEvents {
    pub kind: Vec<GpuEventKind>,
    pub name: Vec<NameId>,
    pub process: Vec<ProcessId>,
    pub device: Vec<u32>,
    pub stream: Vec<StreamId>,
    pub start: Vec<Timestamp>,
    pub duration: Vec<Duration>,
    pub correlation: Vec<CorrelationId>,
    pub graph_id: Vec<Option<u64>>,
}

impl GpuEvents {
    /// Keeps the rows whose entry in `keep` is true (one entry per row), in order.
    ///
    /// # Panics
    /// When `keep` does not have one entry per row.
    pub fn retain_rows(&mut self, keep: &[bool]) {
        assert_eq!(keep.len(), self.len(), "one keep flag per row");
        retain_column(&mut self.kind, keep);
        retain_column(&mut self.name, keep);
        retain_column(&mut self.process, keep);
        retain_column(&mut self.device, keep);
        retain_column(&mut self.stream, keep);
        retain_column(&mut self.start, keep);
        retain_column(&mut self.duration, keep);
        retain_column(&mut self.correlation, keep);
        retain_column(&mut self.graph_id, keep);
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// End of row `row`.
    pub fn end(&self, row: usize) -> Timestamp {
        self.start[row] + self.duration[row]
    }

    pub(crate) fn push(&mut self, event: GpuEventRecord) {
        self.kind.push(event.kind);
        self.name.push(event.name);
        self.process.push(event.process);
        self.device.push(event.device);
        self.stream.push(event.stream);
        self.start.push(event.start);
        self.duration.push(event.duration);
        self.correlation.push(event.correlation);
        self.graph_id.push(event.graph_id);
    }

    /// Row `row` as a record.
    pub fn get(&self, row: usize) -> GpuEventRecord {
        GpuEventRecord {
            kind: self.kind[row],
            name: self.name[row],
            process: self.process[row],
            device: self.device[row],
            stream: self.stream[row],
            start: self.start[row],
            duration: self.duration[row],
            correlation: self.correlation[row],
            graph_id: self.graph_id[row],
        }
    }
}

/// One host runtime/driver call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuntimeCallRecord {
    /// What the call does.
    pub kind: RuntimeCallKind,
    /// Interned API name.
    pub name: NameId,
    /// Calling process.
    pub process: ProcessId,
    /// Calling thread.
    pub thread: ThreadId,
    /// Start on the host.
    pub start: Timestamp,
    /// Length.
    pub duration: Duration,
    /// Correlation with the GPU work it launched.
    pub correlation: CorrelationId,
    /// Kernel name the call launched, when the profiler wrote it (HIP's `kernel` arg).
    pub launched_kernel: Option<NameId>,
}

/// Host runtime/driver calls, column-wise.
#[derive(Debug, Default, Clone)]
#[allow(missing_docs)] // each column is documented on `RuntimeCallRecord`
pub struct RuntimeCalls {
    pub kind: Vec<RuntimeCallKind>,
    pub name: Vec<NameId>,
    pub process: Vec<ProcessId>,
    pub thread: Vec<ThreadId>,
    pub start: Vec<Timestamp>,
    pub duration: Vec<Duration>,
    pub correlation: Vec<CorrelationId>,
    pub launched_kernel: Vec<Option<NameId>>,
}

impl RuntimeCalls {
    /// Keeps the rows whose entry in `keep` is true (one entry per row), in order.
    ///
    /// # Panics
    /// When `keep` does not have one entry per row.
    pub fn retain_rows(&mut self, keep: &[bool]) {
        assert_eq!(keep.len(), self.len(), "one keep flag per row");
        retain_column(&mut self.kind, keep);
        retain_column(&mut self.name, keep);
        retain_column(&mut self.process, keep);
        retain_column(&mut self.thread, keep);
        retain_column(&mut self.start, keep);
        retain_column(&mut self.duration, keep);
        retain_column(&mut self.correlation, keep);
        retain_column(&mut self.launched_kernel, keep);
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// End of row `row`.
    pub fn end(&self, row: usize) -> Timestamp {
        self.start[row] + self.duration[row]
    }

    pub(crate) fn push(&mut self, call: RuntimeCallRecord) {
        self.kind.push(call.kind);
        self.name.push(call.name);
        self.process.push(call.process);
        self.thread.push(call.thread);
        self.start.push(call.start);
        self.duration.push(call.duration);
        self.correlation.push(call.correlation);
        self.launched_kernel.push(call.launched_kernel);
    }
}

/// One host or device span: an annotation (`user_annotation` on the host,
/// `gpu_user_annotation` on a device) or a CPU operator (`cpu_op`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnnotationRecord {
    /// Interned label, e.g. `step[DECODE bs=32]`.
    pub name: NameId,
    /// Process it was recorded in.
    pub process: ProcessId,
    /// Thread (or GPU lane) it was recorded on.
    pub thread: ThreadId,
    /// Start.
    pub start: Timestamp,
    /// Length.
    pub duration: Duration,
}

/// Annotation or CPU operator spans, column-wise.
#[derive(Debug, Default, Clone)]
#[allow(missing_docs)] // each column is documented on `AnnotationRecord`
pub struct Annotations {
    pub name: Vec<NameId>,
    pub process: Vec<ProcessId>,
    pub thread: Vec<ThreadId>,
    pub start: Vec<Timestamp>,
    pub duration: Vec<Duration>,
    /// CPU ops: the argument lists the op was called with, in the trace's
    /// [`crate::OpArgsTable`]; [`OpArgsId::NONE`] for annotations and for ops recorded
    /// without shapes.
    pub args: Vec<OpArgsId>,
    /// CPU ops: the profiler's `External id`, which the op's runtime calls carry too.
    pub external_id: Vec<Option<i64>>,
}

impl Annotations {
    /// Keeps the rows whose entry in `keep` is true (one entry per row), in order.
    ///
    /// # Panics
    /// When `keep` does not have one entry per row.
    pub fn retain_rows(&mut self, keep: &[bool]) {
        assert_eq!(keep.len(), self.len(), "one keep flag per row");
        retain_column(&mut self.name, keep);
        retain_column(&mut self.process, keep);
        retain_column(&mut self.thread, keep);
        retain_column(&mut self.start, keep);
        retain_column(&mut self.duration, keep);
        retain_column(&mut self.args, keep);
        retain_column(&mut self.external_id, keep);
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// End of row `row`.
    pub fn end(&self, row: usize) -> Timestamp {
        self.start[row] + self.duration[row]
    }

    pub(crate) fn push(&mut self, span: AnnotationRecord) {
        self.push_op(span, OpArgsId::NONE, None);
    }

    pub(crate) fn push_op(
        &mut self,
        span: AnnotationRecord,
        args: OpArgsId,
        external_id: Option<i64>,
    ) {
        self.name.push(span.name);
        self.process.push(span.process);
        self.thread.push(span.thread);
        self.start.push(span.start);
        self.duration.push(span.duration);
        self.args.push(args);
        self.external_id.push(external_id);
    }

    /// Row `row` as a record (its span; not its arguments).
    pub fn get(&self, row: usize) -> AnnotationRecord {
        AnnotationRecord {
            name: self.name[row],
            process: self.process[row],
            thread: self.thread[row],
            start: self.start[row],
            duration: self.duration[row],
        }
    }
}

/// Which end of a flow arrow an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowPhase {
    /// `ph: "s"`.
    Start,
    /// `ph: "f"`.
    Finish,
}

/// Flow events (`ac2g` arrows). Kept for completeness; no analysis depends on them,
/// since some real traces lack them.
#[derive(Debug, Default, Clone)]
#[allow(missing_docs)]
pub struct Flows {
    pub id: Vec<u64>,
    pub phase: Vec<FlowPhase>,
    pub process: Vec<ProcessId>,
    pub start: Vec<Timestamp>,
}

impl Flows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.id.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }
}

fn retain_column<T>(column: &mut Vec<T>, keep: &[bool]) {
    let mut flags = keep.iter();
    column.retain(|_| *flags.next().unwrap_or(&true));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_event(row: usize) -> GpuEventRecord {
        GpuEventRecord {
            kind: [
                GpuEventKind::Kernel,
                GpuEventKind::Memcpy,
                GpuEventKind::Memset,
            ][row % 3],
            name: NameId::from_index(row),
            process: ProcessId::from_index(row % 2),
            device: row as u32,
            stream: StreamId(row as u32 + 7),
            start: Timestamp::from_nanos(row as i64 * 100),
            duration: Duration::from_nanos(row as i64 + 1),
            correlation: CorrelationId(row as u64 + 40),
            graph_id: (row % 2 == 0).then_some(row as u64),
        }
    }

    fn runtime_call(row: usize) -> RuntimeCallRecord {
        RuntimeCallRecord {
            kind: RuntimeCallKind::classify("cudaLaunchKernel"),
            name: NameId::from_index(row),
            process: ProcessId::from_index(0),
            thread: ThreadId::Number(row as i64),
            start: Timestamp::from_nanos(row as i64 * 10),
            duration: Duration::from_nanos(3),
            correlation: CorrelationId(row as u64),
            launched_kernel: (row == 1).then(|| NameId::from_index(9)),
        }
    }

    fn annotation(row: usize) -> AnnotationRecord {
        AnnotationRecord {
            name: NameId::from_index(row),
            process: ProcessId::from_index(0),
            thread: ThreadId::Label(NameId::from_index(row + 10)),
            start: Timestamp::from_nanos(row as i64),
            duration: Duration::from_nanos(row as i64 * 2),
        }
    }

    const KEEP: [bool; 5] = [true, false, true, false, true];
    const KEPT: [usize; 3] = [0, 2, 4];

    #[test]
    fn retain_rows_keeps_the_flagged_gpu_rows_in_every_column_in_order() {
        let mut gpu = GpuEvents::default();
        (0..5).for_each(|row| gpu.push(gpu_event(row)));
        gpu.retain_rows(&KEEP);
        assert_eq!(gpu.len(), 3);
        for (row, original) in KEPT.into_iter().enumerate() {
            assert_eq!(gpu.get(row), gpu_event(original));
        }
    }

    #[test]
    fn retain_rows_keeps_the_flagged_runtime_and_annotation_rows() {
        let mut runtime = RuntimeCalls::default();
        (0..5).for_each(|row| runtime.push(runtime_call(row)));
        runtime.retain_rows(&KEEP);
        let mut annotations = Annotations::default();
        (0..5).for_each(|row| annotations.push(annotation(row)));
        annotations.retain_rows(&KEEP);
        let mut expected_runtime = RuntimeCalls::default();
        let mut expected_annotations = Annotations::default();
        for row in KEPT {
            expected_runtime.push(runtime_call(row));
            expected_annotations.push(annotation(row));
        }
        // Every column, compared whole (the tables hold no floats, so `Debug` is exact).
        assert_eq!(format!("{runtime:?}"), format!("{expected_runtime:?}"));
        assert_eq!(
            format!("{annotations:?}"),
            format!("{expected_annotations:?}")
        );
    }

    #[test]
    fn retain_rows_with_all_or_no_flags() {
        let mut gpu = GpuEvents::default();
        (0..3).for_each(|row| gpu.push(gpu_event(row)));
        gpu.retain_rows(&[true; 3]);
        assert_eq!(gpu.len(), 3);
        gpu.retain_rows(&[false; 3]);
        assert!(gpu.is_empty() && gpu.graph_id.is_empty() && gpu.kind.is_empty());
    }

    #[test]
    #[should_panic(expected = "one keep flag per row")]
    fn retain_rows_needs_one_flag_per_row() {
        let mut annotations = Annotations::default();
        annotations.push(annotation(0));
        annotations.retain_rows(&[true, false]);
    }
}
