//! Running the two load generators on the same server and settings: the real `stepscope bench`
//! binary, and vLLM's own `vllm bench serve` through `scripts/vllm-cpu.sh bench-vllm`. Each
//! run has a wall-clock limit and is killed past it.

use crate::server::Server;
use serde_json::Value;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What both generators are asked to send.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Prompt tokens per request.
    pub input_len: usize,
    /// Output tokens per request (`ignore_eos`).
    pub output_len: usize,
    /// Measured requests.
    pub num_prompts: usize,
    /// Poisson arrivals per second; `None`: as fast as the concurrency allows.
    pub request_rate: Option<f64>,
    /// Unmeasured requests first.
    pub warmup: usize,
    /// Prompt and arrival seed.
    pub seed: u64,
}

/// A benchmark is killed after this long (the loads here take seconds).
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// What a finished process left.
#[derive(Debug)]
pub struct Finished {
    /// Exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output and error, as one text for messages.
    pub output: String,
}

/// Runs `command` with a time limit, its output collected in `dir`.
fn run_bounded(mut command: Command, dir: &Path, name: &str) -> Finished {
    let out_path = dir.join(format!("{name}.out"));
    let err_path = dir.join(format!("{name}.err"));
    let stdout = std::fs::File::create(&out_path).expect("create the stdout file");
    let stderr = std::fs::File::create(&err_path).expect("create the stderr file");
    // Its own process group, so that a timeout ends what it started too (vLLM's benchmark
    // runs under bash).
    let mut child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("{name} does not start: {e}"));
    let deadline = Instant::now() + RUN_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let mut output = format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        tail(&read(&out_path)),
        tail(&read(&err_path))
    );
    if status.is_none() {
        output.insert_str(
            0,
            &format!("{name} ran past {} s and was killed\n", RUN_LIMIT.as_secs()),
        );
    }
    Finished {
        code: status.and_then(|s| s.code()),
        output,
    }
}

fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(6000);
    let start = (start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    &text[start..]
}

fn read_json(path: &Path, finished: &Finished) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no result at {} ({e})\n{}", path.display(), finished.output));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON ({e})\n{}", path.display(), finished.output))
}

/// `stepscope bench` on `server` with `load`: its `--json` document.
#[track_caller]
pub fn stepscope_bench(server: &Server, load: &Load, dir: &Path, name: &str) -> Value {
    stepscope_bench_with(server, load, &[], dir, name)
}

/// `stepscope bench` with more arguments.
#[track_caller]
pub fn stepscope_bench_with(
    server: &Server,
    load: &Load,
    extra: &[&str],
    dir: &Path,
    name: &str,
) -> Value {
    let json = dir.join(format!("{name}.json"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_stepscope"));
    command
        .arg("bench")
        .args(["--url", &server.url, "--model", &server.model]);
    command.args(common_args(load));
    if load.warmup > 0 {
        command.args(["--warmup", &load.warmup.to_string()]);
    }
    command.args(extra).arg("--no-progress");
    command.arg("--json").arg(&json).env_remove("NO_COLOR");
    let finished = run_bounded(command, dir, name);
    assert_eq!(
        finished.code,
        Some(0),
        "stepscope bench ({name}) failed\n{}",
        finished.output
    );
    read_json(&json, &finished)
}

/// `vllm bench serve` (random dataset, `--ignore-eos`) on `server` with `load`: its
/// `--save-result` document.
#[track_caller]
pub fn vllm_bench(server: &Server, load: &Load, dir: &Path, name: &str) -> Value {
    let json = dir.join(format!("{name}.json"));
    let mut command = Command::new("bash");
    command
        .arg(&server.script)
        .arg("bench-vllm")
        .arg(&server.url)
        .arg(&json);
    command.args(common_args(load));
    if load.warmup > 0 {
        command.args(["--warmup", &load.warmup.to_string()]);
    }
    let finished = run_bounded(command, dir, name);
    assert_eq!(
        finished.code,
        Some(0),
        "vllm bench serve ({name}) failed\n{}",
        finished.output
    );
    read_json(&json, &finished)
}

fn common_args(load: &Load) -> Vec<String> {
    let mut args = vec![
        "--concurrency".to_owned(),
        load.concurrency.to_string(),
        "--input-len".to_owned(),
        load.input_len.to_string(),
        "--output-len".to_owned(),
        load.output_len.to_string(),
        "--num-prompts".to_owned(),
        load.num_prompts.to_string(),
        "--seed".to_owned(),
        load.seed.to_string(),
    ];
    if let Some(rate) = load.request_rate {
        args.extend(["--request-rate".to_owned(), rate.to_string()]);
    }
    args
}
