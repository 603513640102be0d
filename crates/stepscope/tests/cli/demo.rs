//! `stepscope demo`: the built-in example says COMPLETE, then INCOMPLETE with the replay count
//! the generator built in.

use crate::common::{arg, stepscope, stepscope_in, str_at, tempdir, u64_at};
use std::ffi::OsStr;
use stepscope_synth::demo::{DemoSpec, facts};

/// The three numbered parts of the demo's output.
fn parts(out: &str) -> (&str, &str, &str) {
    let one = out.find("━━ 1.").expect("part 1");
    let two = out.find("━━ 2.").expect("part 2");
    let three = out.find("━━ 3.").expect("part 3");
    assert!(one < two && two < three, "parts in order");
    (&out[one..two], &out[two..three], &out[three..])
}

/// `(N, M)` of "kernels of N of M graph replays recorded".
fn recorded_of(part: &str) -> (u64, u64) {
    let at = part
        .find("kernels of ")
        .unwrap_or_else(|| panic!("no `kernels of` in {part}"));
    let words: Vec<&str> = part[at + "kernels of ".len()..]
        .split_whitespace()
        .take(3)
        .collect();
    let number = |w: &str| w.parse::<u64>().unwrap_or_else(|_| panic!("{w} in {part}"));
    match words.as_slice() {
        ["all", m, _] => (number(m), number(m)),
        [n, "of", m] => (number(n), number(m)),
        other => panic!("unexpected {other:?}"),
    }
}

fn run_demo(extra: &[&str]) -> String {
    let tmp = tempdir();
    let mut args = vec!["demo", "--color", "never"];
    args.extend_from_slice(extra);
    let run = stepscope_in(
        tmp.path(),
        args,
        &[("TMPDIR", tmp.path().as_os_str() as &OsStr)],
    );
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
    run.stdout
}

#[test]
fn demo_says_complete_then_incomplete_with_the_kept_replays() {
    let out = run_demo(&[]);
    let truth = facts(&DemoSpec::default());
    let (one, two, three) = parts(&out);
    assert!(one.contains("replay coverage: COMPLETE"), "{one}");
    assert!(!one.contains("INCOMPLETE"), "{one}");
    assert!(two.contains("replay coverage: INCOMPLETE"), "{two}");
    assert_eq!(
        recorded_of(one),
        (truth.replays as u64, truth.replays as u64)
    );
    assert_eq!(
        recorded_of(two),
        (truth.replays_kept_with_symptom as u64, truth.replays as u64)
    );
    // The part's title states the same count.
    let title = format!("({} of {})", truth.replays_kept_with_symptom, truth.replays);
    assert!(two.lines().next().expect("title").contains(&title), "{two}");
    assert!(three.contains("decode time"), "{three}");
    assert!(out.starts_with(&format!(
        "stepscope demo: an SGLang server on ROCm (HIP 7.2), {} decode steps as graph replays of {} kernels, {} prefill steps eager.",
        truth.decode_steps, truth.kernels_per_replay, truth.prefill_steps
    )));
}

#[test]
fn demo_steps_flag_changes_the_facts() {
    let out = run_demo(&["--steps", "20"]);
    let truth = facts(&DemoSpec {
        decode_steps: 20,
        ..DemoSpec::default()
    });
    let (one, two, _) = parts(&out);
    assert_eq!(recorded_of(one), (20, 20));
    assert_eq!(
        recorded_of(two),
        (truth.replays_kept_with_symptom as u64, 20)
    );
}

#[test]
fn demo_keep_writes_traces_that_analyze_reads_the_same_way() {
    let dir = tempdir();
    let run = stepscope([
        "demo".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
        "--keep".as_ref(),
        arg(dir.path()),
    ]);
    run.expect_code(0);
    let complete = dir.path().join("demo_complete.trace.json.gz");
    let broken = dir.path().join("demo_rocm_symptom.trace.json.gz");
    assert!(
        run.stdout.contains(&format!(
            "traces kept: {} and {}",
            complete.display(),
            broken.display()
        )),
        "{}",
        run.stdout
    );
    let truth = facts(&DemoSpec::default());
    let analyze = |path: &std::path::Path| {
        let run = stepscope(["analyze".as_ref(), arg(path), "--json".as_ref()]);
        run.expect_code(0);
        run.json()
    };
    let good = analyze(&complete);
    assert_eq!(str_at(&good, "/verdict"), "complete");
    assert_eq!(
        u64_at(&good, "/files/0/replay_coverage/replays"),
        truth.replays as u64
    );
    // Every replay has every kernel of the graph.
    assert_eq!(
        u64_at(&good, "/files/0/replay_coverage/recorded_nodes"),
        (truth.replays * truth.kernels_per_replay) as u64
    );
    let per_replay = "/files/0/replay_coverage/graphs/0/expected_nodes_per_replay";
    assert_eq!(u64_at(&good, per_replay), truth.kernels_per_replay as u64);
    assert_eq!(
        u64_at(&good, "/files/0/replay_coverage/complete_replays"),
        truth.replays as u64
    );
    let bad = analyze(&broken);
    assert_eq!(str_at(&bad, "/verdict"), "incomplete");
    assert_eq!(
        u64_at(&bad, "/files/0/replay_coverage/recorded_replays"),
        truth.replays_kept_with_symptom as u64
    );
    assert_eq!(
        u64_at(&bad, "/files/0/replay_coverage/empty_replays"),
        (truth.replays - truth.replays_kept_with_symptom) as u64
    );
    assert_eq!(
        u64_at(&bad, "/files/0/steps/counts/sglang:EXTEND"),
        truth.prefill_steps as u64
    );
}
