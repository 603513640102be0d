//! Event shapes as ROCm Kineto writes them, with keys in Kineto's order.

use std::borrow::Cow;

use serde::Serialize;

/// A name that is usually a static string (kernel names are long: borrow them).
pub(crate) type Name = Cow<'static, str>;

/// Converts nanoseconds to Kineto's microseconds (3 decimals survive the division exactly
/// as far as an f64 can hold them).
#[allow(clippy::cast_precision_loss)]
pub(crate) fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// One entry of `traceEvents`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Event {
    /// A complete (`ph: "X"`) event.
    Complete(Complete),
    /// An `ac2g` flow endpoint.
    Flow(Flow),
    /// A `ph: "M"` metadata event.
    Meta(Meta),
    /// The profiler's own span (`cat: "Trace"`).
    Span(Span),
    /// A global instant (`ph: "i"`).
    Instant(Instant),
}

/// A complete event: `{"ph","cat","name","pid","tid","ts","dur","args"}`.
#[derive(Debug, Serialize)]
pub(crate) struct Complete {
    pub ph: &'static str,
    pub cat: &'static str,
    pub name: Name,
    pub pid: u32,
    pub tid: u32,
    pub ts: f64,
    pub dur: f64,
    pub args: Args,
}

/// The `args` of a complete event; each variant keeps Kineto's key order.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Args {
    Annotation(AnnotationArgs),
    CpuOp(CpuOpArgs),
    Python(PythonArgs),
    Launch(LaunchArgs),
    Runtime(RuntimeArgs),
    Memcpy(MemcpyArgs),
    Kernel(KernelArgs),
    GpuMemcpy(GpuMemcpyArgs),
}

/// `user_annotation` args.
#[derive(Debug, Serialize)]
pub(crate) struct AnnotationArgs {
    #[serde(rename = "External id")]
    pub external_id: u64,
    #[serde(rename = "Record function id")]
    pub record_function_id: u32,
    #[serde(rename = "Ev Idx")]
    pub ev_idx: u64,
}

/// `cpu_op` args (with `record_shapes`).
#[derive(Debug, Serialize)]
pub(crate) struct CpuOpArgs {
    #[serde(rename = "External id")]
    pub external_id: u64,
    #[serde(rename = "Record function id")]
    pub record_function_id: u32,
    #[serde(rename = "Concrete Inputs")]
    pub concrete_inputs: &'static [&'static str],
    #[serde(rename = "Input type")]
    pub input_type: &'static [&'static str],
    #[serde(rename = "Input Strides")]
    pub input_strides: &'static [&'static [u64]],
    #[serde(rename = "Input Dims")]
    pub input_dims: &'static [&'static [u64]],
    #[serde(rename = "Ev Idx")]
    pub ev_idx: u64,
}

/// `python_function` args.
#[derive(Debug, Serialize)]
pub(crate) struct PythonArgs {
    #[serde(rename = "Python parent id")]
    pub parent: u64,
    #[serde(rename = "Python id")]
    pub id: u64,
    #[serde(rename = "Ev Idx")]
    pub ev_idx: u64,
}

/// Kernel-launch runtime args (`hipLaunchKernel`, `hipExtModuleLaunchKernel`, ...).
#[derive(Debug, Serialize)]
pub(crate) struct LaunchArgs {
    #[serde(rename = "External id", skip_serializing_if = "Option::is_none")]
    pub external_id: Option<u64>,
    pub kernel: &'static str,
    pub cid: u32,
    pub correlation: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    #[serde(rename = "shared memory")]
    pub shared_memory: u32,
}

/// Args of any other runtime call (`hipGraphLaunch`, `hipDeviceSynchronize`, ...).
#[derive(Debug, Serialize)]
pub(crate) struct RuntimeArgs {
    #[serde(rename = "External id", skip_serializing_if = "Option::is_none")]
    pub external_id: Option<u64>,
    pub cid: u32,
    pub correlation: u64,
}

/// Memcpy runtime args; `bytes` and `kind` are strings in real ROCm traces.
#[derive(Debug, Serialize)]
pub(crate) struct MemcpyArgs {
    #[serde(rename = "External id")]
    pub external_id: u64,
    pub cid: u32,
    pub correlation: u64,
    pub src: String,
    pub dst: String,
    pub bytes: String,
    pub kind: &'static str,
}

/// GPU kernel args. Graph-replayed kernels carry neither an External id nor grid/block and
/// say `"kind": "Dispatch Task"`, as in real ROCm traces.
#[derive(Debug, Serialize)]
pub(crate) struct KernelArgs {
    #[serde(rename = "External id", skip_serializing_if = "Option::is_none")]
    pub external_id: Option<u64>,
    pub device: u32,
    pub stream: u32,
    pub correlation: u64,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u32; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<[u32; 3]>,
}

/// GPU memcpy args.
#[derive(Debug, Serialize)]
pub(crate) struct GpuMemcpyArgs {
    #[serde(rename = "External id")]
    pub external_id: u64,
    pub device: u32,
    pub stream: u32,
    pub correlation: u64,
    pub kind: &'static str,
    pub bytes: u64,
    #[serde(rename = "memory bandwidth (GB/s)")]
    pub bandwidth: f64,
}

/// An `ac2g` flow endpoint: `{"ph","id","pid","tid","ts","cat","name"[,"bp"]}`.
#[derive(Debug, Serialize)]
pub(crate) struct Flow {
    pub ph: &'static str,
    pub id: u64,
    pub pid: u32,
    pub tid: u32,
    pub ts: f64,
    pub cat: &'static str,
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bp: Option<&'static str>,
}

impl Flow {
    /// The start (`s`) of a launch-to-GPU flow, on the host.
    pub(crate) fn start(id: u64, pid: u32, tid: u32, ts: f64) -> Self {
        Self {
            ph: "s",
            id,
            pid,
            tid,
            ts,
            cat: "ac2g",
            name: "ac2g",
            bp: None,
        }
    }

    /// The end (`f`, binding to the enclosing slice) of a launch-to-GPU flow.
    pub(crate) fn finish(id: u64, pid: u32, tid: u32, ts: f64) -> Self {
        Self {
            ph: "f",
            bp: Some("e"),
            ..Self::start(id, pid, tid, ts)
        }
    }
}

/// A metadata event: `{"name","ph":"M","ts","pid","tid","args"}`.
#[derive(Debug, Serialize)]
pub(crate) struct Meta {
    pub name: &'static str,
    pub ph: &'static str,
    pub ts: f64,
    pub pid: u32,
    pub tid: u32,
    pub args: MetaArgs,
}

/// Metadata payloads.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum MetaArgs {
    Name { name: String },
    Labels { labels: String },
    SortIndex { sort_index: u64 },
}

/// The profiler span on the string-named "Spans" process, as Kineto writes it.
#[derive(Debug, Serialize)]
pub(crate) struct Span {
    pub ph: &'static str,
    pub cat: &'static str,
    pub ts: f64,
    pub dur: f64,
    pub pid: &'static str,
    pub tid: &'static str,
    pub name: &'static str,
    pub args: SpanArgs,
}

/// Args of [`Span`].
#[derive(Debug, Serialize)]
pub(crate) struct SpanArgs {
    #[serde(rename = "Op count")]
    pub op_count: u64,
}

/// A global instant event (`Iteration Start`, `Record Window End`).
#[derive(Debug, Serialize)]
pub(crate) struct Instant {
    pub name: &'static str,
    pub ph: &'static str,
    pub s: &'static str,
    pub pid: &'static str,
    pub tid: &'static str,
    pub ts: f64,
}
