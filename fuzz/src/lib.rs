//! Checks shared by the stepscope fuzz targets.
//!
//! Every target asserts the reader's contract: it never panics, it reports malformed JSON
//! as [`IngestError::Json`] with an offset inside the input, `allow_truncated` turns every
//! break into a partial trace (an empty input, or a complete document that is not a trace,
//! stays an error), and the result never depends on the number of threads.

pub mod efficiency;

use std::io::Write;
use std::path::{Path, PathBuf};
use stepscope_ingest::{IngestError, ReadOptions, TraceFormat, read_trace_bytes, read_trace_file};
use stepscope_model::Trace;

/// Arbitrary bytes forced as the database `format`, with and without `allow_truncated`: no
/// panic; a database reads (no negative duration stored, and `check` holds) or fails with
/// `IngestError::Sqlite`, which names where.
pub fn check_database(data: &[u8], format: TraceFormat, check: impl Fn(&Trace)) {
    for allow in [false, true] {
        let options = ReadOptions::default()
            .with_format(Some(format))
            .with_allow_truncated(allow);
        match read_trace_bytes(data, &options) {
            Ok(trace) => {
                assert!(trace.gpu.duration.iter().all(|d| d.as_nanos() >= 0));
                assert!(trace.runtime.duration.iter().all(|d| d.as_nanos() >= 0));
                check(&trace);
            }
            Err(IngestError::Sqlite { place, .. }) => assert!(!place.is_empty()),
            Err(IngestError::Empty { .. }) => {}
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
}

/// Read options with `threads` parse threads.
pub fn options(threads: usize, allow_truncated: bool) -> ReadOptions {
    ReadOptions::default()
        .with_threads(threads)
        .with_allow_truncated(allow_truncated)
}

/// Where two traces first differ, or `None` when every column is the same.
pub fn trace_difference(a: &Trace, b: &Trace) -> Option<String> {
    let names = |t: &Trace| {
        t.names
            .iter()
            .map(|(_, s)| s.to_owned())
            .collect::<Vec<_>>()
    };
    let sections: [(&str, String, String); 12] = [
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
        ("flows", dbg(&a.flows), dbg(&b.flows)),
        ("metadata", dbg(&a.metadata), dbg(&b.metadata)),
        ("counts", dbg(&a.counts), dbg(&b.counts)),
        ("stats", dbg(&a.stats), dbg(&b.stats)),
        ("damaged", dbg(&a.damaged), dbg(&b.damaged)),
    ];
    sections
        .into_iter()
        .find(|(_, x, y)| x != y)
        .map(|(section, x, y)| {
            let at = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
            let excerpt = |s: &str| {
                s.get(at.saturating_sub(40)..)
                    .unwrap_or("")
                    .chars()
                    .take(120)
                    .collect::<String>()
            };
            format!(
                "`{section}` differs near char {at}: {} | {}",
                excerpt(&x),
                excerpt(&y)
            )
        })
}

fn dbg(value: &impl std::fmt::Debug) -> String {
    format!("{value:?}")
}

/// The error's text with the file path removed, to compare a file read with a bytes read.
fn error_without_path(error: &IngestError) -> String {
    match error {
        IngestError::Json {
            offset,
            message,
            truncated,
            ..
        } => format!("json at {offset} ({truncated}): {message}"),
        IngestError::UnknownFormat { .. } => "unknown format".to_owned(),
        IngestError::Empty { .. } => "empty".to_owned(),
        IngestError::NotATrace { reason, .. } => format!("not a trace: {reason}"),
        other => other.to_string(),
    }
}

/// Asserts two reads of the same input agree: both the same trace, or the same error.
pub fn assert_same_result(
    what: &str,
    a: &Result<Trace, IngestError>,
    b: &Result<Trace, IngestError>,
) {
    match (a, b) {
        (Ok(x), Ok(y)) => {
            assert_eq!(
                x.counts.events, y.counts.events,
                "{what}: event counts differ"
            );
            if let Some(difference) = trace_difference(x, y) {
                panic!("{what}: traces differ: {difference}");
            }
        }
        (Err(x), Err(y)) => {
            assert_eq!(
                error_without_path(x),
                error_without_path(y),
                "{what}: errors differ"
            );
        }
        (x, y) => panic!(
            "{what}: one read failed, the other did not: {:?} vs {:?}",
            x.as_ref().map(|t| t.counts.events),
            y.as_ref().map(|t| t.counts.events)
        ),
    }
}

/// Asserts what `allow_truncated` promises, given the strict and the lenient read of an
/// input whose decompressed length is `len` (`usize::MAX` when unknown).
pub fn assert_allow_truncated(
    len: usize,
    strict: &Result<Trace, IngestError>,
    lenient: &Result<Trace, IngestError>,
) {
    match (strict, lenient) {
        (Ok(full), Ok(partial)) => {
            assert_eq!(
                partial.stats.truncated_at_byte, None,
                "complete read marked truncated"
            );
            if let Some(difference) = trace_difference(full, partial) {
                panic!("allow_truncated changed a complete read: {difference}");
            }
        }
        (Err(IngestError::Json { offset, .. }), Ok(partial)) => {
            assert!(
                *offset <= len as u64,
                "offset {offset} past the end ({len})"
            );
            assert_eq!(partial.stats.truncated_at_byte, Some(*offset));
        }
        (Err(IngestError::Decompress { .. }), Ok(partial)) => {
            assert!(
                partial.stats.truncated_at_byte.is_some(),
                "partial inflate not marked"
            );
        }
        (Err(IngestError::UnknownFormat { .. }), Err(IngestError::UnknownFormat { .. })) => {}
        (Err(IngestError::Decompress { .. }), Err(IngestError::UnknownFormat { .. })) => {}
        // Nothing before a break to keep: an empty input, or a whole document without events.
        (Err(IngestError::Empty { .. }), Err(IngestError::Empty { .. })) => {}
        (Err(IngestError::NotATrace { .. }), Err(IngestError::NotATrace { .. })) => {}
        (Err(IngestError::Decompress { .. }), Err(IngestError::NotATrace { .. })) => {}
        (x, y) => panic!(
            "allow_truncated: unexpected pair: {:?} / {:?}",
            x.as_ref().err().map(ToString::to_string),
            y.as_ref().err().map(ToString::to_string)
        ),
    }
}

/// Reads decompressed bytes at 1 and 2 threads, strict and lenient, and checks they agree.
pub fn check_bytes(data: &[u8]) {
    let strict = read_trace_bytes(data, &options(1, false));
    let lenient = read_trace_bytes(data, &options(1, true));
    assert_allow_truncated(data.len(), &strict, &lenient);
    assert_same_result(
        "1 vs 2 threads (strict)",
        &strict,
        &read_trace_bytes(data, &options(2, false)),
    );
    assert_same_result(
        "1 vs 2 threads (allow_truncated)",
        &lenient,
        &read_trace_bytes(data, &options(2, true)),
    );
}

/// A scratch file for this process, reused by every run.
fn scratch_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("stepscope-fuzz-{}-{tag}", std::process::id()))
}

fn write_file(path: &Path, data: &[u8]) {
    let mut file = std::fs::File::create(path).expect("create scratch file");
    file.write_all(data).expect("write scratch file");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).expect("gzip into memory");
    encoder.finish().expect("gzip into memory")
}

/// Reads `data` as a file (so gzip/zstd inflation runs), then `data` gzip- and
/// zstd-compressed, whole and cut, and checks each agrees with reading the bytes.
pub fn check_file(data: &[u8]) {
    let path = scratch_path("input");
    write_file(&path, data);
    let strict = read_trace_file(&path, &options(1, false));
    let lenient = read_trace_file(&path, &options(1, true));
    let compressed = data.starts_with(&[0x1f, 0x8b]) || data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]);
    let len = if compressed { usize::MAX } else { data.len() };
    assert_allow_truncated(len, &strict, &lenient);
    if compressed {
        return;
    }
    let plain = read_trace_bytes(data, &options(1, false));
    assert_same_result("file vs bytes", &plain, &strict);
    let gz = gzip(data);
    write_file(&path, &gz);
    assert_same_result(
        "gzip vs bytes",
        &plain,
        &read_trace_file(&path, &options(1, false)),
    );
    let zst = zstd::stream::encode_all(data, 1).expect("zstd into memory");
    write_file(&path, &zst);
    assert_same_result(
        "zstd vs bytes",
        &plain,
        &read_trace_file(&path, &options(1, false)),
    );
    let cut = &gz[..gz.len() / 2];
    write_file(&path, cut);
    let strict = read_trace_file(&path, &options(1, false));
    let lenient = read_trace_file(&path, &options(1, true));
    assert_allow_truncated(data.len(), &strict, &lenient);
}

/// A filler event of exactly `len` bytes (at least [`FILLER_MIN`]).
fn push_filler(out: &mut Vec<u8>, len: usize, pad: &[u8]) {
    const HEAD: &[u8] =
        br#"{"ph":"X","cat":"cpu_op","name":"filler","ts":1,"dur":1,"args":{"pad":""#;
    const TAIL: &[u8] = br#""}}"#;
    out.extend_from_slice(HEAD);
    out.extend_from_slice(&pad[..len - HEAD.len() - TAIL.len()]);
    out.extend_from_slice(TAIL);
}

/// The smallest filler event.
pub const FILLER_MIN: usize = 80;

/// Bytes the parallel reader needs before it splits the array (`MIN_PARALLEL_BYTES`).
pub const PARALLEL_BYTES: usize = 4 << 20;

/// Builds `[filler, data, filler]`, at least [`PARALLEL_BYTES`] long, sized so that the
/// two-thread reader's first guessed cut falls `shift` bytes into `data`.
pub fn split_document(out: &mut Vec<u8>, data: &[u8], shift: usize, pad: &[u8]) {
    // span = len - 1 (after `[`); the guess is 1 + span / 2. Pick the first filler's
    // length `a` and the second's `b` so that 1 + (a + 1 + d + 1 + b + 1) / 2 = 1 + a + 1 + shift.
    let d = data.len();
    let a = PARALLEL_BYTES / 2 + 64;
    let b = (a + 2 * shift).saturating_sub(d + 1).max(FILLER_MIN);
    out.clear();
    out.push(b'[');
    push_filler(out, a, pad);
    out.push(b',');
    out.extend_from_slice(data);
    out.push(b',');
    push_filler(out, b, pad);
    out.push(b']');
}

/// Builds the split document for a fuzz input (two bytes of shift, then the events) and
/// checks that 1 and 2 threads agree on it.
pub fn check_split(input: &[u8], out: &mut Vec<u8>, pad: &[u8]) {
    let (shift, data) = match input {
        [hi, lo, rest @ ..] => (usize::from(u16::from_be_bytes([*hi, *lo])), rest),
        _ => return,
    };
    let shift = shift % (data.len() + 16).min(1 << 16);
    split_document(out, data, shift, pad);
    let one = read_trace_bytes(out, &options(1, false));
    let two = read_trace_bytes(out, &options(2, false));
    assert_same_result("split: 1 vs 2 threads", &one, &two);
}

/// Padding for filler events: plain ASCII, no quotes or braces.
pub fn filler_pad() -> Vec<u8> {
    vec![b'a'; PARALLEL_BYTES + (1 << 20)]
}
