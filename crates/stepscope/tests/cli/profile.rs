//! `stepscope profile` end to end against STAND-IN servers: no SGLang, vLLM or ATOM runs on
//! these CPUs (the real vLLM CPU server is profiled in tests/e2e). The stand-in
//! (`fixtures/stand_in_server.py`, written from the frameworks' documented profile endpoints)
//! answers each framework's
//! completion and profile endpoints, runs an "engine" child in its process group, and writes
//! real shared traces under the framework's file names; these tests check the lifecycle,
//! the windows, the collection, the analysis, the throughput phases, the exit codes and
//! that no process of a server is ever left behind.

use crate::common::{Run, tempdir, traces_dir};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/cli/fixtures/stand_in_server.py"
);
const SWITCHES: &str = "  DEBUG_CLR_GRAPH_PACKET_CAPTURE: \"0\"\n  DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING: \"0\"\n  DEBUG_HIP_GRAPH_CLASSIC_PATH: \"1\"\n";

pub(crate) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// A config for the stand-in of `framework` in `dir`.
pub(crate) struct Setup<'a> {
    pub framework: &'a str,
    pub kind: &'a str,
    pub port: u16,
    pub flags: &'a [&'a str],
    pub windows: &'a str,
    pub envs: &'a str,
}

pub(crate) fn write_config(dir: &Path, name: &str, setup: &Setup<'_>) -> PathBuf {
    let traces = dir.join("traces");
    let (args, env) = match setup.framework {
        "vllm" => (
            format!(
                "[--profiler-config, '{{\"profiler\": \"torch\", \"torch_profiler_dir\": \"{}\"}}']",
                traces.display()
            ),
            String::new(),
        ),
        "atom" => (
            format!("[--torch-profiler-dir, {}]", traces.display()),
            String::new(),
        ),
        _ => (
            "[]".to_owned(),
            format!("  SGLANG_TORCH_PROFILER_DIR: {}\n", traces.display()),
        ),
    };
    let mut launcher = vec!["python3", STAND_IN, "--framework", setup.framework];
    launcher.extend(setup.flags);
    let switches = if setup.kind == "profile" {
        SWITCHES
    } else {
        ""
    };
    let text = format!(
        "kind: {kind}\nframework: {framework}\nmodel: stand-in\nserver:\n  port: {port}\n  launcher: [{launcher}]\n  args: {args}\nenvs:\n{switches}  STANDIN_TRACES: {shared}\n{env}{envs}load: {{concurrency: 4, input_len: 16, output_len: 24, num_prompts: 12}}\nwindows: [{windows}]\noutput_dir: {out}\n",
        kind = setup.kind,
        framework = setup.framework,
        port = setup.port,
        launcher = launcher.join(", "),
        shared = traces_dir().display(),
        envs = setup.envs,
        windows = setup.windows,
        out = dir.join("results").display(),
    );
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the config");
    path
}

fn stand_in(framework: &str) -> Setup<'_> {
    Setup {
        framework,
        kind: "profile",
        port: free_port(),
        flags: &[],
        windows: "{steps: 16}",
        envs: "",
    }
}

/// Runs `stepscope profile CONFIG --out RUN ARGS`, quick to settle.
fn profile(config: &Path, run: &Path, args: &[&str]) -> Run {
    let mut all = vec![
        "profile".to_owned(),
        config.display().to_string(),
        "--out".to_owned(),
        run.display().to_string(),
        "--settle-ms".to_owned(),
        "300".to_owned(),
        "--no-progress".to_owned(),
        "--color".to_owned(),
        "never".to_owned(),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    crate::common::stepscope(all)
}

fn results(run: &Path) -> Value {
    let text = std::fs::read_to_string(run.join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("results.json is JSON")
}

/// Whether any process still runs the stand-in on `port` or belongs to `group`.
fn leftovers(port: u16, group: Option<i64>) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let zombie = matches!(fields.first(), Some(&"Z") | Some(&"X"));
        let in_group = group.is_some_and(|g| fields.get(2) == Some(&g.to_string().as_str()));
        let ours = cmdline.contains("stand_in_server.py") && cmdline.contains(&port.to_string());
        if !zombie && (in_group || ours) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

/// Waits up to 15 s for the stand-in's processes to be gone.
#[track_caller]
pub(crate) fn assert_no_leftovers(port: u16, group: Option<i64>) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left = leftovers(port, group);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Both servers booted, served and stopped, with different fingerprints.
fn check_servers(doc: &Value) {
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["server"]["mode"], "booted");
    assert_eq!(doc["server"]["stop"], "terminated");
    assert_eq!(doc["server"]["served_model"], "stand-in-model");
    assert_eq!(doc["baseline_server"]["stop"], "terminated");
    assert_ne!(
        doc["server"]["fingerprint"],
        doc["baseline_server"]["fingerprint"]
    );
}

/// What the run directory holds besides the windows.
fn check_files(run_dir: &Path) {
    for file in [
        "config.yaml",
        "baseline.yaml",
        "fingerprint",
        "resolved.json",
        "report.txt",
        "bench/windows-load.json",
        "bench/profiled-3.json",
        "bench/baseline-3.json",
        "baseline-server.log",
    ] {
        assert!(run_dir.join(file).is_file(), "{file} in the run directory");
    }
}

/// The last `-` part of each trace file name of a window.
fn file_suffixes(window: &Value) -> Vec<String> {
    window["traces"]
        .as_array()
        .expect("traces")
        .iter()
        .filter_map(|t| t["path"].as_str()?.rsplit('-').next().map(str::to_owned))
        .collect()
}

/// A vLLM stand-in window: its steps, its two files, its analysis.
fn check_window(window: &Value, spec: &str, steps: u64, run_dir: &Path) {
    assert_eq!(window["spec"], spec);
    assert_eq!(window["requested_steps"], steps);
    assert!(window["counted_steps"].as_u64().expect("counted") >= steps);
    assert!(window["error"].is_null(), "{window}");
    let roles: Vec<&str> = window["traces"]
        .as_array()
        .expect("traces")
        .iter()
        .map(|t| t["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(roles, ["frontend", "rank"], "{window}");
    for trace in window["traces"].as_array().expect("traces") {
        assert!(
            run_dir
                .join(trace["path"].as_str().expect("path"))
                .is_file()
        );
    }
    // The stand-in writes the real full-graph vLLM decode trace: one decode step, one replay
    // of 421 kernels, its size unverified without a capture.
    let analysis = &window["analysis"];
    assert_eq!(analysis["verdict"], "unverified");
    assert_eq!(analysis["steps_in_trace"], 1);
    assert_eq!(analysis["files"][0]["steps"]["vllm:decode"], 1);
    assert_eq!(analysis["files"][0]["replays"], 1);
    assert!(
        run_dir
            .join(analysis["document"].as_str().expect("doc"))
            .is_file()
    );
    assert!(
        run_dir
            .join(analysis["report"].as_str().expect("report"))
            .is_file()
    );
    let html = run_dir.join(analysis["html"].as_str().expect("html"));
    let page = std::fs::read_to_string(&html).expect("report.html");
    assert!(page.contains("id=\"stepscope-data\""), "the page's data");
}

/// Alternating phases, three on the baseline, and both comparisons.
fn check_throughput(throughput: &Value) {
    let kinds: Vec<&str> = throughput["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .map(|p| p["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "unprofiled",
            "profiled",
            "unprofiled",
            "profiled",
            "unprofiled",
            "profiled"
        ]
    );
    assert_eq!(
        throughput["baseline_phases"].as_array().map(Vec::len),
        Some(3)
    );
    let comparisons = throughput["comparisons"].as_array().expect("comparisons");
    assert_eq!(comparisons.len(), 2, "{comparisons:?}");
    for comparison in comparisons {
        let low = comparison["spread_pct"][0].as_f64().expect("low");
        let high = comparison["spread_pct"][1].as_f64().expect("high");
        assert!(low <= high, "{comparison}");
        assert!(comparison["reference_median"].as_f64().expect("median") > 0.0);
        assert_eq!(comparison["phases"], 3);
    }
}

#[test]
fn vllm_windows_throughput_and_baseline_land_in_the_run_directory() {
    let dir = tempdir();
    let profile_setup = Setup {
        windows: "{steps: 16}, single_step",
        ..stand_in("vllm")
    };
    let config = write_config(dir.path(), "profile.yaml", &profile_setup);
    let baseline = write_config(
        dir.path(),
        "baseline.yaml",
        &Setup {
            kind: "baseline",
            ..profile_setup
        },
    );
    let run_dir = dir.path().join("run");
    let run = profile(
        &config,
        &run_dir,
        &["--baseline", &baseline.display().to_string()],
    );
    run.expect_code(0);
    let doc = results(&run_dir);
    check_servers(&doc);
    let windows = doc["windows"].as_array().expect("windows");
    assert_eq!(windows.len(), 2);
    check_window(&windows[0], "steps:16", 16, &run_dir);
    check_window(&windows[1], "single-step", 1, &run_dir);
    // vLLM got its own step limit; the window was closed after counting steps on /metrics.
    let log = std::fs::read_to_string(run_dir.join("server.log")).expect("server log");
    assert!(
        log.contains("POST /start_profile {\"max_iterations\": 16}"),
        "{log}"
    );
    assert!(
        windows[0]["counted_by"]
            .as_str()
            .unwrap_or_default()
            .contains("/metrics")
    );
    check_throughput(&doc["throughput"]);
    check_files(&run_dir);
    assert!(
        run.stdout.contains("profiler on vs off: median"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("vs baseline config: median"),
        "{}",
        run.stdout
    );
    let group = doc["server"]["process_group"].as_i64();
    assert_no_leftovers(profile_setup.port, group);
}

#[test]
fn a_served_model_id_with_control_bytes_is_shown_escaped() {
    let dir = tempdir();
    // An OSC title and a colour in the id the server lists on `GET /v1/models` (written as
    // `\x1b` escapes the stand-in decodes: `config check` refuses control bytes in a config).
    let setup = Setup {
        envs: "  STANDIN_MODEL_ID: 'evil\\x1b]0;pwn\\x07\\x1b[31m'\n",
        ..stand_in("vllm")
    };
    let config = write_config(dir.path(), "profile.yaml", &setup);
    let run_dir = dir.path().join("run");
    let run = profile(&config, &run_dir, &[]);
    run.expect_code(0);
    for text in [&run.stdout, &run.stderr] {
        assert!(!text.contains(['\u{1b}', '\u{7}']), "{text:?}");
    }
    assert!(
        run.stdout.contains("evil\\u{1b}]0;pwn\\u{7}\\u{1b}[31m"),
        "{}",
        run.stdout
    );
    let doc = results(&run_dir);
    assert_eq!(
        doc["server"]["served_model"],
        "evil\u{1b}]0;pwn\u{7}\u{1b}[31m"
    );
    assert_no_leftovers(setup.port, doc["server"]["process_group"].as_i64());
}

#[test]
fn sglang_windows_by_steps_and_by_stage_are_collected_by_its_file_names() {
    let dir = tempdir();
    let setup = Setup {
        windows: "{steps: 8}",
        ..stand_in("sglang")
    };
    let config = write_config(dir.path(), "profile.yaml", &setup);
    let run_dir = dir.path().join("run");
    let run = profile(
        &config,
        &run_dir,
        &[
            "--window",
            "steps:8",
            "--window",
            "by-stage:2",
            "--window",
            "single-step",
            "--phases",
            "0",
        ],
    );
    run.expect_code(0);
    let doc = results(&run_dir);
    assert_eq!(file_suffixes(&doc["windows"][0]), ["0.trace.json.gz"]);
    assert_eq!(
        file_suffixes(&doc["windows"][1]),
        ["DECODE.trace.json.gz", "EXTEND.trace.json.gz"],
        "{}",
        doc["windows"][1]
    );
    assert_eq!(file_suffixes(&doc["windows"][2]), ["0.trace.json.gz"]);
    let ended_by = doc["windows"][0]["ended_by"].as_str().unwrap_or_default();
    assert!(ended_by.contains("num_steps 8"), "{ended_by}");
    assert_eq!(
        doc["windows"][1]["analysis"]["files"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(
        doc["verdict"], "unverified",
        "the shared SGLang decode trace: one replay"
    );
    let log = std::fs::read_to_string(run_dir.join("server.log")).expect("log");
    assert!(
        log.contains("\"num_steps\": 2") && log.contains("\"profile_by_stage\": true"),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "\"output_dir\": \"{}",
            dir.path().join("traces").display()
        )),
        "{log}"
    );
    assert!(doc["throughput"].is_null());
    assert_no_leftovers(setup.port, doc["server"]["process_group"].as_i64());
}

#[test]
fn atom_window_with_the_symptom_fails_the_gate() {
    let dir = tempdir();
    let setup = Setup {
        flags: &["--symptom"],
        ..stand_in("atom")
    };
    let config = write_config(dir.path(), "profile.yaml", &setup);
    let run_dir = dir.path().join("run");
    let run = profile(
        &config,
        &run_dir,
        &["--phases", "0", "--fail-on-incomplete"],
    );
    run.expect_code(3);
    let doc = results(&run_dir);
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["verdict"], "incomplete");
    let window = &doc["windows"][0];
    let path = window["traces"][0]["path"].as_str().expect("path");
    assert!(
        path.contains("/rank_0/") && path.ends_with(".json.gz"),
        "{path}"
    );
    assert!(
        window["counted_by"]
            .as_str()
            .unwrap_or_default()
            .contains("token chunks")
    );
    // 25 replays of the real piecewise vLLM trace; every other one lost its kernels.
    assert_eq!(window["analysis"]["files"][0]["replays"], 25);
    assert!(run.stdout.contains("INCOMPLETE"), "{}", run.stdout);
    assert_no_leftovers(setup.port, doc["server"]["process_group"].as_i64());
}

/// Attaching with another config, or to a server no run recorded: exit 2, nothing written.
fn check_refusals(dir: &Path, setup: &Setup<'_>, url: &str, first: &Path) {
    let config = dir.join("profile.yaml");
    // A config that boots a different server (one more variable) is refused, whether its
    // fingerprint is found or given: exit 2, nothing written.
    let other = write_config(
        dir,
        "other.yaml",
        &Setup {
            envs: "  EXTRA: \"1\"\n",
            ..*setup
        },
    );
    let third = dir.join("results/third");
    let refused = profile(&other, &third, &["--url", url]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("was not booted from")
            && refused.stderr.contains("cannot be reused"),
        "{}",
        refused.stderr
    );
    assert!(!third.exists());
    let given = profile(
        &other,
        &third,
        &["--url", url, "--fingerprint", &first.display().to_string()],
    );
    given.expect_code(2);
    // A server no run recorded: nothing says how it was booted.
    let unknown = format!("http://127.0.0.1:{}", free_port());
    let run = profile(&config, &third, &["--url", &unknown]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("Nothing says how the server"),
        "{}",
        run.stderr
    );
}

#[test]
fn attach_needs_the_fingerprint_of_the_server_it_attaches_to() {
    let dir = tempdir();
    let setup = Setup {
        windows: "single_step",
        ..stand_in("vllm")
    };
    let config = write_config(dir.path(), "profile.yaml", &setup);
    let url = format!("http://127.0.0.1:{}", setup.port);
    let first = dir.path().join("results/first");
    profile(&config, &first, &["--phases", "0", "--keep-server"]).expect_code(0);
    let booted = results(&first);
    assert_eq!(booted["server"]["stop"], "kept");
    let group = booted["server"]["process_group"].as_i64();
    let server_json: Value = serde_json::from_str(
        &std::fs::read_to_string(first.join("server.json")).expect("server.json"),
    )
    .expect("JSON");
    assert_eq!(server_json["kept_running"], true);

    // Found by its run directory under the config's output_dir.
    let second = dir.path().join("results/second");
    let run = profile(
        &config,
        &second,
        &["--phases", "0", "--url", &format!("{url}/v1")],
    );
    run.expect_code(0);
    let attached = results(&second);
    assert_eq!(attached["server"]["mode"], "attached");
    assert_eq!(
        attached["server"]["fingerprint"],
        booted["server"]["fingerprint"]
    );
    assert_eq!(attached["windows"][0]["analysis"]["verdict"], "unverified");

    check_refusals(dir.path(), &setup, &url, &first);

    // Booting onto the port the kept server holds is refused too.
    let busy = profile(
        &config,
        &dir.path().join("results/fifth"),
        &["--phases", "0"],
    );
    busy.expect_code(4);
    assert!(busy.stderr.contains("already answers"), "{}", busy.stderr);

    Command::new("kill")
        .args(["-TERM", "--", &format!("-{}", group.expect("group"))])
        .status()
        .expect("kill");
    assert_no_leftovers(setup.port, group);
}

#[test]
fn failures_exit_non_zero_with_the_fix_and_leave_no_process() {
    let dir = tempdir();
    // The server's profiler is off: the window says how to enable it.
    let setup = Setup {
        flags: &["--no-profiler"],
        ..stand_in("vllm")
    };
    let config = write_config(dir.path(), "off.yaml", &setup);
    let run_dir = dir.path().join("off");
    let run = profile(&config, &run_dir, &["--phases", "0"]);
    run.expect_code(4);
    let doc = results(&run_dir);
    let error = doc["windows"][0]["error"].as_str().expect("window error");
    assert!(
        error.contains("profiler is not enabled") && error.contains("--profiler-config"),
        "{error}"
    );
    assert_no_leftovers(setup.port, doc["server"]["process_group"].as_i64());

    // A server that dies while booting: exit 4, its log quoted.
    let dying = Setup {
        flags: &["--port-not-a-number"],
        ..stand_in("vllm")
    };
    let config = write_config(dir.path(), "dies.yaml", &dying);
    let text = std::fs::read_to_string(&config).expect("config").replace(
        "python3, ",
        "python3, -c, 'import sys; print(\"boom: out of memory\"); sys.exit(3)', ",
    );
    std::fs::write(&config, text).expect("write");
    let run = profile(&config, &dir.path().join("dies"), &[]);
    run.expect_code(4);
    assert!(
        run.stderr.contains("exited") && run.stderr.contains("boom: out of memory"),
        "{}",
        run.stderr
    );
    assert_eq!(results(&dir.path().join("dies"))["status"], "failed");

    // A vLLM config without its profiler: refused before anything boots (exit 2).
    let config = write_config(dir.path(), "noprof.yaml", &stand_in("vllm"));
    let text = std::fs::read_to_string(&config).expect("config");
    let start = text.find("  args:").expect("args");
    let end = start + text[start..].find('\n').expect("line");
    std::fs::write(
        &config,
        format!("{}  args: []{}", &text[..start], &text[end..]),
    )
    .expect("write");
    let run = profile(&config, &dir.path().join("noprof"), &[]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("must enable the vllm torch profiler"),
        "{}",
        run.stderr
    );
    assert!(
        !dir.path().join("noprof").exists(),
        "nothing written for a refused plan"
    );
}

/// Starts `stepscope profile` and sends `signal` once stderr shows `marker`.
fn interrupted_at(marker: &str, signal: &str) -> (i32, PathBuf, u16, tempfile::TempDir, Duration) {
    let dir = tempdir();
    let setup = Setup {
        windows: "{steps: 100}",
        ..stand_in("vllm")
    };
    let config = write_config(dir.path(), "profile.yaml", &setup);
    let baseline = Setup {
        kind: "baseline",
        ..setup
    };
    let baseline = write_config(dir.path(), "baseline.yaml", &baseline);
    let run_dir = dir.path().join("run");
    let mut child = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args([
            "profile",
            &config.display().to_string(),
            "--out",
            &run_dir.display().to_string(),
            "--settle-ms",
            "300",
            "--no-progress",
            "--phases",
            "1",
            "--baseline",
            &baseline.display().to_string(),
        ])
        .env("STANDIN_START_DELAY", "1")
        // 20 ms steps: every phase lasts long enough (a second or more) to be caught in.
        .env("STANDIN_STEP_MS", "20")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stepscope starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = Vec::new();
    let mut sent = Instant::now();
    for line in lines.by_ref().map_while(Result::ok) {
        seen.push(line.clone());
        if line.contains(marker) {
            sent = Instant::now();
            Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status()
                .expect("kill");
            break;
        }
    }
    // Keep reading: what stepscope says while it stops is part of the run.
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().expect("wait");
    let took = sent.elapsed();
    assert!(
        seen.iter().any(|l| l.contains(marker)),
        "never saw `{marker}`: {seen:?}"
    );
    assert!(!seen.iter().any(|l| l.contains("panicked")), "{seen:?}");
    (status.code().unwrap_or(-1), run_dir, setup.port, dir, took)
}

#[test]
fn a_signal_in_any_phase_stops_the_server_and_keeps_the_record() {
    let phases = [
        ("booting the", "-TERM", 143),
        ("waiting for the server", "-TERM", 143),
        ("steady load", "-INT", 130),
        ("recording:", "-TERM", 143),
        ("waiting for traces", "-TERM", 143),
        ("profiler off", "-TERM", 143),
        ("profiler on", "-HUP", 129),
        ("baseline phase", "-TERM", 143),
    ];
    for (marker, signal, code) in phases {
        let (exit, run_dir, port, _dir, took) = interrupted_at(marker, signal);
        assert_eq!(exit, code, "exit after {signal} at `{marker}`");
        let doc = results(&run_dir);
        assert_eq!(doc["status"], "interrupted", "at `{marker}`: {doc}");
        // The record is final: a server that was started is recorded stopped.
        for server in ["server", "baseline_server"] {
            let stop = &doc[server]["stop"];
            assert!(
                stop.is_null() || stop != "running",
                "{server} at `{marker}`: {doc}"
            );
        }
        // Out as soon as the server is down (its stop takes a few seconds at most), not
        // after the signal thread's last-resort exit 20 s later.
        assert!(took < Duration::from_secs(12), "{took:?} at `{marker}`");
        // Before the spawn there is no server.json; the stand-in's command line still tells.
        let group = std::fs::read_to_string(run_dir.join("server.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|server| server["process_group"].as_i64());
        assert_no_leftovers(port, group);
    }
}

/// A launcher that daemonises the server (`setsid … &`, the wrapper staying in the group):
/// stopping the group leaves the server answering on its port. The run says so — exit 4,
/// `server.stop: "still-running"` with the process that listens on the port, and how to
/// stop it — instead of recording it stopped. The test stops the escaped server itself.
#[test]
fn a_server_that_escapes_its_group_is_found_and_reported() {
    let dir = tempdir();
    let setup = stand_in("vllm");
    let config = write_config(dir.path(), "profile.yaml", &setup);
    let text = std::fs::read_to_string(&config).expect("config");
    let daemonising = text.replacen(
        "launcher: [python3, ",
        "launcher: [sh, -c, 'setsid \"$@\" > /dev/null 2>&1 & exec sleep 600', sh, python3, ",
        1,
    );
    assert_ne!(daemonising, text);
    std::fs::write(&config, daemonising).expect("config");
    let run_dir = dir.path().join("run");
    let run = profile(&config, &run_dir, &["--phases", "0"]);
    let doc = results(&run_dir);
    let escaped = doc["server"]["still_running_pid"].as_i64();
    let cmdline = escaped
        .and_then(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .unwrap_or_default();
    if let Some(pid) = escaped {
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    run.expect_code(4);
    assert_eq!(doc["server"]["stop"], "still-running", "{doc}");
    let pid = escaped.expect("the listening process is found");
    assert!(
        String::from_utf8_lossy(&cmdline).contains("stand_in_server.py"),
        "{cmdline:?}"
    );
    assert_eq!(doc["status"], "failed", "{doc}");
    assert!(
        run.stderr
            .contains("still answers after its process group was stopped"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!("kill {pid}")),
        "{}",
        run.stderr
    );
    assert_no_leftovers(setup.port, None);
}

/// A launcher that daemonises the server and exits at once (`setsid … &`, nothing left in
/// the group): the boot ends with the group gone, and the server that then answers on the
/// port is reported as escaped (exit 4, the process named), not as a server that exited.
#[test]
fn a_launcher_that_exits_leaving_its_server_running_is_reported() {
    let dir = tempdir();
    let setup = stand_in("vllm");
    let config = write_config(dir.path(), "profile.yaml", &setup);
    let text = std::fs::read_to_string(&config).expect("config");
    let daemonising = text.replacen(
        "launcher: [python3, ",
        "launcher: [sh, -c, 'setsid \"$@\" > /dev/null 2>&1 &', sh, python3, ",
        1,
    );
    std::fs::write(&config, daemonising).expect("config");
    let run_dir = dir.path().join("run");
    let run = profile(&config, &run_dir, &["--phases", "0"]);
    let pid = run
        .stderr
        .split("`kill ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .and_then(|pid| pid.parse::<i32>().ok());
    if let Some(pid) = pid {
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
    run.expect_code(4);
    assert!(run.stderr.contains("still answers"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("The launcher exited before the server was ready"),
        "{}",
        run.stderr
    );
    assert!(
        pid.is_some(),
        "the listening process is named: {}",
        run.stderr
    );
    assert_no_leftovers(setup.port, None);
}
