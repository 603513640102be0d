//! Output paths checked against inputs before any work: an output that is an input file, or
//! a folder output that holds one, is refused, so no flag can write over a trace.
//!
//! Paths are compared as the file system resolves them (symbolic links, `..`, `.`), and
//! files that exist are also compared by device and inode, so a hard link or a second
//! mount of the same file is caught too. Outputs are written through a temporary file and
//! a rename (`stepscope_report::atomic`), which is what keeps an interrupted write from
//! leaving half a file; this check is what keeps a whole file from landing on an input.

use crate::app::hinted;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Whether an output is one file or a folder of files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// One file (`--html`, `--perfetto`, `--json FILE`).
    File,
    /// A folder stepscope writes files into (`--csv`, `--parquet`, `--out`).
    Folder,
}

/// One output a command was asked to write.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// The flag that names it, for messages.
    pub flag: &'static str,
    /// The path as given.
    pub path: &'a Path,
    /// File or folder.
    pub kind: OutputKind,
}

impl<'a> Output<'a> {
    /// A file output.
    pub fn file(flag: &'static str, path: &'a Path) -> Self {
        Output {
            flag,
            path,
            kind: OutputKind::File,
        }
    }

    /// A folder output.
    pub fn folder(flag: &'static str, path: &'a Path) -> Self {
        Output {
            flag,
            path,
            kind: OutputKind::Folder,
        }
    }
}

/// A path as the file system resolves it, and its file identity when it exists.
struct Resolved {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

impl Resolved {
    fn new(path: &Path) -> Self {
        let identity = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        Resolved {
            path: resolve(path),
            identity,
        }
    }

    fn same_file(&self, other: &Resolved) -> bool {
        self.path == other.path || (self.identity.is_some() && self.identity == other.identity)
    }
}

/// Refuses outputs that are, or (for folders) hold, one of `inputs`, and two outputs that
/// name one file.
///
/// # Errors
///
/// A message naming the flag, the output, the input and the fix (the command exits 2).
pub fn refuse_overwrites(outputs: &[Output<'_>], inputs: &[PathBuf]) -> anyhow::Result<()> {
    let resolved_inputs: Vec<(&PathBuf, Resolved)> =
        inputs.iter().map(|i| (i, Resolved::new(i))).collect();
    let mut seen: Vec<(&Output<'_>, Resolved)> = Vec::new();
    for output in outputs {
        let target = Resolved::new(output.path);
        for (input, resolved) in &resolved_inputs {
            check_one(output, &target, input, resolved)?;
        }
        if let Some((earlier, _)) = seen.iter().find(|(_, r)| r.same_file(&target)) {
            return Err(hinted(
                format!(
                    "{} and {} name the same path `{}`: one would overwrite the other",
                    earlier.flag,
                    output.flag,
                    output.path.display()
                ),
                "give each output its own name",
            ));
        }
        seen.push((output, target));
    }
    Ok(())
}

fn check_one(
    output: &Output<'_>,
    target: &Resolved,
    input: &Path,
    resolved: &Resolved,
) -> anyhow::Result<()> {
    if target.same_file(resolved) {
        return Err(hinted(
            format!(
                "{} `{}` is the input `{}`: writing it would destroy the input",
                output.flag,
                output.path.display(),
                input.display()
            ),
            format!("write the output elsewhere, e.g. `{}`", suggestion(output)),
        ));
    }
    if output.kind == OutputKind::Folder && resolved.path.starts_with(&target.path) {
        return Err(hinted(
            format!(
                "{} `{}` holds the input `{}`: files written there could replace it",
                output.flag,
                output.path.display(),
                input.display()
            ),
            format!(
                "write the output into a folder of its own, e.g. `{}`",
                suggestion(output)
            ),
        ));
    }
    Ok(())
}

/// A name beside the given one that is not an input.
fn suggestion(output: &Output<'_>) -> String {
    let name = output
        .path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let stem = [
        ".json.gz",
        ".json.zst",
        ".json",
        ".html",
        ".csv",
        ".rpd",
        ".sqlite",
        ".db",
    ]
    .iter()
    .find_map(|suffix| name.strip_suffix(suffix))
    .filter(|stem| !stem.is_empty())
    .unwrap_or(&name);
    let name = match (output.kind, output.flag) {
        (OutputKind::Folder, _) => format!("{stem}-{}", output.flag.trim_start_matches('-')),
        (OutputKind::File, "--perfetto") => format!("{stem}.perfetto.json"),
        (OutputKind::File, "--html") => format!("{stem}.report.html"),
        (OutputKind::File, _) => format!("{stem}.out"),
    };
    output.path.with_file_name(name).display().to_string()
}

/// `path` with symbolic links and `..` resolved as far as it exists, the rest joined
/// lexically (an output usually does not exist yet).
fn resolve(path: &Path) -> PathBuf {
    if let Ok(canonical) = std::fs::canonicalize(path) {
        return canonical;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest: Vec<Component<'_>> = Vec::new();
    while let Some(parent) = existing.parent() {
        if let Ok(canonical) = std::fs::canonicalize(existing) {
            return join_lexically(canonical, &rest);
        }
        if let Some(last) = existing.components().next_back() {
            rest.push(last);
        }
        existing = parent;
    }
    join_lexically(existing.to_path_buf(), &rest)
}

/// Joins reversed components onto `base`, applying `..` and `.` as a path lookup would.
fn join_lexically(mut base: PathBuf, reversed: &[Component<'_>]) -> PathBuf {
    for component in reversed.iter().rev() {
        match component {
            Component::ParentDir => {
                base.pop();
            }
            Component::CurDir => {}
            other => base.push(other.as_os_str()),
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, b"{}").unwrap();
        (dir, trace)
    }

    #[test]
    fn an_output_reached_through_dot_dot_a_symlink_or_a_hard_link_is_the_input() {
        let (dir, trace) = fixture();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let symlink = dir.path().join("link.json");
        std::os::unix::fs::symlink(&trace, &symlink).unwrap();
        let hard = dir.path().join("hard.json");
        std::fs::hard_link(&trace, &hard).unwrap();
        for path in [
            sub.join("../t.json"),
            symlink,
            hard,
            sub.join("../sub/./../t.json"),
        ] {
            let error = refuse_overwrites(
                &[Output::file("--html", &path)],
                std::slice::from_ref(&trace),
            )
            .unwrap_err()
            .to_string();
            assert!(
                error.contains("is the input"),
                "{}: {error}",
                path.display()
            );
        }
    }

    #[test]
    fn a_folder_output_that_holds_an_input_is_refused_and_a_sibling_is_not() {
        let (dir, trace) = fixture();
        let error = refuse_overwrites(
            &[Output::folder("--csv", dir.path())],
            std::slice::from_ref(&trace),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("holds the input"), "{error}");
        let sibling = dir.path().join("csv-out");
        refuse_overwrites(
            &[Output::folder("--csv", &sibling)],
            std::slice::from_ref(&trace),
        )
        .unwrap();
        let not_yet = dir.path().join("new/deeper/../report.html");
        refuse_overwrites(&[Output::file("--html", &not_yet)], &[trace]).unwrap();
    }

    #[test]
    fn two_outputs_naming_one_file_are_refused() {
        let (dir, trace) = fixture();
        let out = dir.path().join("x.json");
        let error = refuse_overwrites(
            &[
                Output::file("--html", &out),
                Output::file("--perfetto", &out),
            ],
            &[trace],
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("name the same path"), "{error}");
    }
}
