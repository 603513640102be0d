//! Event categories: the category of every GPU event, from its launching op, else its name.
//!
//! What it computes: for each GPU event, a category and what decided it. A kernel whose
//! launch call (correlation) sits inside a CPU op matched by an `[[op]]` rule of the
//! category table (see [`launching_ops`](super::launching_ops)) takes that rule's category;
//! every other event takes the category of its name (see
//! [`kernel_categories`](super::kernel_categories)). A graph replay's kernels, whose launch
//! call is the graph launch (its enclosing op did not launch them), take the category the
//! ops that captured their name agree on, where a capture is at hand; else their name's.
//! Memcpy and memset events keep the memory category.
//! Why it matters: MIOpen and cuDNN run transposes and GEMM kernels for a convolution;
//! by name they read as elementwise and GEMM work, by launching op they are convolution,
//! as TraceLens counts them.
//! Example: `Cijk_Alik_Bljk_BBS_BH_...` launched by `aten::miopen_convolution` →
//! `convolution`, decided by op.

use super::capture_graphs::CapturedGraph;
use super::kernel_categories::{CategorizedNames, CategoryId, KernelCategories};
use super::launch_links::LaunchLinks;
use super::launching_ops::LaunchingOps;
use rustc_hash::FxHashMap;
use stepscope_model::{GpuEventKind, RuntimeCallKind, Trace};

/// What decided an event's category: its launching op, or its name and why the op did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecidedBy {
    /// The CPU op that launched it matched an `[[op]]` rule.
    LaunchingOp,
    /// A kernel of a graph replay whose name the graph's capture (in the trace or from
    /// `--capture`) launched only from ops of one category, which an `[[op]]` rule gives.
    CapturingOp,
    /// A memcpy or memset event: always the memory category.
    MemoryEvent,
    /// A kernel of a graph replay with no capture to tell its op (or one whose capture
    /// launched its name from ops of different categories, or of none): by name.
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
    pub const ALL: [DecidedBy; 7] = [
        DecidedBy::LaunchingOp,
        DecidedBy::CapturingOp,
        DecidedBy::MemoryEvent,
        DecidedBy::GraphReplay,
        DecidedBy::NoLaunchCall,
        DecidedBy::NoLaunchingOp,
        DecidedBy::OpWithoutRule,
    ];

    /// Its position in [`DecidedBy::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The category of every GPU event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventCategories {
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

    /// Whether an op (launching, or capturing for a replayed kernel) decided row `row`'s
    /// category.
    pub fn by_op(&self, row: usize) -> bool {
        matches!(
            self.decided_by[row],
            DecidedBy::LaunchingOp | DecidedBy::CapturingOp
        )
    }
}

/// What [`categorize_events`] reads besides the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventCategoryInputs<'a> {
    /// The category table.
    pub table: &'a KernelCategories,
    /// The category of every name.
    pub names: &'a CategorizedNames,
    /// GPU events to their launch calls.
    pub links: &'a LaunchLinks,
    /// Launch calls to their innermost CPU op.
    pub ops: &'a LaunchingOps,
    /// Graph captures (in the trace and from `--capture`), with their nodes' ops.
    pub captures: &'a [&'a CapturedGraph],
}

/// Categorises every GPU event; each op name is matched against the op rules once.
pub(crate) fn categorize_events(trace: &Trace, inputs: EventCategoryInputs<'_>) -> EventCategories {
    let mut result = EventCategories::by_name(trace, inputs.names);
    let mut op_category: Vec<Option<Option<CategoryId>>> = vec![None; trace.names.len()];
    let captured = captured_categories(inputs.table, inputs.captures);
    // Per kernel name, once: the category its captures give.
    let mut capture_category: Vec<Option<Option<CategoryId>>> = vec![None; trace.names.len()];
    for row in 0..trace.gpu.len() {
        let op = match launching_op(trace, inputs, row) {
            Ok(op) => op,
            Err(DecidedBy::GraphReplay) => {
                let name = trace.gpu.name[row];
                let by_capture = *capture_category[name.index()]
                    .get_or_insert_with(|| captured.get(trace.name(name)).copied());
                result.decided_by[row] = match by_capture {
                    Some(category) => {
                        result.category[row] = category;
                        DecidedBy::CapturingOp
                    }
                    None => DecidedBy::GraphReplay,
                };
                continue;
            }
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

/// Per kernel name launched under capture, the category its capturing ops give, where
/// every launch of that name under every capture was made from an op an `[[op]]` rule
/// gives the same category. A name any launch gives another category, or none, is left
/// out: its replayed kernels are categorised by name.
fn captured_categories(
    table: &KernelCategories,
    captures: &[&CapturedGraph],
) -> FxHashMap<String, CategoryId> {
    let mut seen: FxHashMap<&str, Option<CategoryId>> = FxHashMap::default();
    for graph in captures {
        for (kernel, op) in graph.kernel_names.iter().zip(&graph.op_names) {
            let Some(kernel) = kernel.as_deref() else {
                continue;
            };
            let category = op.as_deref().and_then(|op| table.classify_op(op));
            seen.entry(kernel)
                .and_modify(|known| {
                    if *known != category {
                        *known = None;
                    }
                })
                .or_insert(category);
        }
    }
    seen.into_iter()
        .filter_map(|(kernel, category)| Some((kernel.to_owned(), category?)))
        .collect()
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
