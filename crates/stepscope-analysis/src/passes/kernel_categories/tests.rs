//! Unit tests of the kernel and op category tables.
use super::*;
use stepscope_model::{
    CorrelationId, Duration, GpuEventRecord, ProcessId, StreamId, Timestamp, TraceBuilder,
};

fn category_of(name: &str) -> String {
    let table = KernelCategories::embedded();
    table
        .name(table.classify(name, GpuEventKind::Kernel))
        .to_owned()
}

#[track_caller]
fn assert_all(expected: &str, names: &[&str]) {
    for name in names {
        assert_eq!(category_of(name), expected, "{name}");
    }
}

#[test]
fn embedded_table_parses_and_orders_categories() {
    let table = KernelCategories::embedded();
    let names: Vec<&str> = table.names().iter().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "gemm",
            "attention",
            "moe",
            "normalization",
            "activation",
            "rope",
            "embedding",
            "communication",
            "quantization",
            "softmax",
            "sampling",
            "reduce",
            "elementwise",
            "convolution",
            "memcpy_memset",
            "other",
        ]
    );
    assert_eq!(table.other(), CategoryId(15));
    assert_eq!(table.id("memcpy_memset"), Some(table.memory()));
    for (i, name) in table.names().iter().enumerate() {
        let id = CategoryId(i as u16);
        assert_eq!(table.id(name), Some(id));
        assert!(
            !table.description(id).is_empty(),
            "{name} has no description"
        );
    }
}

#[test]
fn gemm_kernels_of_both_vendors() {
    assert_all(
        "gemm",
        &[
            "Cijk_Ailk_Bljk_BBS_BH_MT64x16x256_MI16x16x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3",
            "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1",
            "nvjet_tst_128x64_64x8_1x2_h_bz_coopA_NTN",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)",
            "volta_sgemm_128x64_nn",
            "void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>(int, int, int, __hip_bfloat16 const*)",
            "_w8a8_block_fp8_matmul",
            "triton_tem_fused_addmm_0",
        ],
    );
}

#[test]
fn attention_kernels() {
    assert_all(
        "attention",
        &[
            "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, false>(Flash_fwd_params)",
            "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
            "_fwd_kernel_stage1",
            "_fwd_grouped_kernel_stage1",
            "attn_fwd",
            "kernel_unified_attention_2d",
            "aiter::fmha_fwd_hd128_bf16_rtz",
            "_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipelineQRKSVSAsyncINS_36BlockGemm",
            "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 4>",
            "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u>(flashinfer::BatchDecodeParams)",
            "void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*)",
        ],
    );
}

/// Attention kernels of FlashInfer, aiter and CK, named as profilers print them (sources: the
/// libraries' kernel tables and `__global__` definitions, published profiler kernel tables).
#[test]
fn attention_kernels_of_flashinfer_aiter_and_ck() {
    assert_all(
        "attention",
        &[
            // FlashInfer: FA2/FA3 templates, MLA, persistent and POD attention, state merges.
            "void flashinfer::BatchPrefillWithRaggedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 1u, 8u, 8u, 8u, 4u, 1u, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<false, false, false, false> >, flashinfer::BatchPrefillRaggedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >",
            "void flashinfer::PrefillWithKVCacheKernel<flashinfer::CollectiveMainloop, flashinfer::CollectiveEpilogue, flashinfer::AttentionKernelTraits, (flashinfer::MaskMode)1, flashinfer::StandardAttention, flashinfer::BatchPrefillRaggedParams>",
            "void flashinfer::mla::BatchMLAPagedAttentionKernel<flashinfer::mla::KernelTraits<true, 2u, 4u, 8u, 8u, 512u, 64u, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int>, flashinfer::MLAParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::MLAParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)",
            "void flashinfer::mla::hopper::BatchMLAPageAttentionHopperKernel<flashinfer::mla::hopper::HopperKernelTraits<true, 64u, 512u, 64u, 2u, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int> >(flashinfer::MLAParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)",
            "void flashinfer::PersistentKernelTemplate<flashinfer::BlockBatchPagedAttentionPersistent<flashinfer::KernelTraits<(flashinfer::MaskMode)0, 128u, 2u, 4u, 8u, 8u, 4u, 1u, (flashinfer::PosEncodingMode)0, __half, __half, __half, float, int, StandardAttention<false> >, PersistentParams>, flashinfer::BlockBatchReductionPersistent<flashinfer::StateReductionKernelTraits<128u, 4u, 128u, __half, __half, int> > >",
            "void flashinfer::PODWithKVCacheTensorKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 2u, 4u, 8u, 8u, 4u, 1u>, flashinfer::KernelTraits<(flashinfer::MaskMode)0, 16u, 1u, 8u, 8u, 8u, 1u, 4u>, false, flashinfer::PrefillPlanInfo, flashinfer::DecodePlanInfo>",
            "void flashinfer::MergeStateKernel<8u, __nv_bfloat16, __nv_bfloat16>(__nv_bfloat16*, float*, __nv_bfloat16*, float*, __nv_bfloat16*, float*, unsigned int, unsigned int)",
            "void flashinfer::MergeStateInPlaceKernel<8u, __nv_bfloat16>(__nv_bfloat16*, float*, __nv_bfloat16*, float*, unsigned char*, unsigned int, unsigned int)",
            "void flashinfer::PersistentVariableLengthMergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, __nv_bfloat16, int>(__nv_bfloat16*, float*, int*, __nv_bfloat16*, float*, unsigned int, unsigned int*, unsigned int, unsigned int)",
            // FlashInfer's trtllm-gen, CUTLASS and CuTe-DSL FMHA.
            "fmhaSm100fKernel_QkvBfloat16OBfloat16HQk576HV512HVPerCta256PagedKvDenseP64MultiCtasKvVarSeqQ8Kv128StaticSwapsAbForGen",
            "fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP64VarSeqQ128Kv128PersistentContext",
            "void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaFwdKernelTmaWarpspecialized<cute::tuple<cute::C<256>, cute::C<128>, cute::C<128> > > >(cutlass::fmha::kernel::Sm100FmhaFwdKernelTmaWarpspecialized::Params)",
            "kernel_cutlass_kernel_flashinfercute_dslsparsesm120_blk64flash_fwd_sm120BlockSparseAttnForwardSm120Blk64_object_at__tensor0000o12811101213",
            // aiter assembly kernels: paged attention (and its reduce), MLA, FMHA v3/v4.
            "_ZN5aiter42pa_bf16_pertokenFp8_gqa10_1tg_4w_mtp3_msk1E",
            "_ZN5aiter42PA_A16W8_BLK1024_1TG_4W_16mx1_64nx4_MTP_PSE",
            "_ZN5aiter41pa_bf16_pertokenInt8_gqa8_1tg_4w_mtp_msk1E",
            "_ZN5aiter28pa_bf16_noquant_gqa16_1tg_4wE",
            "_ZN5aiter26pa_p16_d128_reduce_ps_bf16E",
            "_ZN5aiter36mla_a8w8_qh16_qseqlen1_gqaratio16_psE",
            "_ZN5aiter40mla_pfl_qh192_vh128_m32x8_n128x1_causal1E",
            "_ZN5aiter32fmha_fwd_hd192_hd128_bf16_causalE",
            "_ZN5aiter28fmha_fwd_hd128_mxfp4_gfx950E",
            "_ZN5aiter23fmha_bwd_hd128_odo_bf16E",
            "_ZN5aiter30fmha_fwd_qnorm_rope_hd128_bf16E",
            // CK / ck_tile FMHA (split-KV, combine, append-KV with rotary, backward), legacy CK.
            "ck_tile::kentry<ck_tile::gfx950_t, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSSageAttn<ck_tile::BlockFmhaPipelineProblem<ck_tile::pk_float4_e2m1_t, ck_tile::pk_float4_e2m1_t, ck_tile::pk_float4_e2m1_t, float, float, float>>>>",
            "_ZN7ck_tile6kentryILi64ELi1ENS_28FmhaFwdSplitKVCombineKernelINS_35BlockFmhaFwdSplitKVCombinePipelineINS_42BlockFmhaSplitKVCombinePipelineProblem",
            "_ZN7ck_tile6kentryILi64ELi1ENS_21FmhaFwdAppendKVKernelINS_25BlockFmhaFwdAppendKVPipelineINS_32BlockFmhaFwdAppendKVPipelineProblemIDF16bLb1ELNS_18RotaryEmbeddingEnumE1E",
            "_ZN7ck_tile6kentryILi64ELi1ENS_26FmhaBwdOGradDotOKernelINS_32BlockFmhaBwdOGradDotO",
            "_ZN2ck46kernel_grouped_gemm_softmax_gemm_xdl_cshuffle_v1INS_",
            "kernel_batched_gemm_softmax_gemm_xdl_cshuffle_v1",
        ],
    );
}

/// SageAttention, xformers / PyTorch memory-efficient attention, FlashAttention 2/3, FlashMLA
/// and cuDNN SDPA kernels.
#[test]
fn attention_kernels_of_sage_xformers_flash_and_cudnn() {
    assert_all(
        "attention",
        &[
            // SageAttention (CUDA, SageAttention3 on SM100, aiter's Triton port).
            "void qk_int_sv_f8_attn_kernel<128u, 64u, 32u, 64u, 128u, (DataType)0, (QuantGranularity)2, (QuantGranularity)2, float, true, __half, (ComputeUnit)0, (MaskMode)1, false, true, false>(signed char*, signed char*, signed char*, __half*, float*, float*, float*, float*, float*)",
            "void flash::compute_attn_ws<Flash_fwd_kernel_traits<128, 128, 128, 3, 1, false, cutlass::float_e2m1_t, cutlass::bfloat16_t>, true, flash::StaticPersistentTileScheduler>(Flash_fwd_params, flash::CollectiveMainloopFwd::Params, flash::CollectiveEpilogueFwd::Params, flash::StaticPersistentTileScheduler::Params)",
            "sage_fwd_mxfp4",
            // xformers / PyTorch memory-efficient attention, FlashAttention 2/3, FlashMLA, cuDNN.
            "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)",
            "fmha_cutlassB_bf16_aligned_128x64_k128_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, true, 128, 64, 128, false>::Params)",
            "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, 4, 2, true>(Flash_fwd_params)",
            "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, false, false, true, true, false, true, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, true> > > >(flash::FlashAttnFwdSm90<...>::Params)",
            "void flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)",
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_cga1x1x1_kernel0_0",
        ],
    );
}

/// Triton attention kernels (vLLM, SGLang, aiter, FlashAttention's AMD backend, xformers,
/// Inductor's FlexAttention) are named after their `@triton.jit` function.
#[test]
fn triton_attention_kernels() {
    assert_all(
        "attention",
        &[
            "kernel_unified_attention_3d",
            "kernel_paged_attention_2d",
            "_fwd_kernel_stage2",
            "_fwd_kernel_unified",
            "_fwd_grouped_kernel_stage1_rope",
            "_sparse_fwd_kernel",
            "_sparse_fwd_kernel_flash_decode_stage1",
            "_paged_attn_decode_v1_wo_dot_kernel",
            "merge_state_kernel",
            "merge_attn_states_kernel",
            "_attn_fwd",
            "_attn_bwd_preprocess",
            "_bwd_preprocess",
            "_bwd_kernel_dkdv",
            "bwd_kernel_causal",
            "_bwd_kernel_dkdv_mxfp8",
            "la_persistent",
            "pod_persistent",
            "_fwd_kernel_splitK",
            "_splitK_reduce",
            "triton_tem_fused_flex_attention_0",
            "triton_tem_fused_flex_attention_backward_2",
        ],
    );
}

/// Kernels that sit next to attention in the same libraries keep their own category.
#[test]
fn attention_neighbours_keep_their_category() {
    assert_all(
        "normalization",
        &[
            "kernel_cutlass_kernel_flashinfernormkernelsrmsnormRMSNormKernel_object_at__tensorptrbf16gmemalign128o288028801_tensorptrbf16gmemalign16o28801_tensorptrbf16gmemalign128o288028801___True_4__0",
            "kernel_cutlass_kernel_flashinfernormkernelsfused_add_rmsnormFusedAddRMSNormKernel_object_at__tensorptrbf16gmemalign128o409640961_tensorptrbf16gmemalign128o409640961_tensorptrbf16gmemalign_0",
            "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)",
        ],
    );
    assert_all(
        "rope",
        &[
            "void flashinfer::MLARopeQuantizeKernel<false, 8u, 8u, __nv_bfloat16, long, __nv_fp8_e4m3>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_fp8_e4m3*)",
        ],
    );
    assert_all(
        "sampling",
        &[
            "void flashinfer::sampling::TopPSamplingFromProbKernel<1024u, (cub::BlockScanAlgorithm)2, (cub::BlockReduceAlgorithm)2, 4u, true, float, int>()",
        ],
    );
    assert_all(
        "communication",
        &[
            "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 8, false, false>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
        ],
    );
    // SageAttention's and aiter's Q/K/V quantization runs before the attention kernel.
    assert_all(
        "quantization",
        &[
            "quant_per_block_int8_kernel",
            "quant_query_per_thread_int8_kernel",
            "void QuantInt8Kernel<64u, 128u, 8u, false, false, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, signed char*, float*, int, int)",
            "void scaled_fp4_quant_kernel<128u, 64u, false, __nv_bfloat16>(__nv_bfloat16 const*, unsigned char*, unsigned char*, int, int, int)",
            "sage_quant_kernel",
            "sage_quant_v_kernel",
        ],
    );
    // Expert-parallel permutes share attention's `_fwd_kernel` prefix.
    assert_all(
        "moe",
        &[
            "_fwd_kernel_ep_scatter_1",
            "_fwd_kernel_ep_scatter_2",
            "_fwd_kernel_ep_gather",
            "_ZN5aiter59fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_32x128_3tg_pf3E",
        ],
    );
    // GEMM split-K reductions are not xformers' `_splitK_reduce`.
    assert_all(
        "gemm",
        &[
            "_splitk_reduce_kernel",
            "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, int const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, void*, long, float*, int*)",
            "_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_32x128E",
            "triton_tem_fused_mm_0",
        ],
    );
}

#[test]
fn moe_kernels_win_over_gemm_and_activation() {
    assert_all(
        "moe",
        &[
            "fused_moe_kernel",
            "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int, float>(float const*, bool const*, float*, int, int*, int*, int, int, int)",
            "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)",
            "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu",
            "_combined_routing_compute",
            "ck_moe_stage1_gemm",
        ],
    );
}

#[test]
fn normalization_activation_rope_kernels() {
    assert_all(
        "normalization",
        &[
            "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)",
            "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
            "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePass",
            "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int)",
            "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, false>(int, float)",
            "triton_red_fused_add_mean_mul_pow_rsqrt_0",
        ],
    );
    assert_all(
        "activation",
        &[
            "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i",
            "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
            "void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}>",
            "triton_poi_fused_addmm_gelu_view_15",
        ],
    );
    assert_all(
        "rope",
        &[
            "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
            "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>()",
            "triton_poi_fused_add_cat_mul_rotary_0",
        ],
    );
    // Table lookups are gathers, not RoPE: PyTorch's nn.Embedding, FBGEMM's table-batched
    // embeddings (forward and backward), an Inductor-fused lookup.
    assert_all(
        "embedding",
        &[
            "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>()",
            "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>(long const*, float const*, float*, int, long, int)",
            "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<float, float, 8, 32>()",
            "void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 8, 4>()",
            "triton_poi_fused_embedding_0",
        ],
    );
}

#[test]
fn communication_quantization_sampling_kernels() {
    assert_all(
        "communication",
        &[
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)",
            "void vllm::cross_device_reduce_1stage<__hip_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __hip_bfloat16*, int, int)",
            "void quickreduce::allreduce_prototype_twoshot<quickreduce::CodecQ4<__hip_bfloat16>, false>()",
        ],
    );
    assert_all(
        "quantization",
        &[
            "void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, long)",
            "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fnuz>()",
            "per_token_group_quant_8bit_kernel",
        ],
    );
    assert_all(
        "sampling",
        &[
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >()",
            "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::BlockScanAlgorithm)2, 4u, true, float, int>()",
            "void at::native::(anonymous namespace)::sbtopk::gatherTopK<float, unsigned int, 2, false>()",
        ],
    );
    assert_all(
        "softmax",
        &[
            "void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>(float*, float const*, int, int, int, bool const*, int, bool)",
            "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
            "triton_red_fused__softmax_0",
        ],
    );
    assert_all(
        "reduce",
        &[
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >()",
            "triton_red_fused_sum_3",
            "triton_per_fused_mean_mul_7",
        ],
    );
    assert_all(
        "attention",
        &["sage_fwd_kernel", "qk_int8_sv_f8_accum_f32_attn_inst_buf"],
    );
}

#[test]
fn elementwise_convolution_and_memory_kernels() {
    assert_all(
        "elementwise",
        &[
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, std::array<char*, 1ul> >(int, at::native::FillFunctor<long>, std::array<char*, 1ul>)",
            "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>()",
            "triton_poi_fused__scaled_dot_product_flash_attention_cat_transpose_view_10",
            "triton_poi_fused_constant_pad_nd_moe_forward_0",
            "batched_transpose_32x32_half",
            "void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int, int, int)",
        ],
    );
    assert_all(
        "convolution",
        &[
            "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64_gkgs",
            "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>()",
            "_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v3INS_34GridwiseGemmMultiD",
            "volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
            "MIOpenConvUni",
        ],
    );
    assert_all(
        "memcpy_memset",
        &["__amd_rocclr_copyBuffer", "__amd_rocclr_fillBufferAligned"],
    );
    assert_all("other", &["compute_position_kernel", ""]);
    let table = KernelCategories::embedded();
    for kind in [GpuEventKind::Memcpy, GpuEventKind::Memset] {
        assert_eq!(
            table.classify("Cijk_looks_like_a_gemm", kind),
            table.memory()
        );
    }
}

#[test]
fn bad_regex_names_rule_and_pattern() {
    let text = r#"
        [[category]]
        name = "gemm"
        patterns = ["(?i)gemm"]

        [[category]]
        name = "attention"
        patterns = ["attn", "(?i)flash[_"]
    "#;
    let error = KernelCategories::from_toml(text).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("rule #2"), "{message}");
    assert!(message.contains("`attention`"), "{message}");
    assert!(message.contains("pattern #2 `(?i)flash[_`"), "{message}");
    assert!(matches!(
        error,
        CategoryError::BadPattern {
            rule: 2,
            pattern_number: 2,
            ..
        }
    ));
    assert!(std::error::Error::source(&error).is_some());
}

#[test]
fn malformed_tables_are_errors() {
    let unknown_key = "[[category]]\nname = \"gemm\"\npattern = [\"gemm\"]\n";
    assert!(matches!(
        KernelCategories::from_toml(unknown_key),
        Err(CategoryError::Toml { .. })
    ));
    let empty_name = "[[category]]\nname = \"gemm\"\n[[category]]\nname = \" \"\n";
    assert!(matches!(
        KernelCategories::from_toml(empty_name),
        Err(CategoryError::EmptyName { rule: 2 })
    ));
}

#[test]
fn user_table_gets_other_last_and_memory_category() {
    let text = r#"
        [[category]]
        name = "matmul"
        description = "All GEMMs."
        patterns = ["(?i)gemm", "^Cijk_"]

        [[category]]
        name = "other"
        patterns = ["(?i)gemm_but_not_really"]

        [[category]]
        name = "everything_else"
        patterns = ["."]
    "#;
    let table = KernelCategories::from_toml(text).unwrap();
    assert_eq!(
        table.names(),
        ["matmul", "everything_else", "memcpy_memset", "other"]
    );
    assert_eq!(table.description(CategoryId(0)), "All GEMMs.");
    let classify = |name| table.name(table.classify(name, GpuEventKind::Kernel));
    assert_eq!(classify("Cijk_Alik"), "matmul");
    assert_eq!(classify("gemm_but_not_really"), "matmul", "first rule wins");
    assert_eq!(classify("rms_norm"), "everything_else");
    assert_eq!(classify(""), "other");
    assert_eq!(
        table.name(table.classify("x", GpuEventKind::Memset)),
        "memcpy_memset"
    );

    let empty = KernelCategories::from_toml("memory_category = \"copies\"").unwrap();
    assert_eq!(empty.names(), ["copies", "other"]);
    assert_eq!(empty.classify("Cijk_", GpuEventKind::Kernel), empty.other());
    assert_eq!(
        empty.classify("Memcpy", GpuEventKind::Memcpy),
        CategoryId(0)
    );
}

fn event(name: NameId, kind: GpuEventKind, process: ProcessId, start: f64) -> GpuEventRecord {
    GpuEventRecord {
        kind,
        name,
        process,
        device: 0,
        stream: StreamId(7),
        start: Timestamp::from_micros_f64(start),
        duration: Duration::from_micros_f64(1.0),
        correlation: CorrelationId(1),
        graph_id: None,
    }
}

#[test]
fn categorize_names_classifies_each_name_once_by_first_kind() {
    let mut builder = TraceBuilder::new();
    let cpu_only = builder.intern("aten::mm");
    let gemm = builder.intern("Cijk_Alik_Bljk_BBS_BH");
    let copy = builder.intern("Memcpy DtoD (Device -> Device)");
    let process = builder.process_number(1);
    let mut record = |name, kind, start| builder.add_gpu_event(event(name, kind, process, start));
    record(gemm, GpuEventKind::Kernel, 1.0);
    record(copy, GpuEventKind::Memcpy, 2.0);
    record(gemm, GpuEventKind::Kernel, 3.0);
    let trace = builder.finish();
    let table = KernelCategories::embedded();
    let categorized = categorize_names(&trace, &table);
    assert_eq!(categorized.by_name.len(), trace.names.len());
    assert_eq!(table.name(categorized.get(gemm)), "gemm");
    assert_eq!(categorized.get(copy), table.memory());
    assert_eq!(categorized.get(cpu_only), table.other());
}

fn op_category(op: &str) -> Option<String> {
    let table = KernelCategories::embedded();
    table.classify_op(op).map(|id| table.name(id).to_owned())
}

#[track_caller]
fn assert_ops(expected: &str, ops: &[&str]) {
    for op in ops {
        assert_eq!(op_category(op).as_deref(), Some(expected), "{op}");
    }
}

#[test]
fn launching_ops_with_a_clear_category() {
    assert_ops(
        "convolution",
        &[
            "aten::miopen_convolution",
            "aten::cudnn_convolution",
            "aten::convolution_backward",
            "aten::_convolution",
            "aten::conv2d",
            "aten::miopen_depthwise_convolution",
            "aten::slow_conv2d_forward",
            "aten::conv_transpose2d",
        ],
    );
    assert_ops(
        "gemm",
        &[
            "aten::mm",
            "aten::addmm",
            "aten::bmm",
            "aten::_scaled_mm",
            "_C::cutlass_scaled_mm",
            "aiter::gemm_a8w8_bpreshuffle",
            "_rocm_C::wvSplitK",
        ],
    );
    assert_ops(
        "attention",
        &[
            "aten::_flash_attention_forward",
            "aten::_scaled_dot_product_efficient_attention",
            "vllm::unified_attention_with_output",
            "aiter::mha_batch_prefill",
            "_vllm_fa2_C::varlen_fwd",
            "aiter::mla_decode_fwd",
            "_C_cache_ops::reshape_and_cache_flash",
            "sglang::store_cache",
        ],
    );
    assert_ops("softmax", &["aten::_softmax", "aten::_log_softmax"]);
}

#[test]
fn launching_ops_of_norms_sampling_collectives_and_pointwise_layers() {
    assert_ops(
        "normalization",
        &[
            "aten::native_layer_norm",
            "aten::native_batch_norm_backward",
            "aiter::rmsnorm",
            "aiter::_groupnorm_run",
            "_C::fused_add_rms_norm",
        ],
    );
    assert_ops(
        "reduce",
        &["aten::sum", "aten::mean", "aten::linalg_vector_norm"],
    );
    assert_ops(
        "sampling",
        &[
            "aten::topk",
            "aten::argmax",
            "aten::multinomial",
            "aten::sort",
            "flashinfer::top_k_top_p_sampling_from_probs",
        ],
    );
    assert_ops(
        "communication",
        &[
            "record_param_comms",
            "c10d::allreduce_",
            "vllm::all_reduce",
            "_C_custom_ar::all_reduce",
        ],
    );
    assert_ops(
        "moe",
        &["vllm::moe_forward", "_moe_C::topk_softmax", "aiter::fmoe"],
    );
    assert_ops(
        "activation",
        &[
            "sgl_kernel::silu_and_mul",
            "aten::gelu",
            "aten::threshold_backward",
        ],
    );
    assert_ops("rope", &["sgl_kernel::rotary_embedding"]);
    assert_ops(
        "embedding",
        &[
            "aten::embedding",
            "aten::embedding_dense_backward",
            "aten::embedding_bag",
            "aten::_embedding_bag",
        ],
    );
    assert_ops(
        "quantization",
        &["_C::static_scaled_fp8_quant", "aten::quantize_per_tensor"],
    );
}

#[test]
fn generic_ops_and_inductor_launches_have_no_op_category() {
    for op in [
        "aten::copy_",
        "aten::add",
        "aten::cat",
        "aten::upsample_nearest2d",
        "aten::quantile",
        "aten::fill_",
        "aten::mul",
        "aten::clamp_min",
        "aten::cumsum",
        "aten::pad",
        "aten::_pad_packed_sequence",
        "aten::_weight_norm_interface",
        "aten::_convert_weight_to_int4pack",
        "triton_poi_fused_addmm_gelu_view_15",
        "triton_red_fused__unsafe_view_add_addmm_clone_convolution_mul_native_layer_norm_slice",
        "CompiledFunction",
        "",
    ] {
        assert_eq!(op_category(op), None, "{op}");
    }
}

// Autograd functions whose kernels are mixed (TransformerEngine's `_Linear` casts, transposes
// and multiplies; `_LayerNormLinear` also normalises) and the autograd engine's wrappers,
// never the op that launches a kernel, have no rule: their kernels keep their name's category.
#[test]
fn mixed_autograd_functions_and_engine_wrappers_have_no_op_category() {
    for op in [
        "_Linear",
        "_LinearBackward",
        "_LayerNormLinear",
        "_LayerNormMLPBackward",
        "autograd::engine::evaluate_function: MmBackward0",
        "autograd::engine::evaluate_function: FlashAttnFuncBackward",
        "autograd::engine::evaluate_function: ConvolutionBackward0",
        "autograd::engine::evaluate_function: NativeLayerNormBackward0",
        "MmBackward0",
        "TokenPermuteMaskMap",
        "MoEDispatch",
        "CrossEntropyFunction",
        "DaoAILab::_causal_conv1d_fwd_cpp",
        "aiter::mhc_post",
    ] {
        assert_eq!(op_category(op), None, "{op}");
    }
}

#[test]
fn op_rules_must_name_a_defined_category_and_compile() {
    let unknown = "[[category]]\nname = \"gemm\"\n[[op]]\ncategory = \"gemmm\"\npatterns = [\"^aten::mm$\"]\n";
    let error = KernelCategories::from_toml(unknown).unwrap_err();
    assert!(
        matches!(error, CategoryError::UnknownOpCategory { rule: 1, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("`gemmm`"), "{error}");
    let bad =
        "[[category]]\nname = \"gemm\"\n[[op]]\ncategory = \"gemm\"\npatterns = [\"^aten::(mm\"]\n";
    let error = KernelCategories::from_toml(bad).unwrap_err();
    assert!(
        matches!(
            error,
            CategoryError::BadPattern {
                rules: "Op category",
                rule: 1,
                pattern_number: 1,
                ..
            }
        ),
        "{error}"
    );
    let by_name_only = KernelCategories::from_toml("[[category]]\nname = \"gemm\"\n").unwrap();
    assert!(!by_name_only.has_op_rules());
    assert_eq!(by_name_only.classify_op("aten::mm"), None);
    let memory = "[[op]]\ncategory = \"memcpy_memset\"\npatterns = [\"^aten::copy_$\"]\n";
    let table = KernelCategories::from_toml(memory).unwrap();
    assert_eq!(table.classify_op("aten::copy_"), Some(table.memory()));
}

// Op names AMD's TraceLens (AMD-AGI/TraceLens, `TraceLens/PerfModel/torch_op_mapping.py`,
// `op_categories.py` and `extensions/pseudo_ops_perf_utils.py`) maps to GEMM, CONV, NORM,
// SDPA/InferenceAttention, MoE and RoPE: the launching-op rules give the same family.
// `sglang_profiler::` names are SGLang's profiler ops, which carry a `_<n>` suffix.
#[test]
fn tracelens_gemm_ops() {
    assert_ops(
        "gemm",
        &[
            "aten::mm",
            "aten::addmm",
            "aten::bmm",
            "aten::baddbmm",
            "aten::_scaled_mm",
            "trtllm::cublas_scaled_mm",
            "bitsandbytes::int8_linear_matmul",
            "tex_ts::te_gemm_ts",
            "vllm::gemm_with_dynamic_quant",
            "vllm::rocm_unquantized_gemm",
            "vllm::rocm_aiter_triton_gemm_a8w8_blockscale",
            "vllm::_rocm_aiter_preshuffled_per_token_w8a8_gemm",
            "primus_turbo::hipblaslt_gemm_fp8",
            "primus_turbo_cpp_extension::hipblaslt_gemm_fp4",
            "aiter::gemm_a4w4",
            "aiter::_gemm_a4w4_asm",
            "aiter::gemm_a16w16",
            "aiter::gemm_a16w16_atomic_",
            "aiter::_gemm_a16w16_asm",
            "aiter::gemm_afp4wfp4_",
            "aiter::batched_gemm_a16wfp4_",
            "aiter::gemm_a8w8_ck",
            "aiter::gemm_a8w8_bpreshuffle_ck",
            "aiter::gemm_a8w8_blockscale_cktile",
            "aiter::gemm_a8w8_blockscale_bpreshuffle_ck",
            "aiter::_gemm_a8w8_blockscale_bpreshuffle_asm",
            "aiter::flatmm_a8w8_blockscale_asm",
            "aiter::gfx950_a8w8_blockscale_asm",
            "sglang_profiler::fp8_utils_gemm_a8w8_blockscale_3",
            "sglang_profiler::gemm_kernels_flydsl_hgemm_12",
            "sglang_profiler::batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_2",
            "_rocm_C::LLMM1",
            "aiter::wvSpltK",
        ],
    );
}

#[test]
fn tracelens_convolution_and_norm_ops() {
    assert_ops(
        "convolution",
        &[
            "aten::convolution",
            "aten::convolution_backward",
            "aten::miopen_convolution",
            "aten::cudnn_convolution",
            "aten::cudnn_convolution_transpose",
            "aten::slow_conv_dilated2d",
            "ConvBias_",
            "ConvBiasReLU_",
            "ConvBias_Backward",
            "ConvBiasReLU_Backward",
        ],
    );
    let mut norms = Vec::new();
    for kind in ["batch", "layer", "group", "instance", "rms"] {
        for variant in ["", "native_", "miopen_", "cudnn_"] {
            norms.push(format!("aten::{variant}{kind}_norm"));
            norms.push(format!("aten::{variant}{kind}_norm_backward"));
        }
    }
    let norms: Vec<&str> = norms.iter().map(String::as_str).collect();
    assert_ops("normalization", &norms);
    assert_ops(
        "normalization",
        &[
            "aten::_fused_rms_norm",
            "aten::_fused_rms_norm_backward",
            "primus::fused_ln_modulate",
            "primus::fused_ln_modulate_backward",
            "aiter::rms_norm",
            "aiter::rmsnorm2d_fwd_with_add_ck",
            "aiter::rmsnorm2d_fwd_with_dynamicquant_ck",
            "aiter::add_rmsnorm",
            "aiter::rmsnorm_quant",
            "aiter::fused_add_rmsnorm_pad_",
            "aiter::_fuse_rmsnorm_fp4_quant",
            "aiter::_fused_qk_rmsnorm_kernel",
            "vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant",
            "vllm::rocm_aiter_triton_add_rmsnorm_pad",
            "sglang_profiler::fused_mxfp4_quant_fused_rms_mxfp4_quant_4",
        ],
    );
}

#[test]
fn tracelens_training_attention_ops() {
    assert_ops(
        "attention",
        &[
            "aten::_scaled_dot_product_cudnn_attention",
            "aten::_scaled_dot_product_efficient_attention",
            "aten::_scaled_dot_product_flash_attention",
            "aten::_scaled_dot_product_cudnn_attention_backward",
            "aten::_scaled_dot_product_efficient_attention_backward",
            "aten::_scaled_dot_product_flash_attention_backward",
            "aten::_efficient_attention_forward",
            "aten::_efficient_attention_backward",
            "aten::_flash_attention_backward",
            "FlashAttnFunc",
            "FlashAttnFuncBackward",
            "FlashAttnVarlenFunc",
            "FusedAttnFuncBackward",
            "EvoformerAttention",
            "flash_attn::_flash_attn_forward",
            "flash_attn::_flash_attn_backward",
            "flash_attn::_flash_attn_varlen_forward",
            "flash_attn::_flash_attn_varlen_backward",
            "flash_attn_3::fwd",
            "_vllm_fa3_C::fwd",
            "aiter::_flash_attn_forward",
            "aiter::_flash_attn_backward",
            "aiter::wrapper_fmha_v3_fwd",
            "aiter::wrapper_fmha_v3_bwd",
            "aiter::mha_fwd",
            "aiter::mha_bwd",
            "aiter::fmha_v3_fwd",
            "aiter::mha_varlen_fwd",
            "aiter::fmha_v3_varlen_fwd",
        ],
    );
}

#[test]
fn tracelens_inference_attention_ops() {
    assert_ops(
        "attention",
        &[
            "vllm::unified_attention_with_output",
            "vllm::gdn_attention_core",
            "vllm::rocm_aiter_sparse_attn_indexer",
            "_rocm_C::paged_attention",
            "aiter::paged_attention_v1",
            "aiter::mha_batch_prefill",
            "aiter::pa_decode_gluon",
            "aiter::pa_sparse_prefill_opus_fwd",
            "aiter::mla_decode_stage1_asm_fwd",
            "aiter::mla_prefill_ps_asm_fwd",
            "aiter::get_mla_metadata_v1",
            "aiter::indexer_score_topk",
            "aiter::linear_attention_with_output_base",
            "sglang_profiler::attention_paged_attention_ragged_7",
            "sglang_profiler::tilelang_kernel_tilelang_sparse_fwd_1",
            "sglang::store_cache",
            "_C_cache_ops::reshape_and_cache_flash",
            "_C_cache_ops::concat_and_cache_mla",
            "_C_cache_ops::concat_mla_q",
        ],
    );
}

#[test]
fn tracelens_moe_and_rope_ops() {
    assert_ops(
        "moe",
        &[
            "vllm::moe_forward",
            "vllm::rocm_aiter_fused_moe",
            "vllm::outplace_fused_experts",
            "aiter::fused_moe_",
            "aiter::fmoe_g1u1",
            "aiter::fmoe_fp8_blockscale_g1u1",
            "aiter::ck_moe_stage1",
            "aiter::moe_cktile2stages_gemm2_ck",
            "aiter::moe_sorting_fwd",
            "aiter::mxfp4_moe_sort_hip",
            "aiter::moe_align_block_size",
            "_moe_C::moe_align_block_size",
            "aiter::moe_sum",
            "aiter::topk_softmax_asm",
            "aiter::topk_sigmoid",
            "aiter::topk_softplus",
            "aiter::biased_grouped_topk_hip",
            "aiter::grouped_topk",
            "aiter::moe_fused_gate",
            "sglang_profiler::fused_moe_triton_kernels_invoke_fused_moe_kernel_3",
            "sglang_profiler::fused_moe_triton_kernels_fused_append_shared_experts_1",
            "aten::_grouped_mm",
            "aten::_scaled_grouped_mm",
            "primus_turbo::grouped_gemm",
            "primus_turbo::grouped_gemm_variable_k_impl",
            "primus_turbo_cpp_extension::ck_grouped_gemm_variable_k",
        ],
    );
    assert_ops(
        "rope",
        &[
            "FusedRoPEFunc",
            "FusedRoPEFuncBackward",
            "aiter::rope_cached_positions_2c_fwd_impl",
            "sgl_kernel::rotary_embedding",
        ],
    );
}

#[test]
fn tracelens_pointwise_reduce_and_collective_ops() {
    assert_ops(
        "activation",
        &[
            "aiter::silu_and_mul",
            "_C::silu_and_mul",
            "aiter::gelu_and_mul",
            "aiter::gelu_tanh_and_mul",
        ],
    );
    assert_ops(
        "quantization",
        &[
            "aiter::dynamic_per_token_scaled_quant",
            "aiter::dynamic_per_tensor_quant",
            "aiter::dynamic_per_group_scaled_quant_fp4",
            "vllm::triton_per_token_group_quant_fp8",
            "_C::per_token_group_fp8_quant",
            "primus_turbo::quantize_fp8_tensorwise",
            "primus::quantize_mxfp4_dual",
            "sglang_profiler::quant_dynamic_mxfp4_quant_2",
        ],
    );
    assert_ops(
        "reduce",
        &[
            "aten::max",
            "aten::norm",
            "aten::linalg_norm",
            "aten::std",
            "aten::logsumexp",
            "aten::amax",
        ],
    );
    assert_ops(
        "communication",
        &[
            "aiter::fused_allreduce_rmsnorm_",
            "vllm::rocm_aiter_fused_allreduce_rmsnorm",
            "aiter::reduce_scatter",
            "aiter::all_gather_reg",
            "sgl_kernel::qr_all_reduce",
            "sglang::reg_all_gather_into_tensor",
            "_C_custom_ar::qr_all_reduce",
        ],
    );
}
