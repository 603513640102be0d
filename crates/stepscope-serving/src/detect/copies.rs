//! Which copies of the HIP runtime (`libamdhip64`) and of roctracer (`libroctracer64`) a
//! process loads, and whether each is older than the system's `/opt/rocm`.
//!
//! Why it matters (reported in public issues, not measured here): ROCm 7.2.0 and 7.2.1 lose
//! some kernels of every graph replay from profiles (a race in the HIP runtime's batched AQL
//! dispatch path, 26–65% visible; ROCm/ROCm #6102, ROCm/rocm-systems #4361), fixed in 7.2.2.
//! PyTorch ROCm wheels load their own copies from `torch/lib` (RPATH `$ORIGIN`), so an
//! upgraded `/opt/rocm` changes nothing until those copies are replaced (sglang #35390,
//! AMD-AGI/Hyperloom #1279). So every copy found is reported with where its version came
//! from and how it compares with `/opt/rocm`'s.
//!
//! Where copies come from: the libraries mapped in `/proc/<pid>/maps` (the named process, or
//! every process), else, per library, the one shipped in a Python environment's `torch/lib`
//! or therock's `_rocm_sdk_core/lib`. `/opt/rocm` is read in the process's own view
//! (`/proc/<pid>/root/opt/rocm`, a container's) where that can be read, else below the root.

use super::library::{
    RocmLibrary, VersionSource, highest_versioned, library_file_in, library_in_maps_line,
    python_library_folders, version_of_library,
};
use super::{DetectOptions, Maps};
use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use stepscope_model::switches::RuntimeVersion;

/// Where a copy was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CopyOrigin {
    /// Mapped by these running processes.
    ProcessMaps {
        /// The processes, lowest id first.
        pids: Vec<u32>,
    },
    /// Shipped in a Python environment; no process was seen mapping this library.
    PythonEnvironment {
        /// The environment as given.
        environment: PathBuf,
    },
}

/// What kind of folder a copy lives in: it decides how to replace it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CopyLocation {
    /// A PyTorch wheel's own `torch/lib` (found first by the loader: RPATH `$ORIGIN`).
    TorchLib,
    /// therock's `rocm-sdk-core` wheel (`_rocm_sdk_core/lib`).
    RocmSdkCore,
    /// Anywhere else, such as a ROCm install (`/opt/rocm-7.2.1/lib`).
    Other,
}

/// `/opt/rocm`'s version of a library: the versioned file in `/opt/rocm/lib`, else
/// `/opt/rocm/.info/version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemCopy {
    /// The version.
    pub version: RuntimeVersion,
    /// The file that carried it, as seen from the root.
    pub evidence: PathBuf,
}

/// A copy against `/opt/rocm`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CopyStatus {
    /// An older release than `/opt/rocm`'s: upgrading `/opt/rocm` did not reach it.
    Older,
    /// The same major.minor, and one side has no patch release (a wheel's `+rocm7.2`
    /// against `/opt/rocm` 7.2.2): it may be older.
    MaybeOlder,
    /// The same release as `/opt/rocm`'s, or newer.
    NotOlder,
    /// No version for the copy, or no `/opt/rocm` to compare with.
    NoComparison,
}

/// One copy of a library that a process loads (or that a Python environment ships).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LibraryCopy {
    /// Which library.
    pub library: RocmLibrary,
    /// The file as the process maps it (or as seen from the root, for a Python environment).
    pub path: PathBuf,
    /// Where it was found.
    pub origin: CopyOrigin,
    /// What kind of folder it is in.
    pub location: CopyLocation,
    /// Its ROCm release, when something tells it.
    pub version: Option<RuntimeVersion>,
    /// What told it.
    pub version_source: Option<VersionSource>,
    /// `/opt/rocm`'s version of the same library, when there is one.
    pub system: Option<SystemCopy>,
    /// The copy against `/opt/rocm`'s.
    pub status: CopyStatus,
}

impl LibraryCopy {
    /// Older than `/opt/rocm`'s, or possibly older: worth flagging.
    pub fn is_stale(&self) -> bool {
        matches!(self.status, CopyStatus::Older | CopyStatus::MaybeOlder)
    }
}

/// The first release without the 7.2.0–7.2.1 roctracer race.
pub const RACE_FIXED_IN: RuntimeVersion = RuntimeVersion {
    major: 7,
    minor: 2,
    patch: Some(2),
};

/// Whether a HIP runtime has the 7.2.0–7.2.1 race: `Some(true)` for 7.2.0 and 7.2.1,
/// `Some(false)` for 7.2 without a patch release (it may be either), `None` otherwise.
pub fn race_exposure(version: RuntimeVersion) -> Option<bool> {
    if (version.major, version.minor) != (RACE_FIXED_IN.major, RACE_FIXED_IN.minor) {
        return None;
    }
    match version.patch {
        Some(patch) => (patch < 2).then_some(true),
        None => Some(false),
    }
}

/// A copy's release against `/opt/rocm`'s.
pub fn compare_with_system(
    copy: Option<RuntimeVersion>,
    system: Option<RuntimeVersion>,
) -> CopyStatus {
    let (Some(copy), Some(system)) = (copy, system) else {
        return CopyStatus::NoComparison;
    };
    match (copy.major, copy.minor).cmp(&(system.major, system.minor)) {
        Ordering::Less => CopyStatus::Older,
        Ordering::Greater => CopyStatus::NotOlder,
        Ordering::Equal => match (copy.patch, system.patch) {
            (Some(copy), Some(system)) if copy < system => CopyStatus::Older,
            (Some(_), Some(_)) | (_, Some(0)) => CopyStatus::NotOlder,
            _ => CopyStatus::MaybeOlder,
        },
    }
}

/// The folders one process (or the root) sees: the roots files are read below, first the
/// process's own.
struct View {
    roots: Vec<PathBuf>,
}

impl View {
    fn of_process(options: &DetectOptions, pid: u32) -> Self {
        Self {
            roots: vec![
                options.under_root(Path::new(&format!("/proc/{pid}/root"))),
                options.root.clone(),
            ],
        }
    }

    fn of_root(options: &DetectOptions) -> Self {
        Self {
            roots: vec![options.root.clone()],
        }
    }

    /// The first `/opt/rocm` that exists in this view.
    fn rocm(&self) -> Option<PathBuf> {
        self.roots
            .iter()
            .map(|root| root.join("opt/rocm"))
            .find(|rocm| rocm.is_dir())
    }

    fn system_lib(&self) -> Vec<PathBuf> {
        self.rocm()
            .map(|rocm| rocm.join("lib"))
            .into_iter()
            .collect()
    }

    /// `path` as seen from the root it is below (`/opt/rocm/lib/…`).
    fn seen(&self, path: &Path) -> PathBuf {
        self.roots
            .iter()
            .find_map(|root| path.strip_prefix(root).ok())
            .map_or_else(|| path.to_path_buf(), |rest| Path::new("/").join(rest))
    }

    fn system_copy(&self, library: RocmLibrary) -> Option<SystemCopy> {
        let rocm = self.rocm()?;
        if let Some((version, path)) = highest_versioned(library, &rocm.join("lib")) {
            return Some(SystemCopy {
                version,
                evidence: self.seen(&path),
            });
        }
        let path = rocm.join(".info/version");
        let text = std::fs::read_to_string(&path).ok()?;
        Some(SystemCopy {
            version: RuntimeVersion::parse(text.lines().next()?)?,
            evidence: self.seen(&path),
        })
    }

    fn copy(&self, library: RocmLibrary, path: &str, origin: CopyOrigin) -> LibraryCopy {
        let found = version_of_library(library, path, &self.roots, &self.system_lib());
        let system = self.system_copy(library);
        let version = found.as_ref().map(|found| found.version);
        let version_source = found.map(|found| match found.source {
            VersionSource::VersionedSibling(path) => {
                VersionSource::VersionedSibling(self.seen(&path))
            }
            VersionSource::SameBytesAs(path) => VersionSource::SameBytesAs(self.seen(&path)),
            VersionSource::WheelDistInfo(path) => VersionSource::WheelDistInfo(self.seen(&path)),
            source => source,
        });
        LibraryCopy {
            library,
            path: PathBuf::from(path),
            origin,
            location: location_of(Path::new(path)),
            version,
            version_source,
            status: compare_with_system(version, system.as_ref().map(|s| s.version)),
            system,
        }
    }
}

fn location_of(path: &Path) -> CopyLocation {
    let folder = path.parent().unwrap_or(path);
    if folder.ends_with("torch/lib") {
        CopyLocation::TorchLib
    } else if folder.ends_with("_rocm_sdk_core/lib") {
        CopyLocation::RocmSdkCore
    } else {
        CopyLocation::Other
    }
}

/// Every copy the processes map; for a library no process maps, the Python environments'.
pub(crate) fn find_copies(options: &DetectOptions, maps: &Maps) -> Vec<LibraryCopy> {
    let mut copies = copies_in_maps(options, maps);
    for library in RocmLibrary::ALL {
        if !copies.iter().any(|copy| copy.library == library) {
            copies.extend(copies_in_environments(options, library));
        }
    }
    copies.sort_by_key(|copy| copy.library);
    copies
}

/// One copy per library and path, with every process that maps it.
fn copies_in_maps(options: &DetectOptions, maps: &Maps) -> Vec<LibraryCopy> {
    let mut copies: Vec<LibraryCopy> = Vec::new();
    for (pid, text) in maps {
        let Ok(text) = text else { continue };
        for (library, path) in text.lines().filter_map(library_in_maps_line) {
            let seen = copies
                .iter_mut()
                .find(|copy| copy.library == library && copy.path == Path::new(path));
            match seen {
                Some(LibraryCopy {
                    origin: CopyOrigin::ProcessMaps { pids },
                    ..
                }) => {
                    if !pids.contains(pid) {
                        pids.push(*pid);
                    }
                }
                Some(_) => {}
                None => copies.push(View::of_process(options, *pid).copy(
                    library,
                    path,
                    CopyOrigin::ProcessMaps { pids: vec![*pid] },
                )),
            }
        }
    }
    copies
}

/// The library in each Python environment's `torch/lib` (then `_rocm_sdk_core/lib`).
fn copies_in_environments(options: &DetectOptions, library: RocmLibrary) -> Vec<LibraryCopy> {
    let view = View::of_root(options);
    options
        .python_environments
        .iter()
        .filter_map(|environment| {
            let folders = python_library_folders(&options.under_root(environment));
            let file = folders
                .iter()
                .find_map(|folder| library_file_in(library, folder))?;
            let path = view.seen(&file);
            Some(view.copy(
                library,
                &path.to_string_lossy(),
                CopyOrigin::PythonEnvironment {
                    environment: environment.clone(),
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(text: &str) -> Option<RuntimeVersion> {
        RuntimeVersion::parse(text)
    }

    #[test]
    fn comparisons() {
        let compare =
            |copy: &str, system: &str| compare_with_system(version(copy), version(system));
        assert_eq!(compare("7.2.0", "7.2.2"), CopyStatus::Older);
        assert_eq!(compare("7.1.1", "7.2.0"), CopyStatus::Older);
        assert_eq!(compare("7.2.2", "7.2.2"), CopyStatus::NotOlder);
        assert_eq!(compare("7.2.4", "7.2.2"), CopyStatus::NotOlder);
        assert_eq!(compare("7.10.0", "7.2.4"), CopyStatus::NotOlder);
        assert_eq!(compare("7.2", "7.2.2"), CopyStatus::MaybeOlder);
        assert_eq!(compare("7.2.4", "7.2"), CopyStatus::MaybeOlder);
        assert_eq!(
            compare("7.2", "7.2.0"),
            CopyStatus::NotOlder,
            "nothing is below 7.2.0"
        );
        assert_eq!(
            compare_with_system(None, version("7.2.2")),
            CopyStatus::NoComparison
        );
        assert_eq!(
            compare_with_system(version("7.2.0"), None),
            CopyStatus::NoComparison
        );
    }

    #[test]
    fn race_releases() {
        let exposure = |text: &str| race_exposure(version(text).unwrap());
        assert_eq!(exposure("7.2.0"), Some(true));
        assert_eq!(exposure("7.2.1"), Some(true));
        assert_eq!(exposure("7.2"), Some(false));
        assert_eq!(exposure("7.2.2"), None);
        assert_eq!(exposure("7.2.4"), None);
        assert_eq!(exposure("7.1.1"), None);
        assert_eq!(exposure("7.10.0"), None);
    }

    #[test]
    fn locations() {
        let location = |path: &str| location_of(Path::new(path));
        assert_eq!(
            location("/opt/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so"),
            CopyLocation::TorchLib
        );
        assert_eq!(
            location("/opt/venv/lib/python3.12/site-packages/_rocm_sdk_core/lib/libamdhip64.so.7"),
            CopyLocation::RocmSdkCore
        );
        assert_eq!(
            location("/opt/rocm-7.2.1/lib/libroctracer64.so.4.1.70201"),
            CopyLocation::Other
        );
    }
}
