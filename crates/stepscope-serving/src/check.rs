//! `config check`: every profile carries the switches, no baseline carries one.
//!
//! What it checks, per file: a `kind: profile` config sets every variable of the switch
//! table to its value (a HIP runtime ignores variables it does not define, so all three are
//! safe on any runtime) and enables its framework's torch profiler; a `kind: baseline`
//! config sets none of them (a measured run replays as shipped); and a file whose name
//! starts with `profile` or `baseline` has that kind. Why: a profile without the switch for
//! the runtime it lands on records 1 of 127 replays, silently; a baseline with one measures
//! a server nobody ships.

use crate::config::{ConfigFile, ConfigKind, Framework};
use std::fmt;
use std::path::PathBuf;
use stepscope_model::switches::SWITCHES;

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file.
    pub path: PathBuf,
    /// The line to look at: the key's, or its section's when the key is missing (0: the file
    /// has no such section).
    pub line: usize,
    /// The dotted key (`envs.DEBUG_CLR_GRAPH_PACKET_CAPTURE`).
    pub key: String,
    /// What is wrong and what to do.
    pub problem: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        write!(f, ": `{}`: {}", self.key, self.problem)
    }
}

/// Findings for every file, in file order.
pub fn check_configs(files: &[ConfigFile]) -> Vec<Finding> {
    files.iter().flat_map(check_config).collect()
}

/// Findings for one file.
pub fn check_config(file: &ConfigFile) -> Vec<Finding> {
    let mut findings = kind_matches_name(file).into_iter().collect::<Vec<_>>();
    match file.config.kind {
        ConfigKind::Profile => {
            findings.extend(profile_switches(file));
            findings.extend(profiler_enabled(file));
        }
        ConfigKind::Baseline => findings.extend(baseline_switches(file)),
    }
    findings
}

fn finding(file: &ConfigFile, line: usize, key: String, problem: String) -> Finding {
    Finding {
        path: file.path.clone(),
        line,
        key,
        problem,
    }
}

fn kind_matches_name(file: &ConfigFile) -> Option<Finding> {
    let name = file.path.file_name()?.to_string_lossy();
    let named = if name.starts_with("profile") {
        ConfigKind::Profile
    } else if name.starts_with("baseline") {
        ConfigKind::Baseline
    } else {
        return None;
    };
    let kind = file.config.kind;
    (kind != named).then(|| {
        finding(
            file,
            file.kind_line,
            "kind".to_owned(),
            format!("the file is named as a {named} but says `kind: {kind}`: rename the file or fix the kind"),
        )
    })
}

fn profile_switches(file: &ConfigFile) -> Vec<Finding> {
    let mut findings = Vec::new();
    for switch in &SWITCHES {
        let key = format!("envs.{}", switch.variable);
        match file.config.envs.get(switch.variable) {
            None => findings.push(finding(
                file,
                file.envs_line,
                key,
                format!(
                    "a profile lacks `{}={}` ({}; {}): add it under `envs`",
                    switch.variable,
                    switch.value,
                    switch.runtime_line,
                    switch.measured_text()
                ),
            )),
            Some(value) if value != switch.value => findings.push(finding(
                file,
                line_of(file, switch.variable),
                key,
                format!(
                    "a profile needs `{}={}`, not `{value}`",
                    switch.variable, switch.value
                ),
            )),
            Some(_) => {}
        }
    }
    findings
}

fn baseline_switches(file: &ConfigFile) -> Vec<Finding> {
    SWITCHES
        .iter()
        .filter(|switch| file.config.envs.contains_key(switch.variable))
        .map(|switch| {
            finding(
                file,
                line_of(file, switch.variable),
                format!("envs.{}", switch.variable),
                format!(
                    "a baseline replays as shipped and carries no switch: remove `{}`",
                    switch.variable
                ),
            )
        })
        .collect()
}

/// The way each framework is told where to write torch-profiler traces (a flag or an
/// environment variable of its own).
pub fn profiler_settings(framework: Framework) -> (&'static str, Option<&'static str>) {
    match framework {
        Framework::Sglang => ("SGLANG_TORCH_PROFILER_DIR", None),
        Framework::Vllm => ("VLLM_TORCH_PROFILER_DIR", Some("--profiler-config")),
        Framework::Atom => ("ATOM_TORCH_PROFILER_DIR", Some("--torch-profiler-dir")),
    }
}

fn profiler_enabled(file: &ConfigFile) -> Option<Finding> {
    let config = &file.config;
    let (variable, flag) = profiler_settings(config.framework);
    let by_env = config.envs.contains_key(variable);
    let by_flag = flag.is_some_and(|flag| {
        config
            .server
            .args
            .iter()
            .any(|arg| arg == flag || arg.starts_with(&format!("{flag}=")))
    });
    let how = match flag {
        Some(flag) => format!("set `{variable}` under `envs` or pass `{flag}` in `server.args`"),
        None => format!("set `{variable}` under `envs`"),
    };
    (!by_env && !by_flag).then(|| {
        finding(
            file,
            file.envs_line,
            format!("envs.{variable}"),
            format!(
                "a profile must enable the {} torch profiler: {how}",
                config.framework
            ),
        )
    })
}

fn line_of(file: &ConfigFile, variable: &str) -> usize {
    file.env_lines
        .get(variable)
        .copied()
        .unwrap_or(file.envs_line)
}
