//! In-process access to what `stepscope analyze` computes, for the Python package: the
//! document as the JSON `analyze --json` prints, and the tables `analyze --parquet` writes,
//! as Parquet files in memory. Both come from the same arguments the command takes and the
//! same code, so a notebook and a pipeline can never disagree.

use crate::app::{AnalyzeRequest, DiffRequest, EnvRequest, message_and_hint};
use crate::commands::analyze::{
    AnalyzeSettings, Documented, View, documented, outcome, write_files,
};
use std::ffi::OsString;
use stepscope_model::Hinted;
use stepscope_report::parquet::table_files;
use stepscope_report::schema::FailedFile;

/// An error as the command line states it: the message, the fix, and the exit code the
/// command would end with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// What went wrong, naming the file and the place.
    pub message: String,
    /// How to fix it, when the command says.
    pub hint: Option<String>,
    /// The command's exit code for it (2: bad input).
    pub exit_code: u8,
}

impl ApiError {
    /// The error's message and hint, each from its own field ([`message_and_hint`]).
    fn new(error: &anyhow::Error, exit_code: u8) -> Self {
        let (message, hint) = message_and_hint(error);
        ApiError {
            message,
            hint,
            exit_code,
        }
    }

    fn hinted(error: Hinted, exit_code: u8) -> Self {
        ApiError {
            message: error.message,
            hint: Some(error.hint),
            exit_code,
        }
    }

    /// No file could be read: each file's message, and their fixes, each once.
    fn unread(failed: &[FailedFile]) -> Self {
        let lines: Vec<String> = failed
            .iter()
            .map(|f| format!("{}: {}", f.path, f.message))
            .collect();
        let hints = FailedFile::distinct_hints(failed);
        ApiError {
            message: format!("No trace could be read:\n{}", lines.join("\n")),
            hint: (!hints.is_empty()).then(|| hints.join("; ")),
            exit_code: 2,
        }
    }
}

/// What `analyze` gives back.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The document, as `analyze --json` prints it.
    pub json: String,
    /// Every table `--parquet` and `--csv` write
    /// ([`TABLES`](stepscope_report::tables::TABLES), in that order), each one Parquet file.
    pub tables: Vec<(&'static str, Vec<u8>)>,
    /// The exit code the command would end with (`--fail-on-incomplete` counts).
    pub exit_code: u8,
}

/// Runs what `stepscope analyze` runs for `request`, in this process: every file read and
/// analysed, the HTML page, CSV, Perfetto and Parquet outputs written where asked, nothing
/// printed on stdout.
///
/// # Errors
///
/// An input that cannot be found, no file that could be read, or an output that could not
/// be written: the message and hint the command gives, with its exit code.
pub fn analyze(request: AnalyzeRequest) -> Result<Analysis, ApiError> {
    let view = View::default();
    let mut settings = AnalyzeSettings::resolve(request, view).map_err(|e| ApiError::new(&e, 2))?;
    settings.keep_replays = true;
    let (document, export_failure) = match documented(&settings) {
        Ok(Documented::Read(document, export_failure)) => (document, export_failure),
        Ok(Documented::Unread(failed)) => return Err(ApiError::unread(&failed)),
        Err(error) => return Err(ApiError::new(&error, 2)),
    };
    write_files(&document, &settings).map_err(|e| ApiError::new(&e, 2))?;
    if let Some(error) = export_failure {
        return Err(ApiError::new(&error, 1));
    }
    let run = match &settings.parquet {
        Some(parquet) => parquet.run.clone(),
        None => crate::commands::analyze::dataset::new_run(
            settings.files.len(),
            Some("stepscope.analyze".to_owned()),
        ),
    };
    let written = table_files(&document, &run).map_err(|e| ApiError {
        message: format!("Could not encode the tables: {e}"),
        hint: None,
        exit_code: 1,
    })?;
    Ok(Analysis {
        json: stepscope_report::json::render(&document),
        tables: written,
        exit_code: outcome(&document, &settings).code(),
    })
}

/// The trace files `analyze PATHS` would read, in its order: files as given, folders
/// searched as the command searches them (capture traces left out: they are read with the
/// traces of their run).
///
/// # Errors
///
/// A path that does not exist, or a folder with no trace: the command's message.
pub fn find_traces(paths: &[OsString]) -> Result<Vec<String>, ApiError> {
    let paths: Vec<std::path::PathBuf> = paths.iter().map(Into::into).collect();
    let found = crate::commands::inputs::find_inputs(&paths).map_err(|e| ApiError::new(&e, 2))?;
    Ok(found
        .files
        .iter()
        .map(|p| p.display().to_string())
        .collect())
}

/// The verdict of several files' verdicts together, as `analyze` gives a folder of rank
/// files one (`unreadable` when `failed` files could not be read).
///
/// # Errors
///
/// A word that is not a file verdict.
pub fn combine_verdicts(verdicts: &[String], failed: usize) -> Result<String, ApiError> {
    use stepscope_analysis::Verdict;
    let parsed = verdicts
        .iter()
        .map(|word| {
            Verdict::ALL
                .into_iter()
                .find(|v| v.as_str() == word)
                .ok_or_else(|| ApiError {
                    message: format!("`{word}` is not a verdict"),
                    hint: Some(
                        "give the words of `verdict` in analyze's JSON (complete, incomplete, …)"
                            .to_owned(),
                    ),
                    exit_code: 2,
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(
        stepscope_report::schema::overall_verdict(&parsed, failed, 0)
            .as_str()
            .to_owned(),
    )
}

/// Runs what `stepscope diff` runs for `request`, in this process: the document
/// `diff --json` prints, and the command's exit code (3 for a refused stage or a failed
/// regression gate); the HTML page is written where asked. Nothing is printed.
///
/// # Errors
///
/// A side that does not exist or of which no trace could be read (each file's error in the
/// message), a category table that cannot be read, a page that could not be written.
pub fn diff(request: DiffRequest) -> Result<(String, u8), ApiError> {
    use crate::commands::diff::{DiffSettings, compared, outcome};
    let settings =
        DiffSettings::resolve(request, View::default()).map_err(|e| ApiError::new(&e, 2))?;
    let done = compared(&settings)
        .map_err(|e| ApiError::new(&e, 2))?
        .map_err(|unreadable| ApiError::hinted(unreadable, 2))?;
    let json = stepscope_report::json::render_diff(&done.diff);
    Ok((json, outcome(&done.diff).code()))
}

/// What `stepscope env` answers.
#[derive(Debug, Clone)]
pub struct EnvAnswer {
    /// The switches (`DEBUG_CLR_GRAPH_PACKET_CAPTURE`, `0`), in the order the command
    /// prints them; none for a CUDA runtime.
    pub switches: Vec<(String, String)>,
    /// What the command says on standard error: the runtime found and why each switch.
    pub explanation: String,
}

/// Runs what `stepscope env` runs for `request`, in this process.
///
/// # Errors
///
/// A detection that could not read what it needed, or a trace that could not be read: the
/// command's message and hint.
pub fn env(request: EnvRequest) -> Result<EnvAnswer, ApiError> {
    use crate::commands::env::{EnvSettings, answer};
    let settings = EnvSettings::resolve(request, false).map_err(|e| ApiError::new(&e, 2))?;
    let found = answer(&settings).map_err(|(error, hint)| ApiError {
        message: format!("{:#}", anyhow::Error::new(error)),
        hint: Some(hint),
        exit_code: 2,
    })?;
    if found.failed {
        return Err(ApiError {
            message: found.errors.join("\n"),
            hint: Some("fix the traces that could not be read, or leave them out".to_owned()),
            exit_code: 2,
        });
    }
    let switches = found.advice.map_or_else(Vec::new, |advice| {
        advice
            .switches
            .iter()
            .map(|s| (s.variable.to_owned(), s.value.to_owned()))
            .collect()
    });
    Ok(EnvAnswer {
        switches,
        explanation: found.explanation,
    })
}

/// One config `stepscope config check` read.
#[derive(Debug, Clone)]
pub struct CheckedConfig {
    /// Its file.
    pub path: String,
    /// `profile` or `baseline`.
    pub kind: String,
    /// `sglang`, `vllm` or `atom`.
    pub framework: String,
    /// Its reuse fingerprint (`sha256:…`).
    pub fingerprint: String,
    /// Its problems, each naming the file, the line and the key (none: it passes).
    pub findings: Vec<String>,
}

/// `stepscope config check PATHS` in this process: every config with its findings.
///
/// # Errors
///
/// A path that is missing or a config that cannot be read or parsed: its message.
pub fn check_configs(paths: &[OsString]) -> Result<Vec<CheckedConfig>, ApiError> {
    use stepscope_serving::{Fingerprint, check_configs, config_paths, load_config};
    let failed =
        |error: stepscope_serving::ServingError| ApiError::new(&anyhow::Error::new(error), 2);
    let inputs: Vec<std::path::PathBuf> = paths.iter().map(Into::into).collect();
    let files = config_paths(&inputs)
        .map_err(failed)?
        .iter()
        .map(|path| load_config(path))
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed)?;
    let findings = check_configs(&files);
    Ok(files
        .iter()
        .map(|file| CheckedConfig {
            path: file.path.display().to_string(),
            kind: file.config.kind.to_string(),
            framework: file.config.framework.to_string(),
            fingerprint: Fingerprint::of(&file.config).to_string(),
            findings: findings
                .iter()
                .filter(|f| f.path == file.path)
                .map(ToString::to_string)
                .collect(),
        })
        .collect())
}
