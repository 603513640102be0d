//! The host/GPU timeline builder: a host clock that launches work and a single GPU stream that
//! runs it in order, emitting events as ROCm Kineto records them.

use super::events::{
    AnnotationArgs, Args, Complete, CpuOpArgs, Event, Flow, GpuMemcpyArgs, KernelArgs, LaunchArgs,
    MemcpyArgs, Name, PythonArgs, RuntimeArgs, us,
};
use super::kernels::{Kernel, is_attention};
use crate::rng::Rng;

/// Host process and thread (the SGLang scheduler).
pub(crate) const HOST_PID: u32 = 251;
/// GPU lane: Kineto files ROCm GPU events under pid = device, tid = stream.
pub(crate) const GPU_DEVICE: u32 = 2;
/// The stream every kernel runs on.
pub(crate) const GPU_STREAM: u32 = 0;
/// Python id of the frame above the first recorded one.
const PY_ROOT: u64 = 1_150_227;

/// Events collected per group, each with its start in ns (Kineto writes the groups in this
/// order: CPU ops and annotations, Python frames, runtime calls, flows, GPU activity).
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub host: Vec<(u64, Event)>,
    pub python: Vec<(u64, Event)>,
    pub runtime: Vec<(u64, Event)>,
    pub flows: Vec<(u64, Event)>,
    pub gpu: Vec<(u64, Event)>,
}

/// Which kind of forward pass a kernel runs in (selects its duration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Decode,
    Prefill,
}

/// An open `cpu_op` or `user_annotation`.
#[derive(Debug)]
pub(crate) struct Open {
    pub ext: u64,
    start: u64,
    ev_idx: u64,
    cat: &'static str,
    name: Name,
}

#[derive(Debug)]
struct PyFrame {
    id: u64,
    parent: u64,
    start: u64,
    name: &'static str,
}

/// The timeline under construction.
#[derive(Debug)]
pub(crate) struct Builder {
    pub rng: Rng,
    /// Host clock, ns.
    pub now: u64,
    /// The GPU stream is busy until this time, ns.
    gpu_free: u64,
    next_corr: u64,
    next_ext: u64,
    next_py: u64,
    ev_idx: u64,
    py_ev_idx: u64,
    py_stack: Vec<PyFrame>,
    /// Scale of attention kernel time (grows with the context).
    pub attn_scale: f64,
    pub out: Sink,
}

impl Builder {
    /// A builder whose clocks start at `start_ns`.
    pub(crate) fn new(rng: Rng, start_ns: u64) -> Self {
        Self {
            rng,
            now: start_ns,
            gpu_free: start_ns,
            next_corr: 91_052,
            next_ext: 219_580,
            next_py: 1_150_346,
            ev_idx: 33_210,
            py_ev_idx: 1_206_287,
            py_stack: Vec::new(),
            attn_scale: 1.0,
            out: Sink::default(),
        }
    }

    fn corr(&mut self) -> u64 {
        self.next_corr += 1;
        self.next_corr
    }

    fn ext(&mut self) -> u64 {
        self.next_ext += 1;
        self.next_ext
    }

    /// A random duration in `[lo_us, hi_us)`, in ns.
    pub(crate) fn ns(&mut self, lo_us: f64, hi_us: f64) -> u64 {
        (self.rng.range(lo_us, hi_us) * 1000.0).round() as u64
    }

    /// Host time passes (Python work not otherwise recorded).
    pub(crate) fn idle(&mut self, lo_us: f64, hi_us: f64) {
        self.now += self.ns(lo_us, hi_us);
    }

    /// The time when the GPU stream goes idle.
    pub(crate) fn gpu_free(&self) -> u64 {
        self.gpu_free
    }

    /// Opens a Python frame at the current time.
    pub(crate) fn py_begin(&mut self, name: &'static str) {
        let parent = self.py_stack.last().map_or(PY_ROOT, |f| f.id);
        self.next_py += 1;
        self.py_stack.push(PyFrame {
            id: self.next_py,
            parent,
            start: self.now,
            name,
        });
        self.idle(0.2, 1.0);
    }

    /// Closes the innermost Python frame.
    pub(crate) fn py_end(&mut self) {
        self.idle(0.2, 1.0);
        let Some(frame) = self.py_stack.pop() else {
            return;
        };
        self.py_ev_idx += 1;
        let event = complete(
            "python_function",
            frame.name.into(),
            (HOST_PID, HOST_PID),
            (frame.start, self.now),
            Args::Python(PythonArgs {
                parent: frame.parent,
                id: frame.id,
                ev_idx: self.py_ev_idx,
            }),
        );
        self.out.python.push((frame.start, event));
    }

    /// Opens a `cpu_op` or `user_annotation`.
    pub(crate) fn op_begin(&mut self, cat: &'static str, name: Name) -> Open {
        self.ev_idx += 1;
        let open = Open {
            ext: self.ext(),
            start: self.now,
            ev_idx: self.ev_idx,
            cat,
            name,
        };
        self.idle(0.6, 2.5);
        open
    }

    /// Closes an op opened by [`Builder::op_begin`].
    pub(crate) fn op_end(&mut self, open: Open) {
        self.idle(0.5, 2.0);
        let args = if open.cat == "cpu_op" {
            let (concrete, types, strides, dims) = super::ops::shapes(&open.name);
            Args::CpuOp(CpuOpArgs {
                external_id: open.ext,
                record_function_id: 0,
                concrete_inputs: concrete,
                input_type: types,
                input_strides: strides,
                input_dims: dims,
                ev_idx: open.ev_idx,
            })
        } else {
            Args::Annotation(AnnotationArgs {
                external_id: open.ext,
                record_function_id: 0,
                ev_idx: open.ev_idx,
            })
        };
        let event = complete(
            open.cat,
            open.name,
            (HOST_PID, HOST_PID),
            (open.start, self.now),
            args,
        );
        self.out.host.push((open.start, event));
    }

    /// A runtime call that launches nothing (it still gets a correlation id).
    pub(crate) fn runtime(
        &mut self,
        name: &'static str,
        cid: u32,
        ext: Option<u64>,
        dur_us: (f64, f64),
    ) {
        let correlation = self.corr();
        let start = self.now;
        self.now += self.ns(dur_us.0, dur_us.1);
        let args = Args::Runtime(RuntimeArgs {
            external_id: ext,
            cid,
            correlation,
        });
        let event = complete(
            "cuda_runtime",
            name.into(),
            (HOST_PID, HOST_PID),
            (start, self.now),
            args,
        );
        self.out.runtime.push((start, event));
    }

    /// `hipDeviceSynchronize`: the host waits until the GPU stream is idle.
    pub(crate) fn device_sync(&mut self) {
        let correlation = self.corr();
        let start = self.now;
        self.now = self.now.max(self.gpu_free) + self.ns(3.0, 9.0);
        let args = Args::Runtime(RuntimeArgs {
            external_id: None,
            cid: 48,
            correlation,
        });
        let event = complete(
            "cuda_runtime",
            "hipDeviceSynchronize".into(),
            (HOST_PID, HOST_PID),
            (start, self.now),
            args,
        );
        self.out.runtime.push((start, event));
    }

    /// Duration of one run of `kernel`, in ns.
    fn kernel_ns(&mut self, kernel: &Kernel, stage: Stage) -> u64 {
        let base = match stage {
            Stage::Decode => kernel.decode_us,
            Stage::Prefill => kernel.prefill_us,
        };
        let scale = if is_attention(kernel) {
            self.attn_scale
        } else {
            1.0
        };
        let jitter = self.rng.range(0.95, 1.05);
        ((base * scale * jitter * 1000.0).round() as u64).max(1000)
    }

    /// Launches one kernel eagerly, inside its `cpu_op` when it has one.
    pub(crate) fn eager_kernel(&mut self, kernel: &'static Kernel, stage: Stage) {
        if kernel.op.is_empty() {
            self.launch(kernel, None, stage);
            return;
        }
        let op = self.op_begin("cpu_op", kernel.op.into());
        self.idle(1.0, 4.0);
        self.launch(kernel, Some(op.ext), stage);
        self.op_end(op);
    }

    /// The launch runtime call, its kernel on the GPU and the `ac2g` flow between them.
    fn launch(&mut self, kernel: &'static Kernel, ext: Option<u64>, stage: Stage) {
        let correlation = self.corr();
        let (api, cid) = kernel.launcher.api();
        let start = self.now;
        let call = self.ns(4.0, 9.5);
        let gpu_start = self.gpu_free.max(start + self.ns(6.0, 16.0)) + self.ns(0.5, 3.0);
        let dur = self.kernel_ns(kernel, stage);
        self.now += call;
        self.gpu_free = gpu_start + dur;
        let launch = Args::Launch(LaunchArgs {
            external_id: ext,
            kernel: kernel.name,
            cid,
            correlation,
            grid: kernel.grid,
            block: kernel.block,
            shared_memory: if kernel.launcher == super::kernels::Launcher::Module {
                2048
            } else {
                0
            },
        });
        let host = (HOST_PID, HOST_PID);
        let event = complete("cuda_runtime", api.into(), host, (start, self.now), launch);
        self.out.runtime.push((start, event));
        self.flow(
            Flow::start(correlation, HOST_PID, HOST_PID, us(start)),
            start,
        );
        let args = KernelArgs {
            external_id: ext,
            device: GPU_DEVICE,
            stream: GPU_STREAM,
            correlation,
            kind: "Dispatch Kernel",
            grid: Some(kernel.grid),
            block: Some(kernel.block),
        };
        self.gpu_kernel(kernel.name, (gpu_start, gpu_start + dur), args);
    }

    fn flow(&mut self, flow: Flow, ts: u64) {
        self.out.flows.push((ts, Event::Flow(flow)));
    }

    /// A kernel on the GPU lane and the flow end that points at it.
    fn gpu_kernel(&mut self, name: &'static str, span: (u64, u64), args: KernelArgs) {
        let flow = Flow::finish(args.correlation, GPU_DEVICE, GPU_STREAM, us(span.0));
        self.flow(flow, span.0);
        let lane = (GPU_DEVICE, GPU_STREAM);
        let event = complete("kernel", name.into(), lane, span, Args::Kernel(args));
        self.out.gpu.push((span.0, event));
    }

    /// `hipGraphLaunch` of a captured graph; its kernels share the launch's correlation and
    /// run back to back. With `record` false the kernels still take GPU time but are not
    /// written (the ROCm replay-loss symptom).
    pub(crate) fn graph_launch(&mut self, nodes: &[&'static Kernel], record: bool) -> u64 {
        let correlation = self.corr();
        let start = self.now;
        #[allow(clippy::cast_precision_loss)]
        let per_node = nodes.len() as f64;
        self.now += self.ns(2.6 * per_node + 20.0, 3.1 * per_node + 30.0);
        let args = Args::Runtime(RuntimeArgs {
            external_id: None,
            cid: 215,
            correlation,
        });
        let host = (HOST_PID, HOST_PID);
        let event = complete(
            "cuda_runtime",
            "hipGraphLaunch".into(),
            host,
            (start, self.now),
            args,
        );
        self.out.runtime.push((start, event));
        // Real ROCm traces mark the graph launch with a flow end on the host thread.
        self.flow(
            Flow::finish(correlation, HOST_PID, HOST_PID, us(start)),
            start,
        );
        let mut t = self.gpu_free.max(start + self.ns(12.0, 16.0));
        for node in nodes {
            let dur = self.kernel_ns(node, Stage::Decode);
            if record {
                let args = KernelArgs {
                    external_id: None,
                    device: GPU_DEVICE,
                    stream: GPU_STREAM,
                    correlation,
                    kind: "Dispatch Task",
                    grid: None,
                    block: None,
                };
                self.gpu_kernel(node.name, (t, t + dur), args);
            }
            t += dur + self.node_gap();
        }
        self.gpu_free = t;
        correlation
    }

    /// Gap between two graph nodes: mostly a few ns, sometimes a microsecond or two.
    fn node_gap(&mut self) -> u64 {
        if self.rng.chance(0.9) {
            self.rng.between(1, 40)
        } else {
            self.rng.between(200, 2000)
        }
    }

    /// A host/device copy inside its `aten::copy_`: `hipMemcpyWithStream` (blocking: the host
    /// waits for the stream) for DtoH, `hipMemcpyAsync` for HtoD.
    pub(crate) fn memcpy(&mut self, to_host: bool, bytes: u64) {
        let op = self.op_begin("cpu_op", "aten::copy_".into());
        self.idle(1.0, 3.0);
        let correlation = self.corr();
        let start = self.now;
        let gpu_start = self.gpu_free.max(start + self.ns(4.0, 9.0));
        let dur = self.ns(3.8, 5.5);
        self.gpu_free = gpu_start + dur;
        self.now = if to_host {
            self.gpu_free + self.ns(5.0, 12.0)
        } else {
            start + self.ns(5.0, 8.0)
        };
        let copy = Copy {
            to_host,
            bytes,
            ext: op.ext,
            correlation,
            call: (start, self.now),
            gpu: (gpu_start, gpu_start + dur),
        };
        self.copy_events(&copy);
        self.op_end(op);
    }

    /// The runtime call, flow and GPU event of one copy.
    fn copy_events(&mut self, copy: &Copy) {
        let (api, cid, kind, hip_kind, name) = if copy.to_host {
            (
                "hipMemcpyWithStream",
                153,
                "DtoH",
                "2",
                "Memcpy DtoH (Device -> Host)",
            )
        } else {
            (
                "hipMemcpyAsync",
                134,
                "HtoD",
                "1",
                "Memcpy HtoD (Host -> Device)",
            )
        };
        let device_ptr = format!("0x7f1bac2{:05x}", copy.correlation % 0x10_0000);
        let host_ptr = "0x555a54d33940".to_owned();
        let (src, dst) = if copy.to_host {
            (device_ptr, host_ptr)
        } else {
            (host_ptr, device_ptr)
        };
        let args = Args::Memcpy(MemcpyArgs {
            external_id: copy.ext,
            cid,
            correlation: copy.correlation,
            src,
            dst,
            bytes: copy.bytes.to_string(),
            kind: hip_kind,
        });
        let start = copy.call.0;
        let event = complete(
            "cuda_runtime",
            api.into(),
            (HOST_PID, HOST_PID),
            copy.call,
            args,
        );
        self.out.runtime.push((start, event));
        self.flow(
            Flow::start(copy.correlation, HOST_PID, HOST_PID, us(start)),
            start,
        );
        self.gpu_copy(copy, kind, name);
    }

    /// The GPU side of one copy and the flow end pointing at it.
    fn gpu_copy(&mut self, copy: &Copy, kind: &'static str, name: &'static str) {
        let gpu_start = copy.gpu.0;
        let finish = Flow::finish(copy.correlation, GPU_DEVICE, GPU_STREAM, us(gpu_start));
        self.flow(finish, gpu_start);
        #[allow(clippy::cast_precision_loss)]
        let bandwidth = copy.bytes as f64 / (copy.gpu.1 - copy.gpu.0) as f64;
        let args = Args::GpuMemcpy(GpuMemcpyArgs {
            external_id: copy.ext,
            device: GPU_DEVICE,
            stream: GPU_STREAM,
            correlation: copy.correlation,
            kind,
            bytes: copy.bytes,
            bandwidth,
        });
        let lane = (GPU_DEVICE, GPU_STREAM);
        let event = complete("gpu_memcpy", name.into(), lane, copy.gpu, args);
        self.out.gpu.push((gpu_start, event));
    }
}

/// One host/device copy: its call on the host and its run on the GPU, ns.
#[derive(Debug)]
struct Copy {
    to_host: bool,
    bytes: u64,
    ext: u64,
    correlation: u64,
    call: (u64, u64),
    gpu: (u64, u64),
}

/// A complete event on `lane` (pid, tid) covering `span` (start, end) in ns.
fn complete(
    cat: &'static str,
    name: Name,
    lane: (u32, u32),
    span: (u64, u64),
    args: Args,
) -> Event {
    Event::Complete(Complete {
        ph: "X",
        cat,
        name,
        pid: lane.0,
        tid: lane.1,
        ts: us(span.0),
        dur: us(span.1 - span.0),
        args,
    })
}
