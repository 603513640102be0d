//! Trace collection on real traces, written under each framework's
//! file names by a thread that plays the framework (slowly, in chunks, cut off, or ATOM's
//! `.json` then `.json.gz`), the way a window's files appear after it closes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use stepscope_serving::Framework;
use stepscope_serving::collect::{CollectError, CollectOptions, TraceSnapshot, collect_traces};

const SGLANG_DECODE: &str =
    "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
const VLLM_PIECEWISE: &str =
    "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz";

fn shared(relative: &str) -> Vec<u8> {
    stepscope_testdata::read(relative)
}

fn quick() -> CollectOptions {
    CollectOptions {
        timeout: Duration::from_secs(20),
        settle: Duration::from_millis(400),
        poll: Duration::from_millis(50),
        ..CollectOptions::default()
    }
}

/// Writes `bytes` to `path` in `chunks` pieces, `pause` apart, on another thread.
fn write_slowly(
    path: PathBuf,
    bytes: Vec<u8>,
    chunks: usize,
    pause: Duration,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("folder");
        }
        let mut file = std::fs::File::create(&path).expect("create");
        for piece in bytes.chunks(bytes.len().div_ceil(chunks)) {
            file.write_all(piece).expect("write");
            file.flush().expect("flush");
            std::thread::sleep(pause);
        }
    })
}

#[test]
fn vllm_rank_and_front_end_files_are_waited_for_and_moved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces = dir.path().join("traces");
    std::fs::create_dir_all(&traces).expect("folder");
    let old = traces.join("rank0.1.pt.trace.json.gz");
    std::fs::write(&old, b"an earlier window's file").expect("write");
    let before = TraceSnapshot::take(&traces);
    let bytes = shared(VLLM_PIECEWISE);
    let writers = [
        write_slowly(
            traces.join("rank0.1773709679453551615.pt.trace.json.gz"),
            bytes.clone(),
            8,
            Duration::from_millis(150),
        ),
        write_slowly(
            traces.join("vm_1.async_llm.1773709679.pt.trace.json.gz"),
            shared(SGLANG_DECODE),
            2,
            Duration::from_millis(100),
        ),
    ];
    std::fs::write(traces.join("server.log"), b"not a trace").expect("write");
    let run = dir.path().join("run/window_1");
    let mut lines = Vec::new();
    let collected = collect_traces(Framework::Vllm, &traces, &before, &run, quick(), &mut |l| {
        lines.push(l.to_owned())
    })
    .expect("collected");
    for writer in writers {
        writer.join().expect("writer");
    }
    let names: Vec<String> = collected
        .traces
        .iter()
        .map(|t| t.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "rank0.1773709679453551615.pt.trace.json.gz",
            "vm_1.async_llm.1773709679.pt.trace.json.gz"
        ]
    );
    assert!(collected.incomplete.is_empty());
    assert_eq!(
        std::fs::read(&collected.traces[0].path).expect("moved"),
        bytes,
        "byte for byte"
    );
    assert!(!collected.traces[0].source.exists(), "moved, not copied");
    assert!(
        old.exists(),
        "the earlier window's file is not this window's"
    );
    assert!(
        !lines.is_empty() && lines[0].contains("waiting for traces"),
        "{lines:?}"
    );
}

#[test]
fn a_cut_off_file_is_reported_by_name_and_left_where_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces = dir.path().join("traces");
    let before = TraceSnapshot::take(&traces);
    let bytes = shared(SGLANG_DECODE);
    let whole = traces.join("1764-TP-0-DECODE.trace.json.gz");
    let cut = traces.join("1764-TP-1-DECODE.trace.json.gz");
    write_slowly(whole, bytes.clone(), 1, Duration::ZERO)
        .join()
        .expect("write");
    write_slowly(
        cut.clone(),
        bytes[..bytes.len() / 2].to_vec(),
        1,
        Duration::ZERO,
    )
    .join()
    .expect("write");
    let run = dir.path().join("run");
    let collected = collect_traces(
        Framework::Sglang,
        &traces,
        &before,
        &run,
        quick(),
        &mut |_| {},
    )
    .expect("collected");
    assert_eq!(collected.traces.len(), 1);
    assert_eq!(collected.incomplete.len(), 1);
    assert_eq!(collected.incomplete[0].path, cut);
    assert!(
        collected.incomplete[0].reason.contains("gzip"),
        "{:?}",
        collected.incomplete[0]
    );
    assert!(cut.exists());
}

#[test]
fn atom_files_count_once_their_json_is_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces = dir.path().join("traces");
    let before = TraceSnapshot::take(&traces);
    let rank = traces.join("rank_0");
    std::fs::create_dir_all(&rank).expect("folder");
    let json = rank.join("trace_0.json");
    std::fs::write(&json, b"{\"traceEvents\": [").expect("write");
    std::fs::write(rank.join("trace_0.json.gz"), shared(SGLANG_DECODE)).expect("write");
    let remover = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1200));
        std::fs::remove_file(json).expect("remove");
    });
    let started = std::time::Instant::now();
    let run = dir.path().join("run");
    let collected = collect_traces(
        Framework::Atom,
        &traces,
        &before,
        &run,
        quick(),
        &mut |_| {},
    )
    .expect("collected");
    remover.join().expect("remover");
    assert!(
        started.elapsed() >= Duration::from_millis(1200),
        "waited for the .json to go"
    );
    assert_eq!(collected.traces.len(), 1);
    assert_eq!(collected.traces[0].path, run.join("rank_0/trace_0.json.gz"));
}

#[test]
fn no_trace_at_all_is_an_error_saying_where_it_looked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces = dir.path().join("traces");
    std::fs::create_dir_all(&traces).expect("folder");
    std::fs::write(traces.join("profile.txt"), b"not a trace name").expect("write");
    let before = TraceSnapshot::default();
    let options = CollectOptions {
        timeout: Duration::from_millis(300),
        ..quick()
    };
    let error = collect_traces(
        Framework::Vllm,
        &traces,
        &before,
        &dir.path().join("run"),
        options,
        &mut |_| {},
    )
    .expect_err("nothing to collect");
    assert!(matches!(error, CollectError::NoTrace { .. }));
    let message = error.to_string();
    assert!(
        message.contains(&traces.display().to_string()) && message.contains("torch_profiler_dir"),
        "{message}"
    );
}

#[test]
fn a_plain_json_trace_cut_off_is_incomplete() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces: &Path = dir.path();
    let before = TraceSnapshot::take(traces);
    std::fs::write(
        traces.join("7-TP-0.trace.json"),
        b"{\"traceEvents\": [{\"ph\": \"X\"},",
    )
    .expect("write");
    let collected = collect_traces(
        Framework::Sglang,
        traces,
        &before,
        &traces.join("run"),
        quick(),
        &mut |_| {},
    )
    .expect("collected");
    assert!(collected.traces.is_empty());
    assert!(collected.incomplete[0].reason.contains("cut off"));
}
