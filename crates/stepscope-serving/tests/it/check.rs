//! `config check` on the shipped configs and on each one-switch mutation of them.

use crate::common::*;
use stepscope_model::switches::SWITCHES;
use stepscope_serving::{check_config, check_configs, config_paths, load_config};

#[test]
fn shipped_configs_pass() {
    let paths = config_paths(&[configs_dir()]).unwrap();
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for name in PROFILES.iter().chain(&BASELINES) {
        assert!(names.contains(&(*name).to_owned()), "{name} is shipped");
    }
    let files: Vec<_> = paths.iter().map(|p| load_config(p).unwrap()).collect();
    assert_eq!(check_configs(&files), Vec::new());
}

/// 3 frameworks × 3 switches: removing one switch line from one shipped profile turns
/// exactly that case red, naming the file and the key.
#[test]
fn each_missing_switch_is_found_in_each_profile() {
    for name in PROFILES {
        for switch in &SWITCHES {
            let text = without_variable(&shipped_text(name), switch.variable);
            let findings = check_config(&parse_as(&text, name));
            assert_eq!(
                findings.len(),
                1,
                "{name} without {}: {findings:?}",
                switch.variable
            );
            let finding = &findings[0];
            assert_eq!(finding.path.to_str(), Some(name));
            assert_eq!(finding.key, format!("envs.{}", switch.variable));
            assert!(finding.problem.contains("lacks"), "{}", finding.problem);
            assert!(finding.line > 0, "points at the envs section");
            // the other shipped files stay green
            let others: Vec<_> = PROFILES
                .iter()
                .chain(&BASELINES)
                .filter(|other| **other != name)
                .map(|other| load_shipped(other))
                .collect();
            assert!(check_configs(&others).is_empty());
        }
    }
}

#[test]
fn a_switch_in_any_baseline_is_found() {
    for name in BASELINES {
        for switch in &SWITCHES {
            let text = shipped_text(name).replace(
                "load:\n",
                &format!(
                    "envs:\n  {}: \"{}\"\nload:\n",
                    switch.variable, switch.value
                ),
            );
            let findings = check_config(&parse_as(&text, name));
            assert_eq!(findings.len(), 1, "{name} with {}", switch.variable);
            assert_eq!(findings[0].key, format!("envs.{}", switch.variable));
            assert!(findings[0].problem.contains("baseline"));
            let line = text
                .lines()
                .position(|l| l.contains(switch.variable))
                .unwrap()
                + 1;
            assert_eq!(findings[0].line, line, "the line of the variable");
        }
    }
}

#[test]
fn a_wrong_switch_value_is_found() {
    let text = shipped_text("profile_sglang.yaml").replace(
        "DEBUG_HIP_GRAPH_CLASSIC_PATH: \"1\"",
        "DEBUG_HIP_GRAPH_CLASSIC_PATH: \"0\"",
    );
    let findings = check_config(&parse_as(&text, "profile_sglang.yaml"));
    assert_eq!(findings.len(), 1);
    assert!(
        findings[0].problem.contains("not `0`"),
        "{}",
        findings[0].problem
    );
}

#[test]
fn kind_must_match_the_file_name() {
    let text = shipped_text("baseline_vllm.yaml").replace("kind: baseline", "kind: profile");
    // a profile named baseline_*: the name, the three switches and the profiler are flagged
    let findings = check_config(&parse_as(&text, "baseline_vllm.yaml"));
    let keys: Vec<&str> = findings.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(keys[0], "kind");
    assert_eq!(findings[0].line, 2);
    assert_eq!(findings.len(), 5, "{keys:?}");
    // the same text under a neutral name is judged by its kind only
    let neutral = check_config(&parse_as(&text, "my_run.yaml"));
    assert!(neutral.iter().all(|f| f.key != "kind"));
}

#[test]
fn a_profile_must_enable_its_profiler() {
    let sglang = without_variable(
        &shipped_text("profile_sglang.yaml"),
        "SGLANG_TORCH_PROFILER_DIR",
    );
    let findings = check_config(&parse_as(&sglang, "profile_sglang.yaml"));
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].key, "envs.SGLANG_TORCH_PROFILER_DIR");
    let vllm =
        shipped_text("profile_vllm.yaml").replace("- --profiler-config", "- --enforce-eager");
    let findings = check_config(&parse_as(&vllm, "profile_vllm.yaml"));
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(findings[0].problem.contains("--profiler-config"));
}
