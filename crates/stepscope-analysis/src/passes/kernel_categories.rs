//! Kernel categories: which family of work each GPU event belongs to.
//!
//! What it computes: a category (GEMM, attention, MoE, ...) for every distinct GPU event
//! name, from an ordered rule table (`data/kernel_categories.toml`, embedded; a user file
//! replaces it with `--categories FILE`). Names are classified once each, not per event.
//! Why it matters: per-stage time shares by category are what engineers read first.
//! Example: `Cijk_Ailk_Bljk_BBS_BH_...` → `gemm`; `Memcpy DtoH` → `memcpy_memset`.
//!
//! The table is a list of `[[category]]` entries, each a category `name`, an optional
//! `description` and optional `patterns` (Rust `regex` syntax, searched anywhere in the
//! kernel name). Entries are tried in file order and the first one with a matching pattern
//! wins; a category may have several entries. Categories are reported in the order they
//! first appear, then `other`, which is always last and takes every unmatched kernel.
//! Memcpy and memset events always go to the top-level `memory_category` (default
//! `memcpy_memset`). All patterns compile into one [`RegexSet`], so a name is classified in
//! one pass.
//!
//! ```
//! use stepscope_analysis::passes::kernel_categories::KernelCategories;
//! use stepscope_model::GpuEventKind;
//!
//! let table = KernelCategories::embedded();
//! let gemm = table.classify("nvjet_tst_128x64_64x8_1x2_h_bz_coopA_NTN", GpuEventKind::Kernel);
//! assert_eq!(table.name(gemm), "gemm");
//! let copy = table.classify("Memcpy DtoD (Device -> Device)", GpuEventKind::Memcpy);
//! assert_eq!(table.name(copy), "memcpy_memset");
//! assert_eq!(table.names().last().map(String::as_str), Some("other"));
//! ```

use regex::{Regex, RegexSet};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::sync::OnceLock;
use stepscope_model::{GpuEventKind, NameId, Trace};

/// The built-in rule table.
const EMBEDDED_TABLE: &str = include_str!("../../data/kernel_categories.toml");

/// The category of kernels no rule matches; always the last category.
pub const OTHER: &str = "other";

/// The category memcpy and memset events go to when a table does not name one.
pub const DEFAULT_MEMORY_CATEGORY: &str = "memcpy_memset";

/// A category, as an index into [`KernelCategories::names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CategoryId(pub u16);

impl CategoryId {
    /// The id as an index into [`KernelCategories::names`].
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Why a category table could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CategoryError {
    /// The text is not TOML, or not the table's shape (unknown key, wrong type).
    #[error("The kernel category table is not valid")]
    Toml {
        /// What the TOML reader found, with line and column.
        #[source]
        source: toml::de::Error,
    },
    /// A `[[category]]` entry has an empty name.
    #[error("Kernel category rule #{rule} has an empty `name`")]
    EmptyName {
        /// The entry's position among the `[[category]]` entries, from 1.
        rule: usize,
    },
    /// A pattern is not a valid regular expression.
    #[error(
        "Kernel category rule #{rule} (`{category}`), pattern #{pattern_number} `{pattern}` is not a valid regex\nhint: patterns use Rust `regex` syntax; `(?i)` at the start makes one case-insensitive"
    )]
    BadPattern {
        /// The entry's position among the `[[category]]` entries, from 1.
        rule: usize,
        /// The entry's category name.
        category: String,
        /// The pattern's position in the entry's `patterns`, from 1.
        pattern_number: usize,
        /// The pattern as written.
        pattern: String,
        /// The regex compiler's error.
        #[source]
        source: regex::Error,
    },
    /// The patterns are valid one by one but too large together.
    #[error("The kernel category patterns are too large to compile together")]
    PatternSet {
        /// The regex compiler's error.
        #[source]
        source: regex::Error,
    },
    /// The top-level `memory_category` is empty.
    #[error("The kernel category table's `memory_category` is empty")]
    EmptyMemoryCategory,
    /// More categories than a [`CategoryId`] can number.
    #[error("The kernel category table has {count} categories; at most 65535 are supported")]
    TooManyCategories {
        /// How many distinct category names the table has.
        count: usize,
    },
}

/// The table file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    memory_category: Option<String>,
    #[serde(default)]
    category: Vec<RuleFile>,
}

/// One `[[category]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    name: String,
    description: Option<String>,
    #[serde(default)]
    patterns: Vec<String>,
}

/// The compiled rule table: category names in report order and one regex set.
#[derive(Debug, Clone)]
pub struct KernelCategories {
    names: Vec<String>,
    descriptions: Vec<String>,
    patterns: RegexSet,
    /// For each pattern of `patterns`, the category of its rule.
    pattern_category: Vec<CategoryId>,
    memory: CategoryId,
    other: CategoryId,
}

impl Default for KernelCategories {
    fn default() -> Self {
        Self::embedded()
    }
}

impl KernelCategories {
    /// The built-in table (`data/kernel_categories.toml`), compiled once per process.
    ///
    /// # Panics
    ///
    /// Only if the embedded file is broken, which a unit test rules out.
    pub fn embedded() -> Self {
        static TABLE: OnceLock<KernelCategories> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                Self::from_toml(EMBEDDED_TABLE).unwrap_or_else(|e| {
                    panic!("the embedded kernel category table is broken: {e:?}")
                })
            })
            .clone()
    }

    /// Compiles a user table; errors name the rule and the pattern at fault.
    pub fn from_toml(text: &str) -> Result<Self, CategoryError> {
        let file: TableFile =
            toml::from_str(text).map_err(|source| CategoryError::Toml { source })?;
        let memory_name = file
            .memory_category
            .as_deref()
            .map_or(DEFAULT_MEMORY_CATEGORY, str::trim);
        let (names, descriptions) = category_names(&file.category, memory_name)?;
        let ids: FxHashMap<&str, CategoryId> = names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.as_str(), CategoryId(i as u16)))
            .collect();
        let mut patterns = Vec::new();
        let mut pattern_category = Vec::new();
        for rule in &file.category {
            let id = ids[rule.name.trim()];
            patterns.extend(rule.patterns.iter().map(String::as_str));
            pattern_category.extend(rule.patterns.iter().map(|_| id));
        }
        let patterns = compile_set(&patterns, &file.category)?;
        Ok(Self {
            memory: ids[memory_name],
            other: ids[OTHER],
            names,
            descriptions,
            patterns,
            pattern_category,
        })
    }

    /// Category names in report order; the last one is always `other`.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The name of a category.
    pub fn name(&self, id: CategoryId) -> &str {
        &self.names[id.index()]
    }

    /// The description of a category, or `""` when the table gives none.
    pub fn description(&self, id: CategoryId) -> &str {
        &self.descriptions[id.index()]
    }

    /// The category with this name, if the table has one.
    pub fn id(&self, name: &str) -> Option<CategoryId> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| CategoryId(i as u16))
    }

    /// The category of kernels no rule matches.
    pub fn other(&self) -> CategoryId {
        self.other
    }

    /// The category of memcpy and memset events.
    pub fn memory(&self) -> CategoryId {
        self.memory
    }

    /// The category of one GPU event name: memcpy and memset events go to the memory
    /// category whatever their name; kernels go to the first rule with a matching pattern.
    pub fn classify(&self, name: &str, kind: GpuEventKind) -> CategoryId {
        match kind {
            GpuEventKind::Memcpy | GpuEventKind::Memset => self.memory,
            GpuEventKind::Kernel => self
                .patterns
                .matches(name)
                .iter()
                .next()
                .map_or(self.other, |pattern| self.pattern_category[pattern]),
        }
    }
}

/// Category names in report order (first appearance, then the memory category if no rule
/// names it, then `other`), with their descriptions (the first one given).
fn category_names(
    rules: &[RuleFile],
    memory_name: &str,
) -> Result<(Vec<String>, Vec<String>), CategoryError> {
    let mut names: Vec<String> = Vec::new();
    let mut descriptions: Vec<String> = Vec::new();
    let mut add = |name: &str, description: Option<&str>| {
        let slot = match names.iter().position(|n| n == name) {
            Some(slot) => slot,
            None => {
                names.push(name.to_owned());
                descriptions.push(String::new());
                names.len() - 1
            }
        };
        if descriptions[slot].is_empty() {
            descriptions[slot] = description.unwrap_or_default().trim().to_owned();
        }
    };
    for (i, rule) in rules.iter().enumerate() {
        let name = rule.name.trim();
        if name.is_empty() {
            return Err(CategoryError::EmptyName { rule: i + 1 });
        }
        if name != OTHER {
            add(name, rule.description.as_deref());
        }
    }
    if memory_name.is_empty() {
        return Err(CategoryError::EmptyMemoryCategory);
    }
    if memory_name != OTHER {
        add(memory_name, None);
    }
    let other_description = rules
        .iter()
        .find(|rule| rule.name.trim() == OTHER)
        .and_then(|rule| rule.description.as_deref());
    add(
        OTHER,
        other_description.or(Some("Kernels no rule matches.")),
    );
    if names.len() > usize::from(u16::MAX) {
        return Err(CategoryError::TooManyCategories { count: names.len() });
    }
    Ok((names, descriptions))
}

/// Compiles all patterns into one set; on failure, finds the pattern at fault.
fn compile_set(patterns: &[&str], rules: &[RuleFile]) -> Result<RegexSet, CategoryError> {
    RegexSet::new(patterns).map_err(|set_error| {
        for (i, rule) in rules.iter().enumerate() {
            for (j, pattern) in rule.patterns.iter().enumerate() {
                if let Err(source) = Regex::new(pattern) {
                    return CategoryError::BadPattern {
                        rule: i + 1,
                        category: rule.name.trim().to_owned(),
                        pattern_number: j + 1,
                        pattern: pattern.clone(),
                        source,
                    };
                }
            }
        }
        CategoryError::PatternSet { source: set_error }
    })
}

/// The category of every interned name of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategorizedNames {
    /// Indexed by [`NameId::index`], one entry per interned name; names no GPU event
    /// uses are `other`.
    pub by_name: Vec<CategoryId>,
}

impl CategorizedNames {
    /// The category of a name.
    pub fn get(&self, name: NameId) -> CategoryId {
        self.by_name[name.index()]
    }
}

/// Classifies each distinct GPU event name of a trace once, with the kind of the first GPU
/// event that has it; names no GPU event uses get `other`.
pub fn categorize_names(trace: &Trace, table: &KernelCategories) -> CategorizedNames {
    let mut by_name: Vec<Option<CategoryId>> = vec![None; trace.names.len()];
    for (&name, &kind) in trace.gpu.name.iter().zip(&trace.gpu.kind) {
        let slot = &mut by_name[name.index()];
        if slot.is_none() {
            *slot = Some(table.classify(trace.name(name), kind));
        }
    }
    let other = table.other();
    CategorizedNames {
        by_name: by_name
            .into_iter()
            .map(|category| category.unwrap_or(other))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
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
        let mut record =
            |name, kind, start| builder.add_gpu_event(event(name, kind, process, start));
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
}
