//! `config check`: every profile carries the switches, no baseline carries one.
//!
//! What it checks, per file: a `kind: profile` config sets every variable of the switch
//! table to its value (a HIP runtime ignores variables it does not define, so all three are
//! safe on any runtime), sets none of them again to another value outside `envs` (in
//! `container_args` or the launch words, where it would win), and enables its framework's
//! torch profiler; a `kind: baseline` config sets none of them anywhere (a measured run
//! replays as shipped; [`crate::switch_sources`] reads every place one can hide); a
//! `--env-file` that cannot be read is named, since what it sets cannot be checked; and a
//! file whose name starts with `profile` or `baseline` has that kind. The load's values
//! are checked against the load generator's own limits when the file is read. Why: a profile without the switch for
//! the runtime it lands on records 1 of 127 replays, silently; a baseline with one measures
//! a server nobody ships.

use crate::config::{ConfigFile, ConfigKind, Framework};
use crate::switch_sources::{SwitchSetting, UnreadEnvFile, switches_outside_envs};
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
    let (elsewhere, unread) = switches_outside_envs(file);
    match file.config.kind {
        ConfigKind::Profile => {
            findings.extend(profile_switches(file));
            findings.extend(profiler_enabled(file));
            findings.extend(elsewhere.iter().filter_map(|s| profile_override(file, s)));
        }
        ConfigKind::Baseline => {
            findings.extend(baseline_switches(file));
            findings.extend(elsewhere.iter().map(|s| baseline_elsewhere(file, s)));
        }
    }
    findings.extend(unread.iter().map(|u| unread_env_file(file, u)));
    findings
}

fn key_line(file: &ConfigFile, key: &str) -> usize {
    file.key_lines.get(key).copied().unwrap_or(0)
}

fn shown(setting: &SwitchSetting) -> String {
    match &setting.value {
        Some(value) => format!("`{}={value}`", setting.variable),
        None => format!(
            "`{}` (its value from the host's environment)",
            setting.variable
        ),
    }
}

/// A switch in a baseline's other keys: the same fault as one under `envs`.
fn baseline_elsewhere(file: &ConfigFile, setting: &SwitchSetting) -> Finding {
    finding(
        file,
        key_line(file, setting.key),
        setting.key.to_owned(),
        format!(
            "a baseline replays as shipped and carries no switch, but {} sets {}: remove it",
            setting.how,
            shown(setting)
        ),
    )
}

/// A profile's switch set again outside `envs` to another value, which wins.
fn profile_override(file: &ConfigFile, setting: &SwitchSetting) -> Option<Finding> {
    let switch = SWITCHES.iter().find(|s| s.variable == setting.variable)?;
    if setting.value.as_deref() == Some(switch.value) {
        return None;
    }
    let wins = if setting.key == "container_args" {
        "docker applies `container_args` after the `-e` flags of `envs` and the last one wins"
    } else {
        "the launch words run after the environment `envs` gives them"
    };
    Some(finding(
        file,
        key_line(file, setting.key),
        setting.key.to_owned(),
        format!(
            "{} sets {}, overriding `envs.{}: \"{}\"` ({wins}), so a profile would record replays as the runtime's default does: remove it",
            setting.how,
            shown(setting),
            switch.variable,
            switch.value
        ),
    ))
}

fn unread_env_file(file: &ConfigFile, unread: &UnreadEnvFile) -> Finding {
    finding(
        file,
        key_line(file, "container_args"),
        "container_args".to_owned(),
        format!(
            "`--env-file {}` could not be read ({}), so the switches it may set are not checked: give a path readable from the config's folder, or set the variables under `envs`",
            unread.path, unread.problem
        ),
    )
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
