//! Help texts a user copies from: every example of every subcommand fits an 80-column
//! terminal without wrapping inside a command (a long one continues on a line after ` \`),
//! and `analyze --help` names every input format it reads.

use crate::common::{stepscope_in, traces_dir};
use std::ffi::OsStr;

const COMMANDS: [&[&str]; 10] = [
    &["analyze"],
    &["diff"],
    &["demo"],
    &["env"],
    &["bench"],
    &["profile"],
    &["config"],
    &["config", "check"],
    &["config", "render"],
    &["config", "fingerprint"],
];

/// The lines of a help text's EXAMPLES section.
fn examples(help: &str) -> Vec<&str> {
    help.lines()
        .skip_while(|l| !l.starts_with("EXAMPLES"))
        .skip(1)
        .take_while(|l| !l.starts_with("Usage"))
        .filter(|l| !l.trim().is_empty())
        .collect()
}

#[test]
fn help_examples_never_wrap_inside_a_command_at_80_columns() {
    for command in COMMANDS {
        let mut args: Vec<&str> = command.to_vec();
        args.push("--help");
        let run = stepscope_in(&traces_dir(), &args, &[("COLUMNS", OsStr::new("80"))]);
        run.expect_code(0);
        let lines = examples(&run.stdout);
        assert!(!lines.is_empty(), "{command:?} has examples");
        let mut continues = false;
        for line in lines {
            assert!(line.chars().count() <= 80, "{command:?}: {line:?}");
            let starts_command = ["  stepscope ", "  # ", "  eval ", "  bash "]
                .iter()
                .any(|start| line.starts_with(start));
            assert!(
                starts_command || (continues && line.starts_with("      ")),
                "{command:?}: a wrapped line {line:?}"
            );
            continues = line.ends_with(" \\");
        }
    }
}

#[test]
fn analyze_help_names_every_input_format() {
    let run = stepscope_in(&traces_dir(), ["analyze", "--help"], &[]);
    run.expect_code(0);
    for format in [
        "PyTorch profiler JSON",
        "rocprofv3 SQLite",
        "kernel_trace.csv",
        "rocmProfileData",
        "rpd2tracing",
        "Nsight Systems",
        "_results.db",
    ] {
        assert!(run.stdout.contains(format), "{format}: {}", run.stdout);
    }
}
