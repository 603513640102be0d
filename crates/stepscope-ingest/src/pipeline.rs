//! Reading a trace: a file is mapped, its compression told from its first bytes, then read
//! as it is (plain), parsed while it inflates (compressed Kineto JSON: one thread inflating
//! in pieces, the others parsing) or inflated whole first (other compressed formats); bytes
//! given by a caller are read as they are. The format is chosen (`registry`),
//! the rocprofv3 CSV tables of one run are read together, and every trace read goes
//! through the same checks (`validate`).

use crate::mapped::GuardedMap;
use crate::registry::{detect_database, detect_format, first_input, recognise_other};
use crate::{Compression, IngestError, Input, ReadOptions, TraceFormat};
use crate::{kineto_json, rocprof_csv, source, sqlite, validate};
use std::path::Path;
use stepscope_model::{Severity, Trace, TraceBuilder};

/// Reads one trace file, detecting compression and format from its content.
///
/// A compressed Kineto JSON file is parsed while it inflates (one thread inflating, the
/// others parsing), never held inflated in memory; other compressed formats are inflated
/// first.
pub fn read_trace_file(path: &Path, options: &ReadOptions) -> Result<Trace, IngestError> {
    read_mapped(path, map_path(path)?, options)
}

/// Reads the mapped file `path`.
fn read_mapped(
    path: &Path,
    mapped: GuardedMap,
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    let compression = Compression::detect(&mapped);
    if compression == Compression::None {
        let read = read_decompressed(path, &mapped, true, None, options);
        let changed = mapped.changed();
        unmap_beside(mapped);
        return unchanged(path, changed, read);
    }
    read_compressed(path, mapped, compression, options)
}

/// `read`, unless the file changed while it was read: then whatever the reader made of it
/// (zeros where it was cut, an error or a trace), the error that says so.
fn unchanged(
    path: &Path,
    changed: bool,
    read: Result<Trace, IngestError>,
) -> Result<Trace, IngestError> {
    match changed {
        true => Err(IngestError::Changed {
            path: path.to_owned(),
        }),
        false => read,
    }
}

/// Mapped files from this size on are unmapped on a thread of their own.
const UNMAP_BESIDE: usize = 64 << 20;

/// Unmaps a large plain file on a thread of its own, so that what follows the read (the
/// analysis) does not wait for it: unmapping the 1.1 GB benchmark file was ~40 ms of
/// `unmap_page_range` at the end of the read (perf). Unmapped here when the thread cannot
/// be started.
fn unmap_beside(bytes: GuardedMap) {
    if bytes.len() < UNMAP_BESIDE {
        return;
    }
    let unmapping = std::thread::Builder::new().name("unmap".into());
    drop(unmapping.spawn(move || drop(bytes)));
}

/// A file's bytes as stored, mapped (guarded: a cut is told by [`GuardedMap::changed`]).
pub(crate) fn map_path(path: &Path) -> Result<GuardedMap, IngestError> {
    let io_error = |source| IngestError::Io {
        path: path.to_owned(),
        source,
    };
    // Looked at before opening: opening a FIFO waits for a writer, and a device such as
    // `/dev/zero` has no length to map (it would read as empty, or never end).
    let kind = std::fs::metadata(path).map_err(io_error)?.file_type();
    if !kind.is_file() {
        let what = std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket, device or folder); save the trace to a file and read that",
        );
        return Err(io_error(what));
    }
    let file = std::fs::File::open(path).map_err(io_error)?;
    GuardedMap::new(file).map_err(io_error)
}

/// How many inflated pieces may wait for the reader. A piece is as long as a segment the
/// threads parse (4 MiB by default), so that it is parsed where it was inflated to.
const PIECES_WAITING: usize = 4;
/// How much inflated text decides the format before the rest is read.
const HEAD: usize = 1 << 20;

/// `compressed` is unmapped by the inflating thread once inflated, beside the parsing of the
/// last pieces, not after the read (9 ms for the 149 MB benchmark `.json.gz`, measured).
fn read_compressed(
    path: &Path,
    compressed: GuardedMap,
    compression: Compression,
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel(PIECES_WAITING);
        // Pieces read go back to be filled again: fresh ones cost a page fault per 4 KiB
        // and zeroing, on the inflating thread that bounds the whole read. Room for every
        // piece there can be: waiting, inflating, gathered, and two a thread being parsed.
        let circulating = PIECES_WAITING + 2 + 2 * options.thread_count();
        let (returned, recycled) = std::sync::mpsc::sync_channel::<Vec<u8>>(circulating);
        let piece = options.kineto.segment_size();
        let inflater = scope.spawn(move || {
            let recycled = || recycled.try_recv().ok();
            let send = |piece| sender.send(piece).is_ok();
            let outcome = source::inflate_pieces(&compressed, compression, piece, recycled, send);
            // The reader hears that the stream ended before the file is unmapped.
            drop(sender);
            let changed = compressed.changed();
            drop(compressed);
            (outcome, changed)
        });
        let mut recycle = |piece: Vec<u8>| drop(returned.try_send(piece));
        let mut pieces = source::CheckedText::new(receiver.into_iter());
        let mut head = gather_head(&mut pieces, &mut recycle);
        if unknown_from_head(&head, options) {
            drop(pieces);
            drop(inflater.join());
            return refuse_from_head(path, &head, options);
        }
        let streamed = streams(&head, options).then(|| {
            stream_kineto(
                std::mem::take(&mut head),
                &mut pieces,
                &mut recycle,
                options,
            )
        });
        let mut inflated = head;
        if streamed.is_none() {
            (&mut pieces).for_each(|piece| inflated.extend_from_slice(&piece));
        } else {
            // A read that stopped early (broken JSON) still inflates the rest, unread: a
            // stream that is itself broken (a checksum, a cut) is then always what is
            // reported, as when the file is inflated whole first, not only when the
            // inflating thread happened to get there before the reader stopped.
            (&mut pieces).for_each(&mut recycle);
        }
        let ((produced, failure), changed) =
            (inflater.join()).unwrap_or_else(|_| (inflater_panicked(), false));
        if changed {
            return unchanged(path, changed, Ok(Trace::default()));
        }
        // A member that failed its check comes before anything the inflater met after it.
        let failure = (pieces.take_failure()).or(failure.map(|failure| (produced, failure)));
        let partial = partial_or_error(path, failure, options)?;
        match streamed {
            Some(read) => {
                let mut trace = read.map_err(|failure| failure.with_path(path))?;
                if let Some(offset) = partial {
                    mark_inflate_partial(&mut trace, offset);
                }
                Ok(trace)
            }
            None => read_decompressed(path, &inflated, false, partial, options),
        }
    })
}

/// Where a compressed stream broke (the compressed offset), with `--allow-truncated`; the
/// error without it; `None` for a whole stream.
fn partial_or_error(
    path: &Path,
    failure: Option<(u64, source::InflateFailure)>,
    options: &ReadOptions,
) -> Result<Option<u64>, IngestError> {
    match failure {
        Some((produced, failure)) if !options.allow_truncated => {
            Err(failure.into_error(path, produced))
        }
        failure => Ok(failure.map(|(_, failure)| failure.compressed_offset)),
    }
}

/// The first [`HEAD`] bytes or more of `pieces`, or all there is (the first piece is taken
/// as the buffer, the others go to `recycle` once copied).
fn gather_head(
    pieces: &mut dyn Iterator<Item = Vec<u8>>,
    recycle: &mut dyn FnMut(Vec<u8>),
) -> Vec<u8> {
    let mut head = Vec::new();
    while head.len() < HEAD {
        let Some(piece) = pieces.next() else { break };
        if head.is_empty() {
            head = piece;
        } else {
            head.extend_from_slice(&piece);
            recycle(piece);
        }
    }
    head
}

/// What an inflating thread that panicked is taken to have said.
fn inflater_panicked() -> (u64, Option<source::InflateFailure>) {
    let panic = std::io::Error::other("the inflating thread panicked");
    let failure = source::InflateFailure {
        compressed_offset: 0,
        source: panic,
    };
    (0, Some(failure))
}

/// Whether the first inflated bytes already show that no reader takes the file (no
/// `--format`, no sniffer says yes or maybe): then the rest is never inflated, so a small
/// file that inflates to gigabytes (a "gzip bomb", or a compressed disk image) is refused
/// after [`HEAD`] bytes, not after all of them. A whole [`HEAD`] of blanks is refused too
/// (no profiler indents a document by a megabyte); a database (read from a file, not text)
/// and a shorter blank start are inflated whole as before.
fn unknown_from_head(head: &[u8], options: &ReadOptions) -> bool {
    if options.format.is_some() || head.starts_with(sqlite::MAGIC) {
        return false;
    }
    if is_blank(head) {
        return head.len() >= HEAD;
    }
    TraceFormat::detect(head).is_none()
}

/// The error for a file [`unknown_from_head`] refuses (its inflater stopped once the reader
/// hung up: nothing more is inflated).
fn refuse_from_head(path: &Path, head: &[u8], options: &ReadOptions) -> Result<Trace, IngestError> {
    if is_blank(head) {
        let reason = format!(
            "its first {} inflated bytes are only whitespace",
            head.len()
        );
        let path = Some(path.to_owned());
        return Err(IngestError::NotATrace { path, reason });
    }
    read_decompressed(path, head, false, None, options)
}

/// Whether a compressed file whose inflated text begins with `head` is read while it
/// inflates: Kineto JSON (the format of `.json.gz` profiles), by `--format` or by content.
fn streams(head: &[u8], options: &ReadOptions) -> bool {
    if is_blank(head) {
        return false;
    }
    match options.format {
        Some(format) => format == TraceFormat::KinetoJson,
        None => {
            recognise_other(head).is_none()
                && TraceFormat::detect(head) == Some(TraceFormat::KinetoJson)
        }
    }
}

/// Reads a Kineto JSON document that arrives in pieces (decompressed text, in order), as
/// they come: what [`read_trace_bytes`] gives on the whole text, without holding it.
/// `.json.gz` and `.json.zst` files are read this way by [`read_trace_file`].
pub fn read_kineto_stream(
    pieces: impl IntoIterator<Item = Vec<u8>>,
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    let mut pieces = pieces.into_iter();
    let mut head = Vec::new();
    while head.len() < HEAD {
        let Some(piece) = pieces.next() else { break };
        head.extend_from_slice(&piece);
    }
    if is_blank(&head) {
        return Err(IngestError::Empty { path: None });
    }
    stream_kineto(head, &mut pieces, &mut drop, options)
}

/// Reads a Kineto document from `head` (its first inflated bytes) and the pieces after it.
fn stream_kineto(
    head: Vec<u8>,
    rest: &mut dyn Iterator<Item = Vec<u8>>,
    recycle: &mut dyn FnMut(Vec<u8>),
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    let mut builder = TraceBuilder::new();
    builder.metadata_mut().format = Some(TraceFormat::KinetoJson.name());
    let mut all = std::iter::once(head).chain(rest);
    kineto_json::read_pieces(&mut all, recycle, options, &mut builder)
        .map_err(IngestError::from_read_failure)?;
    validate::validate(&mut builder);
    Ok(builder.finish())
}

/// Reads a file's decompressed `bytes` (`as_stored`: the file's own bytes, not inflated);
/// `partial_inflate` is where its compressed stream broke, if it did.
fn read_decompressed(
    path: &Path,
    bytes: &[u8],
    as_stored: bool,
    partial_inflate: Option<u64>,
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    if let Some(offset) = partial_inflate.filter(|_| is_blank(bytes)) {
        // The stream broke before any JSON came out: a cut file, not an empty one.
        let mut trace = Trace::default();
        trace.stats.truncated_at_byte = Some(0);
        mark_inflate_partial(&mut trace, offset);
        return Ok(trace);
    }
    let label = path.display().to_string();
    let companions = companion_tables(path, bytes, options);
    let mut inputs = vec![Input {
        label: &label,
        bytes,
        path: as_stored.then_some(path),
    }];
    inputs.extend(companions.iter().map(|(label, companion)| Input {
        label,
        bytes: &[],
        path: Some(companion),
    }));
    read_inputs(&inputs, options)
        .map(|mut trace| {
            if let Some(offset) = partial_inflate {
                mark_inflate_partial(&mut trace, offset);
            }
            trace
        })
        .map_err(|failure| failure.with_path(path))
}

/// The other tables of the rocprofv3 run `path` belongs to, when it is one of its CSV tables
/// (`<prefix>kernel_trace.csv` beside `<prefix>hip_api_trace.csv`…): labels and paths (the
/// CSV reader streams them from their files).
fn companion_tables(
    path: &Path,
    bytes: &[u8],
    options: &ReadOptions,
) -> Vec<(String, std::path::PathBuf)> {
    let format = options.format.or_else(|| TraceFormat::detect(bytes));
    if format != Some(TraceFormat::RocprofCsv) {
        return Vec::new();
    }
    rocprof_csv::companion_paths(path)
        .into_iter()
        .map(|companion| (companion.display().to_string(), companion))
        .collect()
}

fn mark_inflate_partial(trace: &mut Trace, compressed_offset: u64) {
    trace
        .stats
        .truncated_at_byte
        .get_or_insert(compressed_offset);
    trace.stats.add(
        "compressed_input_truncated",
        Severity::Error,
        "The compressed stream broke off or was corrupt; only the events before the break were read",
        1,
    );
}

/// Reads a whole trace from decompressed bytes.
///
/// Whatever the format, the events read then go through the same checks: events whose time
/// lies orders of magnitude outside the span of the rest of the trace, or where no clock
/// writes one whatever the trace's size, are refused (kept in [`Trace::damaged`]) and exact
/// copies of a GPU event are dropped (counted).
pub fn read_trace_bytes(bytes: &[u8], options: &ReadOptions) -> Result<Trace, IngestError> {
    read_inputs(&[Input::bytes("input", bytes)], options)
}

/// Reads the inputs of one trace (one file, or the CSV tables of one rocprofv3 run): the
/// format is `options.format`, or sniffed from the first input.
pub(crate) fn read_inputs(
    inputs: &[Input<'_>],
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    let first = first_input(inputs)?;
    if is_blank(first.bytes) {
        return Err(IngestError::Empty { path: None });
    }
    let format = match options.format {
        Some(format) => format,
        None if first.bytes.starts_with(sqlite::MAGIC) => {
            detect_database(first, options.allow_truncated)?
        }
        None => detect_format(first.bytes)?,
    };
    let mut builder = TraceBuilder::new();
    builder.metadata_mut().format = Some(format.name());
    format.read(inputs, options, &mut builder)?;
    validate::validate(&mut builder);
    Ok(builder.finish())
}

/// Whether `bytes` hold nothing but JSON whitespace, after an optional byte-order mark.
fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(bytes)
        .iter()
        .all(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A plain Kineto document of `events` kernels, some hundred kilobytes.
    fn kineto(events: usize) -> String {
        let kernel = |i: usize| {
            format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": 7, "ts": {}, "dur": 5, "args": {{"correlation": {i}, "device": 0, "stream": 7}}}}"#,
                1000 + 10 * i
            )
        };
        let events: Vec<_> = (0..events).map(kernel).collect();
        format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"))
    }

    #[test]
    fn a_file_cut_while_read_is_an_error_naming_it_not_a_crash() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(kineto(4000).as_bytes()).unwrap();
        file.flush().unwrap();
        let options = ReadOptions::default();
        let whole = read_mapped(file.path(), map_path(file.path()).unwrap(), &options);
        assert!(whole.is_ok(), "{:?}", whole.err());

        let mapped = map_path(file.path()).unwrap();
        // Cut after it was mapped, before it is read: the read meets pages past the end,
        // which without the guard kill the process (SIGBUS).
        file.as_file().set_len(4096).unwrap();
        let error = read_mapped(file.path(), mapped, &options).unwrap_err();
        assert!(matches!(error, IngestError::Changed { .. }), "{error}");
        let message = error.to_string();
        assert!(message.contains("changed while it was read"), "{message}");
        assert!(
            message.contains(&file.path().display().to_string()),
            "{message}"
        );
    }

    #[test]
    fn a_compressed_file_cut_while_read_is_an_error_too() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(kineto(40_000).as_bytes()).unwrap();
        let gz = encoder.finish().unwrap();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&gz).unwrap();
        file.flush().unwrap();
        let mapped = map_path(file.path()).unwrap();
        file.as_file().set_len(4096).unwrap();
        let options = ReadOptions::default();
        let error = read_mapped(file.path(), mapped, &options).unwrap_err();
        assert!(matches!(error, IngestError::Changed { .. }), "{error}");
    }
}
