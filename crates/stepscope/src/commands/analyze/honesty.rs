//! What several input files repeat or disagree on: the same file given twice (by two
//! paths, or as a copy), two files that claim one rank, different world sizes or runtimes.
//! A merged view over such inputs double-counts or mixes runs, so each is said.

use std::path::{Path, PathBuf};
use stepscope_model::Trace;
use stepscope_report::schema::FileReport;

/// What identifies a trace's content, and what it claims about its run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceIdentity {
    /// The path as given.
    pub path: String,
    /// Event totals and time range: equal for a copy of the same trace.
    content: (u64, usize, usize, usize, Option<(i64, i64)>),
    /// `distributedInfo.rank`.
    pub rank: Option<u32>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u32>,
    /// The runtime as the report names it.
    pub runtime: String,
}

impl TraceIdentity {
    /// From a read trace and its report.
    pub fn new(path: &Path, trace: &Trace, report: &FileReport) -> Self {
        TraceIdentity {
            path: path.display().to_string(),
            content: (
                trace.counts.events,
                trace.gpu.len(),
                trace.runtime.len(),
                trace.annotations.len(),
                trace
                    .time_range()
                    .map(|(start, end)| (start.as_nanos(), end.as_nanos())),
            ),
            rank: trace.metadata.rank,
            world_size: trace.metadata.world_size,
            runtime: report.advice.runtime.clone(),
        }
    }
}

impl TraceIdentity {
    /// Whether `other` holds the same trace (same events and time range), whatever its path.
    pub fn same_content(&self, other: &TraceIdentity) -> bool {
        self.content == other.content
    }
}

/// The inputs with paths that name the same file (after resolving links) given once, and a
/// warning for each repeat.
pub fn distinct_paths(files: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let mut seen: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut warnings = Vec::new();
    for file in files {
        let canonical = fs_err::canonicalize(file).unwrap_or_else(|_| file.clone());
        match seen.iter().find(|(c, _)| *c == canonical) {
            Some((_, first)) => warnings.push(format!(
                "`{}` is the same file as `{}`: counted once",
                file.display(),
                first.display()
            )),
            None => seen.push((canonical, file.clone())),
        }
    }
    (seen.into_iter().map(|(_, f)| f).collect(), warnings)
}

/// A warning when `new` holds the same trace as one already kept (a copy under another
/// name): the caller then leaves it out.
pub fn same_trace<T>(
    kept: &[T],
    new: &T,
    identity: impl Fn(&T) -> &TraceIdentity,
) -> Option<String> {
    let fresh = identity(new);
    kept.iter()
        .map(&identity)
        .find(|k| k.content == fresh.content)
        .map(|k| {
            format!(
                "`{}` holds the same trace as `{}` (same events and time range): counted once",
                fresh.path, k.path
            )
        })
}

/// Ranks claimed twice, and world sizes or runtimes that differ. Files claiming the same
/// rank are named in one warning per rank, not pair by pair (nine copies of rank 0 would
/// otherwise say it 36 times).
pub fn disagreements(identities: &[&TraceIdentity]) -> Vec<String> {
    let mut warnings = rank_claims(identities);
    let mut sizes: Vec<u32> = identities.iter().filter_map(|i| i.world_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() > 1 {
        warnings.push(format!(
            "the files come from runs of different world sizes ({}): they are not the ranks of one run",
            sizes.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    let mut runtimes: Vec<&str> = identities.iter().map(|i| i.runtime.as_str()).collect();
    runtimes.sort_unstable();
    runtimes.dedup();
    if runtimes.len() > 1 {
        warnings.push(format!(
            "the files were recorded on different runtimes ({}): advice differs per file",
            runtimes.join("; ")
        ));
    }
    warnings
}

/// A rank of one world size, and the files claiming it.
type Claim<'a> = ((u32, Option<u32>), Vec<&'a str>);

/// One warning per rank (of one world size) that more than one file claims.
fn rank_claims(identities: &[&TraceIdentity]) -> Vec<String> {
    let mut claims: Vec<Claim<'_>> = Vec::new();
    for identity in identities {
        let Some(rank) = identity.rank else { continue };
        let key = (rank, identity.world_size);
        match claims.iter_mut().find(|(k, _)| *k == key) {
            Some((_, paths)) => paths.push(&identity.path),
            None => claims.push((key, vec![&identity.path])),
        }
    }
    claims
        .into_iter()
        .filter_map(|((rank, _), paths)| {
            let [a, b, rest @ ..] = paths.as_slice() else {
                return None;
            };
            let named = if rest.is_empty() {
                format!("`{a}` and `{b}` both claim")
            } else {
                format!(
                    "{} files claim (`{a}`, `{b}` and {} more)",
                    paths.len(),
                    rest.len()
                )
            };
            Some(format!(
                "{named} rank {rank}: two runs mixed, or one rank given twice"
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(path: &str, rank: u32, world: u32, runtime: &str) -> TraceIdentity {
        TraceIdentity {
            path: path.to_owned(),
            content: (1, 2, 3, 4, None),
            rank: Some(rank),
            world_size: Some(world),
            runtime: runtime.to_owned(),
        }
    }

    #[test]
    fn ranks_claimed_twice_and_differing_runs_are_said() {
        let a = identity("a", 0, 2, "HIP runtime 7.2 (build 1)");
        let b = identity("b", 0, 2, "HIP runtime 7.2 (build 1)");
        let c = identity("c", 1, 4, "CUDA runtime 12.4");
        let warnings = disagreements(&[&a, &b, &c]);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("`a` and `b` both claim rank 0"));
        assert!(warnings[1].contains("different world sizes (2, 4)"));
        assert!(warnings[2].contains("different runtimes"));
        assert!(disagreements(&[&a, &identity("d", 1, 2, "HIP runtime 7.2 (build 1)")]).is_empty());
    }

    #[test]
    fn many_files_claiming_one_rank_are_one_warning() {
        let runtime = "HIP runtime 7.2 (build 1)";
        let files: Vec<TraceIdentity> = (0..9)
            .map(|i| identity(&format!("f{i}"), 0, 1, runtime))
            .collect();
        let warnings = disagreements(&files.iter().collect::<Vec<_>>());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("9 files claim (`f0`, `f1` and 7 more) rank 0"));
    }

    #[test]
    fn the_same_path_twice_is_counted_once() {
        let files = vec![PathBuf::from("Cargo.toml"), PathBuf::from("./Cargo.toml")];
        let (kept, warnings) = distinct_paths(&files);
        assert_eq!(kept, [PathBuf::from("Cargo.toml")]);
        assert_eq!(warnings.len(), 1);
    }
}
