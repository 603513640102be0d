//! The extension module of the `stepscope` Python package (`stepscope._stepscope`): the
//! command line, and `analyze` in-process. The Python side (`python/stepscope`) builds the
//! arguments, wraps the results in objects and DataFrames, and raises
//! `stepscope.StepscopeError` with the command's message and hint.
//!
//! Both calls release the GIL while they work: reading a trace takes seconds, and other
//! Python threads (a notebook's, a Ray worker's) go on meanwhile.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::ffi::OsString;

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

/// `stepscope analyze ARGS…` in-process: `(json, {table: parquet bytes}, exit_code)`;
/// raises `StepscopeError(message, hint, exit_code)` when the command would fail.
#[pyfunction]
fn analyze<'py>(py: Python<'py>, args: Vec<String>) -> PyResult<(String, Bound<'py, PyDict>, u8)> {
    let argv: Vec<OsString> = args.into_iter().map(OsString::from).collect();
    let result = py.detach(|| stepscope::api::analyze(&argv));
    match result {
        Ok(analysis) => {
            let tables = PyDict::new(py);
            for (name, bytes) in &analysis.tables {
                tables.set_item(*name, PyBytes::new(py, bytes))?;
            }
            Ok((analysis.json, tables, analysis.exit_code))
        }
        Err(error) => Err(raise(error)),
    }
}

/// `stepscope diff ARGS…` in-process: `(json, exit_code)`.
#[pyfunction]
fn diff(py: Python<'_>, args: Vec<String>) -> PyResult<(String, u8)> {
    let argv: Vec<OsString> = args.into_iter().map(OsString::from).collect();
    py.detach(|| stepscope::api::diff(&argv)).map_err(raise)
}

/// `stepscope env ARGS…` in-process: `([(variable, value)], explanation)`.
#[pyfunction]
fn env(py: Python<'_>, args: Vec<String>) -> PyResult<(Vec<(String, String)>, String)> {
    let argv: Vec<OsString> = args.into_iter().map(OsString::from).collect();
    let answer = py.detach(|| stepscope::api::env(&argv)).map_err(raise)?;
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
