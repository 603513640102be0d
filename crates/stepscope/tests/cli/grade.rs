//! `stepscope grade BASE CANDIDATE` on phases saved by the real `stepscope bench` against the
//! in-process instant server of `stepscope-test-server` (a stand-in: no model runs fast
//! enough on these CPUs for many phases in a test): a server three times slower per token is
//! REVERT, the same server against itself is never KEEP or REVERT, a profile run is refused.

use crate::common::{Run, arg, stepscope, tempdir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use stepscope_test_server::{InstantServer, InstantServerOptions};

/// The load of every phase: small, so that many phases fit in a test.
const LOAD: [&str; 12] = [
    "--model",
    "tiny",
    "--concurrency",
    "4",
    "--num-prompts",
    "16",
    "--input-len",
    "8",
    "--output-len",
    "16",
    "--warmup",
    "0",
];

/// Short output probes (4 prompts of 4 tokens) for live runs.
pub const PROBES: [&str; 4] = ["--output-probes", "4", "--probe-tokens", "4"];

/// A server of the load's model writing one token every `gap`.
fn server(gap: Duration) -> InstantServer {
    let options = InstantServerOptions::default()
        .with_chunk_interval(gap)
        .with_models(&["tiny"]);
    InstantServer::start(options).expect("the instant server starts")
}

/// The bench documents (`phase*.json`) in a side's folder.
pub fn phase_files(folder: &Path) -> usize {
    std::fs::read_dir(folder)
        .unwrap()
        .filter(|entry| {
            let name = entry.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.starts_with("phase") && name.ends_with(".json")
        })
        .count()
}

/// `phases` bench runs against a server writing one token every `gap`, saved in `dir`.
fn phases(dir: &Path, gap: Duration, phases: usize) -> PathBuf {
    let server = server(gap);
    std::fs::create_dir_all(dir).expect("a folder");
    for phase in 0..phases {
        let json = dir.join(format!("phase{phase}.json"));
        let url = server.base_url();
        let mut args = vec!["bench", "--url", &url];
        args.extend(LOAD);
        args.extend(["--json", json.to_str().unwrap()]);
        stepscope(args).expect_code(0);
    }
    dir.to_owned()
}

fn grade(base: &Path, candidate: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["grade".to_owned(), arg(base).to_str().unwrap().to_owned()];
    args.push(arg(candidate).to_str().unwrap().to_owned());
    args.extend(extra.iter().map(|e| (*e).to_owned()));
    stepscope(args)
}

#[test]
fn a_slower_server_is_revert_and_the_same_server_twice_is_never_decided() {
    let dir = tempdir();
    let fast = phases(&dir.path().join("fast"), Duration::from_millis(2), 4);
    let again = phases(&dir.path().join("again"), Duration::from_millis(2), 4);
    let slow = phases(&dir.path().join("slow"), Duration::from_millis(6), 4);

    let slower = grade(&fast, &slow, &["--min-effect", "25", "--json"]);
    slower.expect_code(3);
    let doc: Value = slower.json();
    assert_eq!(doc["decision"], "REVERT", "{doc}");
    let change = &doc["output_throughput"];
    assert!(change["high"].as_f64().unwrap() < -0.25, "{change}");
    assert_eq!(doc["base"].as_array().map(Vec::len), Some(4));

    let same = grade(&fast, &again, &["--min-effect", "25", "--json"]);
    same.expect_code(5);
    assert_eq!(same.json()["decision"], "INCONCLUSIVE");
    // And the other way round, the faster server is KEEP, in words on the terminal.
    let faster = grade(&slow, &fast, &["--min-effect", "25"]);
    faster.expect_code(0);
    assert!(
        faster.stdout.starts_with("KEEP — output tok/s +"),
        "{}",
        faster.stdout
    );
}

#[test]
fn an_objective_the_base_meets_and_the_candidate_breaks_is_revert() {
    let dir = tempdir();
    // Six phases a side: the fewest whose median phase has a 95 % interval (the extremes,
    // 1 − 2/2⁶ = 96.9 %), so that the objective is judged beyond noise.
    let fast = phases(&dir.path().join("fast"), Duration::from_millis(1), 6);
    let slow = phases(&dir.path().join("slow"), Duration::from_millis(8), 6);
    // Each token takes 1 ms on the base and 8 ms on the candidate: 4 ms per output token
    // separates them with room for what a loaded machine adds to both.
    let run = grade(
        &fast,
        &slow,
        &["--slo", "tpot_ms.median=4", "--min-effect", "1000"],
    );
    run.expect_code(3);
    assert!(
        run.stdout
            .contains("REVERT — the candidate breaks tpot_ms.median ≤ 4: median phase")
            && run.stdout.contains("REVERT  slo tpot_ms.median"),
        "{}",
        run.stdout
    );
}

#[test]
fn profile_runs_missing_folders_and_bad_objectives_are_refused() {
    let dir = tempdir();
    let run_dir = dir.path().join("profile-run");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("results.json"), "{}").unwrap();
    let refused = grade(&run_dir, &run_dir, &[]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("profile runs are never graded"),
        "{}",
        refused.stderr
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let none = grade(&empty, &empty, &[]);
    none.expect_code(2);
    assert!(
        none.stderr.contains("holds no bench documents"),
        "{}",
        none.stderr
    );
    std::fs::write(empty.join("x.json"), "{\"summary\": {}}").unwrap();
    let wrong = grade(&empty, &empty, &[]);
    wrong.expect_code(2);
    assert!(
        wrong
            .stderr
            .contains("not a `stepscope bench --json` document"),
        "{}",
        wrong.stderr
    );
    let bad = grade(&empty, &empty, &["--slo", "ttft.p99=5"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("is not an objective"), "{}", bad.stderr);
}

/// Live phases against two running servers, saved in `out`: graded first at 5 phases a
/// side (the fewest for an interval at 97.5 %, each of the two looks' share of 95 %), then
/// at `max` a side.
fn live(base: &InstantServer, candidate: &InstantServer, out: &Path, max: &str) -> Run {
    let (base, candidate) = (base.base_url(), candidate.base_url());
    let mut args = vec!["grade", &base, &candidate, "--out", out.to_str().unwrap()];
    args.extend([
        "--min-phases",
        "5",
        "--max-phases",
        max,
        "--min-effect",
        "25",
        "--no-progress",
    ]);
    args.extend(LOAD);
    args.extend(PROBES);
    args.push("--json");
    stepscope(args)
}

fn saved_grade(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("grade.json")).unwrap()).expect("grade.json")
}

#[test]
fn live_phases_alternate_stop_when_decided_and_grade_the_same_offline() {
    let dir = tempdir();
    let (fast, slow) = (
        server(Duration::from_millis(2)),
        server(Duration::from_millis(6)),
    );
    let out = dir.path().join("run");
    let run = live(&fast, &slow, &out, "10");
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["decision"], "REVERT", "{doc}");
    assert_eq!(doc["looks"], 2);
    // Decided at the first grading: 5 phases a side, not the budget of 10.
    let count = |side: &str| phase_files(&out.join(side));
    assert_eq!((count("base"), count("candidate")), (5, 5));
    let mut saved = saved_grade(&out);
    let record = saved
        .as_object_mut()
        .unwrap()
        .remove("run")
        .expect("the run");
    assert_eq!(saved, doc);
    assert_eq!(record["status"], "complete");
    assert_eq!(record["stopped_by"], "decided");
    assert_eq!(record["looks_at"], serde_json::json!([5, 10]));
    let order: String = record["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| if p["side"] == "base" { 'A' } else { 'B' })
        .collect();
    assert_eq!(order, "ABBAABBAAB");
    // The command the run printed grades the same phases offline to the same result.
    let regrade = record["regrade"].as_str().unwrap();
    assert!(regrade.contains("--looks 2"), "{regrade}");
    let offline = grade(
        &out.join("base"),
        &out.join("candidate"),
        &["--min-effect", "25", "--looks", "2", "--json"],
    );
    offline.expect_code(3);
    let offline = offline.json();
    assert_eq!(offline["decision"], doc["decision"]);
    assert_eq!(offline["output_throughput"], doc["output_throughput"]);
    assert!(out.join("report.html").is_file());
}

#[test]
fn live_against_the_same_server_spends_the_budget_and_stays_inconclusive() {
    let dir = tempdir();
    let same = server(Duration::from_millis(2));
    let out = dir.path().join("aa");
    let run = live(&same, &same, &out, "6");
    run.expect_code(5);
    assert_eq!(run.json()["decision"], "INCONCLUSIVE");
    let count = |side: &str| phase_files(&out.join(side));
    assert_eq!((count("base"), count("candidate")), (6, 6));
    let record = saved_grade(&out)["run"].clone();
    assert_eq!(record["stopped_by"], "max-phases");
    let fingerprint = &record["sides"][0]["fingerprint"];
    assert_eq!(fingerprint, &Value::Null, "not given, not known");
    // One URL and one folder is refused; so is a run directory that already holds a run.
    let mixed = grade(Path::new(&same.base_url()), &out.join("base"), &[]);
    mixed.expect_code(2);
    assert!(mixed.stderr.contains("not one of each"), "{}", mixed.stderr);
    let again = live(&same, &same, &out, "6");
    again.expect_code(2);
    assert!(again.stderr.contains("runs never mix"), "{}", again.stderr);
}

#[test]
fn too_few_phases_for_the_confidence_say_how_many_it_takes() {
    let dir = tempdir();
    let fast = phases(&dir.path().join("fast"), Duration::from_millis(2), 3);
    let slow = phases(&dir.path().join("slow"), Duration::from_millis(6), 3);
    let run = grade(&fast, &slow, &["--json"]);
    run.expect_code(5);
    let doc = run.json();
    assert_eq!(doc["phases_to_settle"], 4, "{doc}");
    assert!(doc["output_throughput"]["low"].is_null(), "{doc}");
    assert!(
        doc["reason"]
            .as_str()
            .unwrap()
            .contains("cannot give a 95.0 % interval"),
        "{doc}"
    );
}

#[test]
fn a_time_budget_ends_the_run_within_a_second_and_a_given_fingerprint_is_recorded() {
    let dir = tempdir();
    let same = server(Duration::from_millis(2));
    let out = dir.path().join("timed");
    let url = same.base_url();
    let fingerprint = format!("sha256:{}", "ab".repeat(32));
    let mut args = vec!["grade", &url, &url, "--out", out.to_str().unwrap()];
    args.extend(["--max-phases", "50", "--max-time", "2s", "--no-progress"]);
    args.extend(["--base-fingerprint", &fingerprint]);
    args.extend(LOAD);
    args.extend(PROBES);
    let started = std::time::Instant::now();
    let run = stepscope(args);
    let took = started.elapsed();
    run.expect_code(5);
    // The phase or probe running at the budget's end is cut, not waited for.
    assert!(took < Duration::from_secs(6), "took {took:?}");
    // The metrics beside the decision, with their intervals, on the terminal too.
    assert!(
        run.stdout.contains("\nttft_ms.p99: base "),
        "{}",
        run.stdout
    );
    let doc = saved_grade(&out);
    let record = &doc["run"];
    assert_eq!(record["stopped_by"], "max-time", "{record}");
    let (base, candidate) = (
        doc["base"].as_array().unwrap().len(),
        doc["candidate"].as_array().unwrap().len(),
    );
    assert!(
        base.abs_diff(candidate) <= 1 && base < 50,
        "{base} and {candidate}"
    );
    assert_eq!(record["sides"][0]["fingerprint"], fingerprint.as_str());
    assert_eq!(record["sides"][1]["fingerprint"], Value::Null);
    let bad = stepscope([
        "grade",
        url.as_str(),
        url.as_str(),
        "--base-fingerprint",
        "nonsense",
    ]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("--base-fingerprint"), "{}", bad.stderr);
}
