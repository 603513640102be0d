//! The flags every command that reads traces shares (`analyze`, `diff`): how files are
//! read and how kernels are categorised.

pub use crate::app::CategoryTable;
use crate::app::Reading;
use clap::Args;
use std::path::PathBuf;
use stepscope_ingest::TraceFormat;

/// How to read trace files.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// Kernel category table (TOML) replacing the built-in one.
    #[arg(long, value_name = "FILE")]
    pub categories: Option<PathBuf>,
    /// Analyse the events before a break in a truncated or corrupt file; results are marked partial.
    #[arg(long)]
    pub allow_truncated: bool,
    /// The input format: `auto` (default: sniffed from each file's content), `kineto-json`
    /// (PyTorch profiler), `rocprof-csv` (rocprofv3 CSV tables; a `*kernel_trace.csv` is
    /// read with the `*hip_api_trace.csv`, `*memory_copy_trace.csv` and `*marker_api_trace.csv`
    /// of its run beside it), `rocprof-json` (rocprofv3 JSON), `rocpd` (rocprofv3's SQLite
    /// database, `<pid>_results.db`), `rpd` (rocmProfileData SQLite), `rpd-json`
    /// (rpd2tracing's Chrome trace), `nsys-sqlite` (Nsight Systems SQLite export).
    #[arg(long, default_value = "auto", value_parser = format_parser())]
    pub format: FormatChoice,
    /// Parse threads (0 = all cores).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub threads: usize,
}

impl ReadArgs {
    /// The request's reading part; every field is destructured so a new flag cannot be
    /// ignored.
    pub fn reading(self) -> Reading {
        let ReadArgs {
            categories,
            allow_truncated,
            format,
            threads,
        } = self;
        Reading {
            categories,
            allow_truncated,
            format: format.format(),
            threads,
        }
    }
}

/// `--format`: a reader to force, or `auto` (`None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatChoice(pub Option<TraceFormat>);

impl FormatChoice {
    /// The reader to force, if any.
    pub fn format(self) -> Option<TraceFormat> {
        self.0
    }
}

/// `auto` or the name of a format stepscope reads (one list: `TraceFormat::ALL`).
fn format_parser() -> impl clap::builder::TypedValueParser<Value = FormatChoice> {
    use clap::builder::TypedValueParser;
    let names = std::iter::once("auto").chain(TraceFormat::ALL.iter().map(|f| f.name()));
    clap::builder::PossibleValuesParser::new(names)
        .map(|name| FormatChoice(TraceFormat::from_name(&name)))
}
