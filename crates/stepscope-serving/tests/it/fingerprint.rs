//! The reuse fingerprint: stable, order-independent, blind to what never reaches the server,
//! and never equal between a baseline and a profile.

use crate::common::*;
use stepscope_serving::{Fingerprint, ServingError, canonical_document, may_reuse};

fn fingerprint(text: &str) -> Fingerprint {
    Fingerprint::of(&parse_as(text, "f.yaml").config)
}

const BASE: &str = "kind: baseline
framework: vllm
model: Qwen/Qwen3-8B
image: rocm/vllm:latest
server:
  port: 8000
  args: [--tensor-parallel-size, \"2\"]
envs:
  HIP_VISIBLE_DEVICES: \"0,1\"
  VLLM_USE_V1: \"1\"
load: {concurrency: 64, input_len: 1024, output_len: 1024, num_prompts: 640}
output_dir: results/a
";

#[test]
fn key_order_does_not_matter() {
    let reordered = "output_dir: results/a
envs:
  VLLM_USE_V1: \"1\"
  HIP_VISIBLE_DEVICES: \"0,1\"
load: {num_prompts: 640, output_len: 1024, input_len: 1024, concurrency: 64}
server:
  args: [--tensor-parallel-size, \"2\"]
  port: 8000
image: rocm/vllm:latest
model: Qwen/Qwen3-8B
framework: vllm
kind: baseline
";
    assert_eq!(fingerprint(BASE), fingerprint(reordered));
}

#[test]
fn settings_that_never_reach_the_server_do_not_count() {
    let changed = BASE
        .replace("concurrency: 64", "concurrency: 8")
        .replace("num_prompts: 640", "num_prompts: 80")
        .replace(
            "output_dir: results/a",
            "output_dir: /elsewhere\nwindows: [{steps: 32}, single_step]",
        );
    assert_eq!(fingerprint(BASE), fingerprint(&changed));
}

#[test]
fn everything_that_reaches_the_server_counts() {
    let base = fingerprint(BASE);
    for (from, to) in [
        ("framework: vllm", "framework: atom"),
        ("model: Qwen/Qwen3-8B", "model: Qwen/Qwen3-14B"),
        ("image: rocm/vllm:latest", "image: rocm/vllm:v1"),
        ("port: 8000", "port: 8001"),
        ("\"2\"]", "\"4\"]"),
        ("VLLM_USE_V1: \"1\"", "VLLM_USE_V1: \"0\""),
        (
            "  VLLM_USE_V1: \"1\"\n",
            "  VLLM_USE_V1: \"1\"\n  VLLM_TORCH_PROFILER_DIR: /t\n",
        ),
        (
            "image: rocm/vllm:latest\n",
            "image: rocm/vllm:latest\ncontainer_args: [-v, /d:/d]\n",
        ),
        (
            "image: rocm/vllm:latest\n",
            "image: rocm/vllm:latest\nplatform: cuda\n",
        ),
    ] {
        assert!(BASE.contains(from), "{from}");
        assert_ne!(fingerprint(&BASE.replace(from, to)), base, "{from} → {to}");
    }
}

#[test]
fn fingerprints_are_stable_text() {
    let text = fingerprint(BASE).to_string();
    assert!(text.starts_with("sha256:") && text.len() == 71, "{text}");
    assert_eq!(Fingerprint::parse(&text), Some(fingerprint(BASE)));
    assert_eq!(Fingerprint::parse("sha256:abc"), None);
    let document = canonical_document(&parse_as(BASE, "f.yaml").config);
    assert!(
        document.contains("\"HIP_VISIBLE_DEVICES\": \"0,1\""),
        "{document}"
    );
    assert!(
        !document.contains("results/a") && !document.contains("1024"),
        "{document}"
    );
}

/// A baseline-booted server is never reused for a profile, and vice versa, for every framework.
#[test]
fn baseline_and_profile_servers_are_never_interchanged() {
    for (profile, baseline) in PROFILES.iter().zip(&BASELINES) {
        let profile = Fingerprint::of(&load_shipped(profile).config);
        let baseline = Fingerprint::of(&load_shipped(baseline).config);
        assert!(matches!(
            may_reuse(&baseline, &profile),
            Err(ServingError::ReuseRefused { .. })
        ));
        assert!(matches!(
            may_reuse(&profile, &baseline),
            Err(ServingError::ReuseRefused { .. })
        ));
        assert!(may_reuse(&profile, &profile).is_ok());
        assert!(may_reuse(&baseline, &baseline).is_ok());
    }
    // the switches alone make the difference: a profile that only adds them is refused too
    let with_switches = BASE.replace(
        "envs:\n",
        "envs:\n  DEBUG_CLR_GRAPH_PACKET_CAPTURE: \"0\"\n  DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING: \"0\"\n  DEBUG_HIP_GRAPH_CLASSIC_PATH: \"1\"\n",
    );
    let error = may_reuse(&fingerprint(BASE), &fingerprint(&with_switches)).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("Server booted with fingerprint `sha256:"),
        "{error}"
    );
}
