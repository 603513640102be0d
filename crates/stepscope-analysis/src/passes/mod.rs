//! One pass per file, each with a doc comment on what it computes and why.

pub mod capture_graphs;
pub(crate) mod content_groups;
pub mod efficiency;
pub mod event_categories;
pub mod gpu_timeline;
pub mod graph_identity;
pub mod graph_launches;
pub mod idle_causes;
pub mod kernel_categories;
pub(crate) mod launch_cycles;
pub mod launch_links;
pub mod launch_stats;
pub mod launching_ops;
pub mod missing_time;
pub mod ranges;
pub mod recording_patterns;
pub mod replay_coverage;
pub mod runtime_advice;
pub mod stage_breakdown;
pub mod steps;
pub(crate) mod stream_idle;
pub mod unchecked;
