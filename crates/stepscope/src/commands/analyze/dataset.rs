//! `analyze --parquet DIR [--run-id ID]`: the run's id, checked before any file is read, and
//! its tables written after (docs/parquet-schema.md).

use crate::app::hinted;
use crate::output;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use stepscope_report::parquet::{RunId, RunInfo, check_new_run, write_dataset};
use stepscope_report::schema::{Document, count as noun_count};

/// `1 input file`, `2 replays`.
fn count(n: usize, noun: &str) -> String {
    noun_count(u32::try_from(n).unwrap_or(u32::MAX), noun)
}

/// Where the tables go, and the run they describe.
#[derive(Debug, Clone)]
pub struct ParquetSettings {
    /// The dataset folder.
    pub dir: PathBuf,
    /// The run.
    pub run: RunInfo,
}

/// The Parquet settings of `--parquet DIR [--run-id ID]`: a valid id that `DIR` does not
/// hold yet (a new one without `--run-id`), so a long analysis is not refused at its end.
pub fn resolve(
    dir: Option<PathBuf>,
    run_id: Option<String>,
    inputs: usize,
) -> anyhow::Result<Option<ParquetSettings>> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    if dir.exists() && !dir.is_dir() {
        return Err(hinted(
            format!("--parquet `{}` is a file", dir.display()),
            "name a folder (created if missing); each run adds files to it",
        ));
    }
    let started_at_us = jiff::Timestamp::now().as_microsecond();
    let id = match run_id {
        Some(id) => RunId::new(&id)?,
        None => RunId::generate(started_at_us, salt()),
    };
    check_new_run(&dir, &id)?;
    Ok(Some(ParquetSettings {
        dir,
        run: RunInfo {
            id,
            started_at_us,
            command: command_line(),
            inputs,
        },
    }))
}

/// A run with a new id, started now: the run of the tables `--csv` writes without
/// `--parquet`, and of the tables an in-process caller gets.
pub fn new_run(inputs: usize, command: Option<String>) -> RunInfo {
    let started_at_us = jiff::Timestamp::now().as_microsecond();
    RunInfo {
        id: RunId::generate(started_at_us, salt()),
        started_at_us,
        command: command.unwrap_or_else(command_line),
        inputs,
    }
}

/// A random number: the standard library seeds each `RandomState` from the OS.
fn salt() -> u64 {
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// The command line, arguments with spaces or quotes in single quotes.
fn command_line() -> String {
    let words: Vec<String> = std::env::args_os()
        .map(|arg| {
            let arg = arg.to_string_lossy().into_owned();
            if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || "'\"\\$".contains(c)) {
                format!("'{}'", arg.replace('\'', r"'\''"))
            } else {
                arg
            }
        })
        .collect();
    words.join(" ")
}

/// Writes the run's tables; with `say`, says where on stderr.
pub fn write(document: &Document, settings: &ParquetSettings, say: bool) -> anyhow::Result<()> {
    let written = write_dataset(document, &settings.run, &settings.dir)?;
    if !say {
        return Ok(());
    }
    let replays: usize = document
        .files
        .iter()
        .map(|f| f.replays.as_ref().map_or(0, Vec::len))
        .sum();
    output::note(&format!(
        "parquet: run `{}` written to `{}` ({} tables; {}, {}); query `{}` as one table",
        settings.run.id,
        settings.dir.display(),
        written.len(),
        count(
            document.files.len() + document.failed_files.len(),
            "input file"
        ),
        count(replays, "replay"),
        Path::new(&settings.dir).join("<table>/*.parquet").display(),
    ));
    Ok(())
}
