//! The pieces of the profile loop that need no server: window specs, the ranks a config's
//! arguments imply, which files a window must leave, where each framework writes traces, the
//! fingerprint an attach may use, the run directory, and the throughput statistics. The loop
//! itself runs against stand-in servers in `stepscope`'s CLI tests and against the real vLLM
//! CPU server in its e2e tests.

use crate::common::{load_shipped, minimal, parse_as};
use std::path::{Path, PathBuf};
use stepscope_serving::Fingerprint;
use stepscope_serving::ProfileWindow;
use stepscope_serving::collect::Expected;
use stepscope_serving::profile::record::{LoadSummary, PhaseRecord, RunRecord, ThroughputRecord};
use stepscope_serving::profile::{
    BootedServer, RESULTS_SCHEMA_VERSION, RunDir, RunStatus, attach_fingerprint, compare,
    profiler_dir,
};

#[test]
fn window_specs_read_and_write_the_cli_form() {
    for (text, window) in [
        ("steps:128", ProfileWindow::Steps(128)),
        ("by-stage:4", ProfileWindow::ByStage(4)),
        ("by_stage:4", ProfileWindow::ByStage(4)),
        ("single-step", ProfileWindow::SingleStep),
        ("single_step", ProfileWindow::SingleStep),
    ] {
        assert_eq!(ProfileWindow::from_spec(text), Ok(window), "{text}");
    }
    assert_eq!(ProfileWindow::Steps(8).spec(), "steps:8");
    assert_eq!(ProfileWindow::ByStage(2).spec(), "by-stage:2");
    for bad in ["steps", "steps:0", "steps:-1", "steps:x", "every:8", ""] {
        let error = ProfileWindow::from_spec(bad).expect_err(bad);
        assert!(error.contains("hint: steps:N"), "{error}");
    }
}

#[test]
fn ranks_come_from_every_parallel_size_in_the_launch_arguments() {
    let ranks = |framework: &str, args: &str| {
        let text = minimal("profile", framework, &format!("server: {{args: {args}}}\n"));
        parse_as(&text, "profile_x.yaml").config.parallel_ranks()
    };
    assert_eq!(ranks("sglang", "[]"), 1);
    assert_eq!(ranks("sglang", "[--tp-size, \"8\"]"), 8);
    assert_eq!(ranks("sglang", "[--tp, \"4\", --dp-size, \"2\"]"), 8);
    assert_eq!(ranks("vllm", "[--tensor-parallel-size=2, -pp, \"2\"]"), 4);
    assert_eq!(
        ranks(
            "vllm",
            "[--data-parallel-size, \"2\", --tensor-parallel-size, \"1\"]"
        ),
        2
    );
    // The last of a repeated flag wins, as argparse does; a non-number is no size.
    assert_eq!(ranks("atom", "[-tp, \"2\", -tp, \"8\"]"), 8);
    assert_eq!(ranks("atom", "[--tensor-parallel-size, auto]"), 1);
}

#[test]
fn a_window_waits_for_every_rank_and_both_stages() {
    let files = |names: &[&str]| -> Vec<PathBuf> { names.iter().map(PathBuf::from).collect() };
    let two_ranks = Expected {
        ranks: 2,
        by_stage: false,
    };
    let vllm = files(&[
        "t/h_rank0.1.pt.trace.json.gz",
        "t/h.async_llm.1.pt.trace.json.gz",
    ]);
    assert_eq!(
        two_ranks.missing(&vllm).as_deref(),
        Some("1 of 2 rank files"),
        "the front end is no rank"
    );
    let both = files(&[
        "t/h_rank0.1.pt.trace.json.gz",
        "t/h_rank1.1.pt.trace.json.gz",
    ]);
    assert_eq!(two_ranks.missing(&both), None);
    let by_stage = Expected {
        ranks: 1,
        by_stage: true,
    };
    let extend = files(&["t/1-TP-0-EXTEND.trace.json.gz"]);
    assert_eq!(
        by_stage.missing(&extend).as_deref(),
        Some("1 -EXTEND and 0 -DECODE file(s) of 1 rank(s)")
    );
    let stages = files(&[
        "t/1-TP-0-EXTEND.trace.json.gz",
        "t/1-TP-0-DECODE.trace.json.gz",
    ]);
    assert_eq!(by_stage.missing(&stages), None);
    assert_eq!(
        Expected::default().missing(&[]),
        None,
        "any file will do when nothing is expected"
    );
}

#[test]
fn each_framework_says_where_its_traces_go_or_how_to_enable_them() {
    let dir = |name: &str| profiler_dir(&load_shipped(name).config);
    assert_eq!(
        dir("profile_vllm.yaml"),
        Ok(PathBuf::from("/tmp/stepscope/traces/vllm"))
    );
    assert!(dir("profile_sglang.yaml").is_ok());
    assert!(dir("profile_atom.yaml").is_ok());
    let bare = parse_as(&minimal("baseline", "vllm", ""), "baseline_x.yaml");
    let error = profiler_dir(&bare.config).expect_err("no profiler");
    assert!(error.contains("--profiler-config"), "{error}");
    let sglang = parse_as(&minimal("baseline", "sglang", ""), "baseline_x.yaml");
    assert_eq!(
        profiler_dir(&sglang.config),
        Ok(PathBuf::from("/tmp")),
        "SGLang's default folder"
    );
    let atom = parse_as(
        &minimal(
            "baseline",
            "atom",
            "server: {args: [--torch-profiler-dir=/t]}\n",
        ),
        "baseline_x.yaml",
    );
    assert_eq!(profiler_dir(&atom.config), Ok(PathBuf::from("/t")));
}

#[test]
fn attach_takes_a_given_fingerprint_or_the_run_that_kept_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Path::new("profile.yaml");
    let url = "http://127.0.0.1:8000";
    let fingerprint = format!("sha256:{}", "ab".repeat(32));
    assert_eq!(
        attach_fingerprint(url, Some(&fingerprint), dir.path(), config).map(|f| f.to_string()),
        Ok(fingerprint.clone())
    );
    let error = attach_fingerprint(url, None, dir.path(), config).expect_err("nothing known");
    assert!(
        error.contains("Nothing says how the server at http://127.0.0.1:8000 was booted"),
        "{error}"
    );
    // A run directory that kept a live server (this test's own process group stands in).
    let run = dir.path().join("20261203-090000-profile");
    std::fs::create_dir_all(&run).expect("folder");
    let group = nix::unistd::getpgrp().as_raw();
    let server = BootedServer {
        url: url.to_owned(),
        fingerprint: fingerprint.clone(),
        process_group: group,
        kept_running: true,
    };
    std::fs::write(
        run.join("server.json"),
        serde_json::to_string(&server).expect("JSON"),
    )
    .expect("write");
    let found = attach_fingerprint(&format!("{url}/"), None, dir.path(), config)
        .expect("found by its run directory");
    assert_eq!(found.to_string(), fingerprint);
    let given_dir = attach_fingerprint(
        url,
        Some(&run.display().to_string()),
        Path::new("/none"),
        config,
    );
    assert_eq!(given_dir.map(|f| f.to_string()), Ok(fingerprint.clone()));
    // Not kept running, or at another URL: not a match.
    let other = attach_fingerprint("http://127.0.0.1:9000", None, dir.path(), config);
    assert!(other.is_err());
    let garbage = attach_fingerprint(url, Some("not-a-fingerprint"), dir.path(), config);
    assert!(
        garbage
            .expect_err("refused")
            .contains("neither a fingerprint")
    );
}

fn record() -> RunRecord {
    let config = load_shipped("profile_vllm.yaml");
    let record = RunRecord::start(&config.config, &config.path);
    assert_eq!(
        (record.schema_version, record.status, record.phase.as_str()),
        (RESULTS_SCHEMA_VERSION, RunStatus::Running, "start")
    );
    record
}

#[test]
fn the_run_directory_keeps_results_current_and_never_mixes_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("run");
    let run = RunDir::create(&root, record()).expect("created");
    let read = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(root.join("results.json")).expect("results"))
            .expect("JSON")
    };
    assert_eq!(read()["status"], "running");
    assert_eq!(
        read()["config"]["fingerprint"],
        Fingerprint::of(&load_shipped("profile_vllm.yaml").config).to_string()
    );
    run.phase("window 1/2 (steps:8)").expect("phase");
    assert_eq!(read()["phase"], "window 1/2 (steps:8)");
    run.end(
        RunStatus::Interrupted,
        Some("stopped by signal 15".to_owned()),
    )
    .expect("end");
    let doc = read();
    assert_eq!(doc["status"], "interrupted");
    assert!(
        doc["finished_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert!(
        !root.join("results.tmp").exists(),
        "written through a temporary file, then renamed"
    );
    let again = RunDir::create(&root, record()).expect_err("the folder holds a run");
    assert!(again.to_string().contains("give a new --out"), "{again}");
}

/// The signal thread marks the run interrupted while the main thread records its phase: both
/// rewrite `results.json`. Each write must succeed and the file must end as the record does
/// (a `profile` run once exited 1 instead of 129 when the two renames of one temporary file
/// raced).
#[test]
fn two_threads_rewriting_results_never_fail_and_the_last_record_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("run");
    let run = RunDir::create(&root, record()).expect("created");
    let marker = run.clone();
    let signal = std::thread::spawn(move || {
        (0..300).try_for_each(|i| marker.end(RunStatus::Interrupted, Some(format!("signal {i}"))))
    });
    let phases = (0..300).try_for_each(|i| run.phase(&format!("window {i}")));
    let ended = signal.join().expect("the thread ends");
    assert!(phases.is_ok() && ended.is_ok(), "{phases:?} {ended:?}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("results.json")).expect("read"))
            .expect("JSON");
    let record = serde_json::to_value(run.record()).expect("record");
    assert_eq!(written, record, "results.json holds the last record");
    assert_eq!(written["phase"], "window 299");
    assert_eq!(written["error"], "signal 299");
}

fn phase(kind: &'static str, index: usize, rate: f64) -> PhaseRecord {
    PhaseRecord {
        kind,
        index,
        load: LoadSummary {
            file: String::new(),
            requests_completed: 1,
            requests_failed: 0,
            requests_cancelled: 0,
            duration_s: 1.0,
            output_tokens_per_s: rate,
        },
        traces: Vec::new(),
    }
}

#[test]
fn throughput_comparisons_use_medians_and_paired_spreads() {
    let throughput = ThroughputRecord {
        phases: vec![
            phase("unprofiled", 1, 100.0),
            phase("profiled", 1, 90.0),
            phase("unprofiled", 2, 110.0),
            phase("profiled", 2, 88.0),
            phase("unprofiled", 3, 104.0),
            phase("profiled", 3, 100.0),
        ],
        baseline_phases: vec![
            phase("baseline", 1, 120.0),
            phase("baseline", 2, 100.0),
            phase("baseline", 3, 110.0),
        ],
        comparisons: Vec::new(),
    };
    let comparisons = compare(&throughput);
    assert_eq!(comparisons.len(), 2);
    let profiler = &comparisons[0];
    assert_eq!(
        (profiler.reference_median, profiler.subject_median),
        (104.0, 90.0)
    );
    assert!((profiler.difference_pct - (90.0 - 104.0) / 104.0 * 100.0).abs() < 1e-9);
    // Pairs: −10 %, −20 %, −3.85 %.
    assert!(
        (profiler.spread_pct[0] + 20.0).abs() < 1e-9,
        "{:?}",
        profiler.spread_pct
    );
    assert!((profiler.spread_pct[1] - (100.0 - 104.0) / 104.0 * 100.0).abs() < 1e-9);
    let switches = &comparisons[1];
    assert_eq!(
        (switches.reference, switches.subject),
        ("baseline", "unprofiled")
    );
    assert_eq!(
        (switches.reference_median, switches.subject_median),
        (110.0, 104.0)
    );
    // Unpaired: from the slowest subject against the fastest reference, and the reverse.
    assert!((switches.spread_pct[0] - (100.0 - 120.0) / 120.0 * 100.0).abs() < 1e-9);
    assert!((switches.spread_pct[1] - (110.0 - 100.0) / 100.0 * 100.0).abs() < 1e-9);
    assert!(compare(&ThroughputRecord::default()).is_empty());
}
