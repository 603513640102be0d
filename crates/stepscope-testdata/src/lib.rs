//! Where stepscope's tests find real profiler traces.
//!
//! Every trace a test reads is a real profiler's output, copied byte for byte from a public
//! repository (`testdata/corpus.tsv` lists each file's repository, commit, path, size and
//! SHA-256). Tests name a trace by its path in that corpus, e.g.
//! `tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz`, and this
//! crate says where the file is on this machine:
//!
//! - **Core group** (the default `cargo test --workspace`): the small curated set the repository
//!   carries in `testdata/traces/`, so a fresh clone tests with nothing else. A test that asks
//!   for a file outside that set fails, saying it belongs to the corpus group.
//! - **Corpus group** (`cargo test --workspace --features corpus`): the whole corpus, from the
//!   first of these that exists: the folder `$STEPSCOPE_TRACES`; a `shared/traces` folder beside
//!   the checkout (the local mirror CI has, with no internet); the cache
//!   `~/.cache/stepscope/traces` (`$XDG_CACHE_HOME/stepscope/traces`) that
//!   `scripts/fetch-traces.sh` fills from the pinned public URLs, checking every checksum.
//!   Without any of them the group fails with the command to run; it never skips.
//!
//! ```
//! let path = stepscope_testdata::trace(
//!     "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz",
//! );
//! assert!(path.is_file());
//! ```

use std::path::{Path, PathBuf};

/// The command that fills the corpus cache.
pub const FETCH: &str = "bash scripts/fetch-traces.sh";

/// The command that runs the corpus group.
pub const CORPUS_TESTS: &str = "cargo test --workspace --features corpus";

/// The environment variable naming a local mirror of the corpus.
pub const MIRROR_VAR: &str = "STEPSCOPE_TRACES";

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The curated traces the repository carries (`testdata/traces`).
pub fn curated_dir() -> PathBuf {
    repo_root().join("testdata/traces")
}

/// Whether the tests were built for the corpus group (feature `corpus`).
pub const fn corpus_group() -> bool {
    cfg!(feature = "corpus")
}

/// `$STEPSCOPE_TRACES`, when set.
fn mirror() -> Option<PathBuf> {
    std::env::var_os(MIRROR_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The folders the corpus may be read from, in the order they are tried.
pub fn corpus_candidates() -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = mirror().into_iter().collect();
    candidates.push(repo_root().join("../shared/traces"));
    if let Some(cache) = cache_dir() {
        candidates.push(cache);
    }
    candidates
}

/// `~/.cache/stepscope/traces`, or under `$XDG_CACHE_HOME` when that is set.
pub fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("stepscope/traces"))
}

/// The corpus on this machine, if any (`$STEPSCOPE_TRACES` must exist when it is set).
pub fn corpus_dir() -> Option<PathBuf> {
    if let Some(mirror) = mirror() {
        assert!(
            mirror.is_dir(),
            "{MIRROR_VAR}={} is not a folder: point it at a mirror of the trace corpus, \
             or unset it and run `{FETCH}`",
            mirror.display()
        );
        return Some(mirror);
    }
    corpus_candidates().into_iter().find(|dir| dir.is_dir())
}

/// The folder tests read traces from: the corpus in the corpus group, else the curated set.
///
/// # Panics
/// In the corpus group when no corpus is on this machine, with the command that fetches it.
pub fn traces_dir() -> PathBuf {
    if !corpus_group() {
        return curated_dir();
    }
    corpus_dir().unwrap_or_else(|| {
        let tried: Vec<String> = corpus_candidates()
            .iter()
            .map(|dir| dir.display().to_string())
            .collect();
        panic!(
            "the trace corpus is not on this machine (looked in {}); run `{FETCH}` \
             (or set {MIRROR_VAR} to a local mirror), then `{CORPUS_TESTS}`",
            tried.join(", ")
        )
    })
}

/// The path of a corpus file, checked to exist.
///
/// # Panics
/// When the file is missing: in the core group because it is not in the curated set (the test
/// belongs to the corpus group), in the corpus group because the corpus is incomplete.
pub fn trace(relative: &str) -> PathBuf {
    let path = traces_dir().join(relative);
    if path.exists() {
        return path;
    }
    // A file this repository records itself (e.g. `stepscope/vllm-cpu/`) is carried, never in
    // a mirror of the public corpus.
    let carried = curated_dir().join(relative);
    if carried.exists() {
        return carried;
    }
    if corpus_group() {
        panic!(
            "{} is missing from the trace corpus; run `{FETCH}`",
            path.display()
        );
    }
    panic!(
        "{relative} is not among the traces the repository carries (testdata/traces); \
         a test that reads it belongs to the corpus group: give it \
         #[cfg_attr(not(feature = \"corpus\"), ignore = \"...\")] and run it with \
         `{FETCH} && {CORPUS_TESTS}`"
    );
}

/// A corpus file wherever it is on this machine, for benchmarks and scripts that run outside
/// the test groups: the curated set first, then the corpus.
///
/// # Panics
/// When neither has it, with the command that fetches it.
pub fn find(relative: &str) -> PathBuf {
    let curated = curated_dir().join(relative);
    if curated.exists() {
        return curated;
    }
    corpus_dir()
        .map(|dir| dir.join(relative))
        .filter(|path| path.exists())
        .unwrap_or_else(|| panic!("{relative} is not on this machine; run `{FETCH}`"))
}

/// The bytes of a corpus file.
///
/// # Panics
/// As [`trace`] does, or when the file cannot be read.
pub fn read(relative: &str) -> Vec<u8> {
    let path = trace(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The paths the corpus lists (`testdata/corpus.tsv`), and every folder above them.
fn corpus_paths() -> &'static std::collections::HashSet<String> {
    static PATHS: std::sync::OnceLock<std::collections::HashSet<String>> =
        std::sync::OnceLock::new();
    PATHS.get_or_init(|| {
        let list = std::fs::read_to_string(repo_root().join("testdata/corpus.tsv"))
            .expect("testdata/corpus.tsv");
        let mut paths = std::collections::HashSet::new();
        for line in list.lines().filter(|l| !l.starts_with('#')) {
            let mut path = line.split('\t').next().unwrap_or_default();
            paths.insert(path.to_owned());
            while let Some((parent, _)) = path.rsplit_once('/') {
                paths.insert(parent.to_owned());
                path = parent;
            }
        }
        paths
    })
}

/// Checks a command-line argument of a test that runs the binary in [`traces_dir`]: when it
/// names a corpus file or folder that is not there, fails as [`trace`] does (rather than
/// leaving the binary to say only that the file does not exist).
///
/// # Panics
/// As [`trace`] does.
pub fn check_arg(arg: &str) {
    if corpus_paths().contains(arg) && !traces_dir().join(arg).exists() {
        trace(arg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_curated_file_is_listed_with_its_checksum() {
        use sha2::{Digest, Sha256};
        let listed = std::fs::read_to_string(repo_root().join("testdata/corpus.tsv"))
            .expect("testdata/corpus.tsv");
        let mut curated = Vec::new();
        collect_files(&curated_dir(), &curated_dir(), &mut curated);
        assert!(curated.len() >= 10, "curated set: {curated:?}");
        for relative in &curated {
            let row: Vec<&str> = listed
                .lines()
                .find(|line| line.split('\t').next() == Some(relative.as_str()))
                .unwrap_or_else(|| panic!("{relative} is not in testdata/corpus.tsv"))
                .split('\t')
                .collect();
            let bytes = std::fs::read(curated_dir().join(relative)).expect("read");
            assert_eq!(bytes.len().to_string(), row[4], "{relative}: size");
            let sum: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(sum, row[5], "{relative}: SHA-256");
            assert_eq!(row[7], "yes", "{relative} is carried, so its row says so");
        }
        let carried = listed.lines().filter(|l| l.ends_with("\tyes")).count();
        assert_eq!(carried, curated.len(), "rows marked as carried");
    }

    #[test]
    fn every_public_row_names_a_pinned_commit_and_a_licence_text() {
        let listed = std::fs::read_to_string(repo_root().join("testdata/corpus.tsv"))
            .expect("testdata/corpus.tsv");
        let sources = std::fs::read_to_string(repo_root().join("testdata/SOURCES.md"))
            .expect("testdata/SOURCES.md");
        for line in listed.lines().filter(|l| !l.starts_with('#')) {
            let row: Vec<&str> = line.split('\t').collect();
            assert_eq!(row.len(), 8, "{line}");
            if row[1] == "-" {
                continue;
            }
            assert_eq!(row[2].len(), 40, "{line}: a full commit hash");
            assert!(sources.contains(row[1]), "{}: not in SOURCES.md", row[1]);
        }
    }

    fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                collect_files(root, &path, out);
            } else if path.file_name().is_some_and(|n| n != "SOURCES.md") {
                let relative = path.strip_prefix(root).expect("under root");
                out.push(relative.to_string_lossy().into_owned());
            }
        }
    }
}
