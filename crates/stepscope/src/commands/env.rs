//! `stepscope env`: the runtime switches for a HIP runtime. Standard output holds only the
//! `KEY=VALUE` (or `export`) lines, so `eval "$(stepscope env … --shell)"` works; the
//! explanation — where the version came from, why these switches, whether each is measured,
//! and with `--detect` the `libamdhip64` / `libroctracer64` copies the process loads against
//! `/opt/rocm`'s — goes to standard error.

use super::inputs::expand_inputs;
use crate::Outcome;
use crate::app::EnvRequest;
use crate::output;
use clap::{ArgGroup, Args};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use stepscope_ingest::{ReadOptions, read_trace_file};
use stepscope_model::switches::{
    CUDA_MISSING_KERNELS_NOTE, CUDA_NOTE, SwitchAdvice, advice_for_text,
};
use stepscope_serving::detect::{
    CopyLocation, CopyOrigin, DetectError, HeaderRuntime, RACE_FIXED_IN, VersionSource,
    advice_for_runtimes, runtime_from_header,
};
use stepscope_serving::render::shell_quote;
use stepscope_serving::{
    CopyStatus, DetectOptions, DetectionReport, LibraryCopy, ReplayRace, SystemCommandRunner,
    detect_runtime,
};

/// Which runtime to advise for.
#[derive(Debug)]
pub enum RuntimeChoice {
    /// A version typed by the user.
    Rocm(String),
    /// CUDA: no switch.
    Cuda,
    /// Detect the loaded HIP runtime.
    Detect(DetectOptions),
    /// Read trace headers (folders already expanded to their trace files).
    Trace(Vec<PathBuf>),
}

/// Everything `env` needs, resolved from the arguments.
#[derive(Debug)]
pub struct EnvSettings {
    /// The runtime.
    pub runtime: RuntimeChoice,
    /// `export` lines instead of `KEY=VALUE`.
    pub shell: bool,
}

impl EnvSettings {
    /// Resolves a request: traces found, detection options set.
    ///
    /// # Errors
    ///
    /// A trace path that does not exist, or a folder that holds no trace file.
    pub fn resolve(request: EnvRequest, shell: bool) -> anyhow::Result<Self> {
        let runtime = match request {
            EnvRequest::Rocm(version) => RuntimeChoice::Rocm(version),
            EnvRequest::Cuda => RuntimeChoice::Cuda,
            EnvRequest::Traces(trace) => RuntimeChoice::Trace(expand_inputs(&trace)?),
            EnvRequest::Detect {
                pid,
                python_envs,
                root,
            } => {
                let python_environments = if python_envs.is_empty() && root == Path::new("/") {
                    ["VIRTUAL_ENV", "CONDA_PREFIX"]
                        .iter()
                        .filter_map(|name| std::env::var_os(name).map(PathBuf::from))
                        .collect()
                } else {
                    python_envs
                };
                RuntimeChoice::Detect(
                    DetectOptions::default()
                        .with_root(root)
                        .with_pid(pid)
                        .with_python_environments(python_environments),
                )
            }
        };
        Ok(Self { runtime, shell })
    }
}

impl EnvArgs {
    /// The request the flags say, and `--shell`; every field is destructured so a new flag
    /// cannot be ignored. Clap has made sure one source is given.
    pub fn request(self) -> (EnvRequest, bool) {
        let EnvArgs {
            rocm,
            cuda,
            detect,
            trace,
            pid,
            python_env,
            root,
            shell,
        } = self;
        let request = match (rocm, cuda) {
            (Some(version), _) => EnvRequest::Rocm(version),
            (None, true) => EnvRequest::Cuda,
            (None, false) if !detect && !trace.is_empty() => EnvRequest::Traces(trace),
            (None, false) => EnvRequest::Detect {
                pid,
                python_envs: python_env,
                root,
            },
        };
        (request, shell)
    }
}

/// What `env` found: the explanation for standard error, the switches for standard output
/// (`None`: no variable), and whether an input could not be read (then nothing is printed
/// on standard output and the exit code is 2).
pub struct Answer {
    /// What standard error says: the runtime and why each switch.
    pub explanation: String,
    /// The switches, when there is an answer.
    pub advice: Option<SwitchAdvice>,
    /// A trace could not be read (no variable is printed).
    pub failed: bool,
    /// Why each trace that could not be read could not (also said on standard error).
    pub errors: Vec<String>,
}

/// `env`'s answer for `settings`; a detection that failed, with its hint.
///
/// # Errors
///
/// `--detect` could not read what it needed (a process's maps, a `--root`).
pub fn answer(settings: &EnvSettings) -> Result<Answer, (DetectError, String)> {
    let answer = match &settings.runtime {
        RuntimeChoice::Rocm(version) => {
            let advice = advice_for_text(version);
            Answer {
                explanation: format!(
                    "runtime: {version} (given with --rocm)\n{}{}",
                    explain(&advice),
                    closing(&advice)
                ),
                advice: Some(advice),
                failed: false,
                errors: Vec::new(),
            }
        }
        RuntimeChoice::Cuda => Answer {
            explanation: format!("{CUDA_NOTE}\n{CUDA_MISSING_KERNELS_NOTE}\n"),
            advice: None,
            failed: false,
            errors: Vec::new(),
        },
        RuntimeChoice::Detect(options) => {
            match detect_runtime(options, &SystemCommandRunner::default()) {
                Ok(report) => {
                    let advice = report.advice();
                    Answer {
                        explanation: describe_detection(&report)
                            + &describe_copies(&report)
                            + &explain(&advice)
                            + closing(&advice),
                        advice: Some(advice),
                        failed: false,
                        errors: Vec::new(),
                    }
                }
                Err(error) => {
                    let hint = detect_hint(&error, options);
                    return Err((error, hint));
                }
            }
        }
        RuntimeChoice::Trace(files) => advise_from_traces(files),
    };
    Ok(answer)
}

/// `stepscope env`.
pub fn run(args: EnvArgs) -> anyhow::Result<Outcome> {
    let (request, shell) = args.request();
    let settings = match EnvSettings::resolve(request, shell) {
        Ok(settings) => settings,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let answer = match answer(&settings) {
        Ok(answer) => answer,
        Err((error, hint)) => {
            output::print_error(&anyhow::Error::new(error));
            let mut stderr = std::io::stderr().lock();
            writeln!(stderr, "hint: {hint}")?;
            stderr.flush()?;
            return Ok(Outcome::InputError);
        }
    };
    let mut stderr = std::io::stderr().lock();
    stderr.write_all(answer.explanation.as_bytes())?;
    stderr.flush()?;
    if answer.failed {
        return Ok(Outcome::InputError);
    }
    let lines = answer.advice.map_or_else(String::new, |advice| {
        variable_lines(&advice, settings.shell)
    });
    output::print(&lines)?;
    Ok(Outcome::Success)
}

/// How to fix a failed detection.
pub fn detect_hint(error: &DetectError, options: &DetectOptions) -> String {
    match error {
        DetectError::MapsUnreadable { pid, owner, .. } => run_as_owner(*pid, *owner),
        DetectError::ProcessGone { .. } => {
            "start the server again and pass its new pid (`pgrep -f sglang`), or leave out --pid to look at every process".to_owned()
        }
        DetectError::NoSuchProcess { .. } if options.root != Path::new("/") => {
            "pass the pid of the running server (`pgrep -f sglang`), or leave out --pid to look at every process; a container's processes are in the host's /proc: give the pid the host sees and leave out --root (the process's files are read through /proc/PID/root)".to_owned()
        }
        DetectError::NoSuchProcess { .. } => {
            "pass the pid of the running server (`pgrep -f sglang`), or leave out --pid to look at every process".to_owned()
        }
        _ => {
            "--root takes a folder that stands for `/`, such as a container's root file system; leave it out to look at this machine".to_owned()
        }
    }
}

/// What to do when process `pid`'s maps cannot be read: run as its owner (or root).
fn run_as_owner(pid: u32, owner: Option<u32>) -> String {
    let (user, sudo) = match owner {
        Some(uid) => (
            match user_name(uid) {
                Some(name) => format!("the process's user, `{name}` (uid {uid}),"),
                None => format!("the process's user (uid {uid})"),
            },
            format!("sudo -u '#{uid}'"),
        ),
        None => ("the process's user".to_owned(), "sudo -u USER".to_owned()),
    };
    format!(
        "run stepscope as {user} or as root, e.g. `{sudo} stepscope env --detect --pid {pid}`: only a process's owner (and root) can read its maps"
    )
}

/// The name `/etc/passwd` gives user `uid`, if any.
fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        (fields.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_owned())
    })
}

/// Reads each trace's header and advises for all of them; a trace that cannot be read is
/// reported (naming the file) and the rest are still explained.
fn advise_from_traces(files: &[PathBuf]) -> Answer {
    let mut read: Vec<(&Path, HeaderRuntime)> = Vec::new();
    let mut errors = Vec::new();
    for path in files {
        // The whole trace is read for its header: the header fields may come after the
        // events (a CUDA trace writes `cuda_runtime_version` at the end).
        match read_trace_file(path, &ReadOptions::default()) {
            Ok(trace) => read.push((path, runtime_from_header(&trace.metadata))),
            Err(error) => {
                let error = anyhow::Error::new(error);
                output::print_error(&error);
                errors.push(format!("{error:#}"));
            }
        }
    }
    let failed = errors.len();
    let runtimes: Vec<HeaderRuntime> = read.iter().map(|(_, r)| r.clone()).collect();
    let advice = advice_for_runtimes(&runtimes);
    let mut explanation = describe_headers(&read);
    if let Some(advice) = &advice {
        explanation.push_str(&explain(advice));
        if failed == 0 {
            explanation.push_str(closing(advice));
        }
    }
    if runtimes.iter().any(|r| r.advice.is_none()) {
        let _ = writeln!(explanation, "{CUDA_NOTE}\n{CUDA_MISSING_KERNELS_NOTE}");
        if advice.is_none() && failed == 0 {
            explanation.push_str("no variable to set: no HIP switch applies to a CUDA trace\n");
        }
    }
    if failed > 0 {
        let _ = writeln!(
            explanation,
            "no variable printed: {failed} of {} trace(s) could not be read (see above); fix or leave them out, then run again",
            files.len()
        );
    }
    Answer {
        explanation,
        advice,
        failed: failed > 0,
        errors,
    }
}

/// One `runtime:` line per runtime and header field, then, when the traces differ, how.
fn describe_headers(read: &[(&Path, HeaderRuntime)]) -> String {
    let mut groups: Vec<(&HeaderRuntime, Vec<&Path>)> = Vec::new();
    for (path, runtime) in read {
        let same = |(seen, _): &&mut (&HeaderRuntime, Vec<&Path>)| {
            seen.runtime == runtime.runtime && seen.evidence == runtime.evidence
        };
        match groups.iter_mut().find(same) {
            Some((_, paths)) => paths.push(path),
            None => groups.push((runtime, vec![path])),
        }
    }
    let mut out = String::new();
    for (runtime, paths) in &groups {
        let _ = writeln!(
            out,
            "runtime: {} ({} in {})",
            runtime.runtime,
            runtime.evidence,
            file_list(paths)
        );
        if let Some(note) = &runtime.note {
            let _ = writeln!(out, "note: {note}");
        }
    }
    out.push_str(&differences(read));
    out
}

/// When the traces name more than one runtime: which, on which platforms, and each one's
/// reason, so the union below is understood.
fn differences(read: &[(&Path, HeaderRuntime)]) -> String {
    let mut runtimes: Vec<(&HeaderRuntime, Vec<&Path>)> = Vec::new();
    for (path, runtime) in read {
        match runtimes
            .iter_mut()
            .find(|(r, _)| r.runtime == runtime.runtime)
        {
            Some((_, paths)) => paths.push(path),
            None => runtimes.push((runtime, vec![path])),
        }
    }
    if runtimes.len() < 2 {
        return String::new();
    }
    let mut platforms: Vec<&str> = runtimes.iter().map(|(r, _)| r.platform_name()).collect();
    platforms.sort_unstable();
    platforms.dedup();
    let mut out = if platforms.len() > 1 {
        format!(
            "the traces come from different platforms ({}): advising for all of them\n",
            platforms.join(", ")
        )
    } else {
        "the traces name different runtimes: advising for all of them\n".to_owned()
    };
    for (runtime, paths) in &runtimes {
        let reason = runtime.advice.as_ref().map_or(
            "no HIP switch applies (a CUDA runtime does not read the variables below)",
            |advice| advice.reason.as_str(),
        );
        let _ = writeln!(
            out,
            "  {} ({}): {reason}",
            runtime.runtime,
            file_list(paths)
        );
    }
    out
}

/// Up to three paths, then how many more.
fn file_list(paths: &[&Path]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .take(3)
        .map(|path| path.display().to_string())
        .collect();
    match paths.len() {
        0..=3 => shown.join(", "),
        n => format!("{} and {} more", shown.join(", "), n - 3),
    }
}

fn describe_detection(report: &DetectionReport) -> String {
    let mut out = String::from("detection, in order:\n");
    for attempt in &report.attempts {
        let _ = writeln!(out, "  {}: {}", attempt.source, attempt.outcome);
    }
    match &report.detection {
        Some(detection) => {
            let _ = writeln!(
                out,
                "runtime: HIP {} ({}: {})",
                detection.version, detection.source, detection.evidence
            );
            if let Some(note) = &detection.note {
                let _ = writeln!(out, "note: {note}");
            }
        }
        None => out.push_str("runtime: no HIP runtime found\n"),
    }
    out
}

/// Why these switches, and per switch what it does, where it applies, whether measured.
fn explain(advice: &SwitchAdvice) -> String {
    let mut out = format!("why: {}\n", advice.reason);
    for switch in &advice.switches {
        let _ = writeln!(
            out,
            "  {}={}: {} [{}; {}]\n      defined in {}; {}",
            switch.variable,
            switch.value,
            switch.effect,
            switch.runtime_line,
            switch.measured_text(),
            switch.source,
            switch.notes
        );
    }
    out
}

/// What to do with the switches.
fn closing(advice: &SwitchAdvice) -> &'static str {
    if advice.switches.is_empty() {
        "no variable to set\n"
    } else {
        "set them in the server's environment before it starts: the runtime reads them once, at load\n"
    }
}

fn variable_lines(advice: &SwitchAdvice, shell: bool) -> String {
    let mut out = String::new();
    for switch in &advice.switches {
        let value = shell_quote(switch.value);
        let _ = if shell {
            writeln!(out, "export {}={value}", switch.variable)
        } else {
            writeln!(out, "{}={value}", switch.variable)
        };
    }
    out
}

/// The library copies the process loads against `/opt/rocm`'s, then what is wrong with them:
/// copies older than `/opt/rocm`'s with how to replace them, and a HIP runtime with the
/// 7.2.0–7.2.1 race. Statements from public issues say so ("reported"); none was measured
/// here.
fn describe_copies(report: &DetectionReport) -> String {
    let mut out = String::new();
    if !report.copies.is_empty() {
        out.push_str("libraries loaded, against /opt/rocm:\n");
        for copy in &report.copies {
            out.push_str(&describe_copy(copy));
        }
    }
    let stale: Vec<&LibraryCopy> = report.stale_copies().collect();
    if !stale.is_empty() {
        out.push_str(&describe_stale(&stale));
    }
    if let Some(race) = report.replay_race() {
        out.push_str(&describe_race(&race));
    }
    out
}

fn describe_copy(copy: &LibraryCopy) -> String {
    let found = match &copy.origin {
        CopyOrigin::ProcessMaps { pids } => {
            let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
            let noun = if pids.len() == 1 {
                "process"
            } else {
                "processes"
            };
            format!("mapped by {noun} {}", pids.join(", "))
        }
        CopyOrigin::PythonEnvironment { environment } => format!(
            "in Python environment {}; no process was seen mapping it",
            environment.display()
        ),
        _ => "found".to_owned(),
    };
    let version = copy.version.map_or_else(
        || "release unknown (none in its name or beside it)".to_owned(),
        |version| format!("{version} ({})", version_source_text(copy)),
    );
    let system = copy.system.as_ref().map_or_else(
        || "no /opt/rocm copy to compare with".to_owned(),
        |system| {
            format!(
                "/opt/rocm: {} ({})",
                system.version,
                system.evidence.display()
            )
        },
    );
    let status = match copy.status {
        CopyStatus::Older => "OLDER than /opt/rocm's",
        CopyStatus::MaybeOlder => {
            "may be older than /opt/rocm's (one side has no patch release to compare)"
        }
        CopyStatus::NotOlder => "not older than /opt/rocm's",
        _ => "not compared",
    };
    format!(
        "  {}: {} ({found})\n      {version}; {system}: {status}\n",
        copy.library,
        copy.path.display()
    )
}

fn version_source_text(copy: &LibraryCopy) -> String {
    match &copy.version_source {
        Some(VersionSource::FileName) => "its file name".to_owned(),
        Some(VersionSource::VersionedSibling(path)) => format!("from {} beside it", path.display()),
        Some(VersionSource::SameBytesAs(path)) => {
            format!(
                "the same bytes as {}: replaced by /opt/rocm's",
                path.display()
            )
        }
        Some(VersionSource::WheelDistInfo(path)) => {
            let patch = if copy.version.is_some_and(|version| version.patch.is_none()) {
                "; the name keeps no patch release"
            } else {
                ""
            };
            format!(
                "the ROCm release the wheel was built for, from {}{patch}",
                path.display()
            )
        }
        _ => "read beside it".to_owned(),
    }
}

/// A warning per stale copy, the fix for each kind of folder they are in, and why it matters.
fn describe_stale(stale: &[&LibraryCopy]) -> String {
    let mut out = String::new();
    for copy in stale {
        let (older, system) = match (copy.status, &copy.system) {
            (CopyStatus::Older, Some(system)) => ("older than", system.version.to_string()),
            (_, Some(system)) => ("may be older than", system.version.to_string()),
            _ => ("may be older than", "the system's".to_owned()),
        };
        let version = copy
            .version
            .map_or_else(|| "unknown".to_owned(), |version| version.to_string());
        let _ = writeln!(
            out,
            "warning: the process loads {} {version} from {}, {older} /opt/rocm's {system}: upgrading /opt/rocm does not reach a copy loaded from elsewhere",
            copy.library,
            copy.path.display()
        );
    }
    for location in [
        CopyLocation::TorchLib,
        CopyLocation::RocmSdkCore,
        CopyLocation::Other,
    ] {
        let here: Vec<&LibraryCopy> = stale
            .iter()
            .copied()
            .filter(|copy| copy.location == location)
            .collect();
        if !here.is_empty() {
            out.push_str(&fix_for(location, &here));
        }
    }
    let _ = writeln!(
        out,
        "  why it matters: the ROCm 7.2.0–7.2.1 roctracer race (some kernels of graph replays missing from profiles, 26–65% visible) is fixed only in {RACE_FIXED_IN} and later, in the copies the process loads [reported: ROCm/ROCm #6102, ROCm/rocm-systems #4361; not measured here]"
    );
    out
}

/// How to replace stale copies in one kind of folder, as the public sources did it.
fn fix_for(location: CopyLocation, copies: &[&LibraryCopy]) -> String {
    let paths: Vec<String> = copies
        .iter()
        .map(|copy| copy.path.display().to_string())
        .collect();
    match location {
        CopyLocation::TorchLib => torch_lib_fix(copies),
        CopyLocation::RocmSdkCore => format!(
            "fix: the copies come with therock's rocm-sdk-core wheel ({}): upgrade that wheel in the environment to /opt/rocm's release or later; /opt/rocm's files do not replace it [no public source checked; not measured here]\n",
            paths.join(", ")
        ),
        _ => format!(
            "fix: the process loads another ROCm install's copies ({}): start it so that it loads /opt/rocm/lib's instead (look at LD_LIBRARY_PATH, the RPATH of what links them, and the image's ROCm), then check with `stepscope env --detect` [not measured here]\n",
            paths.join(", ")
        ),
    }
}

/// Replace a PyTorch wheel's own copies: what the public sources did, and what did not help.
fn torch_lib_fix(copies: &[&LibraryCopy]) -> String {
    let moves: Vec<String> = copies
        .iter()
        .map(|copy| {
            let system = copy
                .system
                .as_ref()
                .map(|system| system.evidence.display().to_string())
                .filter(|path| path.contains(copy.library.file_name()))
                .unwrap_or_else(|| format!("/opt/rocm/lib/{}", copy.library.file_name()));
            format!("{system} over {}", copy.path.display())
        })
        .collect();
    let mut out = format!(
        "fix: replace the wheel's copies with /opt/rocm's, then restart the server: copy {} (AMD-AGI/Hyperloom #1279 copies them so; a symlink in their place loads the same file, as tiran/instructlab-containers' de-vendor-torch.sh links torch/lib to /opt/rocm/lib); or install a torch wheel whose own copies are ROCm {RACE_FIXED_IN} or later (no source here names one: check its copies with `stepscope env --detect`) [reported; not measured here]\n",
        moves.join(" and ")
    );
    out.push_str(
        "  LD_LIBRARY_PATH does not help: the wheel's libraries carry RPATH $ORIGIN, which the loader searches before it (pytorch .ci/manywheel/build_rocm.sh links with --force-rpath; sglang #35390, AMD-AGI/Hyperloom #1279); preloading /opt/rocm's copies (LD_PRELOAD) passed sglang's isolated probe, but sglang #35390 advises against launching a server that way [reported; not measured here]\n",
    );
    let by_wheel_name = copies.iter().any(|copy| {
        matches!(copy.version_source, Some(VersionSource::WheelDistInfo(_)))
            && copy.version.is_some_and(|version| version.patch.is_none())
    });
    if by_wheel_name {
        out.push_str(
            "  a wheel's +rocmX.Y does not tell the patch release of its copies: torch 2.11.0+rocm7.2 wheels shipped 7.2.0 copies under an installed ROCm 7.2.4 [reported: sglang #35390; not measured here]\n",
        );
    }
    out
}

/// The 7.2.0–7.2.1 race for the HIP runtime found: separate from the switch advice.
fn describe_race(race: &ReplayRace) -> String {
    let whose = if race.loaded {
        "the HIP runtime the process loads"
    } else {
        "the HIP runtime found"
    };
    let what = if race.certain {
        format!("{whose} is {} ({})", race.version, race.evidence)
    } else {
        format!(
            "{whose} is {} ({}) and its patch release cannot be told: if it is 7.2.0 or 7.2.1",
            race.version, race.evidence
        )
    };
    format!(
        "warning: {what}, profiles recorded with it can miss some kernels of every graph replay (26–65% of them visible, varying per replay and per run: a race in the HIP runtime's batched AQL dispatch path) [reported: ROCm/ROCm #6102, ROCm/rocm-systems #4361, sglang #35390; not measured here]\n  fix: ROCm {RACE_FIXED_IN} or later for the libamdhip64 and libroctracer64 copies the process loads (upgrading /opt/rocm alone does not replace a wheel's own copies); the switches below are for another cause (whole replays unrecorded) and are advised as before; whether they also avoid this race was not measured\n"
    )
}

/// `env`'s line in its parent's command list.
const ABOUT: &str = "Print the runtime switches that make the profiler record every replay";

/// `env --help`: each paragraph is one line, wrapped to the terminal's width.
const LONG_ABOUT: &str = "\
Print the runtime switches that make the profiler record every graph replay on a HIP \
runtime, and why.

Standard output holds only KEY=VALUE lines (export lines with --shell), so that \
`eval` works on it (see EXAMPLES); the explanation, with whether each \
switch is measured, goes to standard error. A version outside the switch table, or AMD \
devices in a trace header without a runtime version, or a header that names no runtime, \
gets all three switches (a runtime ignores variables it does not define). A CUDA trace (by \
cuda_runtime_version or NVIDIA devices) gets none. Traces of different runtimes get the \
switches of all of them, and standard error says they differ.

Exit codes: 0 done; 2 a --pid with no /proc/PID, a --root that is not a folder, or a trace \
that cannot be read (then no variable is printed; the other traces are still explained).

EXAMPLES:
  # DEBUG_CLR_GRAPH_PACKET_CAPTURE=0
  stepscope env --rocm 7.2.0
  # no patch release: both 7.2 switches
  stepscope env --rocm 7.2 --shell
  # the HIP runtime a running process maps
  eval \"$(stepscope env --detect --shell)\"
  # the runtime that process maps
  stepscope env --detect --pid 4242
  # the one PyTorch ships in torch/lib
  stepscope env --detect --python-env /opt/venv
  # from a trace's hip_runtime_version
  stepscope env --trace t.json.gz
  # every trace in a folder: all their runtimes' switches
  stepscope env --trace traces/
  stepscope env --trace a.json.gz --trace b.json.gz
  # no switch; Nsight Systems note
  stepscope env --cuda";

/// Arguments of `env`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
#[command(override_usage = "stepscope env --rocm <VERSION> [OPTIONS]
       stepscope env --cuda | --detect | --trace <PATH>... [OPTIONS]")]
#[command(group(ArgGroup::new("runtime").required(true).args(["rocm", "cuda", "detect", "trace"])))]
pub struct EnvArgs {
    /// A HIP runtime or ROCm release: 7.2.0, 7.2.4, 7.2 (both 7.2 switches), 10.1, 7.11
    /// (therock), develop.
    #[arg(long, value_name = "VERSION")]
    pub rocm: Option<String>,
    /// A CUDA runtime: no switch is needed.
    #[arg(long)]
    pub cuda: bool,
    /// Find the HIP runtime actually loaded: process maps, then a Python environment's
    /// torch/lib, then /opt/rocm/.info/version, then hipconfig --version. Standard error also
    /// lists the libamdhip64 and libroctracer64 copies the process maps (or the environment
    /// ships), each against /opt/rocm's, and flags, with the fix: a copy older than
    /// /opt/rocm's (a PyTorch wheel loads its own from torch/lib, so upgrading /opt/rocm does
    /// not reach it), and a HIP runtime 7.2.0 or 7.2.1 (some kernels of graph replays missing
    /// from profiles; fixed in 7.2.2; reported in public issues, not measured here).
    #[arg(long)]
    pub detect: bool,
    /// Read the runtime from trace headers: files, or folders searched recursively for
    /// *.json, *.json.gz and *.json.zst (as `analyze` takes them); repeatable. HIP traces get
    /// the switches of their hip_runtime_version, CUDA traces none; traces of different
    /// runtimes get the switches of all of them.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub trace: Vec<PathBuf>,
    /// With --detect: the server's process id (default: every process). A pid with no
    /// /proc/PID is an error, not a fall-back to /opt/rocm.
    #[arg(long, value_name = "PID", conflicts_with_all = ["rocm", "cuda", "trace"])]
    pub pid: Option<u32>,
    /// With --detect: a Python environment (venv or conda prefix) whose torch/lib (or
    /// therock _rocm_sdk_core/lib) to read for the HIP runtime and roctracer copies no
    /// process maps; repeatable (default: $VIRTUAL_ENV and $CONDA_PREFIX).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["rocm", "cuda", "trace"])]
    pub python_env: Vec<PathBuf>,
    /// With --detect: read /proc and /opt/rocm below this folder (a container's root file
    /// system); it must be a folder.
    #[arg(long, value_name = "DIR", default_value = "/", conflicts_with_all = ["rocm", "cuda", "trace"])]
    pub root: PathBuf,
    /// Print `export KEY=VALUE` lines.
    #[arg(long)]
    pub shell: bool,
}
