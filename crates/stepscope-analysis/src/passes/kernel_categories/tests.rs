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
            "rope_embedding",
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
    assert_eq!(table.other(), CategoryId(14));
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
        "rope_embedding",
        &[
            "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
            "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>()",
            "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>()",
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
    assert_ops(
        "rope_embedding",
        &["sgl_kernel::rotary_embedding", "aten::embedding"],
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
        "triton_poi_fused_addmm_gelu_view_15",
        "triton_red_fused__unsafe_view_add_addmm_clone_convolution_mul_native_layer_norm_slice",
        "CompiledFunction",
        "",
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
            CategoryError::BadOpPattern {
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
