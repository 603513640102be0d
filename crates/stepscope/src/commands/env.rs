//! `stepscope env`: the runtime switches for a HIP runtime. Standard output holds only the
//! `KEY=VALUE` (or `export`) lines, so `eval "$(stepscope env … --shell)"` works; the
//! explanation — where the version came from, why these switches, whether each is measured —
//! goes to standard error.

use crate::Outcome;
use crate::cli::EnvArgs;
use crate::output;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use stepscope_ingest::{ReadOptions, read_trace_file};
use stepscope_model::TraceMetadata;
use stepscope_model::switches::{CUDA_NOTE, SWITCHES, SwitchAdvice, advice_for_text};
use stepscope_serving::render::shell_quote;
use stepscope_serving::{
    DetectOptions, DetectionReport, SystemCommandRunner, detect_runtime, detection_from_header,
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
    /// Read a trace header.
    Trace(PathBuf),
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
    /// Resolves arguments; every field is destructured so a new flag cannot be ignored.
    pub fn resolve(args: EnvArgs) -> Self {
        let EnvArgs {
            rocm,
            cuda,
            detect,
            trace,
            pid,
            python_env,
            root,
            shell,
        } = args;
        let runtime = if let Some(version) = rocm {
            RuntimeChoice::Rocm(version)
        } else if cuda {
            RuntimeChoice::Cuda
        } else if let (false, Some(trace)) = (detect, trace) {
            RuntimeChoice::Trace(trace)
        } else {
            let python_environments = if python_env.is_empty() && root == std::path::Path::new("/")
            {
                ["VIRTUAL_ENV", "CONDA_PREFIX"]
                    .iter()
                    .filter_map(|name| std::env::var_os(name).map(PathBuf::from))
                    .collect()
            } else {
                python_env
            };
            RuntimeChoice::Detect(
                DetectOptions::default()
                    .with_root(root)
                    .with_pid(pid)
                    .with_python_environments(python_environments),
            )
        };
        Self { runtime, shell }
    }
}

/// `stepscope env`.
pub fn run(args: EnvArgs) -> anyhow::Result<Outcome> {
    let settings = EnvSettings::resolve(args);
    let mut explanation = String::new();
    let advice = match &settings.runtime {
        RuntimeChoice::Rocm(version) => {
            let _ = writeln!(explanation, "runtime: {version} (given with --rocm)");
            Some(advice_for_text(version))
        }
        RuntimeChoice::Cuda => {
            let _ = writeln!(explanation, "{CUDA_NOTE}");
            None
        }
        RuntimeChoice::Detect(options) => {
            let report = detect_runtime(options, &SystemCommandRunner::default());
            explanation.push_str(&describe_detection(&report));
            Some(report.advice())
        }
        RuntimeChoice::Trace(path) => match read_trace_file(path, &ReadOptions::default()) {
            Ok(trace) => advice_from_header(&trace.metadata, path, &mut explanation),
            Err(error) => {
                output::print_error(&anyhow::Error::new(error));
                return Ok(Outcome::InputError);
            }
        },
    };
    if let Some(advice) = &advice {
        explanation.push_str(&explain(advice));
    }
    let mut stderr = std::io::stderr().lock();
    stderr.write_all(explanation.as_bytes())?;
    stderr.flush()?;
    let lines = advice.map_or_else(String::new, |advice| {
        variable_lines(&advice, settings.shell)
    });
    output::print(&lines)?;
    Ok(Outcome::Success)
}

fn advice_from_header(
    metadata: &TraceMetadata,
    path: &std::path::Path,
    explanation: &mut String,
) -> Option<SwitchAdvice> {
    let source = path.display();
    if let Some(detection) = metadata.hip_runtime_version.and_then(detection_from_header) {
        let _ = writeln!(
            explanation,
            "runtime: HIP {} ({} of {source})",
            detection.version, detection.evidence
        );
        if let Some(note) = &detection.note {
            let _ = writeln!(explanation, "note: {note}");
        }
        return Some(detection.advice());
    }
    if let Some(version) = metadata.cuda_runtime_version {
        let _ = writeln!(
            explanation,
            "runtime: CUDA {}.{} (cuda_runtime_version of {source})\n{CUDA_NOTE}",
            version / 1000,
            (version % 1000) / 10
        );
        return None;
    }
    let _ = writeln!(
        explanation,
        "runtime: {source} names no runtime in its header"
    );
    Some(SwitchAdvice {
        switches: SWITCHES.to_vec(),
        reason: "the trace header names no runtime: set all three (a runtime ignores variables it does not define)".to_owned(),
        basis: stepscope_model::switches::AdviceBasis::Unknown,
    })
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
    if advice.switches.is_empty() {
        out.push_str("no variable to set\n");
    } else {
        out.push_str("set them in the server's environment before it starts: the runtime reads them once, at load\n");
    }
    out
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
