//! `stepscope env` and `stepscope config`: the real binary on the shipped configs in
//! `configs/`, on configs derived from them in temp folders, on the runtime-detection
//! fixture trees of `stepscope-serving`, and on a real trace header.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> PathBuf {
    repo()
        .join("crates/stepscope-serving/tests/fixtures")
        .join(name)
}

/// Runs the binary at the repository root, so `configs/...` paths work as in the README.
fn at_repo<const N: usize>(args: [&str; N]) -> Run {
    stepscope_in(&repo(), args, &[])
}

#[test]
fn env_prints_only_the_switches_of_the_version() {
    for (version, expected) in [
        ("7.2.0", "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\n"),
        ("7.2.4", "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\n"),
        (
            "7.2",
            "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\nDEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\n",
        ),
        ("10.1", "DEBUG_HIP_GRAPH_CLASSIC_PATH=1\n"),
        ("7.11", "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\n"),
        (
            "9.9",
            "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\nDEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\nDEBUG_HIP_GRAPH_CLASSIC_PATH=1\n",
        ),
    ] {
        let run = at_repo(["env", "--rocm", version]);
        run.expect_code(0);
        assert_eq!(run.stdout, expected, "--rocm {version}");
    }
}

#[test]
fn env_explains_on_stderr() {
    let run = at_repo(["env", "--rocm", "7.2.0"]);
    assert!(
        run.stderr
            .contains("[ROCm 7.1.0 – 7.2.3 (therock 7.9, 7.10); measured]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("rocm-7.2.0"),
        "the source tag: {}",
        run.stderr
    );
    let run = at_repo(["env", "--rocm", "7.2"]);
    assert!(
        run.stderr.contains("without a patch release"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("not yet measured on a GPU"),
        "{}",
        run.stderr
    );
    let run = at_repo(["env", "--rocm", "8.0.1"]);
    assert!(
        run.stderr
            .contains("not in the switch table: set all three"),
        "{}",
        run.stderr
    );
    let run = at_repo(["env", "--rocm", "10.1"]);
    assert!(
        run.stderr.contains("refuses multi-device graphs"),
        "{}",
        run.stderr
    );
}

#[test]
fn env_cuda_needs_no_switch() {
    let run = at_repo(["env", "--cuda", "--shell"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("PyTorch profiler needs no switch"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("--cuda-graph-trace=node"),
        "{}",
        run.stderr
    );
}

/// `eval "$(stepscope env --rocm 7.2 --shell)"` sets the variables in a real bash.
#[test]
fn env_shell_output_evaluates() {
    let script = format!(
        "eval \"$('{}' env --rocm 7.2 --shell 2>/dev/null)\"; printf '%s|%s|%s' \"$DEBUG_CLR_GRAPH_PACKET_CAPTURE\" \"$DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING\" \"${{DEBUG_HIP_GRAPH_CLASSIC_PATH-unset}}\"",
        env!("CARGO_BIN_EXE_stepscope")
    );
    let output = Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "0|0|unset");
}

#[test]
fn env_detects_on_fixture_trees() {
    let root = fixture("rocm-host");
    let run = at_repo([
        "env",
        "--detect",
        "--root",
        root.to_str().unwrap(),
        "--pid",
        "4242",
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\n");
    assert!(
        run.stderr
            .contains("/proc/4242/maps: /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204 → 7.2.4"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("mapped by process 4242"),
        "{}",
        run.stderr
    );
    let root = fixture("therock-venv");
    let run = at_repo([
        "env",
        "--detect",
        "--root",
        root.to_str().unwrap(),
        "--python-env",
        "/opt/venv",
        "--shell",
    ]);
    assert_eq!(run.stdout, "export DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\n");
    let empty = tempdir();
    let run = at_repo(["env", "--detect", "--root", empty.path().to_str().unwrap()]);
    run.expect_code(0);
    assert_eq!(run.stdout.lines().count(), 3, "nothing found: all three");
    assert!(
        run.stderr.contains("no HIP runtime found"),
        "{}",
        run.stderr
    );
}

#[test]
fn env_reads_a_trace_header() {
    let run = stepscope(["env", "--trace", SGLANG_DECODE]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\nDEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\n"
    );
    assert!(
        run.stderr.contains("cannot be told apart"),
        "{}",
        run.stderr
    );
    let run = stepscope(["env", "--trace", "no/such/trace.json"]);
    run.expect_code(2);
}

#[test]
fn env_needs_exactly_one_runtime() {
    at_repo(["env"]).expect_code(2);
    at_repo(["env", "--rocm", "7.2", "--cuda"]).expect_code(2);
    at_repo(["env", "--rocm", "7.2", "--pid", "1"]).expect_code(2);
}

#[test]
fn config_check_passes_the_shipped_configs() {
    let run = at_repo(["config", "check", "configs/"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("6 config(s) checked: 0 problem(s)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("ok   configs/profile_vllm.yaml (profile, vllm)"),
        "{}",
        run.stdout
    );
}

#[test]
fn config_check_fails_on_a_missing_switch_and_names_it() {
    let dir = tempdir();
    for name in ["profile_atom.yaml", "baseline_atom.yaml"] {
        std::fs::copy(repo().join("configs").join(name), dir.path().join(name)).unwrap();
    }
    let path = dir.path().join("profile_atom.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text: String = text
        .lines()
        .filter(|line| {
            !line
                .trim_start()
                .starts_with("DEBUG_HIP_GRAPH_CLASSIC_PATH:")
        })
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    let run = stepscope_in(dir.path(), ["config", "check", "."], &[]);
    run.expect_code(3);
    let problems: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("`envs."))
        .collect();
    assert_eq!(problems.len(), 1, "{}", run.stdout);
    assert!(
        problems[0].starts_with("./profile_atom.yaml:"),
        "{}",
        problems[0]
    );
    assert!(
        problems[0].contains("`envs.DEBUG_HIP_GRAPH_CLASSIC_PATH`"),
        "{}",
        problems[0]
    );
    assert!(
        run.stdout.contains("ok   ./baseline_atom.yaml"),
        "{}",
        run.stdout
    );
}

#[test]
fn config_check_exits_2_on_a_bad_file() {
    let dir = tempdir();
    let path = dir.path().join("mine.yaml");
    std::fs::write(
        &path,
        "kind: profile\nframework: vllm\nmodel: m\nloads: {}\n",
    )
    .unwrap();
    let run = stepscope_in(dir.path(), ["config", "check", "mine.yaml"], &[]);
    run.expect_code(2);
    assert!(run.stderr.contains("error: Invalid config `mine.yaml` at line 4, column 1, key `loads`: unknown field `loads`"), "{}", run.stderr);
    let run = stepscope_in(dir.path(), ["config", "check", "missing.yaml"], &[]);
    run.expect_code(2);
    assert!(run.stderr.contains("missing.yaml"), "{}", run.stderr);
}

#[test]
fn config_render_runs_under_bash() {
    for name in [
        "profile_sglang.yaml",
        "profile_vllm.yaml",
        "profile_atom.yaml",
        "baseline_vllm.yaml",
    ] {
        for target in ["shell", "docker"] {
            let run = at_repo([
                "config",
                "render",
                &format!("configs/{name}"),
                "--target",
                target,
            ]);
            run.expect_code(0);
            let syntax = Command::new("bash")
                .arg("-n")
                .arg("-c")
                .arg(&run.stdout)
                .output()
                .unwrap();
            assert!(
                syntax.status.success(),
                "{name} {target}: {}",
                String::from_utf8_lossy(&syntax.stderr)
            );
            let has_switch = run.stdout.contains("DEBUG_CLR_GRAPH_PACKET_CAPTURE=0");
            assert_eq!(has_switch, name.starts_with("profile"), "{name} {target}");
        }
    }
    let run = at_repo([
        "config",
        "render",
        "configs/profile_sglang.yaml",
        "--target",
        "docker",
    ]);
    assert!(
        run.stdout
            .contains("--device /dev/kfd --device /dev/dri --group-add video --ipc host"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("  -e DEBUG_HIP_GRAPH_CLASSIC_PATH=1 \\\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn config_fingerprint_differs_between_profile_and_baseline() {
    let run = at_repo([
        "config",
        "fingerprint",
        "configs/profile_sglang.yaml",
        "configs/baseline_sglang.yaml",
    ]);
    run.expect_code(0);
    let prints: Vec<&str> = run
        .stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(prints.len(), 2);
    assert!(
        prints
            .iter()
            .all(|p| p.starts_with("sha256:") && p.len() == 71)
    );
    assert_ne!(prints[0], prints[1]);
    let again = at_repo([
        "config",
        "fingerprint",
        "configs/profile_sglang.yaml",
        "--explain",
    ]);
    assert!(again.stdout.starts_with(prints[0]), "stable across runs");
    assert!(
        again
            .stdout
            .contains("\"DEBUG_CLR_GRAPH_PACKET_CAPTURE\": \"0\""),
        "{}",
        again.stdout
    );
}
