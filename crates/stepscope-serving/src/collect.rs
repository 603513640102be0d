//! Trace collection: the files a profile window wrote, found by the framework's naming,
//! waited for until complete, and moved into the run directory.
//!
//! A window's files appear after it closes, sometimes minutes later (vLLM's
//! `/stop_profile` has taken 295 s with call stacks on, vllm PR #54322). [`collect_traces`] looks in the framework's trace folder
//! for files that were not there before the window ([`TraceSnapshot`]) and match the
//! framework's names (SGLang `*.trace.json.gz`, vLLM `*.pt.trace.json.gz`, ATOM
//! `rank_*/…json.gz`). A file is complete when its size has not changed for a while, ATOM's
//! `.json` is gone beside its `.gz`, and its content ends: a gzip stream that inflates to its
//! end, or JSON that ends with `}` or `]`. Complete files are moved into the run directory;
//! files still incomplete at the timeout are reported by name with the reason, never
//! skipped in silence; no file at all is an error that says where it looked.

use crate::config::Framework;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The trace files in a folder before a window opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceSnapshot {
    files: BTreeSet<PathBuf>,
}

impl TraceSnapshot {
    /// Every file under `dir` (two levels, for ATOM's `rank_N/`); empty if `dir` is missing.
    pub fn take(dir: &Path) -> Self {
        TraceSnapshot {
            files: files_under(dir).into_iter().collect(),
        }
    }
}

/// How long to wait, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectOptions {
    /// Give up on files still incomplete (or on no file at all) after this long.
    pub timeout: Duration,
    /// A file's size must stay the same this long.
    pub settle: Duration,
    /// Pause between looks.
    pub poll: Duration,
    /// The files a window must leave before it counts as collected.
    pub expected: Expected,
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions {
            timeout: Duration::from_secs(600),
            settle: Duration::from_secs(2),
            poll: Duration::from_millis(200),
            expected: Expected::default(),
        }
    }
}

/// The rank files a window must leave: one per rank (per stage for SGLang's `by_stage`),
/// not counting vLLM's front-end trace. Ranks 0 (default): any one file will do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Expected {
    /// Ranks of the server (tensor × pipeline × data parallel).
    pub ranks: u32,
    /// One file per stage (`-EXTEND` and `-DECODE`) per rank.
    pub by_stage: bool,
}

impl Expected {
    /// What is still missing among `files`, if anything.
    pub fn missing(&self, files: &[PathBuf]) -> Option<String> {
        let ranks = files.iter().filter(|p| is_rank_trace(p)).count();
        let stage = |tag: &str| {
            files
                .iter()
                .filter(|p| p.to_string_lossy().contains(tag))
                .count()
        };
        let want = self.ranks as usize;
        if self.by_stage {
            let (extend, decode) = (stage("-EXTEND"), stage("-DECODE"));
            if extend < want.max(1) || decode < want.max(1) {
                return Some(format!(
                    "{extend} -EXTEND and {decode} -DECODE file(s) of {} rank(s)",
                    want.max(1)
                ));
            }
            return None;
        }
        (ranks < want).then(|| format!("{ranks} of {want} rank files"))
    }
}

/// Whether a trace file is a rank's (vLLM's front-end `async_llm` trace is not).
pub fn is_rank_trace(path: &Path) -> bool {
    !path.to_string_lossy().contains(".async_llm.")
}

/// A trace moved into the run directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedTrace {
    /// Where the framework wrote it.
    pub source: PathBuf,
    /// Where it is now.
    pub path: PathBuf,
    /// Size in bytes.
    pub bytes: u64,
}

/// A file the window wrote that never completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncompleteTrace {
    /// The file, where the framework wrote it (left there).
    pub path: PathBuf,
    /// Why it does not count as complete.
    pub reason: String,
}

/// What one window left.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collected {
    /// Complete files, moved, in name order.
    pub traces: Vec<CollectedTrace>,
    /// Files that were still incomplete at the timeout.
    pub incomplete: Vec<IncompleteTrace>,
    /// Rank or stage files that never appeared (what was found, of what was expected).
    pub missing: Option<String>,
}

/// Why nothing could be collected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CollectError {
    /// The window wrote no trace file in time.
    #[error("No {framework} trace appeared in `{dir}` within {seconds} s\nhint: {hint}")]
    NoTrace {
        /// The framework, for the hint.
        framework: &'static str,
        /// Where stepscope looked.
        dir: PathBuf,
        /// The timeout.
        seconds: u64,
        /// Where the framework writes traces.
        hint: &'static str,
    },
    /// A file could not be moved into the run directory.
    #[error("Could not move `{from}` to `{to}`")]
    Move {
        /// The source.
        from: PathBuf,
        /// The destination.
        to: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

/// Waits for the files a window wrote into `dir` (those not in `before`), and moves the
/// complete ones into `dest`. `progress` hears a line per look while it waits.
pub fn collect_traces(
    framework: Framework,
    dir: &Path,
    before: &TraceSnapshot,
    dest: &Path,
    options: CollectOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Collected, CollectError> {
    let started = Instant::now();
    let mut sizes: BTreeMap<PathBuf, (u64, Instant)> = BTreeMap::new();
    loop {
        let new = new_traces(framework, dir, before);
        let now = Instant::now();
        sizes.retain(|path, _| new.contains(path));
        let mut waiting = Vec::new();
        for path in &new {
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            let entry = sizes.entry(path.clone()).or_insert((size, now));
            if entry.0 != size {
                *entry = (size, now);
            }
            if now.duration_since(entry.1) < options.settle || pending_rename(framework, path) {
                waiting.push(path.clone());
            }
        }
        let timed_out = started.elapsed() >= options.timeout;
        let missing = options.expected.missing(&new);
        if !new.is_empty() && ((waiting.is_empty() && missing.is_none()) || timed_out) {
            let mut collected = finish(&new, &waiting, dest)?;
            collected.missing = missing;
            return Ok(collected);
        }
        if timed_out {
            return Err(CollectError::NoTrace {
                framework: framework.as_str(),
                dir: dir.to_owned(),
                seconds: options.timeout.as_secs(),
                hint: trace_dir_hint(framework),
            });
        }
        let expecting = missing.map(|m| format!("; so far {m}")).unwrap_or_default();
        progress(&format!(
            "waiting for traces in {}: {} file(s), {} still being written{expecting} ({} s)",
            dir.display(),
            new.len(),
            waiting.len(),
            started.elapsed().as_secs()
        ));
        std::thread::sleep(options.poll);
    }
}

/// Moves the complete files; reports the rest.
fn finish(new: &[PathBuf], waiting: &[PathBuf], dest: &Path) -> Result<Collected, CollectError> {
    let mut collected = Collected::default();
    for path in new {
        let reason = if waiting.contains(path) {
            Some("still being written at the timeout".to_owned())
        } else {
            content_problem(path)
        };
        if let Some(reason) = reason {
            collected.incomplete.push(IncompleteTrace {
                path: path.clone(),
                reason,
            });
            continue;
        }
        collected.traces.push(move_into(path, dest)?);
    }
    Ok(collected)
}

/// Moves `path` into `dest` (rename, else copy and remove across file systems).
fn move_into(path: &Path, dest: &Path) -> Result<CollectedTrace, CollectError> {
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    let parent = path.parent().and_then(Path::file_name).map(PathBuf::from);
    // ATOM writes one file per rank folder, often with the same name: keep the folder.
    let to = match parent.filter(|p| p.to_string_lossy().starts_with("rank_")) {
        Some(rank) => dest.join(rank).join(name),
        None => dest.join(name),
    };
    let error = |source| CollectError::Move {
        from: path.to_owned(),
        to: to.clone(),
        source,
    };
    if let Some(folder) = to.parent() {
        std::fs::create_dir_all(folder).map_err(error)?;
    }
    if std::fs::rename(path, &to).is_err() {
        std::fs::copy(path, &to).map_err(error)?;
        std::fs::remove_file(path).map_err(error)?;
    }
    let bytes = std::fs::metadata(&to).map(|m| m.len()).unwrap_or(0);
    Ok(CollectedTrace {
        source: path.to_owned(),
        path: to,
        bytes,
    })
}

/// Why a settled file is not a whole trace, if it is not.
fn content_problem(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut decoder = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file));
        let mut buffer = vec![0_u8; 1 << 16];
        let mut last = Vec::new();
        loop {
            match decoder.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => last = buffer[n.saturating_sub(64)..n].to_vec(),
                Err(e) => return Some(format!("the gzip stream breaks off ({e})")),
            }
        }
        return json_end_problem(&last);
    }
    let text = std::fs::read(path).ok()?;
    json_end_problem(&text[text.len().saturating_sub(64)..])
}

/// JSON that does not end with `}` or `]` was cut off.
fn json_end_problem(tail: &[u8]) -> Option<String> {
    let end = tail.iter().rev().find(|b| !b.is_ascii_whitespace());
    match end {
        Some(b'}') | Some(b']') => None,
        _ => Some("the JSON ends before the document does (cut off)".to_owned()),
    }
}

/// Files under `dir` new since `before` that match the framework's trace names.
fn new_traces(framework: Framework, dir: &Path, before: &TraceSnapshot) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = files_under(dir)
        .into_iter()
        .filter(|path| !before.files.contains(path) && is_trace(framework, path))
        .collect();
    found.sort();
    found
}

/// Whether `path` is named as the framework names its traces.
fn is_trace(framework: Framework, path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    match framework {
        Framework::Sglang => name.ends_with(".trace.json.gz") || name.ends_with(".trace.json"),
        Framework::Vllm => name.ends_with(".pt.trace.json.gz") || name.ends_with(".pt.trace.json"),
        Framework::Atom => {
            let in_rank = path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|p| p.to_string_lossy().starts_with("rank_"));
            in_rank && name.ends_with(".json.gz")
        }
    }
}

/// ATOM writes `x.json`, then compresses it to `x.json.gz` and removes the `.json`: while
/// both exist, the `.gz` is not done.
fn pending_rename(framework: Framework, path: &Path) -> bool {
    framework == Framework::Atom
        && path
            .to_str()
            .and_then(|p| p.strip_suffix(".gz"))
            .is_some_and(|json| Path::new(json).exists())
}

fn trace_dir_hint(framework: Framework) -> &'static str {
    match framework {
        Framework::Sglang => {
            "SGLang writes to the start_profile `output_dir` (or SGLANG_TORCH_PROFILER_DIR) after the window's last step"
        }
        Framework::Vllm => {
            "vLLM writes to --profiler-config's torch_profiler_dir (or VLLM_TORCH_PROFILER_DIR) when /stop_profile returns"
        }
        Framework::Atom => {
            "ATOM writes to --torch-profiler-dir (or ATOM_TORCH_PROFILER_DIR)/rank_N/ when /stop_profile returns"
        }
    }
}

/// Files in `dir` and its direct subfolders.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Ok(inner) = std::fs::read_dir(&path) {
                out.extend(inner.flatten().map(|e| e.path()).filter(|p| p.is_file()));
            }
        } else if path.is_file() {
            out.push(path);
        }
    }
    out
}
