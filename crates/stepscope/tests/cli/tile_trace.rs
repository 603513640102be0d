//! `tile-trace`, the benchmark's trace multiplier: a real trace repeated in time reads back
//! with every event copied, replays and verdict intact.

use crate::common::{VLLM_PIECEWISE, arg, gunzip, stepscope, tempdir, trace, u64_at};
use std::process::Command;

#[test]
fn tiled_trace_reads_back_with_every_replay_copied() {
    let dir = tempdir();
    let copies = 3_u64;
    let size = gunzip(VLLM_PIECEWISE).len() as u64;
    for gzip in [false, true] {
        let out = dir
            .path()
            .join(if gzip { "tiled.json.gz" } else { "tiled.json" });
        let mut command = Command::new(env!("CARGO_BIN_EXE_tile-trace"));
        command
            .arg(trace(VLLM_PIECEWISE))
            .args(["--target-bytes", &(copies * size - 1).to_string(), "-o"])
            .arg(&out);
        if gzip {
            command.arg("--gzip");
        }
        let status = command.status().expect("tile-trace runs");
        assert!(status.success());
        let original = stepscope(["analyze", VLLM_PIECEWISE, "--json"]).json();
        let tiled = stepscope(["analyze".as_ref(), arg(&out), "--json".as_ref()]);
        tiled.expect_code(0);
        let tiled = tiled.json();
        for pointer in [
            "/files/0/events/kernels",
            "/files/0/events/runtime_calls",
            "/files/0/events/cpu_ops",
            "/files/0/replay_coverage/replays",
        ] {
            assert_eq!(
                u64_at(&tiled, pointer),
                copies * u64_at(&original, pointer),
                "{pointer} (gzip: {gzip})"
            );
        }
        // The piecewise trace's 12- and 4-kernel graphs replay once each, so their sizes rest
        // on themselves (`unverified`); three copies corroborate them.
        assert_eq!(original["verdict"], "unverified");
        assert_eq!(tiled["verdict"], "complete");
    }
}

#[test]
fn tile_trace_refuses_a_bad_size_and_a_missing_input() {
    let dir = tempdir();
    let out = dir.path().join("x.json");
    let bad_size = Command::new(env!("CARGO_BIN_EXE_tile-trace"))
        .arg(trace(VLLM_PIECEWISE))
        .args(["--target-bytes", "12 parsecs", "-o"])
        .arg(&out)
        .output()
        .expect("runs");
    assert_eq!(bad_size.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_size.stderr).contains("--target-bytes"));
    let missing = Command::new(env!("CARGO_BIN_EXE_tile-trace"))
        .args(["no/such/trace.json", "--target-bytes", "1M", "-o"])
        .arg(&out)
        .output()
        .expect("runs");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/trace.json"));
}
