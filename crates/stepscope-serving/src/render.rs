//! Launch commands as text a POSIX shell runs exactly: every word quoted so that spaces,
//! quotes, `$(...)`, backticks and newlines arrive byte for byte and nothing is executed.
//!
//! Quoting: a word made only of `A-Z a-z 0-9 _ @ % + = : , . / -` is written bare (except
//! a program name holding `=`, which a shell would read as an assignment); any other word
//! is put in single quotes, where a shell expands nothing, and each `'` in it becomes `'\''`.

use crate::ServingError;
use crate::config::{ConfigFile, Platform};
use crate::fingerprint::Fingerprint;
use crate::launch::LaunchPlan;
use std::borrow::Cow;
use std::fmt::Write;

/// What the launch command is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderTarget {
    /// `export` lines, then the server command.
    Shell,
    /// One `docker run` with `-e KEY=VALUE` per variable and the GPU device flags.
    Docker,
}

/// `word` quoted for a POSIX shell.
pub fn shell_quote(word: &str) -> Cow<'_, str> {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b);
    if !word.is_empty() && word.bytes().all(safe) {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    }
}

/// The program word: quoted also when it holds `=`, which would make it an assignment.
fn quote_program(word: &str) -> Cow<'_, str> {
    if word.contains('=') {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    } else {
        shell_quote(word)
    }
}

/// The launch command of `file` for `target`, with a comment line naming the config and its
/// reuse fingerprint.
pub fn render(file: &ConfigFile, target: RenderTarget) -> Result<String, ServingError> {
    let plan = LaunchPlan::from_config(&file.config);
    let fingerprint = Fingerprint::of(&file.config);
    let path = file.path.display().to_string().replace(['\n', '\r'], "?");
    let header = format!(
        "# {path}: {} run of {}; reuse fingerprint {fingerprint}\n",
        file.config.kind, file.config.framework
    );
    let body = match target {
        RenderTarget::Shell => render_shell(&plan),
        RenderTarget::Docker => render_docker(&plan).ok_or_else(|| ServingError::MissingKey {
            path: file.path.clone(),
            key: "image",
            purpose: "`--target docker` needs: add `image: REGISTRY/NAME:TAG`",
        })?,
    };
    Ok(header + &body)
}

/// `export KEY=VALUE` lines, then the command, one argument pair per line.
pub fn render_shell(plan: &LaunchPlan) -> String {
    let mut out = String::new();
    for (key, value) in &plan.envs {
        let _ = writeln!(out, "export {key}={}", shell_quote(value));
    }
    out.push_str(&command_lines(&plan.argv, ""));
    out
}

/// `docker run` with the device flags, `-e` per variable, the image and the command; `None`
/// without an image.
pub fn render_docker(plan: &LaunchPlan) -> Option<String> {
    let image = plan.image.as_deref()?;
    let mut groups: Vec<Vec<String>> = vec![words(&[
        "docker",
        "run",
        "--rm",
        "--network",
        "host",
        "--entrypoint",
        "",
    ])];
    groups.push(match plan.platform {
        Platform::Rocm => words(&[
            "--device",
            "/dev/kfd",
            "--device",
            "/dev/dri",
            "--group-add",
            "video",
            "--ipc",
            "host",
        ]),
        Platform::Cuda => words(&["--gpus", "all", "--ipc", "host"]),
    });
    for (key, value) in &plan.envs {
        groups.push(vec!["-e".to_owned(), format!("{key}={value}")]);
    }
    if !plan.container_args.is_empty() {
        groups.push(plan.container_args.clone());
    }
    groups.push(vec![image.to_owned()]);
    let mut out = String::new();
    for (index, group) in groups.iter().enumerate() {
        let quoted: Vec<Cow<'_, str>> = group.iter().map(|w| shell_quote(w)).collect();
        let indent = if index == 0 { "" } else { "  " };
        let _ = writeln!(out, "{indent}{} \\", quoted.join(" "));
    }
    out.push_str(&command_lines(&plan.argv, "  "));
    Some(out)
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|word| (*word).to_owned()).collect()
}

/// The command: the program's words up to the first flag on one line, then each flag with
/// its values on a line of its own, joined with ` \`.
fn command_lines(argv: &[String], indent: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut current: Vec<Cow<'_, str>> = Vec::new();
    for (index, word) in argv.iter().enumerate() {
        // `-m` right after the interpreter stays on the program's line (`python3 -m sglang…`)
        let breaks = index > 0 && word.starts_with('-') && !(index == 1 && word == "-m");
        if breaks && !current.is_empty() {
            lines.push(current.join(" "));
            current.clear();
        }
        current.push(if index == 0 {
            quote_program(word)
        } else {
            shell_quote(word)
        });
    }
    if !current.is_empty() {
        lines.push(current.join(" "));
    }
    let mut out = String::new();
    for (index, line) in lines.iter().enumerate() {
        let lead = if index == 0 {
            indent.to_owned()
        } else {
            format!("{indent}  ")
        };
        let tail = if index + 1 < lines.len() { " \\" } else { "" };
        let _ = writeln!(out, "{lead}{line}{tail}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("Qwen/Qwen3-8B"), "Qwen/Qwen3-8B");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$(touch x)"), "'$(touch x)'");
        assert_eq!(shell_quote("a\nb"), "'a\nb'");
        assert_eq!(quote_program("A=B"), "'A=B'");
    }

    #[test]
    fn command_lines_group_flags() {
        let argv: Vec<String> = [
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "M",
            "--port",
            "1",
            "--enable-x",
        ]
        .iter()
        .map(|w| (*w).to_owned())
        .collect();
        assert_eq!(
            command_lines(&argv, ""),
            "python3 -m sglang.launch_server \\\n  --model-path M \\\n  --port 1 \\\n  --enable-x\n"
        );
    }
}
