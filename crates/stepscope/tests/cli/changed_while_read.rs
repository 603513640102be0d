//! A trace cut while `analyze` reads it is an error naming the file, never a signal (a
//! mapped page past a file's new end raises SIGBUS, which killed the process before).

use crate::common::{Run, assert_no_panic};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A plain Kineto document of `events` kernels (some tens of megabytes: long enough to read
/// that a cut lands in the middle of the read).
fn write_kineto(path: &Path, events: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    out.write_all(b"{\"traceEvents\": [\n").expect("write");
    for i in 0..events {
        let comma = if i + 1 == events { "" } else { "," };
        writeln!(
            out,
            r#"{{"ph": "X", "cat": "kernel", "name": "gemm_{}", "pid": 0, "tid": 7, "ts": {}, "dur": 5, "args": {{"correlation": {i}, "device": 0, "stream": 7}}}}{comma}"#,
            i % 97,
            1000 + 10 * i
        )
        .expect("write");
    }
    out.write_all(b"]}\n").expect("write");
    out.flush().expect("flush");
}

/// Waits until process `pid` has `path` mapped (its `/proc/PID/maps` lists it), so that a
/// cut lands in the read however loaded the machine is; at most 10 s.
fn wait_until_mapped(pid: u32, path: &Path) {
    let maps = format!("/proc/{pid}/maps");
    let name = path.to_string_lossy().into_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        match std::fs::read_to_string(&maps) {
            Ok(text) if text.contains(&name) => return,
            Ok(_) => std::thread::sleep(Duration::from_micros(200)),
            Err(_) => return,
        }
    }
}

/// `analyze PATH`, with the file cut to a few pages `after` the reader mapped it.
fn analyze_cut_after(path: &Path, after: Duration) -> Run {
    let child = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args(["analyze", "--no-progress", "--color", "never"])
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stepscope starts");
    wait_until_mapped(child.id(), path);
    std::thread::sleep(after);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    file.set_len(8192).expect("cut");
    let output = child.wait_with_output().expect("stepscope ends");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn a_trace_cut_while_analysed_is_an_error_naming_it_never_a_signal() {
    let dir = crate::common::tempdir();
    let path = dir.path().join("still_writing.json");
    let mut told = 0;
    for after_ms in [0, 5, 20, 60, 150] {
        write_kineto(&path, 400_000);
        let run = analyze_cut_after(&path, Duration::from_millis(after_ms));
        // Never killed by a signal (SIGBUS), never a panic.
        assert_no_panic(&run);
        if run.stderr.contains("changed while it was read") {
            assert_eq!(run.code, Some(2), "{}", run.stderr);
            assert!(run.stderr.contains("still_writing.json"), "{}", run.stderr);
            told += 1;
        }
    }
    assert!(
        told > 0,
        "no cut landed inside a read: make the file longer"
    );
}
