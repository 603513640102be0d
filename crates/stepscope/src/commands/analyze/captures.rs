//! Capture traces: the launches of the graphs a run replays, recorded while the server
//! captured them, which give each replay's expected size. One comes from `--capture` (for
//! every file), others from the `capture_traces/` folders vLLM, SGLang and ATOM write beside
//! a run's profiles (each for the files of its run and rank, never read as a rank itself).

use super::{AnalyzeSettings, FileResult, analyze_file};
use crate::commands::inputs::FoundCapture;

use crate::app::hinted;
use std::path::{Path, PathBuf};
use stepscope_analysis::{CapturedGraph, captured_graphs};
use stepscope_ingest::{ReadOptions, read_trace_file};

/// A capture trace read, and which files it sizes.
#[derive(Debug, Clone)]
pub struct CaptureTrace {
    /// The file.
    pub path: PathBuf,
    /// The graphs captured in it.
    pub graphs: Vec<CapturedGraph>,
    /// Where a folder search found it; `None` for `--capture`, which sizes every file.
    pub found: Option<FoundCapture>,
}

impl CaptureTrace {
    /// Whether this capture sizes the graphs of trace `file`.
    pub fn sizes(&self, file: &Path) -> bool {
        self.found
            .as_ref()
            .is_none_or(|found| found.belongs_to(file))
    }
}

/// The `--capture` trace.
///
/// # Errors
///
/// The file cannot be read, or holds no stream capture.
pub fn load_given(path: &Path, read: &ReadOptions) -> anyhow::Result<CaptureTrace> {
    let trace = read_trace_file(path, read)?;
    let graphs = captured_graphs(&trace);
    if graphs.is_empty() {
        return Err(hinted(
            format!(
                "`{}` holds no stream capture (no hipStreamBeginCapture/cudaStreamBeginCapture … EndCapture pair)",
                path.display()
            ),
            "pass the trace recorded while the server captured its graphs",
        ));
    }
    Ok(CaptureTrace {
        path: path.to_owned(),
        graphs,
        found: None,
    })
}

/// Capture traces found in folder searches, read; one that cannot be read or holds no
/// capture is left out with a warning (it is not read as a rank either).
pub fn load_found(
    found: Vec<FoundCapture>,
    read: &ReadOptions,
) -> (Vec<CaptureTrace>, Vec<String>) {
    let mut captures = Vec::new();
    let mut warnings = Vec::new();
    for capture in found {
        let shown = capture.path.display().to_string();
        match read_trace_file(&capture.path, read) {
            Ok(trace) => {
                let graphs = captured_graphs(&trace);
                if graphs.is_empty() {
                    warnings.push(format!(
                        "`{shown}` lies in a capture_traces folder but holds no stream capture: not used"
                    ));
                    continue;
                }
                captures.push(CaptureTrace {
                    path: capture.path.clone(),
                    graphs,
                    found: Some(capture),
                });
            }
            Err(error) => warnings.push(format!(
                "the capture trace `{shown}` cannot be read, so it sizes nothing: {error}"
            )),
        }
    }
    (captures, warnings)
}

/// The graphs that size trace `file`'s replays, and the capture files they come from.
pub fn graphs_for(captures: &[CaptureTrace], file: &Path) -> (Vec<CapturedGraph>, Vec<String>) {
    let mut graphs = Vec::new();
    let mut paths = Vec::new();
    for capture in captures.iter().filter(|c| c.sizes(file)) {
        graphs.extend(capture.graphs.iter().cloned());
        paths.push(capture.path.display().to_string());
    }
    (graphs, paths)
}

/// A warning for each capture trace that sized no graph of the files it was given to
/// (`files`: each file's path, graphs sized by a capture, and replays).
pub fn unmatched(captures: &[CaptureTrace], files: &[(&Path, u32, u64)]) -> Vec<String> {
    captures
        .iter()
        .filter_map(|capture| {
            let mine = files.iter().filter(|(path, ..)| capture.sizes(path));
            let (matched, replays) = mine.fold((0, 0), |(m, r), (_, matched, replays)| {
                (m + matched, r + replays)
            });
            (matched == 0 && replays > 0).then(|| {
                format!(
                    "the capture trace `{}` matches none of the traces' graphs (by kernel names, or by node count where it names none): its sizes were not used",
                    capture.path.display()
                )
            })
        })
        .collect()
}

/// Files among several that record graph captures and no replay while others replay graphs
/// are those files' capture traces (saved beside the profiles rather than in a
/// `capture_traces/` folder): they are taken out of the ranks, and each file they belong to
/// (the same rank, or any when either names none) is analysed again, once, with all of them.
pub(super) fn adopt_capture_files(
    results: &mut Vec<FileResult>,
    settings: &AnalyzeSettings,
    warnings: &mut Vec<String>,
) {
    let replays = |r: &FileResult| r.totals.replays > 0;
    if !results.iter().any(replays) {
        return;
    }
    let (capture_files, ranks): (Vec<FileResult>, Vec<FileResult>) = std::mem::take(results)
        .into_iter()
        .partition(|r| !replays(r) && !r.captured.is_empty());
    *results = ranks;
    let adopted: Vec<(Option<u32>, CaptureTrace)> = capture_files
        .into_iter()
        .map(|capture| {
            let trace = CaptureTrace {
                path: PathBuf::from(&capture.report.path),
                graphs: capture.captured,
                found: None,
            };
            (capture.identity.rank, trace)
        })
        .collect();
    let mut sized: Vec<Vec<String>> = vec![Vec::new(); adopted.len()];
    for result in results.iter_mut().filter(|r| replays(r)) {
        let own = result.identity.rank;
        let mine: Vec<usize> = (0..adopted.len())
            .filter(|&i| adopted[i].0.is_none() || own.is_none_or(|own| Some(own) == adopted[i].0))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut again = settings.clone();
        again.progress = false;
        again
            .captures
            .extend(mine.iter().map(|&i| adopted[i].1.clone()));
        match analyze_file(Path::new(&result.report.path), &again) {
            Ok(sized_again) => {
                mine.iter()
                    .for_each(|&i| sized[i].push(format!("`{}`", result.report.path)));
                *result = sized_again;
            }
            Err(error) => warnings.push(format!(
                "`{}` could not be read again with its capture traces: {error}",
                result.report.path
            )),
        }
    }
    for ((_, capture), sized) in adopted.iter().zip(sized) {
        let of = if sized.is_empty() {
            "no file (no rank matches)".to_owned()
        } else {
            sized.join(", ")
        };
        warnings.push(format!(
            "`{}` records graph captures and replays none: read as the capture of {of}, not as a rank",
            capture.path.display()
        ));
    }
}
