//! Which HIP runtime a server actually loads, strongest source first (PyTorch wheels ship
//! their own runtime in `torch/lib`, so `/opt/rocm` alone can be wrong): the
//! `libamdhip64.so.*` mapped in `/proc/<pid>/maps` (or the one in a Python environment's
//! `torch/lib`), then `/opt/rocm/.info/version`, then `hipconfig --version`; and separately
//! from a trace header's `hip_runtime_version`. Beside it, every copy of `libamdhip64` and
//! `libroctracer64` the process loads, each compared with `/opt/rocm`'s ([`LibraryCopy`]):
//! a PyTorch wheel's own copies in `torch/lib` win over an upgraded `/opt/rocm`.
//!
//! Every file is read below a root folder that stands for `/` ([`DetectOptions::root`]), so
//! tests run on fixture trees and users can point at a container's root file system; the
//! one program run goes through [`CommandRunner`]. A root that is not a folder, or a process
//! id with no `/proc/<pid>` under it, is an error ([`DetectError`]), never a quiet fallback
//! to the next source; so are maps of the named process that cannot be read (another user's
//! process) or that name nothing (it has exited): what it loads is unknown, and `/opt/rocm`
//! would be a guess.

mod command;
mod copies;
mod header;
mod library;

pub use command::{CommandFailure, CommandRunner, SystemCommandRunner};
pub use copies::{
    CopyLocation, CopyOrigin, CopyStatus, LibraryCopy, RACE_FIXED_IN, SystemCopy,
    compare_with_system, race_exposure,
};
pub use header::{HeaderRuntime, advice_for_runtimes, runtime_from_header};
pub use library::{RocmLibrary, VersionSource};

use library::{
    Found, hip_library_in_maps_line, python_library_folders, version_in_folder, version_of_library,
};
use std::fmt;
use std::path::{Path, PathBuf};
use stepscope_model::HipVersion;
use stepscope_model::switches::{
    AdviceBasis, RuntimeVersion, SWITCHES, SwitchAdvice, advice_for_header, advice_for_version,
    lines_for,
};

/// Where to look.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DetectOptions {
    /// The folder that stands for `/` (default `/`).
    pub root: PathBuf,
    /// The server's process id; without one every process's maps are read.
    pub pid: Option<u32>,
    /// Python environments (venv or conda prefixes, or `site-packages` folders), paths as
    /// seen from `root`.
    pub python_environments: Vec<PathBuf>,
}

impl Default for DetectOptions {
    fn default() -> Self {
        Self {
            root: PathBuf::from("/"),
            pid: None,
            python_environments: Vec::new(),
        }
    }
}

impl DetectOptions {
    /// Reads below `root` instead of `/`.
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = root.into();
        self
    }

    /// Reads only this process's maps.
    pub fn with_pid(mut self, pid: Option<u32>) -> Self {
        self.pid = pid;
        self
    }

    /// Python environments to look in after the process maps.
    pub fn with_python_environments(mut self, environments: Vec<PathBuf>) -> Self {
        self.python_environments = environments;
        self
    }

    fn under_root(&self, path: &Path) -> PathBuf {
        self.root.join(path.strip_prefix("/").unwrap_or(path))
    }

    /// Checks that the root is a folder and that the process, when one is named, has a
    /// `/proc/<pid>` under it: what the user named must exist, or the sources after it would
    /// answer for a runtime the user did not ask about.
    pub fn check(&self) -> Result<(), DetectError> {
        match std::fs::metadata(&self.root) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                return Err(DetectError::RootNotAFolder {
                    path: self.root.clone(),
                });
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(DetectError::RootMissing {
                    path: self.root.clone(),
                });
            }
            Err(source) => {
                return Err(DetectError::RootUnreadable {
                    path: self.root.clone(),
                    source,
                });
            }
        }
        let Some(pid) = self.pid else {
            return Ok(());
        };
        let proc = self.under_root(Path::new("/proc"));
        if proc.join(pid.to_string()).is_dir() {
            Ok(())
        } else {
            Err(DetectError::NoSuchProcess { pid, proc })
        }
    }
}

/// What the user named for detection does not exist.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    /// The folder that stands for `/` does not exist.
    #[error("Root folder `{}` does not exist", path.display())]
    RootMissing {
        /// The root as given.
        path: PathBuf,
    },
    /// The root is a file (or something else), not a folder.
    #[error("Root `{}` is not a folder", path.display())]
    RootNotAFolder {
        /// The root as given.
        path: PathBuf,
    },
    /// The root cannot be looked at (a folder above it is not readable).
    #[error("Failed to read root folder `{}`", path.display())]
    RootUnreadable {
        /// The root as given.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// No `/proc/<pid>` under the root: the process has exited, or never existed there.
    #[error("No process `{pid}` under `{}` (it may have exited)", proc.display())]
    NoSuchProcess {
        /// The process id as given.
        pid: u32,
        /// The `/proc` folder looked in.
        proc: PathBuf,
    },
    /// The named process's maps cannot be read (another user's process); what it loads is
    /// unknown, and `/opt/rocm` may not be it.
    #[error("Cannot read `{}`: {source}; the HIP runtime process {pid} loads is unknown, and none is guessed", path.display())]
    MapsUnreadable {
        /// The process id as given.
        pid: u32,
        /// The maps file.
        path: PathBuf,
        /// The user id that owns the process, when it can be seen.
        owner: Option<u32>,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The named process has exited (its maps vanished, or it is a zombie: an exited process
    /// its parent has not reaped), or maps no memory at all (a kernel thread).
    #[error("Process `{pid}` {how}: `{}` names no library; the HIP runtime it loaded is unknown, and none is guessed", path.display())]
    ProcessGone {
        /// The process id as given.
        pid: u32,
        /// The maps file.
        path: PathBuf,
        /// What was seen: `has exited`, `has exited (a zombie ...)`, `maps no memory ...`.
        how: String,
    },
}

/// Where a version came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DetectionSource {
    /// A library mapped by a running process.
    ProcessMaps {
        /// The process.
        pid: u32,
    },
    /// A library shipped in a Python environment.
    PythonEnvironment,
    /// `/opt/rocm/.info/version`.
    RocmVersionFile,
    /// `hipconfig --version`.
    Hipconfig,
    /// A Kineto trace header's `hip_runtime_version`.
    TraceHeader,
}

impl fmt::Display for DetectionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DetectionSource::ProcessMaps { pid } => write!(f, "mapped by process {pid}"),
            DetectionSource::PythonEnvironment => f.write_str("Python environment"),
            DetectionSource::RocmVersionFile => f.write_str("/opt/rocm/.info/version"),
            DetectionSource::Hipconfig => f.write_str("hipconfig --version"),
            DetectionSource::TraceHeader => f.write_str("trace header hip_runtime_version"),
        }
    }
}

/// A HIP runtime version and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// The version; `patch` is `None` where the source keeps only a build number.
    pub version: RuntimeVersion,
    /// Where it came from.
    pub source: DetectionSource,
    /// The file, folder or output line that carried it.
    pub evidence: String,
    /// What the source cannot tell (7.2.0 from 7.2.4), when it matters.
    pub note: Option<String>,
    /// Other runtimes other processes map, by process id (only when no pid was given).
    pub also_loaded: Vec<(u32, RuntimeVersion)>,
    header: Option<HipVersion>,
}

impl Detection {
    fn new(version: RuntimeVersion, source: DetectionSource, evidence: String) -> Self {
        // Only where it matters: the patch releases of this major.minor need different
        // switches (7.2.0 and 7.2.4), not for 7.0 or 7.13.
        let ambiguous = advice_for_version(version).basis == AdviceBasis::Ambiguous;
        let note = (version.patch.is_none() && ambiguous).then(|| {
            let what = match source {
                DetectionSource::TraceHeader => "the header keeps major.minor and a build number",
                DetectionSource::Hipconfig => "hipconfig writes major.minor and a build number",
                _ => "the name carries a build number or no patch release",
            };
            let releases: Vec<String> = lines_for(version)
                .iter()
                .map(|line| {
                    let (major, minor, patch) = line.first.max((version.major, version.minor, 0));
                    format!("{major}.{minor}.{patch}")
                })
                .collect();
            format!(
                "{what}: patch releases ({}) cannot be told apart",
                releases.join(" and ")
            )
        });
        Self {
            version,
            source,
            evidence,
            note,
            also_loaded: Vec::new(),
            header: None,
        }
    }

    /// The switches for this runtime; all three when other processes map another version.
    pub fn advice(&self) -> SwitchAdvice {
        let others: Vec<String> = self
            .also_loaded
            .iter()
            .filter(|(_, version)| *version != self.version)
            .map(|(pid, version)| format!("{version} in process {pid}"))
            .collect();
        if !others.is_empty() {
            return SwitchAdvice {
                switches: SWITCHES.to_vec(),
                reason: format!(
                    "several HIP runtimes are loaded ({} here, {}): set all three, or name the server with --pid",
                    self.version,
                    others.join(", ")
                ),
                basis: AdviceBasis::Unknown,
            };
        }
        match self.header {
            Some(header) => advice_for_header(header),
            None => advice_for_version(self.version),
        }
    }
}

/// One source tried, and what it gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The source, in words (`/proc/4242/maps`).
    pub source: String,
    /// What it gave (`libamdhip64.so.7.2.70204 → 7.2.4`, `not found`).
    pub outcome: String,
}

/// The result of [`detect_runtime`]: the first source that named a version, every source
/// tried up to it, and the library copies found with how each compares with `/opt/rocm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectionReport {
    /// The version found, if any.
    pub detection: Option<Detection>,
    /// Sources in the order tried.
    pub attempts: Vec<Attempt>,
    /// The `libamdhip64` and `libroctracer64` copies the processes map (for a library no
    /// process maps: the Python environments' copies), HIP runtime first.
    pub copies: Vec<LibraryCopy>,
}

/// The HIP runtime a report finds has the 7.2.0–7.2.1 race (some kernels of graph replays
/// missing from profiles; fixed in [`RACE_FIXED_IN`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayRace {
    /// The runtime's version.
    pub version: RuntimeVersion,
    /// The loaded copy, or the detection source, that carried it.
    pub evidence: String,
    /// Whether a copy the process loads (or a Python environment ships) carried it; `false`
    /// when only the detected runtime did (`/opt/rocm/.info/version`, `hipconfig`).
    pub loaded: bool,
    /// `true` for 7.2.0 and 7.2.1; `false` for 7.2 without a patch release (it may be
    /// either).
    pub certain: bool,
}

impl DetectionReport {
    /// The switches to set: the detected runtime's, or all three when none was found.
    pub fn advice(&self) -> SwitchAdvice {
        match &self.detection {
            Some(detection) => detection.advice(),
            None => SwitchAdvice {
                switches: SWITCHES.to_vec(),
                reason: "no HIP runtime was found: set all three (a runtime ignores variables it does not define)".to_owned(),
                basis: AdviceBasis::Unknown,
            },
        }
    }

    /// The copies older (or possibly older) than `/opt/rocm`'s.
    pub fn stale_copies(&self) -> impl Iterator<Item = &LibraryCopy> {
        self.copies.iter().filter(|copy| copy.is_stale())
    }

    /// Whether the HIP runtime the process loads has the 7.2.0–7.2.1 race: the loaded
    /// `libamdhip64` copies decide (a certain one first), else the detected runtime.
    pub fn replay_race(&self) -> Option<ReplayRace> {
        let mut runtimes: Vec<(RuntimeVersion, String, bool)> = self
            .copies
            .iter()
            .filter(|copy| copy.library == RocmLibrary::HipRuntime)
            .filter_map(|copy| Some((copy.version?, copy.path.display().to_string(), true)))
            .collect();
        if runtimes.is_empty() {
            runtimes.extend(
                self.detection
                    .iter()
                    .map(|detection| (detection.version, detection.evidence.clone(), false)),
            );
        }
        let mut races = runtimes
            .into_iter()
            .filter_map(|(version, evidence, loaded)| {
                Some(ReplayRace {
                    certain: race_exposure(version)?,
                    version,
                    evidence,
                    loaded,
                })
            });
        let first = races.next()?;
        Some(if first.certain {
            first
        } else {
            races.find(|race| race.certain).unwrap_or(first)
        })
    }
}

/// Each process's maps text (the named process's, or every process's), read once for the
/// runtime and for the copies.
pub(crate) type Maps = Vec<(u32, std::io::Result<String>)>;

/// Every process's maps, or the named process's: then a maps file that cannot be read, or
/// that names no mapping at all, is an error (the sources after it would answer for a
/// runtime the process may not load).
fn read_maps(options: &DetectOptions) -> Result<Maps, DetectError> {
    let maps_of = |pid: u32| options.under_root(Path::new(&format!("/proc/{pid}/maps")));
    let Some(pid) = options.pid else {
        let pids = process_ids(&options.under_root(Path::new("/proc")));
        return Ok(pids
            .into_iter()
            .map(|pid| (pid, std::fs::read_to_string(maps_of(pid))))
            .collect());
    };
    let path = maps_of(pid);
    let process = options.under_root(Path::new(&format!("/proc/{pid}")));
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Err(DetectError::ProcessGone {
            pid,
            how: if process_state(&process) == Some('Z') {
                "has exited (a zombie: its parent has not reaped it, and it maps no memory)"
                    .to_owned()
            } else {
                "maps no memory (a kernel thread, or a process that has just exited)".to_owned()
            },
            path,
        }),
        Ok(text) => Ok(vec![(pid, Ok(text))]),
        Err(error) if gone(&error) || !process.is_dir() => Err(DetectError::ProcessGone {
            pid,
            how: format!("has exited ({error})"),
            path,
        }),
        Err(source) => Err(DetectError::MapsUnreadable {
            pid,
            owner: std::fs::metadata(&process).ok().map(|m| {
                use std::os::unix::fs::MetadataExt as _;
                m.uid()
            }),
            path,
            source,
        }),
    }
}

/// Whether a read error says the process went away (its `/proc` entry is gone: ENOENT, or
/// ESRCH while reading).
fn gone(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::NotFound
        || error.raw_os_error() == Some(nix::errno::Errno::ESRCH as i32)
}

/// The state letter of `/proc/<pid>/stat` (`R`, `S`, `Z`, ...).
fn process_state(process: &Path) -> Option<char> {
    let stat = std::fs::read_to_string(process.join("stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next()?.chars().next()
}

/// One detection source: records what it tried, returns what it found.
type Source<'a> = &'a dyn Fn(&mut Vec<Attempt>) -> Option<Detection>;

/// Finds the HIP runtime in the order of the module doc, stopping at the first source that
/// names a version.
///
/// # Errors
///
/// [`DetectOptions::check`]'s: the root is not a folder, or the named process is not there;
/// and the named process's maps cannot be read ([`DetectError::MapsUnreadable`]) or name
/// nothing because it has exited ([`DetectError::ProcessGone`]).
pub fn detect_runtime(
    options: &DetectOptions,
    runner: &dyn CommandRunner,
) -> Result<DetectionReport, DetectError> {
    options.check()?;
    let maps = read_maps(options)?;
    let mut attempts = Vec::new();
    let sources: [Source<'_>; 4] = [
        &|attempts| from_process_maps(options, &maps, attempts),
        &|attempts| from_python_environments(options, attempts),
        &|attempts| from_version_file(options, attempts),
        &|attempts| from_hipconfig(options, runner, attempts),
    ];
    let detection = sources.iter().find_map(|source| source(&mut attempts));
    Ok(DetectionReport {
        detection,
        attempts,
        copies: copies::find_copies(options, &maps),
    })
}

/// The runtime a Kineto trace header names (`70253211` → 7.2); the patch release is lost.
pub fn detection_from_header(hip_runtime_version: u64) -> Option<Detection> {
    let header = HipVersion::from_header(hip_runtime_version)?;
    let mut detection = Detection::new(
        RuntimeVersion::from_header(header),
        DetectionSource::TraceHeader,
        format!("hip_runtime_version {hip_runtime_version}"),
    );
    detection.header = Some(header);
    Some(detection)
}

fn from_process_maps(
    options: &DetectOptions,
    maps: &Maps,
    attempts: &mut Vec<Attempt>,
) -> Option<Detection> {
    let mut found: Vec<(u32, Found)> = Vec::new();
    for (pid, text) in maps {
        // Without --pid, the maps of other users' processes cannot be read (and need not
        // be); a named process's unreadable maps stopped detection in `read_maps`.
        if let Ok(text) = text {
            found.extend(library_in_maps(options, *pid, text, attempts));
        }
    }
    if options.pid.is_none() && found.is_empty() {
        attempts.push(Attempt {
            source: format!(
                "{} (every process)",
                options.under_root(Path::new("/proc")).display()
            ),
            outcome: format!(
                "no process maps a HIP runtime with a version ({} processes)",
                maps.len()
            ),
        });
    }
    let ((pid, first), rest) = found.split_first()?;
    let mut detection = Detection::new(
        first.version,
        DetectionSource::ProcessMaps { pid: *pid },
        first.evidence.display().to_string(),
    );
    detection.also_loaded = rest.iter().map(|(pid, f)| (*pid, f.version)).collect();
    Some(detection)
}

/// The HIP library a maps text names, with its version, noting a library without one.
fn library_in_maps(
    options: &DetectOptions,
    pid: u32,
    text: &str,
    attempts: &mut Vec<Attempt>,
) -> Option<(u32, Found)> {
    let mapped = text.lines().find_map(hip_library_in_maps_line)?;
    let roots = [
        options.under_root(Path::new(&format!("/proc/{pid}/root"))),
        options.root.clone(),
    ];
    let system_lib: Vec<PathBuf> = roots
        .iter()
        .map(|root| root.join("opt/rocm/lib"))
        .filter(|lib| lib.is_dir())
        .take(1)
        .collect();
    let found = version_of_library(RocmLibrary::HipRuntime, mapped, &roots, &system_lib);
    attempts.push(Attempt {
        source: format!("/proc/{pid}/maps"),
        outcome: match &found {
            Some(found) => format!("{mapped} → {}", found.version),
            None => format!("{mapped}: no version in its name or beside it"),
        },
    });
    found.map(|found| (pid, found))
}

fn process_ids(proc: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir(proc)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

fn from_python_environments(
    options: &DetectOptions,
    attempts: &mut Vec<Attempt>,
) -> Option<Detection> {
    let system_lib = [options.under_root(Path::new("/opt/rocm/lib"))];
    for environment in &options.python_environments {
        let folder = options.under_root(environment);
        let libraries = python_library_folders(&folder);
        let found = libraries
            .iter()
            .find_map(|folder| version_in_folder(folder, &system_lib));
        attempts.push(Attempt {
            source: format!("Python environment {}", environment.display()),
            outcome: match &found {
                Some(found) => format!("{} → {}", found.evidence.display(), found.version),
                None if libraries.is_empty() => {
                    "no torch/lib or _rocm_sdk_core/lib with a HIP runtime".to_owned()
                }
                None => "a HIP runtime without a version in its name".to_owned(),
            },
        });
        if let Some(found) = found {
            return Some(Detection::new(
                found.version,
                DetectionSource::PythonEnvironment,
                found.evidence.display().to_string(),
            ));
        }
    }
    None
}

fn from_version_file(options: &DetectOptions, attempts: &mut Vec<Attempt>) -> Option<Detection> {
    let path = options.under_root(Path::new("/opt/rocm/.info/version"));
    let text = std::fs::read_to_string(&path);
    let version = text
        .as_deref()
        .ok()
        .and_then(|t| RuntimeVersion::parse(t.lines().next()?));
    attempts.push(Attempt {
        source: path.display().to_string(),
        outcome: match (&text, version) {
            (_, Some(version)) => format!("{} → {version}", text.as_deref().unwrap_or("").trim()),
            (Ok(text), None) => format!("`{}` is not a version", text.trim()),
            (Err(error), None) => format!("cannot be read: {error}"),
        },
    });
    let version = version?;
    Some(Detection::new(
        version,
        DetectionSource::RocmVersionFile,
        path.display().to_string(),
    ))
}

fn from_hipconfig(
    options: &DetectOptions,
    runner: &dyn CommandRunner,
    attempts: &mut Vec<Attempt>,
) -> Option<Detection> {
    let installed = options.under_root(Path::new("/opt/rocm/bin/hipconfig"));
    let program = if installed.is_file() || options.root != Path::new("/") {
        installed
    } else {
        PathBuf::from("hipconfig")
    };
    let output = runner.run(&program, &["--version"]);
    let line = output
        .as_deref()
        .ok()
        .and_then(|o| o.lines().find(|l| !l.trim().is_empty()));
    let version = line.and_then(RuntimeVersion::parse);
    attempts.push(Attempt {
        source: format!("{} --version", program.display()),
        outcome: match (&output, version) {
            (_, Some(version)) => format!("{} → {version}", line.unwrap_or("").trim()),
            (Ok(output), None) => format!("`{}` is not a version", output.trim()),
            (Err(failure), None) => failure.to_string(),
        },
    });
    Some(Detection::new(
        version?,
        DetectionSource::Hipconfig,
        line.unwrap_or("").trim().to_owned(),
    ))
}
