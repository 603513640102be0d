//! Kernel catalogue of the demo model: a Qwen3-8B-like decoder on an MI300X, with the names
//! real SGLang/ROCm traces show (hipBLASLt Tensile GEMMs, aiter/sgl-kernel/vLLM kernels,
//! PyTorch native kernels, Triton).

/// The runtime call that launches a kernel eagerly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launcher {
    /// `hipLaunchKernel` (PyTorch and compiled HIP kernels).
    Launch,
    /// `hipExtModuleLaunchKernel` (hipBLASLt GEMMs).
    ExtModule,
    /// `hipModuleLaunchKernel` (Triton and code-object kernels).
    Module,
}

impl Launcher {
    /// Runtime API name and its roctracer callback id.
    pub(crate) fn api(self) -> (&'static str, u32) {
        match self {
            Self::Launch => ("hipLaunchKernel", 107),
            Self::ExtModule => ("hipExtModuleLaunchKernel", 65),
            Self::Module => ("hipModuleLaunchKernel", 169),
        }
    }
}

/// One kernel of the model, with its typical durations in µs.
#[derive(Debug)]
pub(crate) struct Kernel {
    /// Kernel name as the profiler records it.
    pub name: &'static str,
    /// How it is launched eagerly.
    pub launcher: Launcher,
    /// The `cpu_op` that launches it eagerly ("" for Triton kernels, which have none).
    pub op: &'static str,
    /// Duration in a decode step (batch of 32 tokens).
    pub decode_us: f64,
    /// Duration in a prefill step (2048 tokens).
    pub prefill_us: f64,
    /// Grid of an eager launch.
    pub grid: [u32; 3],
    /// Block of an eager launch.
    pub block: [u32; 3],
}

macro_rules! tensile {
    ($mt:literal, $miwt:literal) => {
        concat!(
            "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT",
            $mt,
            "_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_",
            "FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_ISA942_IU1_K1_LDSTI0_LBSPPA1024_LBSPPB256_",
            "LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT",
            $miwt,
            "_MO40_NTn1_NTA0_NTB0_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_",
            "SS1_SPO0_SRVW0_SSO0_SVW4_SK0_SKFTR0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_",
            "VSn1_VWA4_VWB4_WSGRA0_WSGRB0_WS64_WG32_8_1"
        )
    };
}

const fn k(
    name: &'static str,
    launcher: Launcher,
    op: &'static str,
    us: (f64, f64),
    grid: u32,
    block: u32,
) -> Kernel {
    Kernel {
        name,
        launcher,
        op,
        decode_us: us.0,
        prefill_us: us.1,
        grid: [grid, 1, 1],
        block: [block, 1, 1],
    }
}

use Launcher::{ExtModule, Launch, Module};

/// Token embedding lookup.
pub(crate) static EMBED: Kernel = k(
    "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)",
    Launch,
    "aten::embedding",
    (6.2, 58.0),
    2048,
    256,
);
/// First layer's input norm.
pub(crate) static RMS_NORM: Kernel = k(
    "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)",
    Launch,
    "_C::rms_norm",
    (4.6, 36.0),
    2048,
    256,
);
/// Residual add + norm.
pub(crate) static ADD_RMS_NORM: Kernel = k(
    "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
    Launch,
    "_C::fused_add_rms_norm",
    (4.9, 41.0),
    2048,
    256,
);
/// Rotary position embedding.
pub(crate) static ROPE: Kernel = k(
    "void rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
    Launch,
    "sgl_kernel::rotary_embedding",
    (5.1, 44.0),
    2048,
    512,
);
/// Decode attention over the paged KV cache.
pub(crate) static PAGED_ATTN: Kernel = k(
    "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 4, 1, ck_tile::ComposedAttention<0u, false> >(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, float, int const*, int const*, int const*, float const*, int, int, int, int, float*, float*, __hip_bfloat16*, float, float, float const*, float const*, float const*)",
    Launch,
    "_rocm_C::paged_attention",
    (27.0, 0.0),
    32,
    256,
);
/// Prefill attention (aiter flash-attention forward, varlen, causal).
pub(crate) static FMHA_FWD: Kernel = k(
    "aiter::fmha_fwd_hd128_bf16_causal_a32_rtne_pssk_group",
    Module,
    "aiter::mha_varlen_fwd",
    (0.0, 265.0),
    128,
    256,
);
/// SiLU-and-multiply of the MLP.
pub(crate) static ACT_AND_MUL: Kernel = k(
    "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i",
    Launch,
    "sgl_kernel::silu_and_mul",
    (6.4, 112.0),
    2048,
    1024,
);
/// Logits to float32 (end of the decode graph).
pub(crate) static TO_FLOAT: Kernel = k(
    "void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16tofloat32_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::bfloat16tofloat32_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    Launch,
    "aten::to",
    (8.1, 6.0),
    2432,
    512,
);
/// Decode GEMMs (skinny M = batch).
pub(crate) static DEC_QKV: Kernel = k(
    tensile!("64x32x256", "4_2"),
    ExtModule,
    "aten::mm",
    (14.2, 0.0),
    96,
    256,
);
pub(crate) static DEC_O: Kernel = k(
    tensile!("16x32x512", "1_2"),
    ExtModule,
    "aten::mm",
    (10.3, 0.0),
    128,
    256,
);
pub(crate) static DEC_GATE_UP: Kernel = k(
    tensile!("256x32x64", "4_2"),
    ExtModule,
    "aten::mm",
    (37.6, 0.0),
    96,
    256,
);
pub(crate) static DEC_DOWN: Kernel = k(
    tensile!("32x32x256", "2_2"),
    ExtModule,
    "aten::mm",
    (21.4, 0.0),
    128,
    256,
);
pub(crate) static LM_HEAD: Kernel = k(
    tensile!("256x48x64", "4_3"),
    ExtModule,
    "aten::mm",
    (142.0, 151.0),
    608,
    256,
);
/// Prefill GEMMs (M = 2048 tokens).
pub(crate) static PRE_QKV: Kernel = k(
    tensile!("256x192x64", "8_6"),
    ExtModule,
    "aten::mm",
    (0.0, 212.0),
    491_520,
    256,
);
pub(crate) static PRE_O: Kernel = k(
    tensile!("320x224x64", "8_7"),
    ExtModule,
    "aten::mm",
    (0.0, 148.0),
    229_632,
    256,
);
pub(crate) static PRE_GATE_UP: Kernel = k(
    tensile!("128x256x32", "4_8"),
    ExtModule,
    "aten::mm",
    (0.0, 742.0),
    2_949_120,
    256,
);
pub(crate) static PRE_DOWN: Kernel = k(
    tensile!("320x224x64", "8_7"),
    ExtModule,
    "aten::mm",
    (0.0, 391.0),
    229_632,
    256,
);

/// Eager kernels around a step.
pub(crate) static KV_INDICES: Kernel = k(
    "create_flashinfer_kv_indices_triton",
    Module,
    "",
    (4.7, 4.9),
    32,
    256,
);
pub(crate) static FILL: Kernel = k(
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, std::array<char*, 1ul> >(int, at::native::FillFunctor<long>, std::array<char*, 1ul>)",
    Launch,
    "aten::fill_",
    (2.9, 2.9),
    1,
    512,
);
pub(crate) static POSITIONS: Kernel = k(
    "triton_poi_fused_add_clamp_index_copy_0",
    Module,
    "",
    (3.6, 4.2),
    1,
    128,
);
pub(crate) static SOFTMAX: Kernel = k(
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    Launch,
    "aten::_softmax",
    (24.5, 4.8),
    32,
    1024,
);
pub(crate) static TOPK: Kernel = k(
    "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float const, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, unsigned int*)",
    Launch,
    "aten::topk",
    (18.8, 5.9),
    32,
    1024,
);
pub(crate) static ARGMAX: Kernel = k(
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4>)",
    Launch,
    "aten::argmax",
    (6.0, 5.4),
    32,
    512,
);

/// Kernels per transformer layer.
pub(crate) const PER_LAYER: usize = 9;
/// Kernels of a forward pass outside the layers (embedding; final norm, LM head, to-float).
pub(crate) const OUTSIDE_LAYERS: usize = 4;

/// The kernels of one layer, in launch order.
fn layer(first: bool, prefill: bool) -> [&'static Kernel; PER_LAYER] {
    let norm = if first { &RMS_NORM } else { &ADD_RMS_NORM };
    if prefill {
        [
            norm,
            &PRE_QKV,
            &ROPE,
            &FMHA_FWD,
            &PRE_O,
            &ADD_RMS_NORM,
            &PRE_GATE_UP,
            &ACT_AND_MUL,
            &PRE_DOWN,
        ]
    } else {
        [
            norm,
            &DEC_QKV,
            &ROPE,
            &PAGED_ATTN,
            &DEC_O,
            &ADD_RMS_NORM,
            &DEC_GATE_UP,
            &ACT_AND_MUL,
            &DEC_DOWN,
        ]
    }
}

/// All kernels of one forward pass (a decode graph's nodes, or a prefill's eager kernels).
pub(crate) fn forward(layers: usize, prefill: bool) -> Vec<&'static Kernel> {
    let mut out = Vec::with_capacity(layers * PER_LAYER + OUTSIDE_LAYERS);
    out.push(&EMBED);
    for i in 0..layers {
        out.extend(layer(i == 0, prefill));
    }
    out.extend([&ADD_RMS_NORM, &LM_HEAD, &TO_FLOAT]);
    out
}

/// True for attention kernels, whose time grows with the context.
pub(crate) fn is_attention(kernel: &Kernel) -> bool {
    std::ptr::eq(kernel, &PAGED_ATTN) || std::ptr::eq(kernel, &FMHA_FWD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_sizes() {
        assert_eq!(forward(36, false).len(), 36 * PER_LAYER + OUTSIDE_LAYERS);
        assert_eq!(forward(2, true).len(), 2 * PER_LAYER + OUTSIDE_LAYERS);
        assert!(forward(1, false).iter().all(|k| k.decode_us > 0.0));
        assert!(forward(1, true).iter().all(|k| k.prefill_us > 0.0));
        assert!(DEC_QKV.name.starts_with("Cijk_Alik_Bljk_BBS_BH_"));
        assert!(is_attention(&PAGED_ATTN) && !is_attention(&ROPE));
    }
}
