//! Proof that the candidate ran the change: the environment variables the change is switched
//! on by, read from the server's own processes (`/proc/<pid>/environ`), and the kernels it
//! adds, found in a short profile window recorded on the candidate (as `stepscope profile`
//! records one). A candidate that cannot show them did not engage the change, and its speed
//! says nothing about it: the grade is INCONCLUSIVE, "the change did not engage".
//!
//! The check runs once, at the candidate's first turn, before its timed phases; what it
//! found is saved as `candidate/engage.check.json`, so that an offline grading of the saved
//! phases decides as the live run did.

use super::gates::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the candidate must show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expectations {
    /// Kernel ids (the first six hex digits of the name's SHA-256, as `analyze` shows them)
    /// that a profile window on the candidate must record.
    pub kernels: Vec<String>,
    /// `NAME=VALUE` pairs one of the candidate server's processes must have in its
    /// environment.
    pub envs: Vec<(String, String)>,
    /// Engine steps of the profile window.
    pub window_steps: u32,
}

impl Expectations {
    /// Whether anything is expected.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty() && self.envs.is_empty()
    }
}

/// Trace files in, the ids of every kernel they hold out.
pub type ReadKernelIds = dyn Fn(&[PathBuf]) -> Result<BTreeSet<String>, String> + Send + Sync;

/// Reads trace files and returns the ids of every kernel they hold (the binary's readers:
/// this crate reads no trace format).
#[derive(Clone)]
pub struct KernelReader(pub Arc<ReadKernelIds>);

impl fmt::Debug for KernelReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KernelReader")
    }
}

/// What the check found, as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngageRecord {
    /// `stepscope-engage-check`.
    pub kind: String,
    /// Each expected variable: name, value expected, value found (`null`: in no process).
    pub envs: Vec<(String, String, Option<String>)>,
    /// Each expected kernel id and whether the window recorded it.
    pub kernels: Vec<(String, bool)>,
    /// The window's trace files, relative to the run directory.
    pub traces: Vec<String>,
    /// Why the check could not be made, when it could not.
    pub error: Option<String>,
}

/// The `kind` of a saved engage check.
pub const ENGAGE_KIND: &str = "stepscope-engage-check";

/// An engage check's file in a side's folder.
pub fn is_engage_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().ends_with(".check.json"))
}

/// The check as it bears on the decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngageCheck {
    /// [`Verdict::Void`]: the change did not engage (or could not be shown to).
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub detail: String,
    /// What was found.
    pub record: Option<EngageRecord>,
}

/// How the saved record bears on the decision (none: nothing was expected).
pub fn check_engage(record: Option<&EngageRecord>) -> EngageCheck {
    let Some(record) = record else {
        return EngageCheck {
            verdict: Verdict::NotChecked,
            detail: "no proof asked that the change ran (--expect-kernel, --expect-env)".to_owned(),
            record: None,
        };
    };
    let mut missing = Vec::new();
    for (name, want, found) in &record.envs {
        match found {
            Some(value) if value == want => {}
            Some(value) => missing.push(format!("`{name}` is `{value}`, not `{want}`")),
            None => missing.push(format!("`{name}={want}` is in none of its processes")),
        }
    }
    for (id, seen) in &record.kernels {
        if !seen {
            missing.push(format!("kernel {id} is not in its profile window"));
        }
    }
    let (verdict, detail) = match (&record.error, missing.is_empty()) {
        (Some(error), _) => (
            Verdict::Void,
            format!("the change could not be shown to engage on the candidate: {error}"),
        ),
        (None, false) => (
            Verdict::Void,
            format!(
                "the change did not engage on the candidate: {}",
                missing.join("; ")
            ),
        ),
        (None, true) => (Verdict::Pass, engaged(record)),
    };
    EngageCheck {
        verdict,
        detail,
        record: Some(record.clone()),
    }
}

fn engaged(record: &EngageRecord) -> String {
    let mut shown: Vec<String> = record
        .envs
        .iter()
        .map(|(name, value, _)| format!("{name}={value}"))
        .collect();
    shown.extend(record.kernels.iter().map(|(id, _)| format!("kernel {id}")));
    format!("the change engaged on the candidate: {}", shown.join(", "))
}

/// The value of each of `envs` in any of `pids`' environments (`/proc/<pid>/environ`; a
/// process whose environment cannot be read is passed over).
pub fn read_envs(pids: &[i32], envs: &[(String, String)]) -> Vec<(String, String, Option<String>)> {
    let environs: Vec<Vec<(String, String)>> = pids
        .iter()
        .filter_map(|pid| std::fs::read(format!("/proc/{pid}/environ")).ok())
        .map(|bytes| {
            bytes
                .split(|b| *b == 0)
                .filter_map(|entry| {
                    let text = String::from_utf8_lossy(entry);
                    let (name, value) = text.split_once('=')?;
                    Some((name.to_owned(), value.to_owned()))
                })
                .collect()
        })
        .collect();
    envs.iter()
        .map(|(name, want)| {
            let values: Vec<&String> = environs
                .iter()
                .flat_map(|env| env.iter().filter(|(n, _)| n == name).map(|(_, v)| v))
                .collect();
            let found = values
                .iter()
                .find(|v| *v == &want)
                .or_else(|| values.first())
                .map(|v| (*v).clone());
            (name.clone(), want.clone(), found)
        })
        .collect()
}

/// The processes of the server listening on `port` (the listener's process group), from
/// `/proc`; empty when none is found on this machine.
pub fn server_processes(port: u16) -> Vec<i32> {
    let Some(pid) = crate::profile::escaped::listener(port) else {
        return Vec::new();
    };
    let group = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid)))
        .map(nix::unistd::Pid::as_raw)
        .ok();
    let mut pids = group
        .and_then(crate::server::group_members)
        .unwrap_or_default();
    if !pids.contains(&pid) {
        pids.push(pid);
    }
    pids
}

/// `--expect-kernel`: six hex digits, lower case.
///
/// # Errors
///
/// Not six hex digits.
pub fn parse_kernel_id(text: &str) -> Result<String, String> {
    let id = text.trim().to_ascii_lowercase();
    if id.len() == 6 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(id)
    } else {
        Err(format!(
            "`{text}` is not a kernel id: give the six hex digits `stepscope analyze` shows beside a kernel (its `id` column)"
        ))
    }
}

/// `--expect-env`: `NAME=VALUE`.
///
/// # Errors
///
/// No `=`, or a name that is not an environment variable's.
pub fn parse_expected_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if crate::config::is_variable_name(name) => {
            Ok((name.to_owned(), value.to_owned()))
        }
        _ => Err(format!(
            "`{}` is not NAME=VALUE (an environment variable the candidate's server must run with)",
            stepscope_model::text::escape_controls(text)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_processes_environment_is_read() {
        let pid = std::process::id() as i32;
        let path = std::env::var("PATH").unwrap_or_default();
        let found = read_envs(
            &[pid],
            &[
                ("PATH".to_owned(), path.clone()),
                ("STEPSCOPE_NOT_SET_X".to_owned(), "1".to_owned()),
            ],
        );
        assert_eq!(found[0].2.as_deref(), Some(path.as_str()));
        assert_eq!(found[1].2, None);
        let record = EngageRecord {
            kind: ENGAGE_KIND.to_owned(),
            envs: found,
            kernels: vec![("abc123".to_owned(), true)],
            traces: Vec::new(),
            error: None,
        };
        let check = check_engage(Some(&record));
        assert_eq!(check.verdict, Verdict::Void);
        assert!(
            check
                .detail
                .contains("`STEPSCOPE_NOT_SET_X=1` is in none of its processes")
        );
        assert_eq!(parse_kernel_id(" ABC123 ").unwrap(), "abc123");
        assert!(parse_kernel_id("abc12").is_err() && parse_kernel_id("abcxyz").is_err());
        assert!(parse_expected_env("A=1").is_ok() && parse_expected_env("1A=1").is_err());
    }
}
