//! `cargo install --path crates/stepscope` installs what the package builds as binaries:
//! exactly one, `stepscope` (the developer tools live in `stepscope-dev`), and builds nothing
//! that exists for tests (the synthetic-trace writers, the test server) or benchmarks (the
//! probes of stepscope-ingest's `bench-probes` feature). Read from `cargo metadata`, which
//! lists the targets and dependencies `cargo install` would build.

use crate::common::repo;
use std::process::Command;

/// The workspace's packages, their targets and declared dependencies.
fn workspace_metadata() -> serde_json::Value {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[test]
fn the_user_facing_package_builds_exactly_one_binary() {
    let metadata = workspace_metadata();
    let package = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "stepscope")
        .expect("the stepscope package");
    let binaries: Vec<&str> = package["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(binaries, ["stepscope"]);
    let built: Vec<&str> = package["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| d["kind"].is_null())
        .filter_map(|d| d["name"].as_str())
        .collect();
    for test_only in ["stepscope-synth", "stepscope-test-server", "stepscope-dev"] {
        assert!(!built.contains(&test_only), "{test_only} in {built:?}");
    }
    assert!(built.contains(&"stepscope-demo"), "{built:?}");
}

/// Only the developer tools (never installed, checked above) turn stepscope-ingest's
/// benchmark probes on, so no crate the binary builds compiles them.
#[test]
fn only_the_developer_tools_turn_the_benchmark_probes_on() {
    let metadata = workspace_metadata();
    let probing: Vec<&str> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| {
            p["dependencies"].as_array().is_some_and(|deps| {
                deps.iter().any(|d| {
                    d["name"] == "stepscope-ingest"
                        && d["features"]
                            .as_array()
                            .is_some_and(|f| f.iter().any(|f| f == "bench-probes"))
                })
            })
        })
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(probing.iter().all(|p| *p == "stepscope-dev"), "{probing:?}");
}
