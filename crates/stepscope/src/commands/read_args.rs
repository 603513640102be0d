//! The flags every command that reads traces shares (`analyze`, `diff`): how files are
//! read and how kernels are categorised.

use anyhow::Context;
use clap::Args;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use stepscope_analysis::passes::kernel_categories::KernelCategories;
use stepscope_ingest::{ReadOptions, TraceFormat};

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
    /// The reader settings and the category table; every field is destructured so a new
    /// flag cannot be ignored.
    ///
    /// # Errors
    ///
    /// A `--categories` file that cannot be read or parsed.
    pub fn resolve(self) -> anyhow::Result<(ReadOptions, CategoryTable)> {
        let ReadArgs {
            categories,
            allow_truncated,
            format,
            threads,
        } = self;
        let read = ReadOptions::default()
            .with_format(format.format())
            .with_allow_truncated(allow_truncated)
            .with_threads(threads);
        let categories = match categories {
            Some(path) => CategoryTable::File(load_categories(&path)?),
            None => CategoryTable::builtin_warming(),
        };
        Ok((read, categories))
    }
}

/// The kernel category table to analyse with.
#[derive(Debug, Clone)]
pub enum CategoryTable {
    /// The built-in table, compiled once per process when first used (56 M instructions,
    /// callgrind).
    Builtin,
    /// A `--categories` file, compiled when given, so a broken one fails before any reading.
    File(KernelCategories),
}

impl CategoryTable {
    /// The built-in table, compiling on another thread meanwhile: it is ready when the
    /// first trace has been read, instead of delaying the start of the read.
    pub fn builtin_warming() -> Self {
        std::thread::spawn(|| drop(KernelCategories::embedded()));
        CategoryTable::Builtin
    }

    /// The compiled table (waiting for the built-in one if it is still compiling).
    pub fn table(&self) -> Cow<'_, KernelCategories> {
        match self {
            CategoryTable::Builtin => Cow::Owned(KernelCategories::embedded()),
            CategoryTable::File(table) => Cow::Borrowed(table),
        }
    }
}

fn load_categories(path: &Path) -> anyhow::Result<KernelCategories> {
    let text = fs_err::read_to_string(path)?;
    KernelCategories::from_toml(&text)
        .with_context(|| format!("Failed to load the category table `{}`", path.display()))
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
