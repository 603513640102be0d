//! Helpers shared by the integration tests: read options, trace comparison, scratch files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use stepscope_ingest::{IngestError, ReadOptions, read_trace_bytes};
use stepscope_model::Trace;

/// Read options with `threads` parse threads.
pub fn options(threads: usize, allow_truncated: bool) -> ReadOptions {
    ReadOptions::default()
        .with_threads(threads)
        .with_allow_truncated(allow_truncated)
}

/// Reads decompressed bytes with `threads` threads.
pub fn read(bytes: &[u8], threads: usize, allow_truncated: bool) -> Result<Trace, IngestError> {
    read_trace_bytes(bytes, &options(threads, allow_truncated))
}

fn dbg(value: &impl std::fmt::Debug) -> String {
    format!("{value:?}")
}

/// Where two traces first differ, or `None` when every column, name and counter is the same.
pub fn trace_difference(a: &Trace, b: &Trace) -> Option<String> {
    let names = |t: &Trace| {
        t.names
            .iter()
            .map(|(_, s)| s.to_owned())
            .collect::<Vec<_>>()
    };
    let op_args = |t: &Trace| {
        t.op_args
            .iter()
            .map(|(_, args)| dbg(&args))
            .collect::<Vec<_>>()
    };
    let sections: [(&str, String, String); 14] = [
        ("names", dbg(&names(a)), dbg(&names(b))),
        ("processes", dbg(&a.processes), dbg(&b.processes)),
        (
            "process_names",
            dbg(&a.process_names),
            dbg(&b.process_names),
        ),
        ("gpu", dbg(&a.gpu), dbg(&b.gpu)),
        ("runtime", dbg(&a.runtime), dbg(&b.runtime)),
        ("annotations", dbg(&a.annotations), dbg(&b.annotations)),
        (
            "gpu_annotations",
            dbg(&a.gpu_annotations),
            dbg(&b.gpu_annotations),
        ),
        ("cpu_ops", dbg(&a.cpu_ops), dbg(&b.cpu_ops)),
        ("op_args", dbg(&op_args(a)), dbg(&op_args(b))),
        ("flows", dbg(&a.flows), dbg(&b.flows)),
        ("metadata", dbg(&a.metadata), dbg(&b.metadata)),
        ("counts", dbg(&a.counts), dbg(&b.counts)),
        ("stats", dbg(&a.stats), dbg(&b.stats)),
        ("damaged", dbg(&a.damaged), dbg(&b.damaged)),
    ];
    let (section, x, y) = sections.into_iter().find(|(_, x, y)| x != y)?;
    let at = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
    let excerpt = |s: &str| {
        s.get(at.saturating_sub(40)..)
            .unwrap_or("")
            .chars()
            .take(120)
            .collect::<String>()
    };
    Some(format!(
        "`{section}` differs near char {at}:\n  {}\n  {}",
        excerpt(&x),
        excerpt(&y)
    ))
}

/// A short, path-free description of a read's outcome, to compare two reads.
pub fn outcome(result: &Result<Trace, IngestError>) -> String {
    match result {
        Ok(trace) => format!("ok: {} events", trace.counts.events),
        Err(IngestError::Json {
            offset,
            message,
            truncated,
            ..
        }) => format!("json error at {offset} (truncated: {truncated}): {message}"),
        Err(IngestError::UnknownFormat { .. }) => "unknown format".to_owned(),
        Err(IngestError::Empty { .. }) => "empty".to_owned(),
        Err(IngestError::NotATrace { reason, .. }) => format!("not a trace: {reason}"),
        Err(other) => other.to_string(),
    }
}

/// Checks that two reads agree: the same trace, or the same error.
pub fn same_result(
    a: &Result<Trace, IngestError>,
    b: &Result<Trace, IngestError>,
) -> Result<(), String> {
    if let (Ok(x), Ok(y)) = (a, b) {
        return trace_difference(x, y).map_or(Ok(()), Err);
    }
    let (x, y) = (outcome(a), outcome(b));
    if x == y {
        Ok(())
    } else {
        Err(format!("{x} | {y}"))
    }
}

/// Reads `bytes` at 1 thread and at each of `threads`, checks all agree, returns the first.
pub fn read_all_thread_counts(
    bytes: &[u8],
    allow_truncated: bool,
    threads: &[usize],
) -> Result<Result<Trace, IngestError>, String> {
    let one = read(bytes, 1, allow_truncated);
    for &n in threads {
        same_result(&one, &read(bytes, n, allow_truncated))
            .map_err(|e| format!("1 vs {n} threads (allow_truncated={allow_truncated}): {e}"))?;
    }
    Ok(one)
}

/// Whether `bytes` are nothing but JSON whitespace after an optional byte-order mark: what
/// the readers call an empty input.
pub fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(bytes)
        .iter()
        .all(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
}

/// A file in the temp directory, unique to this process and call, removed on drop.
#[derive(Debug)]
pub struct ScratchFile(PathBuf);

impl ScratchFile {
    /// A new scratch file holding `bytes`; `name` ends the file name.
    pub fn new(name: &str, bytes: &[u8]) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "stepscope-ingest-it-{}-{unique}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, bytes).expect("write scratch file");
        ScratchFile(path)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// gzip of `bytes`.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip into memory");
    encoder.finish().expect("gzip into memory")
}

/// A real trace, checked to exist (the curated set, or the corpus in the corpus group).
pub fn shared(relative: &str) -> PathBuf {
    stepscope_testdata::trace(relative)
}

/// Settings for property tests over documents of several MiB: few cases, and no
/// regression file (a shrunk case would be megabytes of `Debug` text).
pub fn big_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        failure_persistence: None,
        ..proptest::test_runner::Config::with_cases(cases)
    }
}
