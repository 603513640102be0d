//! Event categories: the category of every GPU event, from its launching op, else its name.
//!
//! What it computes: for each GPU event, a category and what decided it. A kernel whose
//! launch call (correlation) sits inside a CPU op matched by an `[[op]]` rule of the
//! category table (see [`launching_ops`](super::launching_ops)) takes that rule's category;
//! every other event takes the category of its name (see
//! [`kernel_categories`](super::kernel_categories)). Graph replays' kernels are always
//! categorised by name: their launch call is the graph launch, whose enclosing op did not
//! launch them. Memcpy and memset events keep the memory category.
//! Why it matters: MIOpen and cuDNN run transposes and GEMM kernels for a convolution;
//! by name they read as elementwise and GEMM work, by launching op they are convolution,
//! as TraceLens counts them.
//! Example: `Cijk_Alik_Bljk_BBS_BH_...` launched by `aten::miopen_convolution` →
//! `convolution`, decided by op.

use super::kernel_categories::{CategorizedNames, CategoryId, KernelCategories};
use super::launch_links::LaunchLinks;
use super::launching_ops::LaunchingOps;
use stepscope_model::{GpuEventKind, RuntimeCallKind, Trace};

/// The category of every GPU event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventCategories {
    /// Per GPU event row, its category.
    pub category: Vec<CategoryId>,
    /// Per GPU event row, whether its launching op (not its name) decided the category.
    pub by_op: Vec<bool>,
}

impl EventCategories {
    /// Every event categorised by its name alone.
    pub fn by_name(trace: &Trace, names: &CategorizedNames) -> Self {
        EventCategories {
            category: trace.gpu.name.iter().map(|&name| names.get(name)).collect(),
            by_op: vec![false; trace.gpu.len()],
        }
    }
}

/// What [`categorize_events`] reads besides the trace.
#[derive(Debug, Clone, Copy)]
pub struct EventCategoryInputs<'a> {
    /// The category table.
    pub table: &'a KernelCategories,
    /// The category of every name.
    pub names: &'a CategorizedNames,
    /// GPU events to their launch calls.
    pub links: &'a LaunchLinks,
    /// Launch calls to their innermost CPU op.
    pub ops: &'a LaunchingOps,
}

/// Categorises every GPU event; each op name is matched against the op rules once.
pub fn categorize_events(trace: &Trace, inputs: EventCategoryInputs<'_>) -> EventCategories {
    let mut result = EventCategories::by_name(trace, inputs.names);
    if !inputs.table.has_op_rules() || trace.cpu_ops.is_empty() {
        return result;
    }
    let mut op_category: Vec<Option<Option<CategoryId>>> = vec![None; trace.names.len()];
    for row in 0..trace.gpu.len() {
        let Some(op) = launching_op(trace, inputs, row) else {
            continue;
        };
        let name = trace.cpu_ops.name[op as usize];
        let decided = *op_category[name.index()]
            .get_or_insert_with(|| inputs.table.classify_op(trace.name(name)));
        if let Some(category) = decided {
            result.category[row] = category;
            result.by_op[row] = true;
        }
    }
    result
}

/// The CPU op that launched kernel `row` directly, if any.
fn launching_op(trace: &Trace, inputs: EventCategoryInputs<'_>, row: usize) -> Option<u32> {
    if trace.gpu.kind[row] != GpuEventKind::Kernel {
        return None;
    }
    let call = inputs.links.launcher[row]? as usize;
    if trace.runtime.kind[call] == RuntimeCallKind::GraphLaunch {
        return None;
    }
    inputs.ops.op_of_call[call]
}
