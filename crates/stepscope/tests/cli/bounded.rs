//! Bounded resources on hostile inputs: a small compressed file that inflates to gigabytes is
//! refused after its first inflated megabytes (under a data limit of 64 MiB, its peak memory
//! measured), and a FIFO or device is never opened (a FIFO would wait for a writer forever).

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

/// The data (heap and private mappings) the binary may use for the bomb: what the read needs,
/// with room; inflating the bomb whole (2 GiB) cannot fit in it.
const DATA_LIMIT: u64 = 64 << 20;

/// Runs the binary with `args` under [`DATA_LIMIT`] (`RLIMIT_DATA`, set in the child before
/// it runs), returning its exit code, stderr and its peak resident memory in bytes as
/// `/proc/PID/status` (`VmHWM`) last showed it while it ran. `VmHWM` is the binary's own (its
/// memory since `exec`); `wait4`'s `ru_maxrss` is not, as it keeps the test process's peak
/// from before the `exec`.
fn run_bounded(args: &[&std::ffi::OsStr]) -> (i32, String, u64) {
    use std::os::unix::process::CommandExt as _;
    let stderr = tempfile::NamedTempFile::new().expect("temp");
    let mut command = Command::new(env!("CARGO_BIN_EXE_stepscope"));
    command
        .args(args)
        .stdout(Stdio::null())
        .stderr(stderr.reopen().expect("reopen"));
    // SAFETY: `setrlimit` is async-signal-safe; the closure touches nothing of the parent.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: DATA_LIMIT,
                rlim_max: DATA_LIMIT,
            };
            match libc::setrlimit(libc::RLIMIT_DATA, &raw const limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let mut child = command.spawn().expect("the stepscope binary runs");
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Some(kb) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|text| vm_hwm_kb(&text))
        {
            peak = peak.max(kb * 1024);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let text = std::fs::read_to_string(stderr.path()).expect("stderr");
    (status.code().unwrap_or(-1), text, peak)
}

/// `VmHWM:   12345 kB` of a `/proc/PID/status`.
fn vm_hwm_kb(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
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
        let (code, stderr, peak) = run_bounded(&["analyze".as_ref(), arg(&bomb)]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        // Measured (read at least once while it ran) and well under 100 MB.
        assert!(peak > 0, "VmHWM never read");
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
