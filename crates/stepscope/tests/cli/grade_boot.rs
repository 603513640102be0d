//! `stepscope grade BASE.yaml CANDIDATE.yaml`: baseline configs booted in turns, against the
//! STAND-IN server of the profile tests (`fixtures/stand_in_server.py`: no serving framework
//! runs on these CPUs; the real vLLM CPU server is graded in tests/e2e). Its engine step
//! (`STANDIN_STEP_MS`, set in each config's `envs`) is what makes one side slower.

use crate::browser::render;
use crate::common::{stepscope, tempdir};
use crate::profile::{Setup, assert_no_leftovers, free_port, write_config};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A baseline config of the stand-in vLLM on `port`, one engine step every `step_ms`.
fn baseline(dir: &Path, name: &str, port: u16, step_ms: u32) -> PathBuf {
    let envs = format!("  STANDIN_STEP_MS: \"{step_ms}\"\n");
    let setup = Setup {
        framework: "vllm",
        kind: "baseline",
        port,
        flags: &[],
        windows: "{steps: 16}",
        envs: &envs,
    };
    write_config(dir, name, &setup)
}

fn saved_grade(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("grade.json")).unwrap()).expect("grade.json")
}

#[test]
fn baseline_configs_boot_in_turns_and_the_slower_one_is_revert() {
    let dir = tempdir();
    let port = free_port();
    let base = baseline(dir.path(), "base.yaml", port, 2);
    let slow = baseline(dir.path(), "slow.yaml", port, 8);
    let out = dir.path().join("run");
    let run = stepscope([
        "grade",
        base.to_str().unwrap(),
        slow.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--min-phases",
        "5",
        "--max-phases",
        "5",
        "--min-effect",
        "25",
        "--warmup",
        "0",
        "--no-progress",
    ]);
    run.expect_code(3);
    assert!(
        run.stdout.starts_with("REVERT — output tok/s -"),
        "{}",
        run.stdout
    );
    assert_no_leftovers(port, None);
    let doc = saved_grade(&out);
    let record = &doc["run"];
    assert_eq!(record["status"], "complete", "{record}");
    // A B B A A B B A A B: a side's server boots when its turn comes, so the base booted at
    // phases 1, 4 and 8, the candidate at 2, 6 and 10; every boot stopped with its group.
    for side in 0..2 {
        let this = &record["sides"][side];
        assert_eq!(this["source"], "config");
        let boots = this["boots"].as_array().unwrap();
        assert_eq!(boots.len(), 3, "{this}");
        for boot in boots {
            assert_eq!(boot["stop"], "terminated", "{boot}");
            assert!(out.join(boot["log"].as_str().unwrap()).is_file());
        }
    }
    assert_ne!(
        record["sides"][0]["fingerprint"],
        record["sides"][1]["fingerprint"]
    );
    assert!(out.join("base.yaml").is_file() && out.join("candidate.yaml").is_file());
    // The load is the configs' own: 12 prompts a phase.
    let phase: Value =
        serde_json::from_slice(&std::fs::read(out.join("base/phase00.json")).unwrap()).unwrap();
    assert_eq!(phase["summary"]["requests_completed"], 12, "{phase}");

    check_page(&out.join("report.html"));
}

/// The report, in a real browser: the decision, and every phase plotted in run order with a
/// dashed line at each of the five changes of server.
fn check_page(report: &Path) {
    let page = render(report);
    let text = |selector: &str| {
        let selector = scraper::Selector::parse(selector).unwrap();
        page.dom
            .select(&selector)
            .map(|e| e.text().collect::<String>())
            .collect::<Vec<_>>()
    };
    assert_eq!(text("#decision"), ["REVERT"]);
    assert_eq!(text("circle.phase").len(), 10);
    assert_eq!(text("circle.side0").len(), 5);
    assert_eq!(text("line.boot").len(), 5);
    assert!(text("#metrics td")[0].contains("output tok/s"));
    assert!(page.console.is_empty(), "{:?}", page.console);
}

#[test]
fn a_profile_config_a_mismatched_load_and_a_busy_port_are_refused() {
    let dir = tempdir();
    let port = free_port();
    let base = baseline(dir.path(), "base.yaml", port, 2);
    let setup = Setup {
        framework: "vllm",
        kind: "profile",
        port,
        flags: &[],
        windows: "{steps: 16}",
        envs: "",
    };
    let profile = write_config(dir.path(), "profile.yaml", &setup);
    let refused = stepscope(["grade", base.to_str().unwrap(), profile.to_str().unwrap()]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("CANDIDATE")
            && refused.stderr.contains("profile runs are never graded"),
        "{}",
        refused.stderr
    );
    let text = std::fs::read_to_string(&base).unwrap();
    let other = dir.path().join("other.yaml");
    std::fs::write(&other, text.replace("concurrency: 4", "concurrency: 8")).unwrap();
    let loads = stepscope(["grade", base.to_str().unwrap(), other.to_str().unwrap()]);
    loads.expect_code(2);
    assert!(loads.stderr.contains("different loads"), "{}", loads.stderr);

    // Something already answers on the configs' port: nothing is booted over it, the run
    // fails (exit 4) naming the port, and its record says so.
    let busy = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let holder = std::thread::spawn(move || {
        for stream in busy.incoming().take(1).flatten() {
            use std::io::Write as _;
            let mut stream = stream;
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let out = dir.path().join("busy");
    let run = stepscope([
        "grade",
        base.to_str().unwrap(),
        base.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    run.expect_code(4);
    assert!(run.stderr.contains("already answers"), "{}", run.stderr);
    assert_eq!(saved_grade(&out)["run"]["status"], "failed");
    holder.join().unwrap();
}

/// Ctrl-C in the middle: the server goes at once, the phases that ended are graded and kept,
/// and the run says it was interrupted (exit 130, as a shell reports SIGINT).
#[test]
fn ctrl_c_stops_the_server_and_keeps_the_phases_that_ended() {
    let dir = tempdir();
    let port = free_port();
    // 20 ms steps: each phase lasts about a second, long enough to be caught in.
    let base = baseline(dir.path(), "base.yaml", port, 20);
    let out = dir.path().join("run");
    let mut child = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args(["grade", base.to_str().unwrap(), base.to_str().unwrap()])
        .args([
            "--out",
            out.to_str().unwrap(),
            "--warmup",
            "0",
            "--no-progress",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stepscope starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        seen.push(line.clone());
        if line.contains("phase 2 of candidate") {
            Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .expect("kill");
            break;
        }
    }
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{seen:#?}");
    assert_no_leftovers(port, None);
    let doc = saved_grade(&out);
    assert_eq!(doc["run"]["status"], "interrupted", "{doc}");
    assert_eq!(doc["run"]["error"], "stopped by signal 2");
    assert_eq!(doc["decision"], "INCONCLUSIVE");
    // A B B: the phases that ended are saved and graded; the one cut short is not saved.
    let count = |side: &str| crate::grade::phase_files(&out.join(side));
    assert_eq!((count("base"), count("candidate")), (1, 2), "{seen:#?}");
    assert_eq!(doc["candidate"].as_array().map(Vec::len), Some(2));
}

/// `grade base.yaml candidate.yaml --expect-…` with `extra` flags into `out`: 4 phases a
/// side, short probes.
fn expecting(base: &Path, candidate: &Path, out: &Path, extra: &[&str]) -> crate::common::Run {
    let mut args = vec![
        "grade",
        base.to_str().unwrap(),
        candidate.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend([
        "--min-phases",
        "4",
        "--max-phases",
        "4",
        "--min-effect",
        "25",
    ]);
    args.extend([
        "--warmup",
        "0",
        "--no-progress",
        "--output-probes",
        "2",
        "--probe-tokens",
        "4",
    ]);
    args.extend(extra);
    stepscope(args)
}

/// Proof the change ran: the candidate's server runs with the variable that switches it on,
/// and a profile window on it records the kernel it adds (the stand-in writes a real vLLM
/// trace, whose MoE GEMM is kernel 94d4a9). Without them, the grade is INCONCLUSIVE "the
/// change did not engage", at once, and graded offline the saved check decides the same.
#[test]
fn a_candidate_that_never_ran_the_change_is_not_kept() {
    let dir = tempdir();
    let port = free_port();
    let base = baseline(dir.path(), "base.yaml", port, 2);
    let candidate = baseline(dir.path(), "candidate.yaml", port, 2);
    let out = dir.path().join("engaged");
    let run = expecting(
        &base,
        &candidate,
        &out,
        &[
            "--expect-kernel",
            "94d4a9",
            "--expect-env",
            "STANDIN_STEP_MS=2",
        ],
    );
    assert!(
        run.stdout.contains("  ok      engaged: the change engaged on the candidate: STANDIN_STEP_MS=2, kernel 94d4a9"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(saved_grade(&out)["run"]["stopped_by"], "max-phases");
    assert!(out.join("candidate/engage.check.json").is_file());

    let out = dir.path().join("not-engaged");
    let run = expecting(
        &base,
        &candidate,
        &out,
        &["--expect-kernel", "000000", "--expect-env", "FEATURE_X=1"],
    );
    run.expect_code(5);
    assert!(
        run.stdout.starts_with("INCONCLUSIVE — the change did not engage on the candidate: `FEATURE_X=1` is in none of its processes; kernel 000000 is not in its profile window"),
        "{}",
        run.stdout
    );
    let doc = saved_grade(&out);
    assert_eq!(doc["run"]["stopped_by"], "not-engaged");
    assert_eq!(crate::grade::phase_files(&out.join("candidate")), 0);
    assert_no_leftovers(port, None);
    let offline = stepscope([
        "grade",
        out.join("base").to_str().unwrap(),
        out.join("candidate").to_str().unwrap(),
    ]);
    offline.expect_code(5);
    assert!(
        offline.stdout.contains("the change did not engage"),
        "{}",
        offline.stdout
    );
    // Offline, the flags themselves are refused: the saved check is what is graded.
    let refused = stepscope([
        "grade",
        out.join("base").to_str().unwrap(),
        out.join("candidate").to_str().unwrap(),
        "--expect-kernel",
        "94d4a9",
    ]);
    refused.expect_code(2);
}
