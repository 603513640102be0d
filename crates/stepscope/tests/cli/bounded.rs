//! Bounded resources on hostile inputs: a small compressed file that inflates to gigabytes is
//! refused after its first inflated megabytes (peak memory measured), and a FIFO or device is
//! never opened (a FIFO would wait for a writer forever).

use crate::common::{SGLANG_DECODE, arg, copy_trace, stepscope, tempdir};
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// 2 GiB of `byte` as 32 gzip members of 64 MiB each (a gzip file may hold several members,
/// read one after another), a few MB on disk.
fn gzip_bomb(path: &Path, byte: u8) {
    let mut member = GzEncoder::new(Vec::new(), Compression::fast());
    let zeros = vec![byte; 1 << 20];
    for _ in 0..64 {
        member.write_all(&zeros).expect("compress");
    }
    let member = member.finish().expect("compress");
    let mut file = std::fs::File::create(path).expect("create");
    for _ in 0..32 {
        file.write_all(&member).expect("write");
    }
}

/// Runs the binary with `args` and returns its exit code, stderr and peak resident memory in
/// bytes, measured by `wait4` for this one child (other tests' children do not count).
#[allow(
    clippy::zombie_processes,
    reason = "the child is reaped by `wait4`, not `wait`"
)]
fn run_measured(args: &[&std::ffi::OsStr]) -> (i32, String, u64) {
    let stderr = tempfile::NamedTempFile::new().expect("temp");
    let child = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(stderr.reopen().expect("reopen"))
        .spawn()
        .expect("the stepscope binary runs");
    let pid = i32::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value for `wait4` to fill.
    #[allow(unsafe_code)]
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for; both pointers are to live locals.
    #[allow(unsafe_code)]
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(waited, pid, "wait4");
    assert!(libc::WIFEXITED(status), "exited normally, status {status}");
    let text = std::fs::read_to_string(stderr.path()).expect("stderr");
    let peak = u64::try_from(usage.ru_maxrss).expect("maxrss") * 1024;
    (libc::WEXITSTATUS(status), text, peak)
}

/// Zeros (no format) and spaces (blank: no profiler indents a document by a megabyte).
#[test]
fn a_gzip_bomb_is_refused_after_little_inflation() {
    let dir = tempdir();
    for (byte, says) in [
        (0, "is not a format stepscope reads"),
        (b' ', "inflated bytes are only whitespace"),
    ] {
        let bomb = dir.path().join("bomb.json.gz");
        gzip_bomb(&bomb, byte);
        let size = std::fs::metadata(&bomb).expect("bomb").len();
        assert!(size < 32 << 20, "the bomb is small on disk: {size} bytes");
        let started = Instant::now();
        let (code, stderr, peak) = run_measured(&["analyze".as_ref(), arg(&bomb)]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(
            peak < 100 << 20,
            "peak RSS {} MB refusing a bomb",
            peak >> 20
        );
        let took = started.elapsed();
        assert!(took < Duration::from_secs(20), "{took:?}");
    }
}

#[test]
fn a_fifo_in_a_folder_is_passed_over_and_one_given_is_refused() {
    let dir = tempdir();
    copy_trace(SGLANG_DECODE, dir.path(), "rank0.json.gz");
    let fifo = dir.path().join("rank1.json");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let run = stepscope(["analyze".as_ref(), arg(dir.path()), "--json".as_ref()]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["files"].as_array().expect("files").len(), 1);
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains("is a FIFO (named pipe), not a file: passed over"),
        "{warnings}"
    );

    for given in [fifo.as_path(), Path::new("/dev/zero")] {
        let run = stepscope(["analyze".as_ref(), arg(given)]);
        run.expect_code(2);
        assert!(run.stderr.contains("not a file"), "{}", run.stderr);
        assert!(!run.stderr.contains("empty"), "{}", run.stderr);
    }
}
