//! The extension module of the `stepscope` Python package (`stepscope._stepscope`): the
//! command line, and `analyze` in-process from typed keyword arguments (mapped onto the
//! application layer's request, as the command's flags are). The Python side
//! (`python/stepscope`) wraps the results in objects and DataFrames, and raises
//! `stepscope.StepscopeError` with the command's message and hint.
//!
//! Both calls release the GIL while they work: reading a trace takes seconds, and other
//! Python threads (a notebook's, a Ray worker's) go on meanwhile.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::ffi::OsString;
use std::path::PathBuf;
use stepscope::app::{
    AnalyzeRequest, DiffRequest, EnvRequest, Gate, Outputs, Reading, RequestError,
};

pyo3::create_exception!(
    _stepscope,
    StepscopeError,
    PyException,
    "A stepscope error: the message names the file, the place and the fix, as the command line says it."
);

/// Runs `stepscope ARGS…` as the command line does (output on this process's stdout and
/// stderr) and returns its exit code.
#[pyfunction]
fn run_cli(py: Python<'_>, args: Vec<String>) -> u8 {
    let argv: Vec<OsString> = std::iter::once("stepscope".to_owned())
        .chain(args)
        .map(OsString::from)
        .collect();
    py.detach(|| stepscope::run_cli(argv))
}

/// `stepscope analyze` in-process, from typed keyword arguments (no command line is built
/// or parsed): `(json, {table: parquet bytes}, exit_code)`. A value of the wrong type is a
/// `TypeError` naming the parameter (pyo3's argument extraction); a value of the right type
/// that cannot be used (an unknown device or format, a bad regex, a negative count) is a
/// `ValueError` naming it; what the command would fail on raises
/// `StepscopeError(message, hint, exit_code)`.
#[pyfunction]
#[pyo3(signature = (
    paths, *, capture=None, no_capture_folder=false, categories=None, format=None,
    allow_truncated=false, threads=0, range=None, device=None, fail_on_incomplete=false,
    strict=false, top=10, html=None, csv=None, perfetto=None, parquet=None, run_id=None
))]
#[expect(
    clippy::too_many_arguments,
    reason = "one Rust parameter per Python keyword argument: pyo3 checks each one's type and names it in the error"
)]
fn analyze<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    capture: Option<PathBuf>,
    no_capture_folder: bool,
    categories: Option<PathBuf>,
    format: Option<String>,
    allow_truncated: bool,
    threads: i64,
    range: Option<String>,
    device: Option<String>,
    fail_on_incomplete: bool,
    strict: bool,
    top: i64,
    html: Option<PathBuf>,
    csv: Option<PathBuf>,
    perfetto: Option<PathBuf>,
    parquet: Option<PathBuf>,
    run_id: Option<String>,
) -> PyResult<(String, Bound<'py, PyDict>, u8)> {
    let request = AnalyzeRequest {
        inputs: paths,
        capture,
        capture_folders: !no_capture_folder,
        reading: reading(categories, allow_truncated, format.as_deref(), threads)?,
        range: range
            .as_deref()
            .map(RequestError::range)
            .transpose()
            .map_err(value_error)?,
        device: device
            .as_deref()
            .map(RequestError::device)
            .transpose()
            .map_err(value_error)?,
        gate: Gate::of(strict, fail_on_incomplete),
        outputs: Outputs {
            csv,
            perfetto,
            html,
            parquet,
            run_id,
        },
        top: count("top", top)?,
    };
    let analysis = py
        .detach(|| stepscope::api::analyze(request))
        .map_err(raise)?;
    let tables = PyDict::new(py);
    for (name, bytes) in &analysis.tables {
        tables.set_item(*name, PyBytes::new(py, bytes))?;
    }
    Ok((analysis.json, tables, analysis.exit_code))
}

/// How to read the files, from the keywords every reading call takes.
fn reading(
    categories: Option<PathBuf>,
    allow_truncated: bool,
    format: Option<&str>,
    threads: i64,
) -> PyResult<Reading> {
    Ok(Reading {
        categories,
        allow_truncated,
        format: format
            .map(RequestError::format)
            .transpose()
            .map_err(value_error)?
            .flatten(),
        threads: count("threads", threads)?,
    })
}

/// A count a caller gave (`top`, `threads`): 0 or more.
fn count(parameter: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value)
        .map_err(|_| PyValueError::new_err(format!("{parameter}: must be 0 or more, got {value}")))
}

/// A value of the right type that cannot be used, as Python's `ValueError` naming the
/// parameter, its value and the choices.
fn value_error(error: RequestError) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// `stepscope diff` in-process, from typed keyword arguments: `(json, exit_code)`. Types
/// and values are checked as `analyze`'s are.
#[pyfunction]
#[pyo3(signature = (
    base, new, *, force=false, fail_on_regression=None, no_capture_folder=false,
    categories=None, format=None, allow_truncated=false, threads=0, html=None, top=10
))]
#[expect(
    clippy::too_many_arguments,
    reason = "one Rust parameter per Python keyword argument: pyo3 checks each one's type and names it in the error"
)]
fn diff(
    py: Python<'_>,
    base: PathBuf,
    new: PathBuf,
    force: bool,
    fail_on_regression: Option<f64>,
    no_capture_folder: bool,
    categories: Option<PathBuf>,
    format: Option<String>,
    allow_truncated: bool,
    threads: i64,
    html: Option<PathBuf>,
    top: i64,
) -> PyResult<(String, u8)> {
    let request = DiffRequest {
        base,
        new,
        capture_folders: !no_capture_folder,
        reading: reading(categories, allow_truncated, format.as_deref(), threads)?,
        force,
        fail_on_regression: fail_on_regression
            .map(|pct| RequestError::percent("fail_on_regression", pct))
            .transpose()
            .map_err(value_error)?,
        html,
        top: count("top", top)?,
    };
    py.detach(|| stepscope::api::diff(request)).map_err(raise)
}

/// `stepscope env` in-process, from typed keyword arguments: `([(variable, value)],
/// explanation)`. Exactly one of `rocm`, `cuda`, `trace` and `detect`; `pid`, `python_env`
/// and `root` with `detect` only (else a `ValueError` naming them).
#[pyfunction]
#[pyo3(signature = (
    *, rocm=None, cuda=false, trace=Vec::new(), detect=false, pid=None, python_env=None,
    root=None
))]
#[expect(
    clippy::too_many_arguments,
    reason = "one Rust parameter per Python keyword argument: pyo3 checks each one's type and names it in the error"
)]
fn env(
    py: Python<'_>,
    rocm: Option<String>,
    cuda: bool,
    trace: Vec<PathBuf>,
    detect: bool,
    pid: Option<u32>,
    python_env: Option<PathBuf>,
    root: Option<PathBuf>,
) -> PyResult<(Vec<(String, String)>, String)> {
    let request = EnvRequest::from_choices(
        (rocm, cuda),
        trace,
        detect,
        (pid, python_env.into_iter().collect(), root),
    )
    .map_err(value_error)?;
    let answer = py.detach(|| stepscope::api::env(request)).map_err(raise)?;
    Ok((answer.switches, answer.explanation))
}

/// `stepscope config check PATHS…` in-process: per config, `(path, kind, framework,
/// fingerprint, [finding])`.
#[pyfunction]
fn check_configs(paths: Vec<String>) -> PyResult<Vec<CheckedTuple>> {
    let paths: Vec<OsString> = paths.into_iter().map(OsString::from).collect();
    let checked = stepscope::api::check_configs(&paths).map_err(raise)?;
    Ok(checked
        .into_iter()
        .map(|c| (c.path, c.kind, c.framework, c.fingerprint, c.findings))
        .collect())
}

/// A checked config as Python receives it.
type CheckedTuple = (String, String, String, String, Vec<String>);

/// The trace files `stepscope analyze PATHS` would read, in its order.
#[pyfunction]
fn find_traces(paths: Vec<String>) -> PyResult<Vec<String>> {
    let paths: Vec<OsString> = paths.into_iter().map(OsString::from).collect();
    stepscope::api::find_traces(&paths).map_err(raise)
}

/// Several files' verdicts together, as `analyze` combines a folder's (`failed`: files that
/// could not be read).
#[pyfunction]
fn combine_verdicts(verdicts: Vec<String>, failed: usize) -> PyResult<String> {
    stepscope::api::combine_verdicts(&verdicts, failed).map_err(raise)
}

fn raise(error: stepscope::api::ApiError) -> PyErr {
    StepscopeError::new_err((error.message, error.hint, error.exit_code))
}

/// The extension module.
#[pymodule]
fn _stepscope(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(env, m)?)?;
    m.add_function(wrap_pyfunction!(check_configs, m)?)?;
    m.add_function(wrap_pyfunction!(find_traces, m)?)?;
    m.add_function(wrap_pyfunction!(combine_verdicts, m)?)?;
    m.add("StepscopeError", m.py().get_type::<StepscopeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
