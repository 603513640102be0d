//! What a host runtime call does, from its name alone.

/// The role of a CUDA/HIP runtime or driver call in a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuntimeCallKind {
    /// Launches GPU work directly: a kernel, a memcpy or a memset.
    EagerLaunch,
    /// Replays a captured graph (`cudaGraphLaunch`, `hipGraphLaunch`, variants).
    GraphLaunch,
    /// Starts stream capture (`cudaStreamBeginCapture`, `hipStreamBeginCapture`).
    CaptureBegin,
    /// Ends stream capture.
    CaptureEnd,
    /// Instantiates a captured graph into an executable graph.
    GraphInstantiate,
    /// Blocks the host until GPU work finishes.
    Synchronize,
    /// Anything else.
    Other,
}

impl RuntimeCallKind {
    /// Classifies a runtime or driver API name. Version and stream suffixes (`_v2`,
    /// `_spt`, `_ptsz`, `_v10000` as Nsight writes them) are ignored.
    pub fn classify(name: &str) -> Self {
        let base = strip_suffixes(name);
        let lower_tail = base.trim_start_matches(|c: char| c.is_ascii_lowercase());
        match lower_tail {
            "GraphLaunch" => return Self::GraphLaunch,
            "StreamBeginCapture" | "StreamBeginCaptureToGraph" => return Self::CaptureBegin,
            "StreamEndCapture" => return Self::CaptureEnd,
            _ => {}
        }
        if lower_tail.starts_with("GraphInstantiate") {
            return Self::GraphInstantiate;
        }
        if lower_tail.ends_with("Synchronize") {
            return Self::Synchronize;
        }
        if is_launch(lower_tail) {
            return Self::EagerLaunch;
        }
        Self::Other
    }

    /// A short stable name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EagerLaunch => "eager_launch",
            Self::GraphLaunch => "graph_launch",
            Self::CaptureBegin => "capture_begin",
            Self::CaptureEnd => "capture_end",
            Self::GraphInstantiate => "graph_instantiate",
            Self::Synchronize => "synchronize",
            Self::Other => "other",
        }
    }
}

fn is_launch(tail: &str) -> bool {
    tail.contains("LaunchKernel")
        || tail.contains("LaunchCooperativeKernel")
        || tail == "ModuleLaunchKernel"
        || tail == "LaunchKernelExC"
        || (tail.starts_with("Memcpy") && !tail.contains("Symbol") && !tail.contains("Peer"))
        || tail.starts_with("MemcpyPeer")
        || tail.starts_with("Memset")
}

fn strip_suffixes(name: &str) -> &str {
    let mut base = name;
    loop {
        let before = base;
        for suffix in ["_spt", "_ptsz", "_ptds"] {
            base = base.strip_suffix(suffix).unwrap_or(base);
        }
        if let Some(pos) = base.rfind("_v") {
            if base[pos + 2..].bytes().all(|b| b.is_ascii_digit()) && pos + 2 < base.len() {
                base = &base[..pos];
            }
        }
        if base.len() == before.len() {
            return base;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RuntimeCallKind as K;

    #[test]
    fn classifies_cuda_and_hip_names() {
        assert_eq!(K::classify("cudaGraphLaunch"), K::GraphLaunch);
        assert_eq!(K::classify("hipGraphLaunch"), K::GraphLaunch);
        assert_eq!(K::classify("cuGraphLaunch_ptsz"), K::GraphLaunch);
        assert_eq!(K::classify("cudaGraphLaunch_v10000"), K::GraphLaunch);
        assert_eq!(K::classify("hipStreamBeginCapture"), K::CaptureBegin);
        assert_eq!(K::classify("hipStreamEndCapture"), K::CaptureEnd);
        assert_eq!(
            K::classify("hipGraphInstantiateWithFlags"),
            K::GraphInstantiate
        );
        assert_eq!(K::classify("hipDeviceSynchronize"), K::Synchronize);
        assert_eq!(K::classify("cudaStreamSynchronize"), K::Synchronize);
        assert_eq!(K::classify("hipLaunchKernel"), K::EagerLaunch);
        assert_eq!(K::classify("hipExtModuleLaunchKernel"), K::EagerLaunch);
        assert_eq!(K::classify("cuLaunchKernel"), K::EagerLaunch);
        assert_eq!(K::classify("cudaLaunchKernelExC_v11060"), K::EagerLaunch);
        assert_eq!(K::classify("cudaMemcpyAsync"), K::EagerLaunch);
        assert_eq!(K::classify("hipMemsetAsync"), K::EagerLaunch);
        assert_eq!(K::classify("hipStreamGetCaptureInfo"), K::Other);
        assert_eq!(K::classify("hipGetDevicePropertiesR0600"), K::Other);
    }
}
