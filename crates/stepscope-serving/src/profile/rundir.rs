//! The run directory: everything one profile run leaves, and `results.json` rewritten after
//! every phase (to a temporary file, then renamed, so a reader never sees half of it).
//!
//! ```text
//! RUN/
//!   results.json          the run (docs/profile-results.md)
//!   report.txt            the terminal report
//!   config.yaml           the profile config as given (baseline.yaml with --baseline)
//!   resolved.json         the config as run: windows after --window, server source
//!   fingerprint           the profile config's reuse fingerprint
//!   server.json           a booted server: URL, fingerprint, process group (read by --url)
//!   server.log            its output (baseline-server.log for --baseline)
//!   windows/N-SPEC/       each window's trace files, analysis.json and report.txt
//!   bench/*.json          each load phase, as `stepscope bench --json` writes it
//!   throughput/profiled-N/  the traces of the profiled throughput phases
//! ```

use super::record::{RunRecord, RunStatus};
use crate::fingerprint::Fingerprint;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// A run directory and the record it holds.
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
    record: Arc<Mutex<RunRecord>>,
}

/// Why the run directory could not be made or written.
#[derive(Debug, thiserror::Error)]
#[error(
    "Could not write `{path}`: {source}\nhint: is the output folder writable, with space left?"
)]
pub struct RunDirError {
    /// The file or folder.
    pub path: PathBuf,
    /// What the OS said.
    #[source]
    pub source: std::io::Error,
}

impl RunDir {
    /// Makes `root` (which must not hold files yet) and writes the first `results.json`.
    pub fn create(root: &Path, record: RunRecord) -> Result<Self, RunDirError> {
        make_new_dir(root)?;
        let dir = RunDir {
            root: root.to_owned(),
            record: Arc::new(Mutex::new(record)),
        };
        dir.save(&dir.lock())?;
        Ok(dir)
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `relative` inside the run directory.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// `path` relative to the run directory, for the record.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// A copy of the record as it stands.
    pub fn record(&self) -> RunRecord {
        self.lock().clone()
    }

    /// Changes the record and rewrites `results.json`.
    ///
    /// The file is written while the record is locked: the signal thread marks the run
    /// interrupted while the main thread records its phase, and two writers of the one
    /// temporary file would race (the second rename finds it gone) or leave the older record.
    pub fn update(&self, change: impl FnOnce(&mut RunRecord)) -> Result<(), RunDirError> {
        let mut record = self.lock();
        change(&mut record);
        self.save(&record)
    }

    /// Sets the phase (and rewrites `results.json`).
    pub fn phase(&self, phase: &str) -> Result<(), RunDirError> {
        self.update(|record| phase.clone_into(&mut record.phase))
    }

    /// Marks the run ended with `status` (and `error`), stamped now.
    pub fn end(&self, status: RunStatus, error: Option<String>) -> Result<(), RunDirError> {
        self.update(|record| {
            record.status = status;
            record.error = error;
            record.finished_at = Some(now());
        })
    }

    /// Writes `value` as pretty JSON to `relative`.
    pub fn write_json(&self, relative: &str, value: &impl Serialize) -> Result<(), RunDirError> {
        let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
        self.write(relative, text.as_bytes())
    }

    /// Writes `bytes` to `relative` (folders made), through a temporary file.
    pub fn write(&self, relative: &str, bytes: &[u8]) -> Result<(), RunDirError> {
        write_atomic(&self.path(relative), bytes)
    }

    /// Writes `record` (held locked by the caller) as `results.json`.
    fn save(&self, record: &RunRecord) -> Result<(), RunDirError> {
        let text = serde_json::to_string_pretty(record).unwrap_or_default() + "\n";
        self.write("results.json", text.as_bytes())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RunRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Makes the run directory `root`, refused when it already holds files (runs never mix).
pub(crate) fn make_new_dir(root: &Path) -> Result<(), RunDirError> {
    let error = |source| RunDirError {
        path: root.to_owned(),
        source,
    };
    if root.is_dir() && std::fs::read_dir(root).map_err(error)?.next().is_some() {
        return Err(error(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "the run directory already holds files; give a new --out (runs never mix)",
        )));
    }
    std::fs::create_dir_all(root).map_err(error)
}

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunDirError> {
    let error = |source| RunDirError {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, bytes).map_err(error)?;
    std::fs::rename(&temporary, path).map_err(error)
}

/// The current time, UTC, RFC 3339 to the second.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The default run folder name: `YYYYmmdd-HHMMSS-<config name>`.
pub fn default_run_name(config_path: &Path) -> String {
    let stem = config_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "profile".to_owned());
    format!(
        "{}-{stem}",
        jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S")
    )
}

/// What `server.json` says about a server a run booted; `--url` reads it to learn the
/// fingerprint of the server it attaches to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootedServer {
    /// Base URL.
    pub url: String,
    /// The fingerprint it was booted with.
    pub fingerprint: String,
    /// Its process group.
    pub process_group: i32,
    /// Whether the run left it running (`--keep-server`).
    pub kept_running: bool,
}

impl BootedServer {
    /// Reads `server.json` in `run_dir`.
    pub fn read(run_dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(run_dir.join("server.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The fingerprint, if it is one.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        Fingerprint::parse(&self.fingerprint)
    }
}

/// The runs under `output_dir` that booted a server at `url` and left it running, newest
/// first (by folder name, which starts with the time).
pub fn runs_serving(output_dir: &Path, url: &str) -> Vec<(PathBuf, BootedServer)> {
    let Ok(entries) = std::fs::read_dir(output_dir) else {
        return Vec::new();
    };
    let same = |a: &str| a.trim_end_matches('/') == url.trim_end_matches('/');
    let mut runs: Vec<(PathBuf, BootedServer)> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter_map(|dir| BootedServer::read(&dir).map(|server| (dir, server)))
        .filter(|(_, server)| server.kept_running && same(&server.url))
        .collect();
    runs.sort_by(|a, b| b.0.cmp(&a.0));
    runs
}
