//! Errors name the file, the line and the key.

use crate::common::*;
use std::path::Path;
use stepscope_serving::{ConfigProblem, ServingError, load_config, parse_config};

fn problem(text: &str) -> ConfigProblem {
    match parse_config(text, Path::new("configs/mine.yaml")) {
        Err(ServingError::Config(problem)) => *problem,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn unknown_key_is_named_with_its_line() {
    let text = shipped_text("profile_sglang.yaml")
        .replace("  num_prompts: 640\n", "  num_prompts: 640\n  rate: 3\n");
    let problem = problem(&text);
    let line = text.lines().position(|l| l.contains("rate: 3")).unwrap() + 1;
    assert_eq!((problem.line, problem.column), (line, 3));
    assert_eq!(problem.key.as_deref(), Some("load.rate"));
    assert!(
        problem.message.contains("unknown field `rate`"),
        "{}",
        problem.message
    );
    let shown = ServingError::Config(Box::new(problem)).to_string();
    assert!(shown.starts_with(&format!(
        "Invalid config `configs/mine.yaml` at line {line}, column 3, key `load.rate`: unknown field `rate`"
    )), "{shown}");
}

#[test]
fn unknown_top_level_key() {
    let problem = problem(&minimal("profile", "sglang", "profiler_dir: /x\n"));
    assert_eq!(problem.key.as_deref(), Some("profiler_dir"));
    assert_eq!(problem.line, 6);
}

#[test]
fn wrong_types_and_values_name_the_key() {
    let text = minimal("profile", "sglang", "").replace(
        "load: {concurrency: 1, input_len: 8, output_len: 8, num_prompts: 2}",
        "load:\n  concurrency: -4\n  input_len: 8\n  output_len: 8\n  num_prompts: 2",
    );
    let p = problem(&text);
    assert_eq!((p.line, p.key.as_deref()), (5, Some("load.concurrency")));
    let p = problem(&text.replace("concurrency: -4", "concurrency: 0"));
    assert_eq!((p.line, p.key.as_deref()), (5, Some("load.concurrency")));
    assert_eq!(p.message, "must be at least 1");
    let p = problem(&minimal("profile", "tensorrt", ""));
    assert_eq!((p.line, p.key.as_deref()), (2, Some("framework")));
    let p = problem(&minimal("experiment", "vllm", ""));
    assert_eq!((p.line, p.key.as_deref()), (1, Some("kind")));
}

#[test]
fn missing_required_key() {
    let text = "kind: profile\nframework: vllm\nmodel: m\noutput_dir: out\n";
    let p = problem(text);
    assert!(p.message.contains("load"), "{}", p.message);
}

#[test]
fn environment_names_and_duplicates() {
    let p = problem(&minimal(
        "baseline",
        "vllm",
        "envs:\n  OK_NAME: \"1\"\n  BAD NAME: x\n",
    ));
    assert_eq!((p.line, p.key.as_deref()), (8, Some("envs.BAD NAME")));
    assert!(p.hint.is_some());
    let p = problem(&minimal(
        "baseline",
        "vllm",
        "envs:\n  A: \"1\"\n  A: \"2\"\n",
    ));
    assert_eq!((p.line, p.key.as_deref()), (8, Some("envs.A")));
    assert!(p.message.contains("duplicate"), "{}", p.message);
}

#[test]
fn plain_yaml_scalars_stay_strings() {
    let file = parse_as(
        &minimal(
            "baseline",
            "vllm",
            "envs:\n  A: 0\n  B: 1.50\n  C: true\n  D: 007\n",
        ),
        "b.yaml",
    );
    let values: Vec<&str> = file.config.envs.values().map(String::as_str).collect();
    assert_eq!(values, ["0", "1.50", "true", "007"]);
}

#[test]
fn by_stage_is_sglang_only() {
    let p = problem(&minimal("profile", "vllm", "windows:\n  - by_stage: 8\n"));
    assert_eq!(p.key.as_deref(), Some("windows"));
    assert_eq!(p.line, 6);
    let file = parse_as(
        &minimal(
            "profile",
            "sglang",
            "windows:\n  - by_stage: 8\n  - single_step\n",
        ),
        "p.yaml",
    );
    assert_eq!(file.config.windows.len(), 2);
}

#[test]
fn not_yaml_and_unreadable_files() {
    let p = problem("kind: [profile\n");
    assert!(p.line >= 1);
    let missing = load_config(Path::new("/no/such/config.yaml")).unwrap_err();
    assert!(matches!(missing, ServingError::Read { .. }));
    assert!(missing.to_string().contains("/no/such/config.yaml"));
}
