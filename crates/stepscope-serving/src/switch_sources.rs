//! Where a runtime switch can reach the server besides `envs:`: the container's arguments
//! (`-e NAME=VALUE`, `--env`, `--env=…`, `-eNAME=…`, `-e NAME` from the host's environment,
//! and the lines of a readable `--env-file`) and the launch words (`env NAME=VALUE …`, a
//! `sh -c "NAME=VALUE …"` script, `export NAME=…`). `config check` reads them so that a
//! baseline cannot carry a switch in another key, and a profile's switch cannot be
//! overridden behind its `envs:` (docker applies `container_args` after the `-e` flags
//! stepscope renders from `envs`, and the last one wins; `env` in a launcher runs after the
//! environment it was given).

use crate::config::ConfigFile;
use std::path::{Path, PathBuf};
use stepscope_model::switches::SWITCHES;

/// A runtime switch set outside `envs:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSetting {
    /// The variable.
    pub variable: &'static str,
    /// The value it is set to (`None`: taken from the host's environment, or mentioned in a
    /// way that does not say).
    pub value: Option<String>,
    /// The config key it is in: `container_args`, `server.launcher`, `server.args`.
    pub key: &'static str,
    /// How, in words: `` `-e DEBUG_…=1` ``, `` `--env-file run.env` line 3 ``.
    pub how: String,
}

/// A file a `--env-file` names that could not be read: its variables are not checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadEnvFile {
    /// The path as given.
    pub path: String,
    /// Why it could not be read.
    pub problem: String,
}

/// Every runtime switch set in `container_args`, `server.launcher` or `server.args`, and
/// the env files that could not be read.
pub fn switches_outside_envs(file: &ConfigFile) -> (Vec<SwitchSetting>, Vec<UnreadEnvFile>) {
    let config = &file.config;
    let mut found = Vec::new();
    let mut unread = Vec::new();
    let base = file.path.parent().unwrap_or(Path::new("."));
    for (assignment, how) in container_env(&config.container_args, base, &mut unread) {
        found.extend(switch_of(&assignment, "container_args", how));
    }
    for (key, words) in [
        (
            "server.launcher",
            config.server.launcher.as_deref().unwrap_or(&[]),
        ),
        ("server.args", config.server.args.as_slice()),
    ] {
        found.extend(mentions(words, key));
    }
    (found, unread)
}

/// `NAME=VALUE` or `NAME` (from the host) as a switch setting, when NAME is a switch.
fn switch_of(assignment: &str, key: &'static str, how: String) -> Option<SwitchSetting> {
    let (name, value) = match assignment.split_once('=') {
        Some((name, value)) => (name.trim(), Some(value.to_owned())),
        None => (assignment.trim(), None),
    };
    let switch = SWITCHES.iter().find(|s| s.variable == name)?;
    Some(SwitchSetting {
        variable: switch.variable,
        value,
        key,
        how,
    })
}

/// The environment docker's arguments set, in the order docker applies it, each with how.
fn container_env(
    args: &[String],
    base: &Path,
    unread: &mut Vec<UnreadEnvFile>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let value = |inline: &str, words: &mut std::slice::Iter<'_, String>| {
            if inline.is_empty() {
                words.next().cloned()
            } else {
                Some(inline.to_owned())
            }
        };
        if let Some(rest) = word.strip_prefix("--env-file") {
            let Some(path) = value(rest.trim_start_matches('='), &mut words) else {
                continue;
            };
            out.extend(env_file(&path, base, unread));
        } else if let Some(rest) = word
            .strip_prefix("--env")
            .map(|r| r.trim_start_matches('='))
            .or_else(|| word.strip_prefix("-e"))
        {
            if let Some(assignment) = value(rest, &mut words) {
                let how = format!(
                    "`{word}{}`",
                    if rest.is_empty() {
                        format!(" {assignment}")
                    } else {
                        String::new()
                    }
                );
                out.push((assignment, how));
            }
        }
    }
    out
}

/// The `NAME=VALUE` lines of an env file (docker's format: `#` comments, `NAME` alone from
/// the host), read relative to the config's folder, else as given.
fn env_file(path: &str, base: &Path, unread: &mut Vec<UnreadEnvFile>) -> Vec<(String, String)> {
    let candidates: Vec<PathBuf> = [base.join(path), PathBuf::from(path)].into();
    let read = candidates
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok());
    let Some(text) = read else {
        let problem = std::fs::read_to_string(path)
            .err()
            .map_or_else(|| "unreadable".to_owned(), |e| e.to_string());
        unread.push(UnreadEnvFile {
            path: path.to_owned(),
            problem,
        });
        return Vec::new();
    };
    text.lines()
        .enumerate()
        .map(|(at, line)| (at + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(line_number, line)| {
            (
                line.to_owned(),
                format!("`--env-file {path}` line {line_number}"),
            )
        })
        .collect()
}

/// Switches named in launch words: `NAME=VALUE` anywhere in a word (an `env` argument, a
/// shell script), or the bare name (an `export NAME` whose value is elsewhere); a name after
/// `-u`/`--unset` is an unset, not a setting.
fn mentions(words: &[String], key: &'static str) -> Vec<SwitchSetting> {
    let mut found = Vec::new();
    for (at, word) in words.iter().enumerate() {
        let unset = at > 0 && matches!(words[at - 1].as_str(), "-u" | "--unset");
        for switch in &SWITCHES {
            let Some(start) = word.find(switch.variable) else {
                continue;
            };
            let unset_inline = ["-u ", "--unset ", "--unset=", "unset "]
                .iter()
                .any(|flag| word.contains(&format!("{flag}{}", switch.variable)));
            if unset || unset_inline {
                continue;
            }
            let rest = &word[start + switch.variable.len()..];
            let value = rest.strip_prefix('=').map(|v| {
                v.split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '"' | '\''))
                    .next()
                    .unwrap_or("")
                    .to_owned()
            });
            found.push(SwitchSetting {
                variable: switch.variable,
                value,
                key,
                how: format!("`{}`", stepscope_model::text::escape_controls(word)),
            });
        }
    }
    found
}
