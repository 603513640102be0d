//! `config check` on the shipped configs and on each one-switch mutation of them.

use crate::common::*;
use stepscope_model::switches::SWITCHES;
use stepscope_serving::{check_config, check_configs, config_paths, load_config, parse_config};

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

/// A baseline of vLLM with `extra` lines (and the load `load`).
fn baseline_with(extra: &str) -> String {
    config_with(
        "baseline",
        extra,
        "{concurrency: 4, input_len: 16, output_len: 16, num_prompts: 8}",
    )
}

fn config_with(kind: &str, extra: &str, load: &str) -> String {
    format!("kind: {kind}\nframework: vllm\nmodel: m\n{extra}load: {load}\noutput_dir: out\n")
}

/// `(lines, key, how the finding names it)`: a switch in each place a baseline can hide one.
fn hidden_switch_cases() -> [(&'static str, &'static str, &'static str); 7] {
    [
        (
            "container_args: [-e, DEBUG_CLR_GRAPH_PACKET_CAPTURE=0]\n",
            "container_args",
            "`-e DEBUG_CLR_GRAPH_PACKET_CAPTURE=0`",
        ),
        (
            "container_args: [--env=DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0]\n",
            "container_args",
            "`--env=DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0`",
        ),
        (
            "container_args: [-eDEBUG_HIP_GRAPH_CLASSIC_PATH=1]\n",
            "container_args",
            "`-eDEBUG_HIP_GRAPH_CLASSIC_PATH=1`",
        ),
        (
            "container_args: [--env, DEBUG_HIP_GRAPH_CLASSIC_PATH]\n",
            "container_args",
            "its value from the host's environment",
        ),
        (
            "container_args: [--env-file, run.env]\n",
            "container_args",
            "`--env-file run.env` line 3",
        ),
        (
            "server:\n  launcher: [env, DEBUG_CLR_GRAPH_PACKET_CAPTURE=1, vllm, serve]\n",
            "server.launcher",
            "`DEBUG_CLR_GRAPH_PACKET_CAPTURE=1`",
        ),
        (
            "server:\n  launcher: [sh, -c, \"DEBUG_HIP_GRAPH_CLASSIC_PATH=1 exec vllm serve \\\"$@\\\"\", vllm]\n",
            "server.launcher",
            "sets `DEBUG_HIP_GRAPH_CLASSIC_PATH=1`",
        ),
    ]
}

/// A switch hidden from `envs:` in a baseline, in each form it can take, is found in its
/// key; unsetting one is not setting it.
#[test]
fn a_switch_set_anywhere_in_a_baseline_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("run.env");
    std::fs::write(
        &env_file,
        "# switches\nHF_HOME=/data\nDEBUG_HIP_GRAPH_CLASSIC_PATH=1\n",
    )
    .unwrap();
    let cases = hidden_switch_cases();
    for (extra, key, how) in cases {
        let path = dir.path().join("baseline_vllm.yaml");
        std::fs::write(&path, baseline_with(extra)).unwrap();
        let findings = check_config(&load_config(&path).unwrap());
        assert_eq!(findings.len(), 1, "{extra}: {findings:?}");
        assert_eq!(findings[0].key, key, "{extra}");
        assert!(findings[0].line > 0, "{extra}: {findings:?}");
        assert!(
            findings[0]
                .problem
                .contains("a baseline replays as shipped"),
            "{findings:?}"
        );
        assert!(
            findings[0].problem.contains(how),
            "{how}: {}",
            findings[0].problem
        );
    }
    let unset = baseline_with(
        "server:\n  launcher: [env, -u, DEBUG_CLR_GRAPH_PACKET_CAPTURE, vllm, serve]\n",
    );
    assert_eq!(
        check_config(&parse_as(&unset, "baseline_vllm.yaml")),
        Vec::new()
    );
    let missing = baseline_with("container_args: [--env-file, /nonexistent/run.env]\n");
    let findings = check_config(&parse_as(&missing, "baseline_vllm.yaml"));
    assert!(
        findings[0].problem.contains("could not be read"),
        "{findings:?}"
    );
}

/// A profile's switch set again in `container_args` to another value wins over `envs` (docker
/// applies those flags last): found; set again to the same value: nothing to say.
#[test]
fn a_profile_switch_overridden_outside_envs_is_found() {
    let envs = "envs:\n  DEBUG_CLR_GRAPH_PACKET_CAPTURE: \"0\"\n  DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING: \"0\"\n  DEBUG_HIP_GRAPH_CLASSIC_PATH: \"1\"\n  VLLM_TORCH_PROFILER_DIR: /tmp/t\n";
    let with = |extra: &str| {
        let load = "{concurrency: 4, input_len: 16, output_len: 16, num_prompts: 8}";
        config_with("profile", &format!("{envs}{extra}"), load)
    };
    assert_eq!(
        check_config(&parse_as(&with(""), "profile_vllm.yaml")),
        Vec::new()
    );
    let overridden = with("container_args: [-e, DEBUG_CLR_GRAPH_PACKET_CAPTURE=1]\n");
    let findings = check_config(&parse_as(&overridden, "profile_vllm.yaml"));
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(
        findings[0]
            .problem
            .contains("overriding `envs.DEBUG_CLR_GRAPH_PACKET_CAPTURE: \"0\"`"),
        "{findings:?}"
    );
    assert!(
        findings[0].problem.contains("the last one wins"),
        "{findings:?}"
    );
    let same = with("container_args: [-e, DEBUG_CLR_GRAPH_PACKET_CAPTURE=0]\n");
    assert_eq!(
        check_config(&parse_as(&same, "profile_vllm.yaml")),
        Vec::new()
    );
}

/// A load the load generator would refuse is refused when the config is read.
#[test]
fn a_load_beyond_the_load_generators_limits_is_refused() {
    let huge = config_with(
        "baseline",
        "",
        "{concurrency: 4, input_len: 4000000000, output_len: 16, num_prompts: 8}",
    );
    let error = parse_config(&huge, std::path::Path::new("baseline_vllm.yaml")).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("load.input_len") && text.contains("cap on one request"),
        "{text}"
    );
    let crowded = config_with(
        "baseline",
        "",
        "{concurrency: 100000, input_len: 1000000, output_len: 16, num_prompts: 100000}",
    );
    let error = parse_config(&crowded, std::path::Path::new("baseline_vllm.yaml")).unwrap_err();
    assert!(error.to_string().contains("load.concurrency"), "{error}");
}
