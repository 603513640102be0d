//! Trace inputs as users give them, shared by every subcommand that reads traces: files as
//! given, and folders searched recursively for trace files, in sorted order.

use anyhow::bail;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The file name endings a folder search keeps: Kineto JSON, and the kernel table of a
/// rocprofv3 CSV run (its other tables are read with it).
pub const TRACE_SUFFIXES: [&str; 4] = [".json", ".json.gz", ".json.zst", "kernel_trace.csv"];

/// Files as given, and trace files found (recursively, sorted) in folders.
///
/// # Errors
///
/// An input that does not exist, a folder that holds no trace file, or a folder that cannot
/// be read; each names the path.
pub fn expand_inputs(inputs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let before = files.len();
            walk(input, &mut files, &mut HashSet::new())?;
            if files.len() == before {
                bail!(
                    "`{}` holds no trace files (*.json, *.json.gz, *.json.zst, rocprofv3 *kernel_trace.csv)",
                    input.display()
                );
            }
        } else if input.exists() {
            files.push(input.clone());
        } else {
            bail!("`{}` does not exist", input.display());
        }
    }
    Ok(files)
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

/// Recursive walk; `seen` holds canonical folder paths so a symlink loop is entered once.
fn walk(dir: &Path, files: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>) -> anyhow::Result<()> {
    if !seen.insert(fs_err::canonicalize(dir)?) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = fs_err::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, files, seen)?;
        } else if is_trace_file_name(&path) {
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
}
