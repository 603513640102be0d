//! Which server the tests talk to, from the environment, and the lock that keeps them from
//! loading it at the same time.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// The server under test.
#[derive(Debug, Clone)]
pub struct Server {
    /// Base URL, without a trailing slash.
    pub url: String,
    /// Served model name.
    pub model: String,
    /// `scripts/vllm-cpu.sh` (for `bench-vllm`).
    pub script: PathBuf,
}

const HOW_TO_RUN: &str = "\
the end-to-end tests need a running vLLM server. Either
  bash .ci/e2e.sh                       # sets up vLLM on the CPU, starts it, runs these tests, stops it
or, by hand:
  scripts/vllm-cpu.sh setup && scripts/vllm-cpu.sh start 8123
  STEPSCOPE_E2E_URL=http://127.0.0.1:8123 STEPSCOPE_E2E_MODEL=$(scripts/vllm-cpu.sh model-name) \\
    STEPSCOPE_E2E_SCRIPT=scripts/vllm-cpu.sh cargo test -p stepscope --test e2e
To skip them on purpose (e.g. in `cargo test --workspace`), set STEPSCOPE_E2E=skip.";

/// A loopback port nothing listens on now (for a server a test boots).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// The server from the environment; `None` when `STEPSCOPE_E2E=skip` (printed, so a skipped
/// run is visible in the log). Panics with the way to run the tests when it is not set.
#[track_caller]
pub fn from_env(test: &str) -> Option<Server> {
    if std::env::var("STEPSCOPE_E2E").is_ok_and(|value| value == "skip") {
        eprintln!("{test}: SKIPPED (STEPSCOPE_E2E=skip)");
        return None;
    }
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.trim().is_empty())
    };
    let (Some(url), Some(model)) = (var("STEPSCOPE_E2E_URL"), var("STEPSCOPE_E2E_MODEL")) else {
        panic!("STEPSCOPE_E2E_URL and STEPSCOPE_E2E_MODEL are not set: {HOW_TO_RUN}");
    };
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = var("STEPSCOPE_E2E_SCRIPT").map_or_else(
        || workspace.join("scripts/vllm-cpu.sh"),
        |path| {
            let path = PathBuf::from(path);
            if path.is_absolute() {
                path
            } else {
                workspace.join(path)
            }
        },
    );
    assert!(
        script.is_file(),
        "STEPSCOPE_E2E_SCRIPT: no file at {}",
        script.display()
    );
    let server = Server {
        url: url.trim_end_matches('/').to_owned(),
        model,
        script,
    };
    server.check_serves_model();
    Some(server)
}

impl Server {
    /// Fails at once, with the reason, when the server does not answer or serves another model
    /// (rather than after a benchmark of failed requests).
    #[track_caller]
    fn check_serves_model(&self) {
        let output = Command::new("curl")
            .args(["-fsS", "--max-time", "10"])
            .arg(format!("{}/v1/models", self.url))
            .output()
            .expect("curl runs");
        let body = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the server at {} does not answer /v1/models: {}\n{HOW_TO_RUN}",
            self.url,
            String::from_utf8_lossy(&output.stderr).trim()
        );
        let models: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("/v1/models is not JSON ({e}): {body}"));
        let served = models["data"]
            .as_array()
            .map(|data| {
                data.iter()
                    .filter_map(|m| m["id"].as_str())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        assert!(
            served.contains(&self.model.as_str()),
            "the server at {} serves {served:?}, not STEPSCOPE_E2E_MODEL={}",
            self.url,
            self.model
        );
    }
}

impl Server {
    /// The model folder the script made (`scripts/vllm-cpu.sh model-dir`): its
    /// `tokenizer.json` is the server's tokenizer.
    #[track_caller]
    pub fn model_dir(&self) -> PathBuf {
        let output = Command::new("bash")
            .arg(&self.script)
            .arg("model-dir")
            .output()
            .expect("bash runs");
        assert!(
            output.status.success(),
            "{} model-dir failed",
            self.script.display()
        );
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
    }
}

static SERVER_LOCK: Mutex<()> = Mutex::new(());

/// One test at a time on the server: timings of two concurrent benchmarks mean nothing.
pub fn lock() -> MutexGuard<'static, ()> {
    SERVER_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
