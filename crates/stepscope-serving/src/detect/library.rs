//! HIP runtime versions from file names: the `libamdhip64.so.*` a process maps, or the ones
//! a Python environment ships.
//!
//! File names as they are found (public build logs and install trees):
//! ROCm packages `libamdhip64.so.7.2.70204` (7.2.4: `major*10000 + minor*100 + patch`);
//! source and therock builds `libamdhip64.so.7.2.53211`, `libamdhip64.so.7.14.60850-0000000`
//! (a build number: the patch release is lost); therock Python wheels map
//! `_rocm_sdk_core/lib/libamdhip64.so.7` (major only: the release is read from a
//! versioned sibling or from the `rocm_sdk_core-<version>.dist-info` folder); stable PyTorch
//! wheels ship an unversioned `torch/lib/libamdhip64.so` (the release is read from the
//! `torch-<version>+rocmX.Y.dist-info` folder).

use std::path::{Path, PathBuf};
use stepscope_model::switches::RuntimeVersion;

/// The library's name up to its version.
pub(crate) const LIBRARY: &str = "libamdhip64.so";

/// A version and the file or folder whose name carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub version: RuntimeVersion,
    pub evidence: PathBuf,
}

/// The version in a library file name (`libamdhip64.so.7.2.70204` → 7.2.4); `None` for an
/// unversioned or major-only name.
pub(crate) fn version_from_name(name: &str) -> Option<RuntimeVersion> {
    let suffix = name.strip_prefix(LIBRARY)?.strip_prefix('.')?;
    RuntimeVersion::parse(suffix)
}

/// The mapped path of a `/proc/<pid>/maps` line, when it is a HIP runtime library.
/// Line format: `start-end perms offset dev inode   path`, the path possibly ending in
/// ` (deleted)`.
pub(crate) fn hip_library_in_maps_line(line: &str) -> Option<&str> {
    let mut rest = line;
    for _ in 0..5 {
        rest = rest.trim_start();
        rest = &rest[rest.find(' ')?..];
    }
    let path = rest.trim();
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    let name = path.rsplit('/').next()?;
    name.starts_with(LIBRARY).then_some(path)
}

/// The version of the library at `mapped` (a path in the process's view), reading its
/// name, then its folder under `roots` for a versioned sibling or a dist-info folder.
pub(crate) fn version_of_library(mapped: &str, roots: &[PathBuf]) -> Option<Found> {
    let name = mapped.rsplit('/').next()?;
    if let Some(version) = version_from_name(name) {
        return Some(Found {
            version,
            evidence: PathBuf::from(mapped),
        });
    }
    let relative = Path::new(mapped.trim_start_matches('/'));
    roots
        .iter()
        .filter_map(|root| root.join(relative).parent().map(Path::to_path_buf))
        .find_map(|folder| version_in_folder(&folder))
}

/// A version read from a library folder: a versioned `libamdhip64.so.X.Y.*` in it (the
/// highest), else the wheel's dist-info beside it.
pub(crate) fn version_in_folder(folder: &Path) -> Option<Found> {
    let mut names = file_names(folder);
    names.sort();
    let best = names
        .iter()
        .filter_map(|name| version_from_name(name).map(|version| (version, name)))
        .max_by_key(|(version, _)| *version);
    if let Some((version, name)) = best {
        return Some(Found {
            version,
            evidence: folder.join(name),
        });
    }
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
        Some(Found {
            version: RuntimeVersion::parse(version)?,
            evidence: site_packages.join(&name),
        })
    })
}

fn file_names(folder: &Path) -> Vec<String> {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
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
        let version = |name| version_from_name(name).map(|v| v.to_string());
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
}
