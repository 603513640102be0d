//! Command-line arguments. Doc comments are the help text.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Check that every CUDA/HIP graph replay was recorded, and read LLM-serving profiles fast.
#[derive(Debug, Parser)]
#[command(name = "stepscope", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check graph-replay coverage and break GPU time down by stage and kernel category.
    ///
    /// EXAMPLES:
    ///   stepscope analyze trace.json.gz
    ///   stepscope analyze traces/                      # every trace file in a folder (ranks)
    ///   stepscope analyze t.json.gz --json > report.json
    ///   stepscope analyze t.json.gz --fail-on-incomplete   # exit 3 when replays are missing
    ///   stepscope analyze t.json.gz --capture capture_traces/bs_32_rank0.json.gz
    Analyze(AnalyzeArgs),
    /// Run the built-in example: a realistic SGLang decode trace, once complete and once with
    /// the ROCm symptom (only the replay before each host sync keeps its kernels).
    ///
    /// EXAMPLES:
    ///   stepscope demo
    ///   stepscope demo --keep demo-traces/     # also keep the two generated traces
    Demo(DemoArgs),
}

/// When to colour the terminal report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Arguments of `analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Trace files (`.json`, `.json.gz`, `.json.zst`) or folders of them; several files are
    /// taken as ranks of one run.
    #[arg(required = true, value_name = "TRACE_OR_DIR")]
    pub inputs: Vec<PathBuf>,
    /// Print the report as JSON (schema in docs/json-schema.md) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write one CSV per table into this folder.
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Exit with code 3 when any replay is short or empty.
    #[arg(long)]
    pub fail_on_incomplete: bool,
    /// A capture trace (launches under hipStreamBeginCapture) giving the expected node count.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Kernel category table (TOML) replacing the built-in one.
    #[arg(long, value_name = "FILE")]
    pub categories: Option<PathBuf>,
    /// Analyse the events before a break in a truncated or corrupt file; results are marked partial.
    #[arg(long)]
    pub allow_truncated: bool,
    /// Parse threads (0 = all cores).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub threads: usize,
    /// Kernels listed per stage.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Colour the terminal report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// Arguments of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Decode steps in the generated window.
    #[arg(long, default_value_t = 48, value_name = "N")]
    pub steps: usize,
    /// Keep the two generated traces in this folder.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Colour the terminal report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}
