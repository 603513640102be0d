//! Trace inputs as users give them, shared by every subcommand that reads traces: files as
//! given, and folders searched recursively for trace files, in sorted order.

use crate::app::hinted;
use anyhow::bail;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The file name endings a folder search keeps: Kineto JSON, and the kernel table of a
/// rocprofv3 CSV run (its other tables are read with it).
pub const TRACE_SUFFIXES: [&str; 5] = [
    ".json",
    ".json.gz",
    ".json.zst",
    "kernel_trace.csv",
    "_results.db",
];

/// What a list of inputs holds: the trace files to read (as ranks), the capture traces found
/// beside them, and what a folder search passed over.
#[derive(Debug, Default)]
pub struct Found {
    /// Trace files, as given or found in folders (sorted within each folder).
    pub files: Vec<PathBuf>,
    /// Capture traces found in folder searches (`capture_traces/`), never read as ranks.
    pub captures: Vec<FoundCapture>,
    /// Files a folder search passed over, and why (a FIFO or device named like a trace).
    pub notes: Vec<String>,
}

/// A capture trace found in a `capture_traces/` folder, as vLLM, SGLang and ATOM write them
/// beside a run's profiles: the launches of the graphs the run replays, recorded while they
/// were captured.
#[derive(Debug, Clone)]
pub struct FoundCapture {
    /// The capture trace.
    pub path: PathBuf,
    /// The run folder it belongs to: the folder holding `capture_traces/`.
    pub run: PathBuf,
    /// The rank its name gives (`rank0`, `rank_0`), if any.
    pub rank: Option<u32>,
}

impl FoundCapture {
    /// Whether this capture belongs to trace `file`: a file of its run folder (not a capture
    /// itself) whose rank, when both names give one, is the capture's.
    pub fn belongs_to(&self, file: &Path) -> bool {
        let in_run = file.starts_with(&self.run) && !in_capture_folder(file);
        in_run && (self.rank.is_none() || rank_in_name(file).is_none_or(|r| Some(r) == self.rank))
    }
}

/// The folder name vLLM, SGLang and ATOM write capture traces into.
const CAPTURE_FOLDER: &str = "capture_traces";

/// Files as given, and trace files found (recursively, sorted) in folders.
///
/// # Errors
///
/// As [`find_inputs`].
pub fn expand_inputs(inputs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    Ok(find_inputs(inputs)?.files)
}

/// Files as given, and trace files found (recursively, sorted) in folders: a file in a
/// `capture_traces/` folder is a capture of its run, unless its run folder holds no other
/// trace (then it is the run's only profile, read as one); a FIFO, socket or device named
/// like a trace is passed over with a note (reading one would wait forever or never end).
///
/// # Errors
///
/// An input that does not exist or is not a regular file (a FIFO or device given by name),
/// a folder that holds no trace file, or a folder that cannot be read; each names the path.
pub fn find_inputs(inputs: &[PathBuf]) -> anyhow::Result<Found> {
    let mut found = Found::default();
    for input in inputs {
        if input.is_dir() {
            let mut files = Vec::new();
            walk(input, &mut files, &mut found.notes, &mut HashSet::new())?;
            if files.is_empty() {
                bail!(
                    "`{}` holds no trace files (*.json, *.json.gz, *.json.zst, rocprofv3 *kernel_trace.csv)",
                    input.display()
                );
            }
            split_captures(files, &mut found);
        } else if input.exists() {
            refuse_special(input)?;
            found.files.push(input.clone());
        } else {
            bail!("`{}` does not exist", input.display());
        }
    }
    Ok(found)
}

/// Adds the capture traces of the `capture_traces/` folder beside each trace file (vLLM,
/// SGLang and ATOM write it next to their profiles), so that a trace given by name is sized
/// by its captures as when its folder is analysed. A capture already found, or given as a
/// trace, is not added again; a folder that cannot be searched is noted and passed over.
pub fn add_captures_beside(found: &mut Found) {
    let mut runs: Vec<PathBuf> = found
        .files
        .iter()
        .filter(|file| !in_capture_folder(file))
        .map(|file| file.parent().unwrap_or(Path::new("")).to_owned())
        .collect();
    runs.sort();
    runs.dedup();
    for run in runs {
        let folder = run.join(CAPTURE_FOLDER);
        if !folder.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        if let Err(error) = walk(&folder, &mut files, &mut found.notes, &mut HashSet::new()) {
            found.notes.push(format!(
                "`{}` cannot be searched for capture traces: {error}",
                folder.display()
            ));
            continue;
        }
        for path in files {
            let known =
                found.files.contains(&path) || found.captures.iter().any(|c| c.path == path);
            if !known {
                let rank = rank_in_name(&path);
                found.captures.push(FoundCapture {
                    path,
                    run: run.clone(),
                    rank,
                });
            }
        }
    }
}

/// Leaves out the captures a folder search found (`--no-capture-folder`), each with a note:
/// they are read neither as captures nor as ranks.
pub fn leave_out_captures(found: &mut Found) {
    for unused in std::mem::take(&mut found.captures) {
        found.notes.push(format!(
            "`{}` lies in a capture_traces folder: not read (--no-capture-folder)",
            unused.path.display()
        ));
    }
}

/// Moves files in `capture_traces/` folders to `found.captures` when their run folder has
/// other traces; the rest to `found.files`.
fn split_captures(files: Vec<PathBuf>, found: &mut Found) {
    let (captures, ranks): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|f| in_capture_folder(f));
    for path in captures {
        let run = run_folder(&path);
        if ranks.iter().any(|rank| rank.starts_with(&run)) {
            let rank = rank_in_name(&path);
            found.captures.push(FoundCapture { path, run, rank });
        } else {
            found.files.push(path);
        }
    }
    found.files.extend(ranks);
    found.files.sort();
}

/// Whether `path` lies in a `capture_traces/` folder.
fn in_capture_folder(path: &Path) -> bool {
    path.parent()
        .into_iter()
        .flat_map(Path::components)
        .any(|c| c.as_os_str() == CAPTURE_FOLDER)
}

/// The folder holding the `capture_traces/` folder `path` lies in.
fn run_folder(path: &Path) -> PathBuf {
    path.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == CAPTURE_FOLDER))
        .and_then(Path::parent)
        .unwrap_or(Path::new(""))
        .to_owned()
}

/// The rank a file name gives: the digits after the last `rank` (`rank0`, `rank_0`, `rank-0`).
fn rank_in_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let after = &name[name.rfind("rank")? + 4..];
    let digits: String = after
        .trim_start_matches(['_', '-'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Refuses a FIFO, socket or device given by name: a FIFO waits for a writer forever, and a
/// device like `/dev/zero` never ends.
fn refuse_special(path: &Path) -> anyhow::Result<()> {
    let kind = special_kind(&fs_err::metadata(path)?);
    if let Some(kind) = kind {
        return Err(hinted(
            format!(
                "`{}` is {kind}, not a file: stepscope reads trace files, which have an end",
                path.display()
            ),
            "write the trace to a regular file first (from a pipe: `cat PIPE > trace.json`) and pass that",
        ));
    }
    Ok(())
}

/// What a path that is not a regular file or folder is, in words.
fn special_kind(metadata: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = metadata.file_type();
    if kind.is_file() || kind.is_dir() {
        None
    } else if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

/// `files`, the tables read with each of them (a rocprofv3 CSV run's other tables), and
/// `others` (a capture trace, a category table): every file a command reads, so that no
/// output is written over one.
pub fn with_companions<'a>(
    files: &[PathBuf],
    others: impl Iterator<Item = &'a PathBuf>,
) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = files.to_vec();
    for file in files {
        all.extend(stepscope_ingest::rocprof_csv::companion_paths(file));
    }
    all.extend(others.cloned());
    all
}

/// Whether a file name ends like a trace file.
pub fn is_trace_file_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| TRACE_SUFFIXES.iter().any(|suffix| name.ends_with(suffix)))
}

/// Whether the file begins as stepscope's `--perfetto` files begin: read back as a trace
/// of the folder it was written into, it would count its run twice.
fn is_own_export(path: &Path) -> bool {
    use std::io::Read;
    let mark = stepscope_report::perfetto::EXPORT_MARK;
    let mut head = vec![0; mark.len()];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut head))
        .is_ok_and(|()| head == mark)
}

/// Recursive walk; `seen` holds canonical folder paths so a symlink loop is entered once.
/// Entries named like traces that are not regular files go to `notes`, unread.
fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    notes: &mut Vec<String>,
    seen: &mut HashSet<PathBuf>,
) -> anyhow::Result<()> {
    if !seen.insert(fs_err::canonicalize(dir)?) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = fs_err::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, files, notes, seen)?;
        } else if !is_trace_file_name(&path) {
            continue;
        } else if let Some(kind) = std::fs::metadata(&path)
            .ok()
            .as_ref()
            .and_then(special_kind)
        {
            notes.push(format!(
                "`{}` is {kind}, not a file: passed over",
                path.display()
            ));
        } else if is_own_export(&path) {
            notes.push(format!(
                "`{}` is a Perfetto file stepscope wrote (--perfetto), not a profile: left out",
                path.display()
            ));
        } else {
            files.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_searched_recursively_in_sorted_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b/rank1.json.gz", "a.json", "b/rank0.json.zst", "notes.txt"] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"{}").unwrap();
        }
        let given = dir.path().join("notes.txt");
        let files = expand_inputs(&[dir.path().to_owned(), given]).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.strip_prefix(dir.path()).unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                Path::new("a.json"),
                Path::new("b/rank0.json.zst"),
                Path::new("b/rank1.json.gz"),
                Path::new("notes.txt"),
            ],
            "a file given by name is kept whatever its ending"
        );
    }

    #[test]
    fn missing_paths_and_empty_folders_are_errors_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let error = expand_inputs(&[dir.path().to_owned()]).unwrap_err();
        assert!(
            error.to_string().contains("holds no trace files"),
            "{error}"
        );
        let missing = dir.path().join("nope.json");
        let error = expand_inputs(std::slice::from_ref(&missing)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("`{}` does not exist", missing.display())
        );
    }

    #[test]
    fn a_fifo_is_passed_over_in_a_folder_and_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rank0.json"), b"{}").unwrap();
        let fifo = dir.path().join("rank1.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        let found = find_inputs(&[dir.path().to_owned()]).unwrap();
        assert_eq!(found.files, [dir.path().join("rank0.json")]);
        assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
        assert!(
            found.notes[0].contains("is a FIFO (named pipe)"),
            "{:?}",
            found.notes
        );
        let error = find_inputs(std::slice::from_ref(&fifo)).unwrap_err();
        assert!(error.to_string().contains("is a FIFO"), "{error}");
        let error = find_inputs(&[PathBuf::from("/dev/zero")]).unwrap_err();
        assert!(
            error.to_string().contains("is a character device"),
            "{error}"
        );
    }

    #[test]
    fn a_file_given_by_name_gets_the_capture_folder_beside_it_once() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "a/capture_traces/bs_32_rank0.json.gz",
            "a/capture_traces/bs_32_rank1.json.gz",
            "a/decode_rank1.json.gz",
            "b/decode.json.gz",
        ] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"{}").unwrap();
        }
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let capture0 = a.join("capture_traces/bs_32_rank0.json.gz");
        let given = [
            a.join("decode_rank1.json.gz"),
            b.join("decode.json.gz"),
            capture0.clone(),
        ];
        let mut found = find_inputs(&given).unwrap();
        add_captures_beside(&mut found);
        // The capture given by name stays a rank; only the other one is added, for `a`.
        let captures: Vec<_> = found.captures.iter().map(|c| c.path.clone()).collect();
        assert_eq!(captures, [a.join("capture_traces/bs_32_rank1.json.gz")]);
        assert!(found.files.contains(&capture0));
        let capture = &found.captures[0];
        assert_eq!(
            (capture.run.as_path(), capture.rank),
            (a.as_path(), Some(1))
        );
        assert!(capture.belongs_to(&given[0]));
        assert!(!capture.belongs_to(&given[1]), "b has no capture folder");
        // Searching again (a folder and a file in it) adds nothing twice.
        let mut both = find_inputs(&[a.clone(), a.join("decode_rank1.json.gz")]).unwrap();
        add_captures_beside(&mut both);
        assert_eq!(both.captures.len(), 2, "{:?}", both.captures);
        leave_out_captures(&mut both);
        assert!(both.captures.is_empty());
        assert_eq!(both.notes.len(), 2, "{:?}", both.notes);
    }

    #[test]
    fn capture_traces_beside_a_run_are_captures_of_their_rank() {
        let dir = tempfile::tempdir().unwrap();
        let names = [
            "a/capture_traces/bs_32_rank0.json.gz",
            "a/capture_traces/bs_32_rank1.json.gz",
            "a/decode_rank0.json.gz",
            "a/decode_rank1.json.gz",
            "b/capture_traces/capture_trace_rank_0.json.gz",
        ];
        for name in names {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"{}").unwrap();
        }
        let found = find_inputs(&[dir.path().to_owned()]).unwrap();
        let at = |name: &str| dir.path().join(name);
        assert_eq!(
            found.files,
            [at(names[2]), at(names[3]), at(names[4])],
            "b's capture folder is all of its run: read as a trace"
        );
        let captures: Vec<_> = found.captures.iter().map(|c| (&c.path, c.rank)).collect();
        assert_eq!(
            captures,
            [(&at(names[0]), Some(0)), (&at(names[1]), Some(1))]
        );
        assert!(found.captures[0].belongs_to(&at(names[2])));
        assert!(
            !found.captures[0].belongs_to(&at(names[3])),
            "rank 1 is not rank 0's"
        );
        assert!(!found.captures[0].belongs_to(&at(names[4])), "another run");
        assert_eq!(
            rank_in_name(Path::new("x/graph_capture_rank_12.1773.pt.trace.json")),
            Some(12)
        );
        assert_eq!(
            rank_in_name(Path::new("sglang_Qwen3-8B_decode.json.gz")),
            None
        );
    }
}
