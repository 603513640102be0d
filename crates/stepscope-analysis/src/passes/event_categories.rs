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

/// What decided an event's category: its launching op, or its name and why the op did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecidedBy {
    /// The CPU op that launched it matched an `[[op]]` rule.
    LaunchingOp,
    /// A memcpy or memset event: always the memory category.
    MemoryEvent,
    /// A kernel of a graph replay: its launch is the graph launch, so by name.
    GraphReplay,
    /// No runtime call has its correlation id (an orphan), so by name.
    NoLaunchCall,
    /// Its launch call lies inside no CPU op (or the trace has none), so by name.
    NoLaunchingOp,
    /// Its launching op matches no `[[op]]` rule (generic tensor ops, Inductor's Triton
    /// launches, custom ops of unclear purpose), so by name.
    OpWithoutRule,
}

impl DecidedBy {
    /// Every value, in report order.
    pub const ALL: [DecidedBy; 6] = [
        DecidedBy::LaunchingOp,
        DecidedBy::MemoryEvent,
        DecidedBy::GraphReplay,
        DecidedBy::NoLaunchCall,
        DecidedBy::NoLaunchingOp,
        DecidedBy::OpWithoutRule,
    ];

    /// Lower-case name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::LaunchingOp => "launching_op",
            DecidedBy::MemoryEvent => "memcpy_memset",
            DecidedBy::GraphReplay => "graph_replay",
            DecidedBy::NoLaunchCall => "no_launch_call",
            DecidedBy::NoLaunchingOp => "no_launching_op",
            DecidedBy::OpWithoutRule => "op_without_rule",
        }
    }

    /// Its position in [`DecidedBy::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The category of every GPU event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventCategories {
    /// Per GPU event row, its category.
    pub category: Vec<CategoryId>,
    /// Per GPU event row, what decided the category.
    pub decided_by: Vec<DecidedBy>,
}

impl EventCategories {
    /// Every event categorised by its name alone (launch links not looked at: kernels
    /// count as having no launch call).
    pub fn by_name(trace: &Trace, names: &CategorizedNames) -> Self {
        EventCategories {
            category: trace.gpu.name.iter().map(|&name| names.get(name)).collect(),
            decided_by: trace
                .gpu
                .kind
                .iter()
                .map(|&kind| match kind {
                    GpuEventKind::Kernel => DecidedBy::NoLaunchCall,
                    _ => DecidedBy::MemoryEvent,
                })
                .collect(),
        }
    }

    /// Whether the launching op decided row `row`'s category.
    pub fn by_op(&self, row: usize) -> bool {
        self.decided_by[row] == DecidedBy::LaunchingOp
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
    let mut op_category: Vec<Option<Option<CategoryId>>> = vec![None; trace.names.len()];
    for row in 0..trace.gpu.len() {
        let op = match launching_op(trace, inputs, row) {
            Ok(op) => op,
            Err(reason) => {
                result.decided_by[row] = reason;
                continue;
            }
        };
        let name = trace.cpu_ops.name[op as usize];
        let decided = *op_category[name.index()]
            .get_or_insert_with(|| inputs.table.classify_op(trace.name(name)));
        result.decided_by[row] = match decided {
            Some(category) => {
                result.category[row] = category;
                DecidedBy::LaunchingOp
            }
            None => DecidedBy::OpWithoutRule,
        };
    }
    result
}

/// The CPU op that launched kernel `row` directly, or why there is none to decide.
fn launching_op(
    trace: &Trace,
    inputs: EventCategoryInputs<'_>,
    row: usize,
) -> Result<u32, DecidedBy> {
    if trace.gpu.kind[row] != GpuEventKind::Kernel {
        return Err(DecidedBy::MemoryEvent);
    }
    let call = inputs.links.launcher[row].ok_or(DecidedBy::NoLaunchCall)? as usize;
    if trace.runtime.kind[call] == RuntimeCallKind::GraphLaunch {
        return Err(DecidedBy::GraphReplay);
    }
    inputs.ops.op_of_call[call].ok_or(DecidedBy::NoLaunchingOp)
}
