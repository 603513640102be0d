//! Running the real `stepscope` binary on real files, and the files the tests derive from the
//! real traces (derived files go to temp folders, never into the repository).

use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// SGLang decode on ROCm: 1 replay of 544 kernels.
pub const SGLANG_DECODE: &str =
    "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
/// The capture trace of that server (graph of batch size 32).
pub const SGLANG_CAPTURE: &str =
    "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz";
/// Piecewise vLLM: 25 replays of 3 graphs (4, 23 × 15, 12 kernels).
pub const VLLM_PIECEWISE: &str =
    "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz";
/// Full-graph vLLM decode: 1 replay of 421 kernels, no stream capture.
pub const VLLM_FULL: &str =
    "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz";
/// 456k events, 87 MB of JSON: the parallel parser has work to split.
pub const MTIA: &str = "hta/tests/data/mtia_trace_single_rank/mtia_rank_0.json.gz";
/// A small torch.compile trace (246 events, 12 kernels), pretty-printed JSON inside.
pub const TRITON: &str = "tracelens/tests/traces/torch_compile_triton/trace.json.gz";

/// The folder the real traces are read from (the curated set, or the corpus in the corpus
/// group); the binary runs there, so tests name traces by their relative paths.
pub fn traces_dir() -> PathBuf {
    stepscope_testdata::traces_dir()
}

/// A real trace, checked to exist (see `stepscope_testdata::trace`).
pub fn trace(relative: &str) -> PathBuf {
    stepscope_testdata::trace(relative)
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code, showing both streams when it differs.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit code\n--- stdout ---\n{}\n--- stderr ---\n{}",
            tail(&self.stdout),
            self.stderr
        );
        self
    }

    /// Standard output parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e})\n--- stdout ---\n{}\n--- stderr ---\n{}",
                tail(&self.stdout),
                self.stderr
            )
        })
    }
}

fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(4000);
    let start = (start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    &text[start..]
}

/// Runs `stepscope ARGS` in the shared traces folder, so relative trace paths work and show
/// up the same in every output.
pub fn stepscope<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    stepscope_in(&traces_dir(), args, &[])
}

/// Runs `stepscope ARGS` in `cwd` with extra environment variables.
pub fn stepscope_in<I, S>(cwd: &Path, args: I, env: &[(&str, &OsStr)]) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    for arg in &args {
        stepscope_testdata::check_arg(&arg.as_ref().to_string_lossy());
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_stepscope"));
    command.args(&args).current_dir(cwd).env_remove("NO_COLOR");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("the stepscope binary runs");
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    };
    assert_no_panic(&run);
    run
}

/// No run may panic, whatever its input.
#[track_caller]
pub fn assert_no_panic(run: &Run) {
    assert!(
        !run.stderr.contains("panicked") && run.code != Some(101),
        "stepscope panicked:\n{}",
        run.stderr
    );
    assert!(run.code.is_some(), "stepscope was killed by a signal");
}

/// A path as an argument.
pub fn arg(path: &Path) -> &OsStr {
    path.as_os_str()
}

/// Decompressed bytes of a shared gzip trace.
pub fn gunzip(relative: &str) -> Vec<u8> {
    use std::io::Read;
    let file = std::fs::File::open(trace(relative)).expect("the shared trace opens");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut out)
        .expect("the shared trace inflates");
    out
}

/// Writes `bytes` gzip-compressed to `path`.
pub fn write_gz(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let file = std::fs::File::create(path).expect("create");
    let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    encoder.write_all(bytes).expect("write");
    encoder.finish().expect("finish");
}

/// Writes the piecewise vLLM trace with the kernels of replays 5 and 6 (both of the 15-kernel
/// graph) removed, as plain JSON, to `dir/name`. No public trace shows the symptom, so it is
/// made here from the real file.
pub fn incomplete_piecewise(dir: &Path, name: &str) -> PathBuf {
    use stepscope_synth::removal::{graph_launches, keep_only, read_json, to_json_bytes};
    let mut doc = read_json(&trace(VLLM_PIECEWISE)).expect("the piecewise trace reads");
    let launches = graph_launches(&doc);
    assert_eq!(launches.len(), 25, "launches of the piecewise trace");
    assert_eq!(
        (launches[5].gpu_events, launches[6].gpu_events),
        (15, 15),
        "replays 5 and 6 are of the 15-kernel graph"
    );
    let removed = keep_only(&mut doc, |i| i != 5 && i != 6);
    assert_eq!(removed, 30);
    let path = dir.join(name);
    std::fs::write(&path, to_json_bytes(&doc)).expect("write the derived trace");
    path
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the binary at the repository root, so `configs/...` paths work as in the README.
pub fn at_repo<const N: usize>(args: [&str; N]) -> Run {
    stepscope_in(&repo(), args, &[])
}

/// A temp folder.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp folder")
}

/// Copies a shared trace to `dir/name`.
pub fn copy_trace(relative: &str, dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create folder");
    }
    std::fs::copy(trace(relative), &path).expect("copy");
    path
}

/// `value[key]` as u64, failing with the key's name.
#[track_caller]
pub fn u64_at(value: &Value, pointer: &str) -> u64 {
    value
        .pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not an unsigned integer"))
}

/// `value[key]` as f64.
#[track_caller]
pub fn f64_at(value: &Value, pointer: &str) -> f64 {
    value
        .pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} is not a number"))
}

/// `value[key]` as str.
#[track_caller]
pub fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} is not a string"))
}

/// `analyze --json` of one file (exit 0): its entry of `files`.
///
/// The file alone: no `capture_traces/` folder beside it is read, so that readings of one run
/// in two formats (a converted copy lies elsewhere) weigh the same evidence.
pub fn analyzed_file(path: &Path) -> Value {
    let run = stepscope([
        "analyze",
        path.to_str().expect("path"),
        "--json",
        "--no-progress",
        "--no-capture-folder",
    ]);
    run.expect_code(0);
    run.json()["files"][0].clone()
}

/// `analyze --json` of one file (exit 0): its `replay_coverage`.
pub fn replay_coverage(path: &Path) -> Value {
    analyzed_file(path)["replay_coverage"].clone()
}

/// The replay numbers of two readings of one run (two formats) agree.
#[track_caller]
pub fn assert_same_replays(one: &Value, other: &Value) {
    for key in [
        "verdict",
        "replays",
        "recorded_replays",
        "complete_replays",
        "empty_replays",
        "short_replays",
        "recorded_nodes",
        "orphan_kernels",
    ] {
        assert_eq!(one[key], other[key], "{key}");
    }
}

/// The real piecewise vLLM trace as a JSON document, and the indices (in `traceEvents`) of
/// its replay kernels: kernels sharing a graph launch's correlation id, in file order.
pub fn piecewise_replay_kernels() -> (Value, Vec<usize>) {
    let doc: Value = serde_json::from_slice(&gunzip(VLLM_PIECEWISE)).expect("JSON");
    let events = doc["traceEvents"].as_array().expect("events");
    let correlation = |e: &Value| e["args"]["correlation"].as_u64();
    let launches: std::collections::HashSet<u64> = events
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.contains("GraphLaunch"))
        })
        .filter_map(correlation)
        .collect();
    let rows = (0..events.len())
        .filter(|&i| {
            events[i]["cat"] == "kernel"
                && correlation(&events[i]).is_some_and(|c| launches.contains(&c))
        })
        .collect();
    (doc, rows)
}
