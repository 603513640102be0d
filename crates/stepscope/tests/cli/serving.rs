//! `stepscope config`: the real binary on the shipped configs in `configs/` and on configs
//! derived from them in temp folders. (`stepscope env` is in `env.rs`.)

use crate::common::*;
use std::process::Command;

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

/// `config check` refuses what would make the run wait or mislead: port 0 (the system's
/// "any free port", which no one can poll), and control characters in an environment value
/// or an argument (a NUL ends the value at the system call, an escape rewrites the terminal
/// showing the command); each names the key and its line, exit 2.
#[test]
fn config_check_refuses_port_0_and_control_characters() {
    let dir = tempdir();
    let shipped = std::fs::read_to_string(repo().join("configs/baseline_vllm.yaml")).unwrap();
    let cases = [
        ("port: 8000", "port: 0", "server.port", "port 0"),
        (
            "output_dir:",
            "envs:\n  VLLM_FLAG: \"on\\0off\"\noutput_dir:",
            "envs.VLLM_FLAG",
            "U+0000 (NUL)",
        ),
        (
            "args: [--tensor-parallel-size, \"1\"]",
            "args: [--tensor-parallel-size, \"\\e[31m1\"]",
            "server.args[1]",
            "U+001B (ESC)",
        ),
    ];
    for (from, to, key, says) in cases {
        assert!(shipped.contains(from), "{from}");
        std::fs::write(dir.path().join("mine.yaml"), shipped.replacen(from, to, 1)).unwrap();
        let run = stepscope_in(dir.path(), ["config", "check", "mine.yaml"], &[]);
        run.expect_code(2);
        assert!(run.stderr.contains(key), "{key}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{says}: {}", run.stderr);
        assert!(run.stderr.contains("line "), "{}", run.stderr);
    }
}
