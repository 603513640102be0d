//! Paths to the shipped configs and fixture trees, and helpers to derive configs from them.

use std::path::{Path, PathBuf};
use stepscope_serving::{ConfigFile, load_config, parse_config};

/// The repository's `configs/` folder.
pub fn configs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

/// A shipped config by file name.
pub fn shipped(name: &str) -> PathBuf {
    configs_dir().join(name)
}

/// Text of a shipped config.
pub fn shipped_text(name: &str) -> String {
    std::fs::read_to_string(shipped(name)).expect("the shipped config reads")
}

/// A shipped config, loaded.
pub fn load_shipped(name: &str) -> ConfigFile {
    load_config(&shipped(name)).expect("the shipped config loads")
}

/// A fixture tree.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Parses `text` as if it were the file `name`.
pub fn parse_as(text: &str, name: &str) -> ConfigFile {
    parse_config(text, Path::new(name)).unwrap_or_else(|e| panic!("{name} parses: {e}"))
}

/// The three frameworks' profile and baseline file names.
pub const PROFILES: [&str; 3] = [
    "profile_sglang.yaml",
    "profile_vllm.yaml",
    "profile_atom.yaml",
];
/// See [`PROFILES`].
pub const BASELINES: [&str; 3] = [
    "baseline_sglang.yaml",
    "baseline_vllm.yaml",
    "baseline_atom.yaml",
];

/// `text` without the lines that set `variable`.
pub fn without_variable(text: &str, variable: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with(&format!("{variable}:")))
        .collect();
    assert_eq!(
        kept.len() + 1,
        text.lines().count(),
        "exactly one line sets {variable}"
    );
    kept.join("\n") + "\n"
}

/// A minimal valid config of `kind` for `framework`, with extra top-level YAML.
pub fn minimal(kind: &str, framework: &str, extra: &str) -> String {
    format!(
        "kind: {kind}\nframework: {framework}\nmodel: m\nload: {{concurrency: 1, input_len: 8, output_len: 8, num_prompts: 2}}\noutput_dir: out\n{extra}"
    )
}
