//! One pass per file, each with a doc comment on what it computes and why.

pub mod capture_graphs;
pub mod graph_identity;
pub mod kernel_categories;
pub mod launch_links;
pub mod replay_coverage;
pub mod runtime_advice;
pub mod stage_breakdown;
pub mod steps;
