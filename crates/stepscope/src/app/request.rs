//! [`AnalyzeRequest`]: the inputs, how to read them, what to break down, which gate, and
//! which files to write.

use anyhow::Context;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use stepscope_analysis::KernelCategories;
use stepscope_analysis::RangePattern;
use stepscope_analysis::{DEVICES, DevicePeaks, device_by_flag};
use stepscope_ingest::{ReadOptions, TraceFormat};
use stepscope_model::Hint;

/// Everything `analyze` is asked to do, as values (what the flags of `stepscope analyze`
/// and the keyword arguments of `stepscope.analyze` both become).
#[derive(Debug, Clone)]
pub struct AnalyzeRequest {
    /// Trace files or folders of them (several files are the ranks of one run).
    pub inputs: Vec<PathBuf>,
    /// A capture trace giving every file's graph sizes.
    pub capture: Option<PathBuf>,
    /// Read the `capture_traces/` folders beside the traces and in searched folders.
    pub capture_folders: bool,
    /// How to read the files.
    pub reading: Reading,
    /// Annotation names to break down, by regex.
    pub range: Option<RangePattern>,
    /// The device whose peaks the rooflines use (else the one the trace names).
    pub device: Option<&'static DevicePeaks>,
    /// Which verdicts fail.
    pub gate: Gate,
    /// Files to write besides the result.
    pub outputs: Outputs,
    /// Kernels listed per stage.
    pub top: usize,
}

impl AnalyzeRequest {
    /// `inputs` with every default: capture folders read, built-in categories, formats
    /// sniffed, no gate, nothing written, 10 kernels per stage.
    pub fn new(inputs: Vec<PathBuf>) -> Self {
        AnalyzeRequest {
            inputs,
            capture: None,
            capture_folders: true,
            reading: Reading::default(),
            range: None,
            device: None,
            gate: Gate::Report,
            outputs: Outputs::default(),
            top: 10,
        }
    }
}

/// Everything `diff` is asked to do: the two sides, how to read them, and the gate (what
/// the flags of `stepscope diff` and the keyword arguments of `stepscope.diff` become).
#[derive(Debug, Clone)]
pub struct DiffRequest {
    /// The run before the change: a trace file, a folder of rank files, or a profile run.
    pub base: PathBuf,
    /// The run after the change.
    pub new: PathBuf,
    /// Read the `capture_traces/` folders on either side.
    pub capture_folders: bool,
    /// How to read both sides' files.
    pub reading: Reading,
    /// Compare stages anyway whose time lacks a side's unrecorded replays.
    pub force: bool,
    /// Fail when a stage's GPU time per step grew by more than this percentage beyond
    /// noise.
    pub fail_on_regression: Option<f64>,
    /// Also write the comparison as one self-contained HTML page.
    pub html: Option<PathBuf>,
    /// Kernels listed per stage.
    pub top: usize,
}

impl DiffRequest {
    /// `base` against `new` with every default: capture folders read, built-in categories,
    /// formats sniffed, nothing forced, no gate, nothing written, 10 kernels per stage.
    pub fn new(base: PathBuf, new: PathBuf) -> Self {
        DiffRequest {
            base,
            new,
            capture_folders: true,
            reading: Reading::default(),
            force: false,
            fail_on_regression: None,
            html: None,
            top: 10,
        }
    }
}

/// Where `env` finds the runtime whose switches it prints (what the flags of `stepscope env`
/// and the keyword arguments of `stepscope.env` both become).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvRequest {
    /// A HIP runtime or ROCm release, as typed (`7.2.0`, `7.2`).
    Rocm(String),
    /// CUDA: no switch.
    Cuda,
    /// The runtimes the traces' headers name (files, or folders of them).
    Traces(Vec<PathBuf>),
    /// The HIP runtime a process maps (`pid`), or the Python environments ship, below
    /// `root`; with neither, the active environment's (`VIRTUAL_ENV`, `CONDA_PREFIX`).
    Detect {
        /// The process whose mapped libraries decide.
        pid: Option<u32>,
        /// Python environments whose `torch/lib` copies decide.
        python_envs: Vec<PathBuf>,
        /// The file system root the paths are read below (a container's).
        root: PathBuf,
    },
}

impl EnvRequest {
    /// The request keyword arguments give: exactly one of `rocm`, `cuda`, `trace` and
    /// `detect`; `pid`, `python_env` and `root` only with `detect`.
    ///
    /// # Errors
    ///
    /// None or several sources, or a detection option without `detect`.
    pub fn from_choices(
        (rocm, cuda): (Option<String>, bool),
        trace: Vec<PathBuf>,
        detect: bool,
        (pid, python_envs, root): (Option<u32>, Vec<PathBuf>, Option<PathBuf>),
    ) -> Result<Self, RequestError> {
        let given = [rocm.is_some(), cuda, !trace.is_empty(), detect];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(RequestError {
                option: "rocm, cuda, trace, detect",
                value: format!("{} given", given.iter().filter(|&&g| g).count()),
                message: "give exactly one source of the runtime".to_owned(),
                hint: "rocm=\"7.2.0\", cuda=True, trace=PATHS or detect=True".to_owned(),
            });
        }
        let detection = pid.is_some() || !python_envs.is_empty() || root.is_some();
        if detection && !detect {
            return Err(RequestError {
                option: "pid, python_env, root",
                value: "given".to_owned(),
                message: "they say where to detect the runtime".to_owned(),
                hint: "pass detect=True with them".to_owned(),
            });
        }
        Ok(match (rocm, cuda, detect) {
            (Some(version), _, _) => EnvRequest::Rocm(version),
            (None, true, _) => EnvRequest::Cuda,
            (None, false, true) => EnvRequest::Detect {
                pid,
                python_envs,
                root: root.unwrap_or_else(|| PathBuf::from("/")),
            },
            (None, false, false) => EnvRequest::Traces(trace),
        })
    }
}

/// How to read trace files.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// A kernel category table (TOML) replacing the built-in one.
    pub categories: Option<PathBuf>,
    /// Analyse the events before a break in a truncated or corrupt file (marked partial).
    pub allow_truncated: bool,
    /// The reader to use for every file; `None`: sniffed from each file's content.
    pub format: Option<TraceFormat>,
    /// Parse threads (0: all cores).
    pub threads: usize,
}

impl Reading {
    /// The reader settings and the category table; every field is destructured so a new
    /// option cannot be ignored.
    ///
    /// # Errors
    ///
    /// A category table that cannot be read or parsed.
    pub fn resolve(self) -> anyhow::Result<(ReadOptions, CategoryTable)> {
        let Reading {
            categories,
            allow_truncated,
            format,
            threads,
        } = self;
        let read = ReadOptions::default()
            .with_format(format)
            .with_allow_truncated(allow_truncated)
            .with_threads(threads);
        let categories = match categories {
            Some(path) => CategoryTable::File(load_categories(&path)?),
            None => CategoryTable::builtin_warming(),
        };
        Ok((read, categories))
    }
}

/// Which verdicts make the run fail (exit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gate {
    /// None: the verdict is reported (unreadable inputs still fail).
    #[default]
    Report,
    /// Short, empty, damaged or mistimed replays, a partial read, an unavailable verdict.
    FailOnIncomplete,
    /// Those, sizes that rest on one replay alone, and data the verdict could not check.
    Strict,
}

impl Gate {
    /// The gate two flags ask for: `strict` wins over `fail_on_incomplete`.
    pub fn of(strict: bool, fail_on_incomplete: bool) -> Gate {
        match (strict, fail_on_incomplete) {
            (true, _) => Gate::Strict,
            (false, true) => Gate::FailOnIncomplete,
            (false, false) => Gate::Report,
        }
    }
}

/// Files to write besides the result.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// One CSV per table into this folder.
    pub csv: Option<PathBuf>,
    /// The analysed trace as a Chrome-trace JSON (one input file).
    pub perfetto: Option<PathBuf>,
    /// The report as one self-contained HTML page.
    pub html: Option<PathBuf>,
    /// The tables as a Parquet dataset in this folder.
    pub parquet: Option<PathBuf>,
    /// The run's id in the Parquet dataset (a new one when `None`).
    pub run_id: Option<String>,
}

/// A value a caller gave that cannot be used: which option, and why (with the fix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    /// The option, as the caller named it (`device`, `range`, `format`).
    pub option: &'static str,
    /// The value given.
    pub value: String,
    /// What is wrong.
    pub message: String,
    /// What to give instead.
    pub hint: String,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\nhint: {}", Hint::message(self), self.hint)
    }
}

impl std::error::Error for RequestError {}

impl Hint for RequestError {
    fn message(&self) -> String {
        format!("{} `{}`: {}", self.option, self.value, self.message)
    }

    fn hint(&self) -> Option<String> {
        Some(self.hint.clone())
    }
}

impl RequestError {
    /// The peaks of the device named `name`.
    ///
    /// # Errors
    ///
    /// No device of that name: the names there are.
    pub fn device(name: &str) -> Result<&'static DevicePeaks, RequestError> {
        device_by_flag(name).ok_or_else(|| {
            let names: Vec<&str> = DEVICES.iter().map(|d| d.name).collect();
            RequestError {
                option: "device",
                value: name.to_owned(),
                message: "no peaks for this device".to_owned(),
                hint: format!("one of {}", names.join(", ")),
            }
        })
    }

    /// `value` as a percentage threshold (`fail_on_regression`): finite, 0 or more.
    ///
    /// # Errors
    ///
    /// A negative, infinite or NaN value.
    pub fn percent(option: &'static str, value: f64) -> Result<f64, RequestError> {
        if value.is_finite() && value >= 0.0 {
            return Ok(value);
        }
        Err(RequestError {
            option,
            value: value.to_string(),
            message: "not a percentage".to_owned(),
            hint: "give a number of 0 or more, e.g. 5 or 2.5".to_owned(),
        })
    }

    /// The annotation pattern `regex`.
    ///
    /// # Errors
    ///
    /// A pattern the regex engine refuses, with its reason.
    pub fn range(regex: &str) -> Result<RangePattern, RequestError> {
        RangePattern::new(regex).map_err(|e| RequestError {
            option: "range",
            value: regex.to_owned(),
            message: format!("not a valid regex: {e}"),
            hint: "Rust `regex` syntax; `(?i)` makes it case-insensitive, `^step` anchors it"
                .to_owned(),
        })
    }

    /// The reader named `name` (`auto`: `None`, sniffed per file).
    ///
    /// # Errors
    ///
    /// No reader of that name: the names there are.
    pub fn format(name: &str) -> Result<Option<TraceFormat>, RequestError> {
        if name == "auto" {
            return Ok(None);
        }
        TraceFormat::from_name(name).map(Some).ok_or_else(|| {
            let names: Vec<&str> = TraceFormat::ALL.iter().map(|f| f.name()).collect();
            RequestError {
                option: "format",
                value: name.to_owned(),
                message: "no reader of this name".to_owned(),
                hint: format!("`auto` (sniffed per file) or one of {}", names.join(", ")),
            }
        })
    }
}

/// The kernel category table to analyse with.
#[derive(Debug, Clone)]
pub enum CategoryTable {
    /// The built-in table, compiled once per process when first used (56 M instructions,
    /// callgrind).
    Builtin,
    /// A table file, compiled when given, so a broken one fails before any reading.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_no_device_range_or_format_say_which_option_and_the_choices() {
        let device = RequestError::device("MI999").unwrap_err();
        assert_eq!(device.option, "device");
        assert!(device.hint.contains("MI300X"), "{device}");
        let range = RequestError::range("(").unwrap_err();
        assert_eq!(range.option, "range");
        let format = RequestError::format("parquet").unwrap_err();
        assert!(format.hint.contains("kineto-json"), "{format}");
        assert_eq!(format.message, "no reader of this name");
        assert_eq!(RequestError::format("auto"), Ok(None));
        assert!(RequestError::device("mi300x").is_ok());
    }
}
