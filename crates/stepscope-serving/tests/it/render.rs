//! Rendered launches run under the real bash: values with spaces, quotes, `$(...)`,
//! backticks and newlines arrive byte for byte, and nothing in them is executed. Docker is
//! not installed here: its command is split by bash with `docker` defined as a function that
//! prints its arguments, which is exactly what the docker client would receive.

use crate::common::*;
use std::path::Path;
use std::process::Command;
use stepscope_model::switches::SWITCHES;
use stepscope_serving::{LaunchPlan, RenderTarget, render};

/// Values a shell would split, expand or execute if quoting failed.
const HOSTILE: [&str; 11] = [
    "two words",
    "it's \"quoted\"",
    "$(touch PWNED)",
    "`touch PWNED`",
    "line one\nline two\n",
    "${HOME} $HOME ~ * ? [a] ; | & > < ! #",
    "",
    "trailing\\",
    "'",
    "tab\there -e",
    "--port=1; touch PWNED",
];

fn yaml_string(value: &str) -> String {
    // JSON strings are YAML double-quoted scalars
    serde_json::to_string(value).unwrap()
}

/// A profile whose launcher is `launcher` and whose model, args and envs hold HOSTILE.
fn hostile_config(launcher: &Path, out: &Path, platform: &str) -> String {
    let mut text = format!(
        "kind: profile\nframework: sglang\nmodel: {}\nimage: {}\nplatform: {platform}\ncontainer_args: [-v, {}]\nserver:\n  launcher: [{}]\n  args:\n",
        yaml_string(HOSTILE[0]),
        yaml_string("registry.example/img:tag"),
        yaml_string("/tmp/a b:/data"),
        yaml_string(launcher.to_str().unwrap()),
    );
    for (index, value) in HOSTILE.iter().enumerate() {
        text += &format!("    - --arg{index}\n    - {}\n", yaml_string(value));
    }
    text += "envs:\n";
    for (index, value) in HOSTILE.iter().enumerate() {
        text += &format!("  V{index}: {}\n", yaml_string(value));
    }
    text += &format!(
        "  STEPSCOPE_TEST_OUT: {}\n",
        yaml_string(out.to_str().unwrap())
    );
    for switch in &SWITCHES {
        text += &format!("  {}: \"{}\"\n", switch.variable, switch.value);
    }
    text += "  SGLANG_TORCH_PROFILER_DIR: /tmp/t\nload: {concurrency: 1, input_len: 1, output_len: 1, num_prompts: 1}\noutput_dir: out\n";
    text
}

/// A stand-in server: writes its argv and the V* variables, NUL-separated.
fn write_stand_in(path: &Path) {
    let names: Vec<String> = (0..HOSTILE.len()).map(|i| format!("V{i}")).collect();
    let script = format!(
        "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$STEPSCOPE_TEST_OUT/argv\"\nfor name in {}; do printf '%s\\0' \"${{!name}}\"; done > \"$STEPSCOPE_TEST_OUT/env\"\n",
        names.join(" ")
    );
    std::fs::write(path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn nul_separated(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut words: Vec<String> = text.split('\0').map(str::to_owned).collect();
    assert_eq!(words.pop().as_deref(), Some(""), "NUL-terminated");
    words
}

fn bash(script: &Path, cwd: &Path) -> std::process::Output {
    let output = Command::new("bash")
        .arg(script)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "bash failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn shell_render_passes_every_byte_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let stand_in = dir.path().join("fake server");
    write_stand_in(&stand_in);
    let text = hostile_config(&stand_in, dir.path(), "rocm");
    let file = parse_as(&text, "hostile.yaml");
    let script = dir.path().join("launch.sh");
    std::fs::write(&script, render(&file, RenderTarget::Shell).unwrap()).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    bash(&script, dir.path());
    let argv = nul_separated(&std::fs::read(dir.path().join("argv")).unwrap());
    let plan = LaunchPlan::from_config(&file.config);
    assert_eq!(argv, plan.argv[1..], "the server's argv, byte for byte");
    for value in HOSTILE {
        assert!(
            argv.iter().any(|word| word == value),
            "{value:?} arrived as one word"
        );
    }
    let envs = nul_separated(&std::fs::read(dir.path().join("env")).unwrap());
    assert_eq!(envs, HOSTILE, "the environment, byte for byte");
    assert!(!dir.path().join("PWNED").exists(), "nothing was executed");
}

#[test]
fn docker_render_gives_one_word_per_argument() {
    for (platform, gpu_flags) in [
        (
            "rocm",
            vec![
                "--device",
                "/dev/kfd",
                "--device",
                "/dev/dri",
                "--group-add",
                "video",
                "--ipc",
                "host",
            ],
        ),
        ("cuda", vec!["--gpus", "all", "--ipc", "host"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let text = hostile_config(Path::new("/usr/bin/server"), dir.path(), platform);
        let file = parse_as(&text, "hostile.yaml");
        let rendered = render(&file, RenderTarget::Docker).unwrap();
        let script = dir.path().join("docker.sh");
        std::fs::write(
            &script,
            format!("docker() {{ printf '%s\\0' \"$@\"; }}\n{rendered}"),
        )
        .unwrap();
        let words = nul_separated(&bash(&script, dir.path()).stdout);
        let plan = LaunchPlan::from_config(&file.config);
        let mut expected: Vec<String> = ["run", "--rm", "--network", "host", "--entrypoint", ""]
            .iter()
            .chain(&gpu_flags)
            .map(|w| (*w).to_owned())
            .collect();
        for (key, value) in &plan.envs {
            expected.push("-e".to_owned());
            expected.push(format!("{key}={value}"));
        }
        expected.extend([
            "-v".to_owned(),
            "/tmp/a b:/data".to_owned(),
            "registry.example/img:tag".to_owned(),
        ]);
        expected.extend(plan.argv.iter().cloned());
        assert_eq!(words, expected, "{platform}");
        for (index, value) in HOSTILE.iter().enumerate() {
            let position = words.iter().position(|w| *w == format!("V{index}={value}"));
            assert!(
                position.is_some_and(|p| words[p - 1] == "-e"),
                "-e V{index} is one word"
            );
        }
        assert!(!dir.path().join("PWNED").exists(), "nothing was executed");
    }
}

/// The shipped configs' launches, run with stand-ins for `python3` and `vllm` on PATH:
/// a profile's server sees the three switches, a baseline's sees none.
#[test]
fn shipped_launches_deliver_the_switches() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let names: Vec<&str> = SWITCHES.iter().map(|s| s.variable).collect();
    let stand_in = format!(
        "#!/bin/bash\nprintf '%s\\n' \"$*\"\nfor name in {}; do [ -n \"${{!name+x}}\" ] && printf '%s=%s\\n' \"$name\" \"${{!name}}\"; done\nexit 0\n",
        names.join(" ")
    );
    for program in ["python3", "vllm"] {
        let path = bin.join(program);
        std::fs::write(&path, &stand_in).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for name in PROFILES.iter().chain(&BASELINES) {
        let rendered = render(&load_shipped(name), RenderTarget::Shell).unwrap();
        let script = dir.path().join("launch.sh");
        std::fs::write(&script, rendered).unwrap();
        let output = Command::new("bash")
            .arg(&script)
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(output.status.success(), "{name}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let seen: Vec<&str> = stdout.lines().skip(1).collect();
        if name.starts_with("profile") {
            assert_eq!(
                seen,
                [
                    "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0",
                    "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0",
                    "DEBUG_HIP_GRAPH_CLASSIC_PATH=1"
                ],
                "{name}"
            );
        } else {
            assert!(seen.is_empty(), "{name}: {seen:?}");
        }
        assert!(
            stdout
                .lines()
                .next()
                .unwrap()
                .contains("Qwen/Qwen3-14B-FP8"),
            "{name}"
        );
    }
}

#[test]
fn exact_commands_per_framework() {
    let shell = |name| render(&load_shipped(name), RenderTarget::Shell).unwrap();
    let sglang = shell("profile_sglang.yaml");
    assert!(sglang.contains("\npython3 -m sglang.launch_server \\\n  --model-path Qwen/Qwen3-14B-FP8 \\\n  --port 30000 \\\n"), "{sglang}");
    assert!(sglang.contains("\nexport SGLANG_TORCH_PROFILER_DIR=/tmp/stepscope/traces/sglang\n"));
    let vllm = shell("profile_vllm.yaml");
    assert!(
        vllm.contains("\nvllm serve Qwen/Qwen3-14B-FP8 \\\n  --port 8000 \\\n"),
        "{vllm}"
    );
    assert!(vllm.contains(r#"  --profiler-config '{"profiler": "torch", "torch_profiler_dir": "/tmp/stepscope/traces/vllm"}'"#), "{vllm}");
    let atom = shell("profile_atom.yaml");
    assert!(atom.contains("\npython3 -m atom.entrypoints.openai_server \\\n  --model Qwen/Qwen3-14B-FP8 \\\n  --server-port 8000 \\\n"), "{atom}");
    assert!(
        atom.contains("  --torch-profiler-dir /tmp/stepscope/traces/atom\n"),
        "{atom}"
    );
    let baseline = shell("baseline_sglang.yaml");
    assert!(!baseline.contains("export "), "{baseline}");
}

#[test]
fn docker_needs_an_image() {
    let file = parse_as(&minimal("baseline", "vllm", ""), "b.yaml");
    let error = render(&file, RenderTarget::Docker).unwrap_err().to_string();
    assert!(error.contains("has no `image`"), "{error}");
}
