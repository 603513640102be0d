//! `stepscope env`: the real binary on typed versions, on the runtime-detection fixture
//! trees of `stepscope-serving` (and on roots and pids that are not there), and on the
//! headers of real traces of the trace corpus: HIP, CUDA by version, CUDA by device
//! names alone, and folders of traces of different runtimes.

use crate::common::*;
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    repo()
        .join("crates/stepscope-serving/tests/fixtures")
        .join(name)
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

/// A PyTorch wheel's own `libamdhip64` and `libroctracer64` (torch 2.11.0+rocm7.2) mapped
/// under an `/opt/rocm` of 7.2.2: flagged on standard error with the fix, while standard
/// output keeps exactly the switch lines it had.
#[test]
fn env_detect_flags_wheel_copies_older_than_opt_rocm_on_stderr_only() {
    let root = fixture("stale-torch-lib");
    for (shell, expected) in [
        (false, BOTH_72.to_owned()),
        (
            true,
            BOTH_72
                .lines()
                .map(|line| format!("export {line}\n"))
                .collect(),
        ),
    ] {
        let mut args = vec![
            "env",
            "--detect",
            "--root",
            root.to_str().unwrap(),
            "--pid",
            "5150",
        ];
        if shell {
            args.push("--shell");
        }
        let run = stepscope_in(&repo(), &args, &[]);
        run.expect_code(0);
        assert_eq!(run.stdout, expected, "--shell {shell}: only the switches");
        assert_stderr_has(
            &run,
            &[
                "libraries loaded, against /opt/rocm:",
                "  libroctracer64: /opt/venv/lib/python3.12/site-packages/torch/lib/libroctracer64.so (mapped by process 5150)",
                "7.2 (the ROCm release the wheel was built for, from /opt/venv/lib/python3.12/site-packages/torch-2.11.0+rocm7.2.dist-info; the name keeps no patch release); /opt/rocm: 7.2.2 (/opt/rocm/lib/libroctracer64.so.4.1.70202): may be older than /opt/rocm's",
                "warning: the process loads libamdhip64 7.2 from /opt/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so, may be older than /opt/rocm's 7.2.2",
                "fix: replace the wheel's copies with /opt/rocm's, then restart the server: copy /opt/rocm/lib/libamdhip64.so.7.2.70202 over /opt/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so and /opt/rocm/lib/libroctracer64.so.4.1.70202 over /opt/venv/lib/python3.12/site-packages/torch/lib/libroctracer64.so",
                "LD_LIBRARY_PATH does not help",
                "is fixed only in 7.2.2 and later, in the copies the process loads [reported: ROCm/ROCm #6102, ROCm/rocm-systems #4361; not measured here]",
                "if it is 7.2.0 or 7.2.1, profiles recorded with it can miss some kernels of every graph replay",
            ],
        );
    }
}

/// A HIP runtime 7.2.1 gets the race statement though it is `/opt/rocm`'s own release; copies
/// replaced by `/opt/rocm`'s files are not flagged. Standard output keeps only the switches.
#[test]
fn env_detect_states_the_replay_race_and_passes_replaced_copies() {
    let root = fixture("rocm-7.2.1");
    let run = at_repo([
        "env",
        "--detect",
        "--root",
        root.to_str().unwrap(),
        "--pid",
        "6060",
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\n");
    assert_stderr_has(
        &run,
        &[
            "warning: the HIP runtime the process loads is 7.2.1 (/opt/rocm-7.2.1/lib/libamdhip64.so.7.2.70201), profiles recorded with it can miss some kernels of every graph replay",
            "fix: ROCm 7.2.2 or later for the libamdhip64 and libroctracer64 copies the process loads",
        ],
    );
    assert!(
        !run.stderr.contains("warning: the process loads"),
        "the same release as /opt/rocm is not stale: {}",
        run.stderr
    );
    let root = fixture("torch-lib-replaced");
    let run = at_repo([
        "env",
        "--detect",
        "--root",
        root.to_str().unwrap(),
        "--pid",
        "5150",
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\n");
    assert_stderr_has(
        &run,
        &[
            "7.2.2 (the same bytes as /opt/rocm/lib/libroctracer64.so.4.1.70202: replaced by /opt/rocm's)",
        ],
    );
    assert!(!run.stderr.contains("warning:"), "{}", run.stderr);
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
    assert!(
        run.stderr.contains("no/such/trace.json"),
        "the path is named: {}",
        run.stderr
    );
}

#[test]
fn env_needs_exactly_one_runtime() {
    at_repo(["env"]).expect_code(2);
    at_repo(["env", "--rocm", "7.2", "--cuda"]).expect_code(2);
    at_repo(["env", "--rocm", "7.2", "--pid", "1"]).expect_code(2);
}

/// No pid this high exists (Linux's `pid_max` is at most 4194304).
const NO_SUCH_PID: &str = "4000000000";

#[test]
fn env_detect_refuses_a_pid_that_is_not_there() {
    let run = at_repo(["env", "--detect", "--pid", NO_SUCH_PID]);
    run.expect_code(2);
    assert_eq!(run.stdout, "", "no switch on a failed detection");
    assert_eq!(
        run.stderr,
        format!(
            "error: No process `{NO_SUCH_PID}` under `/proc` (it may have exited)\nhint: pass the pid of the running server (`pgrep -f sglang`), or leave out --pid to look at every process\n"
        )
    );
    let root = fixture("rocm-host");
    let run = at_repo([
        "env",
        "--detect",
        "--root",
        root.to_str().unwrap(),
        "--pid",
        "4243",
        "--shell",
    ]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.starts_with(&format!(
            "error: No process `4243` under `{}` (it may have exited)\nhint: pass the pid",
            root.join("proc").display()
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("give the pid the host sees and leave out --root"),
        "a root other than / gets the container advice: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("/opt/rocm"),
        "no fall-back to the next source: {}",
        run.stderr
    );
}

#[test]
fn env_detect_refuses_a_root_that_is_not_a_folder() {
    let scratch = tempdir();
    let missing = scratch.path().join("no-such-rootfs");
    let run = at_repo(["env", "--detect", "--root", missing.to_str().unwrap()]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        format!(
            "error: Root folder `{}` does not exist\nhint: --root takes a folder that stands for `/`, such as a container's root file system; leave it out to look at this machine\n",
            missing.display()
        )
    );
    let file = scratch.path().join("rootfs.tar");
    std::fs::write(&file, b"").unwrap();
    let run = at_repo([
        "env",
        "--detect",
        "--root",
        file.to_str().unwrap(),
        "--pid",
        "1",
    ]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.starts_with(&format!(
            "error: Root `{}` is not a folder\nhint: --root takes",
            file.display()
        )),
        "the root is checked before the pid: {}",
        run.stderr
    );
}

/// HTA's A100 trace: NVIDIA devices in `deviceProperties`, no runtime version at all.
const NVIDIA_NO_VERSION: &str = "hta/tests/data/negative_queue_length_values_check/rank0.json.gz";
/// An H100 trace with `cuda_runtime_version` 12040.
const CUDA_12_4: &str = "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
/// A vLLM trace from HIP 7.0 (`hip_runtime_version` 70051831).
const HIP_7_0: &str = VLLM_FULL;

const BOTH_72: &str = "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\nDEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\n";
const ALL_THREE: &str = "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\nDEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\nDEBUG_HIP_GRAPH_CLASSIC_PATH=1\n";

#[track_caller]
fn assert_stderr_has(run: &Run, parts: &[&str]) {
    for part in parts {
        assert!(run.stderr.contains(part), "`{part}` in:\n{}", run.stderr);
    }
}

#[test]
fn env_trace_from_nvidia_devices_prints_no_hip_switch() {
    for shell in [false, true] {
        let mut args = vec!["env", "--trace", NVIDIA_NO_VERSION];
        if shell {
            args.push("--shell");
        }
        let run = stepscope(&args);
        run.expect_code(0);
        assert_eq!(run.stdout, "", "never a HIP switch for an NVIDIA trace");
        assert_stderr_has(
            &run,
            &[
                "runtime: CUDA, version not in the header (device NVIDIA A100-SXM4-80GB in hta/",
                "the PyTorch profiler needs no switch",
                "missing kernels on CUDA are not fixed by a runtime switch; suspect the profiler's activity buffers (CUPTI buffer exhaustion drops records silently, pytorch/kineto #1362)",
                "no variable to set",
            ],
        );
        assert!(!run.stderr.contains("DEBUG_"), "{}", run.stderr);
    }
}

#[test]
fn env_trace_from_a_cuda_runtime_prints_no_hip_switch() {
    let run = stepscope(["env", "--trace", CUDA_12_4]);
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    assert_stderr_has(
        &run,
        &[
            "runtime: CUDA 12.4 (cuda_runtime_version 12040 in tracelens/tests/traces/h100/",
            "--cuda-graph-trace=node",
            "CUPTI buffer exhaustion",
        ],
    );
}

#[test]
fn env_trace_from_hip_72_gets_both_72_switches() {
    let run = stepscope(["env", "--trace", SGLANG_DECODE, "--shell"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "export DEBUG_CLR_GRAPH_PACKET_CAPTURE=0\nexport DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0\n"
    );
    assert_stderr_has(
        &run,
        &[
            &format!("runtime: HIP 7.2 (hip_runtime_version 70253211 in {SGLANG_DECODE})"),
            "patch releases (7.2.0 and 7.2.4) cannot be told apart",
        ],
    );
    assert!(
        !run.stderr.contains("advising for all of them"),
        "one runtime: {}",
        run.stderr
    );
}

#[test]
fn env_trace_folder_of_two_hip_runtimes_gets_the_union() {
    let dir = tempdir();
    let hip72 = copy_trace(SGLANG_DECODE, dir.path(), "rank0/sglang.json.gz");
    let hip70 = copy_trace(HIP_7_0, dir.path(), "rank1/vllm.json.gz");
    std::fs::write(dir.path().join("README.txt"), "not a trace").unwrap();
    let folder = stepscope_in(dir.path(), ["env", "--trace", "."], &[]);
    folder.expect_code(0);
    assert_eq!(folder.stdout, BOTH_72);
    assert_stderr_has(
        &folder,
        &[
            "runtime: HIP 7.2 (hip_runtime_version 70253211 in ./rank0/sglang.json.gz)",
            "runtime: HIP 7.0 (hip_runtime_version 70051831 in ./rank1/vllm.json.gz)",
            "the traces name different runtimes: advising for all of them",
            "HIP 7.0 (./rank1/vllm.json.gz): HIP 7.0 predates graph packet capture",
            "why: the traces name different runtimes (HIP 7.2, HIP 7.0): the switches of each, together",
        ],
    );
    assert_eq!(
        folder.stderr.matches("cannot be told apart").count(),
        1,
        "the 7.2 note, not for 7.0: {}",
        folder.stderr
    );
    let (a, b) = (hip72.to_str().unwrap(), hip70.to_str().unwrap());
    for args in [
        vec!["env", "--trace", a, "--trace", b],
        vec!["env", "--trace", b, a],
    ] {
        let run = stepscope(&args);
        run.expect_code(0);
        assert_eq!(run.stdout, BOTH_72, "{args:?}");
        assert_stderr_has(&run, &["the traces name different runtimes"]);
    }
}

#[test]
fn env_trace_of_two_platforms_says_so_and_advises_for_the_hip_one() {
    let run = stepscope([
        "env",
        "--trace",
        NVIDIA_NO_VERSION,
        SGLANG_DECODE,
        CUDA_12_4,
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, BOTH_72);
    assert_stderr_has(
        &run,
        &[
            "the traces come from different platforms (CUDA, ROCm): advising for all of them",
            "CUDA 12.4 (tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz): no HIP switch applies",
            "a CUDA runtime does not read them",
            "CUPTI buffer exhaustion",
        ],
    );
}

#[test]
fn env_trace_of_several_ranks_of_one_runtime_lists_them_once() {
    let dir = tempdir();
    for rank in 0..5 {
        copy_trace(SGLANG_DECODE, dir.path(), &format!("rank{rank}.json.gz"));
    }
    let run = stepscope_in(dir.path(), ["env", "--trace", "."], &[]);
    run.expect_code(0);
    assert_eq!(run.stdout, BOTH_72);
    assert_stderr_has(
        &run,
        &[
            "runtime: HIP 7.2 (hip_runtime_version 70253211 in ./rank0.json.gz, ./rank1.json.gz, ./rank2.json.gz and 2 more)",
        ],
    );
    assert!(
        !run.stderr.contains("advising for all of them"),
        "one runtime: {}",
        run.stderr
    );
}

/// The small torch.compile trace from an MI300X with its runtime version removed, and with
/// its device renamed too.
fn header_less_triton(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let text = String::from_utf8(gunzip(TRITON)).unwrap();
    let version = "\"hip_runtime_version\": 70226015,";
    assert_eq!(text.matches(version).count(), 1);
    let amd = text.replace(version, "");
    let unknown = amd.replace("AMD Instinct MI300X", "Accelerator X");
    let (amd_path, unknown_path) = (dir.join("amd.json"), dir.join("unknown.json"));
    std::fs::write(&amd_path, amd).unwrap();
    std::fs::write(&unknown_path, unknown).unwrap();
    (amd_path, unknown_path)
}

#[test]
fn env_trace_without_a_runtime_version_gets_all_three() {
    let dir = tempdir();
    let (amd, unknown) = header_less_triton(dir.path());
    let run = stepscope(["env", "--trace", amd.to_str().unwrap()]);
    run.expect_code(0);
    assert_eq!(run.stdout, ALL_THREE);
    assert_stderr_has(
        &run,
        &[
            "runtime: HIP, version not in the header (device AMD Instinct MI300X in ",
            "why: the header names AMD devices but no HIP runtime version: set all three",
        ],
    );
    let run = stepscope(["env", "--trace", unknown.to_str().unwrap()]);
    run.expect_code(0);
    assert_eq!(run.stdout, ALL_THREE);
    assert_stderr_has(
        &run,
        &[
            "runtime: unknown runtime (no runtime version and no known device in the header in ",
            "why: the trace header names no runtime: set all three",
        ],
    );
}

#[test]
fn env_trace_that_cannot_be_read_is_named_and_the_others_still_explained() {
    let dir = tempdir();
    copy_trace(SGLANG_DECODE, dir.path(), "a_good.json.gz");
    std::fs::write(dir.path().join("b_bad.json"), "{\"traceEvents\": [").unwrap();
    let run = stepscope_in(dir.path(), ["env", "--trace", ".", "--shell"], &[]);
    run.expect_code(2);
    assert_eq!(
        run.stdout, "",
        "no variable when a trace is missing from the advice"
    );
    assert_stderr_has(
        &run,
        &[
            "error: `./b_bad.json` is not valid trace JSON",
            "runtime: HIP 7.2 (hip_runtime_version 70253211 in ./a_good.json.gz)",
            "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0: ",
            "no variable printed: 1 of 2 trace(s) could not be read (see above)",
        ],
    );
    assert!(
        !run.stderr.contains("set them in the server's environment"),
        "{}",
        run.stderr
    );
}

#[test]
fn env_trace_paths_that_are_not_there_are_errors() {
    let run = stepscope([
        "env",
        "--trace",
        SGLANG_DECODE,
        "--trace",
        "no/such/trace.json",
    ]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "error: `no/such/trace.json` does not exist\n");
    let empty = tempdir();
    let run = stepscope(["env", "--trace", empty.path().to_str().unwrap()]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("holds no trace files (*.json, *.json.gz, *.json.zst, rocprofv3"),
        "{}",
        run.stderr
    );
}

/// Copies the `rocm-host` fixture tree (a process 4242 mapping HIP 7.2.4 under an
/// `/opt/rocm` of another version) and lets `change` spoil process 4242's maps.
fn rocm_host_with(change: impl FnOnce(&std::path::Path)) -> tempfile::TempDir {
    let root = tempdir();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(format!("{}/.", fixture("rocm-host").display()))
        .arg(root.path())
        .status()
        .unwrap();
    assert!(copied.success());
    change(&root.path().join("proc/4242/maps"));
    root
}

/// `--detect --pid P` whose maps cannot be read (here a maps that is a folder, which even
/// root cannot read as a file; as another user's process it is a permission error) or name
/// nothing (the process has exited) stops with exit 2 and what to do, and never falls back
/// to `/opt/rocm`'s version and its switch.
#[test]
fn env_detect_never_guesses_when_the_process_maps_cannot_be_read() {
    let unreadable = rocm_host_with(|maps| {
        std::fs::remove_file(maps).unwrap();
        std::fs::create_dir(maps).unwrap();
    });
    let gone = rocm_host_with(|maps| std::fs::write(maps, "").unwrap());
    for (root, says, hint) in [
        (
            &unreadable,
            "Cannot read `",
            "run stepscope as the process's user",
        ),
        (
            &gone,
            "names no library",
            "start the server again and pass its new pid",
        ),
    ] {
        let run = at_repo([
            "env",
            "--detect",
            "--root",
            root.path().to_str().unwrap(),
            "--pid",
            "4242",
        ]);
        run.expect_code(2);
        assert_eq!(run.stdout, "", "no switch is advised");
        assert!(run.stderr.contains(says), "{}", run.stderr);
        assert!(run.stderr.contains(hint), "{}", run.stderr);
        assert!(!run.stderr.contains("/opt/rocm/.info"), "{}", run.stderr);
    }
}
