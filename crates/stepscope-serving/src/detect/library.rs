//! Library versions from file names: the `libamdhip64.so.*` and `libroctracer64.so.*` a
//! process maps, or the ones a Python environment ships.
//!
//! File names as they are found (public build logs and install trees):
//! ROCm packages `libamdhip64.so.7.2.70204` (7.2.4: `major*10000 + minor*100 + patch`) and
//! `libroctracer64.so.4.1.70204` (roctracer's own 4.1, then the same release number);
//! source and therock builds `libamdhip64.so.7.2.53211`, `libamdhip64.so.7.14.60850-0000000`
//! (a build number: the patch release is lost) and `libroctracer64.so.4.1.0` (no release at
//! all); therock Python wheels map `_rocm_sdk_core/lib/libamdhip64.so.7` (major only: the
//! release is read from a versioned sibling or from the `rocm_sdk_core-<version>.dist-info`
//! folder); stable PyTorch wheels ship unversioned `torch/lib/libamdhip64.so` and
//! `torch/lib/libroctracer64.so` (pytorch `.ci/manywheel/build_rocm.sh` copies them under
//! those names): the release is read from the same bytes in `/opt/rocm/lib` (a copy that
//! was replaced by the system's), else from the `torch-<version>+rocmX.Y.dist-info` folder.

use std::fmt;
use std::path::{Path, PathBuf};
use stepscope_model::switches::RuntimeVersion;

/// The ROCm libraries whose copies decide what a profile records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RocmLibrary {
    /// `libamdhip64`, the HIP runtime (CLR): the 7.2.0–7.2.1 race is in its batched AQL
    /// dispatch path, so its version decides.
    HipRuntime,
    /// `libroctracer64`, the tracer PyTorch's profiler (Kineto) links on ROCm wheels up to
    /// torch 2.11 (torch 2.12 links rocprofiler-sdk instead; vllm PR #53182).
    Roctracer,
}

impl RocmLibrary {
    /// Both, in the order reports list them.
    pub const ALL: [RocmLibrary; 2] = [RocmLibrary::HipRuntime, RocmLibrary::Roctracer];

    /// The file name up to its version: `libamdhip64.so`, `libroctracer64.so`.
    pub fn file_name(self) -> &'static str {
        match self {
            RocmLibrary::HipRuntime => "libamdhip64.so",
            RocmLibrary::Roctracer => "libroctracer64.so",
        }
    }

    /// The library's name: `libamdhip64`, `libroctracer64`.
    pub fn name(self) -> &'static str {
        match self {
            RocmLibrary::HipRuntime => "libamdhip64",
            RocmLibrary::Roctracer => "libroctracer64",
        }
    }
}

impl fmt::Display for RocmLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a copy's version was told. Paths are as seen from the root (`/opt/rocm/lib/…`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VersionSource {
    /// The file's own name (`libroctracer64.so.4.1.70200`).
    FileName,
    /// A versioned file of the same library in the same folder (the mapped name is a link
    /// or a major-only name such as `libamdhip64.so.7`).
    VersionedSibling(PathBuf),
    /// A versioned file in `/opt/rocm/lib` with exactly the same bytes: the copy was
    /// replaced by the system's.
    SameBytesAs(PathBuf),
    /// The wheel's dist-info folder (`torch-2.9.1+rocm7.2.dist-info`): the ROCm release the
    /// wheel was built for, not the file's own; PyTorch's names keep only major.minor.
    WheelDistInfo(PathBuf),
}

/// A version, the file or folder whose name carried it, and how it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub version: RuntimeVersion,
    pub evidence: PathBuf,
    pub source: VersionSource,
}

/// The ROCm release in a library's file name: `libamdhip64.so.7.2.70204` → 7.2.4,
/// `libroctracer64.so.4.1.70200` → 7.2.0; `None` where the name carries none
/// (`libamdhip64.so`, `libamdhip64.so.7`, `libroctracer64.so.4.1.0`).
pub(crate) fn version_from_file_name(library: RocmLibrary, name: &str) -> Option<RuntimeVersion> {
    let suffix = name.strip_prefix(library.file_name())?.strip_prefix('.')?;
    match library {
        RocmLibrary::HipRuntime => RuntimeVersion::parse(suffix),
        RocmLibrary::Roctracer => roctracer_release(suffix),
    }
}

/// `4.1.70200` → 7.2.0: roctracer keeps its own version (4.1) and puts the ROCm release, as
/// `major*10000 + minor*100 + patch`, third; a third part below 10000 is not a release.
fn roctracer_release(suffix: &str) -> Option<RuntimeVersion> {
    let third = suffix.split('.').nth(2)?;
    let digits = third
        .find(|c: char| !c.is_ascii_digit())
        .map_or(third, |end| &third[..end]);
    let release: u32 = digits.parse().ok()?;
    (release >= 10_000).then_some(RuntimeVersion {
        major: release / 10_000,
        minor: release / 100 % 100,
        patch: Some(release % 100),
    })
}

/// The mapped path of a `/proc/<pid>/maps` line, when it is one of the libraries.
/// Line format: `start-end perms offset dev inode   path`, the path possibly ending in
/// ` (deleted)`.
pub(crate) fn library_in_maps_line(line: &str) -> Option<(RocmLibrary, &str)> {
    let mut rest = line;
    for _ in 0..5 {
        rest = rest.trim_start();
        rest = &rest[rest.find(' ')?..];
    }
    let path = rest.trim();
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    let name = path.rsplit('/').next()?;
    RocmLibrary::ALL
        .into_iter()
        .find(|library| is_library_name(*library, name))
        .map(|library| (library, path))
}

/// The mapped path of a maps line, when it is a HIP runtime library.
pub(crate) fn hip_library_in_maps_line(line: &str) -> Option<&str> {
    library_in_maps_line(line)
        .filter(|(library, _)| *library == RocmLibrary::HipRuntime)
        .map(|(_, path)| path)
}

/// `libamdhip64.so`, `libamdhip64.so.7`, `libamdhip64.so.7.2.70204`: the library itself, not
/// `libamdhip64.so-backup` or another library that shares the prefix.
fn is_library_name(library: RocmLibrary, name: &str) -> bool {
    name.strip_prefix(library.file_name())
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The version of the library at `mapped` (a path in the process's view): its name, then its
/// folder under `roots` (a versioned sibling, the same bytes in a `system_lib` folder, the
/// wheel's dist-info).
pub(crate) fn version_of_library(
    library: RocmLibrary,
    mapped: &str,
    roots: &[PathBuf],
    system_lib: &[PathBuf],
) -> Option<Found> {
    let name = mapped.rsplit('/').next()?;
    if let Some(version) = version_from_file_name(library, name) {
        return Some(Found {
            version,
            evidence: PathBuf::from(mapped),
            source: VersionSource::FileName,
        });
    }
    let relative = Path::new(mapped.trim_start_matches('/'));
    roots
        .iter()
        .map(|root| root.join(relative))
        .find_map(|file| version_beside(library, &file, system_lib))
}

/// A version for the library file `file` read around it: the highest versioned sibling in
/// its folder, else a versioned file with the same bytes in a `system_lib` folder, else the
/// wheel's dist-info beside the folder.
pub(crate) fn version_beside(
    library: RocmLibrary,
    file: &Path,
    system_lib: &[PathBuf],
) -> Option<Found> {
    let folder = file.parent()?;
    if let Some((version, path)) = highest_versioned(library, folder) {
        return Some(Found {
            version,
            evidence: path.clone(),
            source: VersionSource::VersionedSibling(path),
        });
    }
    if let Some(found) = system_lib
        .iter()
        .find_map(|lib| same_bytes_in(library, file, lib))
    {
        return Some(found);
    }
    wheel_version(folder)
}

/// The highest versioned file of the library in `folder`, with its path.
pub(crate) fn highest_versioned(
    library: RocmLibrary,
    folder: &Path,
) -> Option<(RuntimeVersion, PathBuf)> {
    let mut names = file_names(folder);
    names.sort();
    names
        .iter()
        .filter_map(|name| version_from_file_name(library, name).map(|version| (version, name)))
        .max_by_key(|(version, _)| *version)
        .map(|(version, name)| (version, folder.join(name)))
}

/// A versioned file of the library in `lib` with exactly the bytes of `file`: the copy was
/// replaced by the system's (copied over the wheel's file). An empty file is no library and
/// is never matched.
fn same_bytes_in(library: RocmLibrary, file: &Path, lib: &Path) -> Option<Found> {
    let size = std::fs::metadata(file).ok()?.len();
    if size == 0 {
        return None;
    }
    let mut names = file_names(lib);
    names.sort();
    let mut bytes: Option<Vec<u8>> = None;
    for name in names {
        let Some(version) = version_from_file_name(library, &name) else {
            continue;
        };
        let candidate = lib.join(&name);
        if std::fs::metadata(&candidate).map(|m| m.len()).ok() != Some(size) {
            continue;
        }
        let ours = match &bytes {
            Some(bytes) => bytes,
            None => bytes.insert(std::fs::read(file).ok()?),
        };
        if std::fs::read(&candidate).ok().as_ref() == Some(ours) {
            return Some(Found {
                version,
                evidence: candidate.clone(),
                source: VersionSource::SameBytesAs(candidate),
            });
        }
    }
    None
}

/// A version read from a HIP runtime folder: a versioned `libamdhip64.so.X.Y.*` in it (the
/// highest), else the same bytes in a `system_lib` folder, else the wheel's dist-info beside
/// it.
pub(crate) fn version_in_folder(folder: &Path, system_lib: &[PathBuf]) -> Option<Found> {
    match library_file_in(RocmLibrary::HipRuntime, folder) {
        Some(file) => version_beside(RocmLibrary::HipRuntime, &file, system_lib),
        None => wheel_version(folder),
    }
}

/// The release a wheel folder (`torch/lib`, `_rocm_sdk_core/lib`) names in its dist-info.
fn wheel_version(folder: &Path) -> Option<Found> {
    let site_packages = folder.parent()?.parent()?;
    let package = folder.parent()?.file_name()?.to_string_lossy();
    let (prefix, marker) = match package.as_ref() {
        "_rocm_sdk_core" => ("rocm_sdk_core-", ""),
        "torch" => ("torch-", "+rocm"),
        _ => return None,
    };
    dist_info_version(site_packages, prefix, marker)
}

/// `rocm_sdk_core-7.10.0a20251120.dist-info` → 7.10.0; `torch-2.9.0+rocm7.2.dist-info` →
/// 7.2 (after `marker`).
fn dist_info_version(site_packages: &Path, prefix: &str, marker: &str) -> Option<Found> {
    file_names(site_packages).into_iter().find_map(|name| {
        let version = name.strip_prefix(prefix)?.strip_suffix(".dist-info")?;
        let version = match marker {
            "" => version,
            marker => &version[version.find(marker)? + marker.len()..],
        };
        let evidence = site_packages.join(&name);
        Some(Found {
            version: RuntimeVersion::parse(version)?,
            evidence: evidence.clone(),
            source: VersionSource::WheelDistInfo(evidence),
        })
    })
}

pub(crate) fn file_names(folder: &Path) -> Vec<String> {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The file the loader would take for `library` in `folder`: the shortest name of it (the
/// unversioned `libamdhip64.so` a wheel's `libtorch_hip.so` needs, or therock's soname
/// `libamdhip64.so.7`).
pub(crate) fn library_file_in(library: RocmLibrary, folder: &Path) -> Option<PathBuf> {
    let mut names: Vec<String> = file_names(folder)
        .into_iter()
        .filter(|name| is_library_name(library, name))
        .collect();
    names.sort_by_key(|name| (name.len(), name.clone()));
    names.first().map(|name| folder.join(name))
}

/// The folders of a Python environment (a venv or conda prefix, or a `site-packages`
/// folder) where PyTorch's HIP runtime lives: `torch/lib`, then therock's
/// `_rocm_sdk_core/lib`.
pub(crate) fn python_library_folders(environment: &Path) -> Vec<PathBuf> {
    let mut site_packages = Vec::new();
    if environment.ends_with("site-packages") {
        site_packages.push(environment.to_path_buf());
    }
    for lib in ["lib", "lib64"] {
        let mut pythons = file_names(&environment.join(lib));
        pythons.retain(|name| name.starts_with("python"));
        pythons.sort();
        site_packages.extend(
            pythons
                .iter()
                .map(|python| environment.join(lib).join(python).join("site-packages")),
        );
    }
    site_packages
        .iter()
        .flat_map(|folder| [folder.join("torch/lib"), folder.join("_rocm_sdk_core/lib")])
        .filter(|folder| folder.is_dir())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let line = "7f3a1c000000-7f3a1c3e5000 r-xp 00200000 103:02 4063326                   /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204";
        assert_eq!(
            hip_library_in_maps_line(line),
            Some("/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204")
        );
        let deleted = "7f3a1c000000-7f3a1c3e5000 r--p 00000000 103:02 4063326 /tmp/a b/libamdhip64.so.7 (deleted)";
        assert_eq!(
            hip_library_in_maps_line(deleted),
            Some("/tmp/a b/libamdhip64.so.7")
        );
        assert_eq!(
            hip_library_in_maps_line("7f3a1c000000-7f3a1c3e5000 rw-p 00000000 00:00 0 "),
            None
        );
        assert_eq!(
            hip_library_in_maps_line(
                "55d0c0000000-55d0c0021000 r--p 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6"
            ),
            None
        );
    }

    #[test]
    fn names() {
        let version =
            |name| version_from_file_name(RocmLibrary::HipRuntime, name).map(|v| v.to_string());
        assert_eq!(
            version("libamdhip64.so.7.2.70204").as_deref(),
            Some("7.2.4")
        );
        assert_eq!(version("libamdhip64.so.7.2.53211").as_deref(), Some("7.2"));
        assert_eq!(version("libamdhip64.so.7"), None);
        assert_eq!(version("libamdhip64.so"), None);
        assert_eq!(
            version("libamdhip64.so.6.4.60400").as_deref(),
            Some("6.4.0")
        );
    }

    #[test]
    fn roctracer_names() {
        let version =
            |name| version_from_file_name(RocmLibrary::Roctracer, name).map(|v| v.to_string());
        // ROCm packages: roctracer's own 4.1, then the release.
        assert_eq!(
            version("libroctracer64.so.4.1.70200").as_deref(),
            Some("7.2.0")
        );
        assert_eq!(
            version("libroctracer64.so.4.1.70204").as_deref(),
            Some("7.2.4")
        );
        assert_eq!(
            version("libroctracer64.so.4.1.60000").as_deref(),
            Some("6.0.0")
        );
        // A source build (Frugalware's package) carries no release; nor do the links.
        assert_eq!(version("libroctracer64.so.4.1.0"), None);
        assert_eq!(version("libroctracer64.so.4"), None);
        assert_eq!(version("libroctracer64.so"), None);
        assert_eq!(version("libroctx64.so.4.1.70200"), None);
    }

    #[test]
    fn both_libraries_in_maps_lines() {
        let line = "7f2b3c000000-7f2b3c1f4000 r-xp 00000000 103:02 4063330                   /opt/rocm-7.2.0/lib/libroctracer64.so.4.1.70200";
        assert_eq!(
            library_in_maps_line(line),
            Some((
                RocmLibrary::Roctracer,
                "/opt/rocm-7.2.0/lib/libroctracer64.so.4.1.70200"
            ))
        );
        assert_eq!(hip_library_in_maps_line(line), None);
        let torch = "7f51c0000000-7f51c02a1000 r--p 00000000 08:01 1836201 /opt/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so";
        assert_eq!(
            library_in_maps_line(torch).map(|(library, _)| library),
            Some(RocmLibrary::HipRuntime)
        );
        let roctx = "7f51c0000000-7f51c02a1000 r--p 00000000 08:01 1836202 /opt/rocm/lib/libroctx64.so.4.1.70200";
        assert_eq!(library_in_maps_line(roctx), None);
    }
}
