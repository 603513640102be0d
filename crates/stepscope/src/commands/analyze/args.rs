//! `analyze`'s arguments and its help text, side by side: the help is written here, next to
//! the flags it explains, and nowhere else.

use super::View;
use crate::app::{AnalyzeRequest, Gate, Outputs};
use crate::cli::ColorChoice;
use crate::commands::read_args::ReadArgs;
use clap::Args;
use std::path::PathBuf;
use stepscope_analysis::DevicePeaks;
use stepscope_analysis::RangePattern;

/// `stepscope --help`'s line for `analyze`.
const ABOUT: &str =
    "Check graph-replay coverage and break GPU time down by stage and kernel category";

/// `stepscope analyze --help`: each paragraph is one line, wrapped by the terminal's width.
const LONG_ABOUT: &str = "\
Check that every CUDA/HIP graph replay of the trace was recorded (its kernels all present, \
in capture order, inside their steps), then break GPU time down by serving stage, kernel \
category and kernel, and price each op against the device's roofline.

Several files, or a folder of them, are read in parallel as the ranks of one run: each \
gets its own verdict, and the run the worst of them.

Exit codes: 0 done; 3 a failing verdict with --fail-on-incomplete or --strict, or a \
partial read (--allow-truncated hit a break) with either; 2 bad input or usage (the error \
names the file, the place and the fix; an unreadable input, or an output that could not \
be written); 1 internal error.

EXAMPLES:
  stepscope analyze trace.json.gz
  # every trace file in a folder (ranks)
  stepscope analyze traces/
  # rocprofv3's database (also CSV, JSON)
  stepscope analyze node-7/1234_results.db
  # rocmProfileData, Nsight Systems export
  stepscope analyze run.rpd run.sqlite
  stepscope analyze t.json.gz --json > report.json
  # exit 3 when replays are missing
  stepscope analyze t.json.gz --fail-on-incomplete
  # also when a size is unverified
  stepscope analyze t.json.gz --strict
  stepscope analyze t.json.gz --capture capture_traces/bs_32_rank0.json.gz";

impl AnalyzeArgs {
    /// The request and the view the flags say; every field is destructured so a new flag
    /// cannot be ignored.
    pub fn request(self) -> (AnalyzeRequest, View) {
        let AnalyzeArgs {
            inputs,
            json,
            csv,
            perfetto,
            html,
            parquet,
            run_id,
            fail_on_incomplete,
            strict,
            capture,
            no_capture_folder,
            range,
            device,
            reading,
            top,
            color,
            wide,
            no_progress,
        } = self;
        let gate = Gate::of(strict, fail_on_incomplete);
        let request = AnalyzeRequest {
            inputs,
            capture,
            capture_folders: !no_capture_folder,
            reading: reading.reading(),
            range,
            device,
            gate,
            outputs: Outputs {
                csv,
                perfetto,
                html,
                parquet,
                run_id,
            },
            top,
        };
        let view = View::from_flags(json, wide, color, no_progress);
        (request, view)
    }
}

/// Arguments of `analyze`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct AnalyzeArgs {
    /// Trace files or folders of them; several files are taken as ranks of one run. Read by
    /// content: PyTorch profiler JSON (`.json`, `.json.gz`, `.json.zst`), rocprofv3 SQLite
    /// (`<pid>_results.db`), CSV (`*kernel_trace.csv`, its run's other tables read with it)
    /// and JSON, rocmProfileData (`.rpd`, rpd2tracing JSON), Nsight Systems SQLite exports
    /// (`.sqlite`). A folder is searched for `*.json`, `*.json.gz`, `*.json.zst`,
    /// `*kernel_trace.csv` and `*_results.db`.
    #[arg(required = true, value_name = "TRACE_OR_DIR")]
    pub inputs: Vec<PathBuf>,
    /// Print the report as JSON (schema in docs/json-schema.md) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write the tables as CSV files into this folder (created if missing):
    /// `DIR/<table>.csv` for each of the tables --parquet writes, with the same columns and
    /// units (times in nanoseconds; docs/parquet-schema.md).
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Also write the results as Parquet tables into this folder (created if missing): one
    /// file per table per run (`DIR/<table>/<run_id>.parquet`: runs, files, graphs, replays,
    /// findings, stages, stage_category, kernels, efficiency, ranges, range_category,
    /// range_kernels), keyed by run id, file and rank. Runs appended to one folder read as
    /// one table in DuckDB, Spark or Polars (docs/parquet-schema.md).
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// The run's id in the Parquet dataset (letters, digits, `.`, `_`, `-`); refused when
    /// the folder already holds it. Default: the UTC start time and a random suffix.
    #[arg(long, value_name = "ID", requires = "parquet")]
    pub run_id: Option<String>,
    /// Also write the analysed trace as a Chrome-trace JSON for the Perfetto UI or
    /// chrome://tracing: GPU events and runtime calls, each graph replay a slice named with
    /// its status over its kernels (empty ones over the gap where they would have run),
    /// steps, and findings as instant events. One input file.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page (opens from disk, no network):
    /// the verdict as the terminal states it, the replay timeline per graph, GPU time by
    /// stage and category, sortable kernel tables, rank-by-rank coverage, import statistics.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Gate a pipeline on the verdict: exit 3 when any replay is short, empty or damaged,
    /// or the analysis is partial (`--allow-truncated` hit a break); exit 2 when an input
    /// could not be read or holds no events. Sizes that rest on one replay alone
    /// (`unverified`, "complete as far as the trace shows") pass.
    #[arg(long)]
    pub fail_on_incomplete: bool,
    /// Like --fail-on-incomplete, and also exit 3 when some replay's size is unverified.
    #[arg(long)]
    pub strict: bool,
    /// A capture trace (launches under hipStreamBeginCapture) giving the expected node count
    /// of every file's graphs, and the shapes of their ops. Without it, the `capture_traces/`
    /// folder beside each trace (as vLLM, SGLang and ATOM write it) is read.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Read no `capture_traces/` folder, beside a trace or in a searched folder: graph sizes
    /// then come from --capture and the traces themselves.
    #[arg(long)]
    pub no_capture_folder: bool,
    /// Also break down the GPU work launched inside each host annotation
    /// (`record_function`, `user_annotation`) whose name matches this regex, per name:
    /// instances, host and GPU-mirror time, kernel time by category and by kernel.
    #[arg(long, value_name = "REGEX", value_parser = parse_range)]
    pub range: Option<RangePattern>,
    /// The GPU whose peaks the efficiency table's rooflines use (MI210, MI250X, MI300X,
    /// MI325X, MI355X, A100, H100, H200, B200); by default the device the trace names.
    #[arg(long, value_name = "NAME", value_parser = parse_device)]
    pub device: Option<&'static DevicePeaks>,
    /// How to read the files.
    #[command(flatten)]
    pub reading: ReadArgs,
    /// Kernels listed per stage.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Whole kernel names in the terminal's tables (by default they are cut to 64 characters,
    /// keeping the parts that tell them apart; the `id` column is the same either way).
    #[arg(long)]
    pub wide: bool,
    /// Colour the terminal report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// A `--device` name, or the names there are.
fn parse_device(text: &str) -> Result<&'static DevicePeaks, String> {
    crate::app::RequestError::device(text).map_err(|e| format!("{}\nhint: {}", e.message, e.hint))
}

/// A `--range` pattern, or what is wrong with it.
fn parse_range(text: &str) -> Result<RangePattern, String> {
    crate::app::RequestError::range(text).map_err(|e| format!("{}\nhint: {}", e.message, e.hint))
}
