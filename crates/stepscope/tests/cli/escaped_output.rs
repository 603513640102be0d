//! Nothing a file name or a config word holds reaches the terminal as a control character:
//! ESC (colour, title and link sequences), BEL, CR and LF in a name are printed as escapes
//! (`\u{1b}`) in errors, warnings and notes on stderr and in the report on stdout.

use crate::common::{SGLANG_DECODE, arg, copy_trace, repo, stepscope, stepscope_in, tempdir};

/// A name that, printed raw, retitles the terminal (OSC 0 … BEL), clears it (CSI 2J) and
/// rewrites the line (CR).
const HOSTILE: &str = "run\u{1b}]0;owned\u{7}\u{1b}[2J\r.json";

#[track_caller]
fn no_controls(text: &str) {
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "a control character reached the terminal: {text:?}"
    );
}

#[test]
fn a_hostile_file_name_is_escaped_in_errors_warnings_and_the_report() {
    let dir = tempdir();
    let folder = dir.path().join("traces");
    copy_trace(SGLANG_DECODE, &folder, "good.json.gz");
    let empty = folder.join(HOSTILE);
    std::fs::write(&empty, b"").expect("write");
    // Alone: the error names it.
    let alone = stepscope([arg(std::path::Path::new("analyze")), arg(&empty)]);
    alone.expect_code(2);
    no_controls(&alone.stderr);
    assert!(
        alone.stderr.contains("run\\u{1b}]0;owned\\u{7}"),
        "{}",
        alone.stderr
    );
    // In a folder: the good trace is read, the warning and the list of unread files name it.
    let folder_run = stepscope([
        arg(std::path::Path::new("analyze")),
        arg(&folder),
        arg(std::path::Path::new("--no-progress")),
    ]);
    no_controls(&folder_run.stdout);
    no_controls(&folder_run.stderr);
    let both = format!("{}{}", folder_run.stdout, folder_run.stderr);
    assert!(both.contains("\\u{1b}[2J\\u{d}.json"), "{both}");
}

#[test]
fn config_check_escapes_the_words_it_quotes() {
    let dir = tempdir();
    let shipped = std::fs::read_to_string(repo().join("configs/baseline_vllm.yaml")).unwrap();
    let cases = [
        // An environment variable whose name carries an escape sequence.
        ("output_dir:", "envs:\n  \"X\\e[31mY\": \"1\"\noutput_dir:"),
        // An unknown key with a NUL and a BEL.
        ("output_dir:", "\"bad\\0key\\a\": 1\noutput_dir:"),
    ];
    for (from, to) in cases {
        assert!(shipped.contains(from), "{from}");
        std::fs::write(dir.path().join("mine.yaml"), shipped.replacen(from, to, 1)).unwrap();
        let run = stepscope_in(dir.path(), ["config", "check", "mine.yaml"], &[]);
        assert_ne!(run.code, Some(0), "{to}: {}", run.stdout);
        no_controls(&run.stdout);
        no_controls(&run.stderr);
    }
}
