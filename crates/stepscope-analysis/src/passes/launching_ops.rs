//! Launching ops: which CPU operator each runtime call was made from.
//!
//! What it computes: for every runtime call, the innermost CPU op (`cpu_op` span) of the
//! same process and thread that contains the call's start; `None` when no op does.
//! Why it matters: a kernel's launching op says what the work is for (a GEMM kernel run by
//! `aten::miopen_convolution` is convolution work), which its name alone cannot.
//! On every shared Kineto trace this op is the one whose `External id` the call carries
//! (PyTorch's profiler writes the innermost op's id on each runtime call); time nesting is
//! used instead of that id so that traces without it link as well.
//! Example: `hipLaunchKernel` at 2915995553170 µs → `aten::miopen_convolution`.

use rustc_hash::FxHashMap;
use stepscope_model::{ProcessId, ThreadId, Timestamp, Trace};

/// The launching op of every runtime call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchingOps {
    /// For each runtime call row, the row in `trace.cpu_ops` of its innermost enclosing op.
    pub op_of_call: Vec<Option<u32>>,
}

/// Finds the innermost enclosing CPU op of every runtime call `wanted` accepts (the others
/// get `None`): callers ask for launch calls only, which keeps the work to the calls that
/// matter on traces with millions of host events.
pub fn launching_ops(trace: &Trace, wanted: impl Fn(usize) -> bool) -> LaunchingOps {
    let mut op_of_call = vec![None; trace.runtime.len()];
    if trace.cpu_ops.is_empty() {
        return LaunchingOps { op_of_call };
    }
    let mut threads = Threads::default();
    let runtime = &trace.runtime;
    for row in (0..runtime.len()).filter(|&row| wanted(row)) {
        let index = threads.index_or_insert((runtime.process[row], runtime.thread[row]));
        threads.list[index]
            .calls
            .push((runtime.start[row], row as u32));
    }
    let ops = &trace.cpu_ops;
    // An instant op (no duration) contains no call, even one stamped at the same time.
    for row in (0..ops.len()).filter(|&row| ops.duration[row].as_nanos() > 0) {
        if let Some(index) = threads.index((ops.process[row], ops.thread[row])) {
            let span = (ops.start[row], std::cmp::Reverse(ops.end(row)), row as u32);
            threads.list[index].ops.push(span);
        }
    }
    for thread in &mut threads.list {
        // Outer ops first at equal starts, so that the inner one sits above on the stack.
        thread.ops.sort_unstable();
        thread.calls.sort_unstable();
        sweep(thread, &mut op_of_call);
    }
    LaunchingOps { op_of_call }
}

/// Threads by (process, thread), remembering the last one looked up: events of one thread
/// come in runs, so most lookups skip the hash.
#[derive(Default)]
struct Threads {
    list: Vec<Thread>,
    by_key: FxHashMap<(ProcessId, ThreadId), usize>,
    last: Option<((ProcessId, ThreadId), Option<usize>)>,
}

impl Threads {
    fn index(&mut self, key: (ProcessId, ThreadId)) -> Option<usize> {
        if let Some((last, index)) = self.last {
            if last == key {
                return index;
            }
        }
        let index = self.by_key.get(&key).copied();
        self.last = Some((key, index));
        index
    }

    fn index_or_insert(&mut self, key: (ProcessId, ThreadId)) -> usize {
        if let Some(index) = self.index(key) {
            return index;
        }
        self.list.push(Thread::default());
        let index = self.list.len() - 1;
        self.by_key.insert(key, index);
        self.last = Some((key, Some(index)));
        index
    }
}

/// The ops (start, end reversed, row) and launch calls (start, row) of one thread.
#[derive(Default)]
struct Thread {
    ops: Vec<(Timestamp, std::cmp::Reverse<Timestamp>, u32)>,
    calls: Vec<(Timestamp, u32)>,
}

/// One thread: walks ops and calls in time order with a stack of the ops open at the
/// current time; a call's innermost op is the top of the stack. An op starting at the same
/// time as a call is taken to contain it.
fn sweep(thread: &Thread, out: &mut [Option<u32>]) {
    let mut open: Vec<(Timestamp, u32)> = Vec::new();
    let mut next_op = thread.ops.iter().peekable();
    for &(at, call) in &thread.calls {
        while let Some(&&(op_start, std::cmp::Reverse(op_end), op)) = next_op.peek() {
            if op_start > at {
                break;
            }
            close_before(&mut open, op_start);
            open.push((op_end, op));
            next_op.next();
        }
        close_before(&mut open, at);
        out[call as usize] = open.last().map(|&(_, op)| op);
    }
}

/// Pops the ops that ended before `at`. Ops nest, so the ones still open lie below.
fn close_before(open: &mut Vec<(Timestamp, u32)>, at: Timestamp) {
    while open.last().is_some_and(|&(end, _)| end < at) {
        open.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepscope_model::{
        AnnotationRecord, CorrelationId, Duration, RuntimeCallKind, RuntimeCallRecord, TraceBuilder,
    };

    fn op(builder: &mut TraceBuilder, name: &str, thread: i64, start: i64, end: i64) {
        let name = builder.intern(name);
        let process = builder.process_number(1);
        builder.add_cpu_op(AnnotationRecord {
            name,
            process,
            thread: ThreadId::Number(thread),
            start: Timestamp::from_nanos(start),
            duration: Duration::from_nanos(end - start),
        });
    }

    fn call(builder: &mut TraceBuilder, thread: i64, start: i64) {
        let name = builder.intern("cudaLaunchKernel");
        let process = builder.process_number(1);
        builder.add_runtime_call(RuntimeCallRecord {
            kind: RuntimeCallKind::classify("cudaLaunchKernel"),
            name,
            process,
            thread: ThreadId::Number(thread),
            start: Timestamp::from_nanos(start),
            duration: Duration::from_nanos(1),
            correlation: CorrelationId(start as u64),
            launched_kernel: None,
        });
    }

    #[test]
    fn innermost_op_of_the_same_thread_wins() {
        let mut b = TraceBuilder::new();
        op(&mut b, "aten::conv2d", 1, 0, 100);
        op(&mut b, "aten::convolution", 1, 0, 90);
        op(&mut b, "aten::miopen_convolution", 1, 10, 50);
        op(&mut b, "aten::add_", 1, 60, 80);
        op(&mut b, "aten::mm", 2, 0, 1000);
        call(&mut b, 1, 20); // inside miopen_convolution
        call(&mut b, 1, 55); // between: convolution
        call(&mut b, 1, 70); // add_
        call(&mut b, 1, 95); // conv2d only
        call(&mut b, 1, 200); // none
        call(&mut b, 2, 5); // the other thread's op
        call(&mut b, 3, 5); // a thread without ops
        call(&mut b, 1, 10); // at an op's start: inside it
        let trace = b.finish();
        let found = launching_ops(&trace, |_| true);
        let names: Vec<Option<&str>> = found
            .op_of_call
            .iter()
            .map(|op| op.map(|r| trace.name(trace.cpu_ops.name[r as usize])))
            .collect();
        assert_eq!(
            names,
            [
                Some("aten::miopen_convolution"),
                Some("aten::convolution"),
                Some("aten::add_"),
                Some("aten::conv2d"),
                None,
                Some("aten::mm"),
                None,
                Some("aten::miopen_convolution"),
            ]
        );
    }

    #[test]
    fn no_ops_no_links() {
        let mut b = TraceBuilder::new();
        call(&mut b, 1, 5);
        let trace = b.finish();
        assert_eq!(launching_ops(&trace, |_| true).op_of_call, [None]);
    }
}
