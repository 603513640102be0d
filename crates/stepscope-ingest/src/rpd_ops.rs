//! What rocmProfileData's operation types are, for both of its readers (the SQLite
//! database and rpd2tracing's JSON): GPU work of a kind with its name, a barrier, or a type
//! not known to rpdTracer.

use stepscope_model::GpuEventKind;

/// What an operation of a type is: GPU work of a kind (and its name), a barrier packet,
/// or a type this reader does not know (`known: false`) that is read as a kernel when its
/// description names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpClass {
    /// The GPU work it is, with its name; `None`: a barrier or an unknown type with no name.
    pub work: Option<(GpuEventKind, String)>,
    /// A barrier (or AQL marker) packet: it waits, it does no work.
    pub barrier: bool,
    /// One of the types rpdTracer is known to write.
    pub known: bool,
}

/// The model's kind and name of an operation type. Kernels are `KernelExecution` (eager
/// launches) and `Task` (the nodes of a graph replay, as ROCm's tracer files them); copies
/// and fills are named as the PyTorch profiler names them; barrier and marker packets are
/// no work. Any other type is unknown: read as a kernel when its description holds a name.
pub(crate) fn op_kind(op_type: &str, description: String) -> OpClass {
    let work = |kind, name: String| OpClass {
        work: Some((kind, name)),
        barrier: false,
        known: true,
    };
    let copy = |direction: &str| work(GpuEventKind::Memcpy, format!("Memcpy {direction}"));
    match op_type {
        "KernelExecution" | "Task" => {
            let name = if description.is_empty() {
                op_type.to_owned()
            } else {
                description
            };
            work(GpuEventKind::Kernel, name)
        }
        "CopyHostToDevice" => copy("HtoD"),
        "CopyDeviceToHost" => copy("DtoH"),
        "CopyDeviceToDevice" => copy("DtoD"),
        "CopyHostToHost" => copy("HtoH"),
        other if other.starts_with("Copy") => copy(other.trim_start_matches("Copy")),
        other if other.starts_with("Fill") => {
            work(GpuEventKind::Memset, "Memset (Device)".to_owned())
        }
        other if other.starts_with("Barrier") || other == "Marker" => OpClass {
            work: None,
            barrier: true,
            known: true,
        },
        _ => OpClass {
            work: (!description.trim().is_empty()).then_some((GpuEventKind::Kernel, description)),
            barrier: false,
            known: false,
        },
    }
}
