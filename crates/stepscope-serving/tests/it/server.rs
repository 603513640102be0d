//! The server lifecycle on real child processes: a small Python HTTP server standing in for
//! vLLM/SGLang (no framework runs here), which spawns an "engine" child in its group the
//! way vLLM does, and can exit early, never listen, fail completions or ignore SIGTERM.
//! Every test checks the process table afterwards: nothing of the group may be left.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use stepscope_serving::server::{
    ManagedServer, ReadyCheck, ServerError, ServerLaunch, StopOutcome,
};

const FAKE_SERVER: &str = r#"
import http.server, json, os, signal, subprocess, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
print("switch", os.environ.get("DEBUG_HIP_GRAPH_CLASSIC_PATH"), flush=True)
if mode == "exit":
    print("boom: CUDA out of memory", flush=True)
    sys.exit(3)
ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN); " if mode == "ignore_term" else ""
engine = subprocess.Popen([sys.executable, "-c", "import signal, time; " + ignore + "time.sleep(600)"])
print(f"engine pid {engine.pid}", flush=True)
if mode == "ignore_term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "never":
    time.sleep(600)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if mode == "bad_completion":
            out, status = b'{"error": "model tiny is not loaded"}', 500
        else:
            out, status = json.dumps({"model": body["model"], "choices": [{"text": "!"}]}).encode(), 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        print("request", self.path, flush=True)

print("listening", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"#;

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// Starts the fake server in `mode`; returns it and its ready check.
fn start(dir: &Path, mode: &str) -> (ManagedServer, ReadyCheck) {
    let script = dir.join("fake_server.py");
    std::fs::write(&script, FAKE_SERVER).expect("write the script");
    let port = free_port();
    let launch = ServerLaunch {
        argv: vec![
            "python3".to_owned(),
            script.display().to_string(),
            port.to_string(),
            mode.to_owned(),
        ],
        envs: BTreeMap::from([("DEBUG_HIP_GRAPH_CLASSIC_PATH".to_owned(), "1".to_owned())]),
        log_path: dir.join("run/server.log"),
    };
    let server = ManagedServer::start(&launch).expect("python3 starts");
    let check = ReadyCheck {
        base_url: format!("http://127.0.0.1:{port}"),
        health_path: "/health".to_owned(),
        model: Some("tiny".to_owned()),
        timeout: Duration::from_secs(20),
        poll: Duration::from_millis(50),
    };
    (server, check)
}

/// The pid the fake server printed for its engine child.
fn engine_pid(server: &ManagedServer) -> i32 {
    for _ in 0..100 {
        let log = std::fs::read_to_string(server.log_path()).unwrap_or_default();
        if let Some(pid) = log
            .lines()
            .find_map(|line| line.strip_prefix("engine pid "))
            .and_then(|pid| pid.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no engine pid in {}", server.log_tail(20));
}

/// Whether `pid` runs (a zombie does not count).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = &stat[stat.rfind(')')? + 1..];
            rest.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

#[test]
fn ready_after_a_real_completion_then_stopped_with_its_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, check) = start(dir.path(), "ok");
    let engine = engine_pid(&server);
    server.wait_ready(&check).expect("ready");
    let log = std::fs::read_to_string(server.log_path()).expect("log");
    assert!(
        log.contains("listening") && log.contains("request /v1/completions"),
        "{log}"
    );
    assert!(
        log.contains("switch 1"),
        "the config's environment reaches the server"
    );
    assert!(running(engine) && server.group_alive());
    assert_eq!(
        server.stop(Duration::from_secs(10)),
        StopOutcome::Terminated
    );
    assert!(!server.group_alive(), "the group is gone");
    assert!(!running(engine), "the engine child is gone too");
    assert_eq!(
        server.stop(Duration::from_secs(1)),
        StopOutcome::AlreadyGone
    );
}

#[test]
fn a_server_that_exits_early_is_reported_with_its_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, check) = start(dir.path(), "exit");
    let error = server.wait_ready(&check).expect_err("it exited");
    assert!(matches!(error, ServerError::ExitedEarly { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("boom: CUDA out of memory"), "{message}");
    assert!(message.contains("server.log"), "{message}");
}

#[test]
fn a_server_that_never_listens_times_out_and_is_killed_on_drop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, mut check) = start(dir.path(), "never");
    check.timeout = Duration::from_millis(800);
    let engine = engine_pid(&server);
    let error = server.wait_ready(&check).expect_err("never ready");
    let message = error.to_string();
    assert!(matches!(error, ServerError::NotReady { .. }), "{message}");
    assert!(message.contains("/health"), "{message}");
    let group = server.group_id();
    drop(server);
    assert!(
        !running(group) && !running(engine),
        "dropping stops the group"
    );
}

#[test]
fn a_completion_that_fails_quotes_the_servers_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, check) = start(dir.path(), "bad_completion");
    let error = server.wait_ready(&check).expect_err("completion fails");
    let message = error.to_string();
    assert!(
        matches!(error, ServerError::CompletionFailed { .. }),
        "{message}"
    );
    assert!(
        message.contains("500") && message.contains("model tiny is not loaded"),
        "{message}"
    );
    server.stop(Duration::from_secs(10));
    assert!(!server.group_alive());
}

#[test]
fn a_server_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, check) = start(dir.path(), "ignore_term");
    let engine = engine_pid(&server);
    server.wait_ready(&check).expect("ready");
    assert_eq!(server.stop(Duration::from_millis(500)), StopOutcome::Killed);
    assert!(!server.group_alive());
    assert!(!running(engine));
}

#[test]
fn a_missing_program_or_an_empty_command_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut launch = ServerLaunch {
        argv: vec!["no-such-server-program".to_owned()],
        envs: BTreeMap::new(),
        log_path: dir.path().join("server.log"),
    };
    let error = ManagedServer::start(&launch).expect_err("not found");
    assert!(
        error.to_string().contains("no-such-server-program"),
        "{error}"
    );
    launch.argv.clear();
    assert!(matches!(
        ManagedServer::start(&launch),
        Err(ServerError::EmptyCommand)
    ));
}
