//! Profile windows against a stand-in server (no SGLang, vLLM or ATOM runs here): a small
//! Python HTTP server, written from the frameworks' documented endpoints, that answers each framework's profile
//! endpoints and logs every request it gets, run through `ManagedServer`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use stepscope_serving::server::{ManagedServer, ReadyCheck, ServerLaunch};
use stepscope_serving::windows::{
    ProfileEndpoint, WindowEnd, WindowError, start_window, stop_window, vllm_engine_steps,
    wait_for_engine_steps,
};
use stepscope_serving::{Framework, ProfileWindow};

const STAND_IN: &str = r#"
import http.server, json, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]

class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    steps = 0

    def do_GET(self):
        if self.path == "/metrics":
            Handler.steps += 5  # an engine running under load
            text = 'vllm:iteration_tokens_total_count{engine="0",model_name="tiny"} %d.0\n' % Handler.steps
            return self.answer(200, text.encode())
        self.answer(200 if self.path == "/health" else 404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        print("POST", self.path, json.dumps(json.loads(body)) if body else "", flush=True)
        if mode == "disabled" and self.path.endswith("_profile"):
            return self.answer(404, b'{"detail": "Not Found"}')
        if mode == "broken":
            return self.answer(500, b'{"error": "profiler already running"}')
        if self.path == "/stop_profile":
            time.sleep(0.5)  # the server writes the trace before it answers
            if mode == "atom":
                return self.answer(200, json.dumps({"traces": ["rank_0/trace_0.json.gz"]}).encode())
        self.answer(200, b"{}")

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"#;

fn stand_in(dir: &Path, mode: &str, framework: Framework) -> (ManagedServer, ProfileEndpoint) {
    let script = dir.join("stand_in.py");
    std::fs::write(&script, STAND_IN).expect("write");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let launch = ServerLaunch {
        argv: vec![
            "python3".into(),
            script.display().to_string(),
            port.to_string(),
            mode.into(),
        ],
        envs: BTreeMap::new(),
        log_path: dir.join("server.log"),
    };
    let mut server = ManagedServer::start(&launch).expect("starts");
    let base_url = format!("http://127.0.0.1:{port}");
    let check = ReadyCheck {
        base_url: base_url.clone(),
        health_path: "/health".into(),
        model: None,
        timeout: Duration::from_secs(20),
        poll: Duration::from_millis(50),
    };
    server.wait_ready(&check).expect("ready");
    let endpoint = ProfileEndpoint {
        framework,
        base_url,
        trace_dir: dir.join("traces"),
    };
    (server, endpoint)
}

fn requests(server: &ManagedServer) -> Vec<String> {
    std::fs::read_to_string(server.log_path())
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("POST"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn sglang_windows_carry_their_steps_stage_split_and_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, endpoint) = stand_in(dir.path(), "ok", Framework::Sglang);
    for window in [
        ProfileWindow::Steps(128),
        ProfileWindow::ByStage(4),
        ProfileWindow::SingleStep,
    ] {
        assert_eq!(
            start_window(&endpoint, window).expect("opens"),
            WindowEnd::BySteps
        );
    }
    let sent = requests(&server);
    assert_eq!(sent.len(), 3, "{sent:?}");
    let body = |line: &str| -> serde_json::Value {
        serde_json::from_str(line.splitn(3, " ").nth(2).expect("body"))
            .unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let steps = body(&sent[0]);
    assert!(sent[0].starts_with("POST /start_profile "));
    assert_eq!(steps["num_steps"], 128);
    assert_eq!(steps["profile_by_stage"], false);
    assert_eq!(
        steps["output_dir"],
        endpoint.trace_dir.display().to_string()
    );
    assert_eq!(body(&sent[1])["profile_by_stage"], true);
    assert_eq!(body(&sent[1])["num_steps"], 4);
    assert_eq!(body(&sent[2])["num_steps"], 1);
}

#[test]
fn vllm_and_atom_windows_close_with_stop_which_waits_for_the_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (framework, mode) in [(Framework::Vllm, "ok"), (Framework::Atom, "atom")] {
        let folder = dir.path().join(mode);
        std::fs::create_dir_all(&folder).expect("folder");
        let (server, endpoint) = stand_in(&folder, mode, framework);
        assert_eq!(
            start_window(&endpoint, ProfileWindow::Steps(32)).expect("opens"),
            WindowEnd::ByStop
        );
        let started = Instant::now();
        let answer = stop_window(&endpoint, Duration::from_secs(30)).expect("closes");
        assert!(
            started.elapsed() >= Duration::from_millis(500),
            "stop blocks while the trace is written"
        );
        let sent = requests(&server);
        // vLLM gets the steps as its own limit (`max_iterations`); ATOM no body.
        let start = if framework == Framework::Vllm {
            "POST /start_profile {\"max_iterations\": 32}"
        } else {
            "POST /start_profile "
        };
        assert_eq!(sent, [start, "POST /stop_profile "], "{sent:?}");
        let expected: Vec<String> = if framework == Framework::Atom {
            vec!["rank_0/trace_0.json.gz".into()]
        } else {
            Vec::new()
        };
        assert_eq!(answer.traces, expected);
    }
}

#[test]
fn a_server_without_its_profiler_gets_the_way_to_enable_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, endpoint) = stand_in(dir.path(), "disabled", Framework::Vllm);
    let error = start_window(&endpoint, ProfileWindow::Steps(8)).expect_err("disabled");
    assert!(
        matches!(error, WindowError::ProfilerDisabled { status: 404, .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("--profiler-config") && message.contains("torch_profiler_dir"),
        "{message}"
    );
}

#[test]
fn other_failures_quote_the_server_or_the_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, endpoint) = stand_in(dir.path(), "broken", Framework::Atom);
    let error = stop_window(&endpoint, Duration::from_secs(5)).expect_err("500");
    assert!(
        error.to_string().contains("500") && error.to_string().contains("profiler already running"),
        "{error}"
    );
    drop(server);
    let error = start_window(&endpoint, ProfileWindow::SingleStep).expect_err("nobody listens");
    assert!(matches!(error, WindowError::Connect { .. }), "{error}");
    assert!(error.to_string().contains("/start_profile"));
}

#[test]
fn a_vllm_window_of_n_steps_waits_for_n_engine_steps_on_metrics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, endpoint) = stand_in(dir.path(), "ok", Framework::Vllm);
    let from = vllm_engine_steps(&endpoint.base_url).expect("metrics");
    assert_eq!(from, 5);
    let poll = Duration::from_millis(10);
    let done = wait_for_engine_steps(&endpoint.base_url, from, 32, Duration::from_secs(10), poll)
        .expect("reaches 32");
    assert_eq!(done, 35, "polled in steps of 5 until past 32");
    let error = wait_for_engine_steps(
        &endpoint.base_url,
        from,
        1_000_000,
        Duration::from_millis(200),
        poll,
    )
    .expect_err("never reached");
    assert!(error.to_string().contains("engine steps"), "{error}");
}
