//! Analysis passes over the stepscope event model: launch links, steps, replay coverage,
//! kernel categories, stage breakdown, runtime advice. One pass per file under
//! [`passes`]; [`analyze`] runs them in the order of [`PASSES`].
//!
//! ```
//! use stepscope_analysis::{analyze, AnalysisOptions, passes::kernel_categories::KernelCategories};
//! use stepscope_model::TraceBuilder;
//!
//! let trace = TraceBuilder::new().finish();
//! let table = KernelCategories::embedded();
//! let analysis = analyze(&trace, &AnalysisOptions::new(&table));
//! assert_eq!(analysis.coverage.verdict.as_str(), "no-replays");
//! ```
#![warn(missing_docs)]

pub mod combine;
pub mod passes;

use passes::capture_graphs::{CapturedGraph, captured_graphs};
use passes::kernel_categories::{KernelCategories, categorize_names};
use passes::launch_links::{LaunchLinks, link_launches};
use passes::replay_coverage::{CoverageInputs, ReplayCoverage, replay_coverage};
use passes::runtime_advice::{RuntimeAdvice, runtime_advice};
use passes::stage_breakdown::{BreakdownInputs, StageBreakdown, stage_breakdown};
use passes::steps::{Steps, find_steps};
use stepscope_model::Trace;

/// A pass, as listed in documentation and `--help`.
#[derive(Debug, Clone, Copy)]
pub struct PassInfo {
    /// Its name (the file under `passes/`).
    pub name: &'static str,
    /// What it computes, in one line.
    pub summary: &'static str,
}

/// The passes, in the order [`analyze`] runs them.
pub const PASSES: [PassInfo; 7] = [
    PassInfo {
        name: "launch_links",
        summary: "link GPU events to the host calls that launched them (correlation ids)",
    },
    PassInfo {
        name: "steps",
        summary: "find SGLang / vLLM / ATOM step annotations and their stages",
    },
    PassInfo {
        name: "capture_graphs",
        summary: "count the nodes of graphs captured in the trace or a capture trace",
    },
    PassInfo {
        name: "replay_coverage",
        summary: "check every graph replay's kernels were recorded, complete and in order",
    },
    PassInfo {
        name: "kernel_categories",
        summary: "classify kernels into GEMM, attention, MoE, ...",
    },
    PassInfo {
        name: "stage_breakdown",
        summary: "GPU time per stage by category and kernel",
    },
    PassInfo {
        name: "runtime_advice",
        summary: "switches that make the profiler record every replay on this runtime",
    },
];

/// What the passes need besides the trace.
#[derive(Debug, Clone, Copy)]
pub struct AnalysisOptions<'a> {
    /// Kernel category table.
    pub categories: &'a KernelCategories,
    /// Captured graphs from a capture trace (`--capture`), if given.
    pub capture: &'a [CapturedGraph],
}

impl<'a> AnalysisOptions<'a> {
    /// Options with a category table and no capture trace.
    pub fn new(categories: &'a KernelCategories) -> Self {
        AnalysisOptions {
            categories,
            capture: &[],
        }
    }
}

/// Every pass's result for one trace.
#[derive(Debug, Clone)]
pub struct TraceAnalysis {
    /// Launch links.
    pub links: LaunchLinks,
    /// Steps.
    pub steps: Steps,
    /// Replay coverage and verdict.
    pub coverage: ReplayCoverage,
    /// Per-stage breakdown.
    pub breakdown: StageBreakdown,
    /// Runtime and switch advice.
    pub advice: RuntimeAdvice,
}

/// Runs every pass on one trace.
pub fn analyze(trace: &Trace, options: &AnalysisOptions<'_>) -> TraceAnalysis {
    let links = link_launches(trace);
    let steps = find_steps(trace);
    let own_captures = captured_graphs(trace);
    let coverage = replay_coverage(
        trace,
        CoverageInputs {
            links: &links,
            steps: &steps,
            own_captures: &own_captures,
            capture: options.capture,
        },
    );
    let categories = categorize_names(trace, options.categories);
    let breakdown = stage_breakdown(
        trace,
        BreakdownInputs {
            links: &links,
            steps: &steps,
            table: options.categories,
            categories: &categories,
        },
    );
    let advice = runtime_advice(&trace.metadata);
    TraceAnalysis {
        links,
        steps,
        coverage,
        breakdown,
        advice,
    }
}
