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

/// Every help text a user can ask for: the top level and each subcommand.
const ALL_HELP: [&[&str]; 11] = [
    &[],
    &["analyze"],
    &["diff"],
    &["demo"],
    &["env"],
    &["bench"],
    &["grade"],
    &["profile"],
    &["config", "check"],
    &["config", "render"],
    &["config", "fingerprint"],
];

/// `stepscope ARGS --help` as an 80-column terminal shows it.
fn help_at_80(command: &[&str]) -> String {
    let mut args: Vec<&str> = command.to_vec();
    args.push("--help");
    let run = stepscope_in(&traces_dir(), &args, &[("COLUMNS", OsStr::new("80"))]);
    run.expect_code(0);
    run.stdout
}

/// Where a prose line was broken before the terminal's edge: the next line's first word
/// would have fitted after it. That is a line wrapped twice — once in the source, once by
/// the terminal — leaving a stub ("then GPU" / "time" / "per stage"). Lists and examples
/// (indented deeper than the line before) and sentence ends are breaks on purpose.
fn premature_breaks(help: &str) -> Vec<String> {
    // The examples are checked on their own, line by line.
    let before_examples = help.lines().take_while(|l| !l.starts_with("EXAMPLES"));
    let after_examples = help.lines().skip_while(|l| !l.starts_with("Usage"));
    let lines: Vec<&str> = before_examples.chain(after_examples).collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut found = Vec::new();
    for pair in lines.windows(2) {
        let (line, next) = (pair[0], pair[1]);
        let (Some(word), false) = (next.split_whitespace().next(), line.trim().is_empty()) else {
            continue;
        };
        // "  name  what it does": an item of a list, never a continuation.
        let item = next.trim_start().split_once("  ").is_some();
        let continues = indent(next) == indent(line)
            && !item
            && !next.trim_start().starts_with(['-', '<', '#', '[']);
        let ends_sentence = line.ends_with(['.', ':', ';']);
        let fits = line.chars().count() + 1 + word.chars().count() <= 80;
        if continues && !ends_sentence && fits && indent(line) < 20 {
            found.push(format!("{line:?} / {next:?}"));
        }
    }
    found
}

#[test]
fn every_help_text_fits_80_columns_without_stubs() {
    for command in ALL_HELP {
        let help = help_at_80(command);
        for line in help.lines() {
            assert!(line.chars().count() <= 80, "{command:?}: {line:?}");
        }
        let stubs = premature_breaks(&help);
        assert!(
            stubs.is_empty(),
            "{command:?} breaks lines early: {stubs:#?}"
        );
    }
}

/// The help texts as an 80-column terminal shows them; a change to any of them shows here
/// in review (`cargo insta review`).
#[test]
fn every_help_text_at_80_columns_is_the_reviewed_one() {
    for command in ALL_HELP {
        let name = if command.is_empty() {
            "help_stepscope".to_owned()
        } else {
            format!("help_{}", command.join("_"))
        };
        insta::assert_snapshot!(name, help_at_80(command));
    }
}

/// The exit codes a text lists after "Exit codes": the numbers that open its `;`- or
/// `,`-separated items, up to the end of that sentence (`130/143/129` gives three).
fn exit_codes(text: &str) -> Vec<u32> {
    let Some(start) = text.find("Exit codes") else {
        return Vec::new();
    };
    let sentence = &text[start + "Exit codes".len()..];
    let sentence = sentence.split(". ").next().unwrap_or(sentence);
    let mut codes = Vec::new();
    for item in sentence.split([';', ',']) {
        let item = item.trim_start_matches(['*', ':', ' ', '\n', '(']);
        let lead: String = item
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '/')
            .collect();
        codes.extend(lead.split('/').filter_map(|n| n.parse::<u32>().ok()));
    }
    codes.sort_unstable();
    codes.dedup();
    codes
}

/// README's sections that state a subcommand's exit codes.
const README_EXIT_CODES: [(&str, &str); 4] = [
    ("## Gate a pipeline on the verdict", "analyze"),
    ("## Compare two runs", "diff"),
    ("## Run the profile loop", "profile"),
    ("## Keep or revert a change", "grade"),
];

fn readme() -> String {
    std::fs::read_to_string(crate::common::repo().join("README.md")).expect("README.md")
}

/// The text of README's section under `heading`, up to the next heading.
fn section<'a>(readme: &'a str, heading: &str) -> &'a str {
    let start = readme
        .find(heading)
        .unwrap_or_else(|| panic!("{heading} in README"));
    let rest = &readme[start + heading.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

#[test]
fn readme_exit_codes_are_the_ones_each_help_lists() {
    let readme = readme();
    for (heading, command) in README_EXIT_CODES {
        let promised = exit_codes(section(&readme, heading));
        assert!(promised.len() >= 3, "{heading}: {promised:?}");
        let help = help_at_80(&[command]).replace('\n', " ");
        assert_eq!(
            exit_codes(&help),
            promised,
            "`{command} --help` vs README {heading}"
        );
    }
}

/// Every `--flag` on a README command line `stepscope SUB …` is one `SUB --help` lists.
#[test]
fn every_flag_readme_shows_is_in_the_help() {
    let readme = readme();
    let mut checked = 0;
    for line in readme.lines() {
        let Some(rest) = line.trim_start().strip_prefix("stepscope ") else {
            continue;
        };
        let command = rest.split('#').next().unwrap_or_default();
        let mut words = command.split_whitespace();
        let mut path = vec![words.next().unwrap_or_default()];
        if path[0] == "config" {
            path.push(words.next().unwrap_or_default());
        }
        let help = help_at_80(&path);
        for flag in command.split_whitespace().filter(|w| w.starts_with("--")) {
            let flag = flag.split('=').next().unwrap_or(flag);
            assert!(
                help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                "README's `{line}`: `{}` has no {flag}",
                path.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked} flags checked");
}
