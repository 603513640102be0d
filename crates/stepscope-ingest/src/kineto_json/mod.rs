//! Kineto (PyTorch profiler) Chrome-trace JSON.
//!
//! Accepts an object with `traceEvents` (header keys before or after it) or a bare
//! top-level array of events; the 2021 legacy schema (`Kernel`/`Runtime`/`Operator`
//! categories, `"stream 7"` thread ids, `external id`); numbers written as strings.
//! Events are read one at a time straight from the input bytes by a lexer made for trace
//! events (`lex`), borrowing strings, never as a whole-document tree; large inputs are
//! split across threads (see `scan`).

mod events;
mod header;
mod lex;
mod raw;
mod scan;
mod stream;

use crate::ReadOptions;
use scan::{parse_array, parse_one, skip_whitespace};
use serde_json::Value;
use stepscope_model::TraceBuilder;

pub(crate) use scan::ParseFailure;

/// Why a Kineto document could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadFailure {
    /// The JSON breaks off or is malformed at some point; what came before it was kept.
    Parse(ParseFailure),
    /// Nothing but whitespace (and maybe a byte-order mark).
    Empty,
    /// Well-formed JSON that is not a trace: an object without a `traceEvents` array.
    NotATrace {
        /// Why not, as a clause (`"the JSON object has no `traceEvents` key"`).
        reason: String,
    },
}

impl From<ParseFailure> for ReadFailure {
    fn from(failure: ParseFailure) -> Self {
        ReadFailure::Parse(failure)
    }
}

/// What only the Kineto JSON reader reads; the settings every reader shares (threads,
/// `allow_truncated`, progress) are in [`ReadOptions`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct KinetoJsonOptions {
    /// When reading a stream (a compressed file as it inflates), about how many bytes of
    /// events a thread parses at a time, and the size of the pieces a compressed file is
    /// inflated in; `0` (the default) means 4 MiB. Memory in flight is about twice this
    /// per thread, and six times it for the pieces waiting or being filled.
    pub segment_bytes: usize,
}

impl KinetoJsonOptions {
    /// Options that parse streams in segments of about `bytes` (`0`: 4 MiB).
    pub fn with_segment_bytes(mut self, bytes: usize) -> Self {
        self.segment_bytes = bytes;
        self
    }

    pub(crate) fn segment_size(&self) -> usize {
        match self.segment_bytes {
            0 => stream::SEGMENT,
            n => n,
        }
    }
}

/// Whether `head` (the first bytes of decompressed input) looks like a Chrome trace.
/// `None` when more bytes are needed to tell.
pub fn sniff(head: &[u8]) -> Option<bool> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = skip_whitespace(head, 0);
    match head.get(start) {
        None => None,
        Some(b'[') => Some(true),
        Some(b'{') => {
            let window = &head[start..head.len().min(start + 64 * 1024)];
            let has = |needle: &[u8]| window.windows(needle.len()).any(|w| w == needle);
            if has(b"\"traceEvents\"") || has(b"\"schemaVersion\"") || has(b"\"deviceProperties\"")
            {
                Some(true)
            } else if head.len() < 64 * 1024 {
                None
            } else {
                Some(false)
            }
        }
        Some(_) => Some(false),
    }
}

/// Reads a whole Kineto JSON document into `builder`.
///
/// With `allow_truncated`, a break in the JSON keeps the events before it and marks the
/// import partial; an empty input or a complete document that is not a trace stays an
/// error, since there is nothing before a break to keep.
pub(crate) fn read(
    bytes: &[u8],
    options: &ReadOptions,
    builder: &mut TraceBuilder,
) -> Result<(), ReadFailure> {
    let start = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let start = skip_whitespace(bytes, start);
    let result = match bytes.get(start) {
        Some(b'[') => read_events(bytes, start + 1, options, builder)
            .and_then(|end| expect_end(bytes, end))
            .map_err(ReadFailure::Parse),
        Some(b'{') => read_object(bytes, start + 1, options, builder, false)
            .and_then(|end| Ok(expect_end(bytes, end)?)),
        Some(_) => Err(ReadFailure::Parse(ParseFailure {
            offset: start as u64,
            message: "expected `{` or `[` at the start of a Chrome-trace JSON document".to_owned(),
            at_end_of_input: false,
        })),
        None => Err(ReadFailure::Empty),
    };
    match result {
        Err(ReadFailure::Parse(failure)) if options.allow_truncated => {
            mark_partial(builder, &failure);
            Ok(())
        }
        other => other,
    }
}

/// Reads a Kineto document arriving in pieces (inflating as it is read), with the same
/// results as [`read`] on the whole text, in memory bounded by the pieces in flight. Each
/// piece goes to `recycle` once read.
pub(crate) fn read_pieces(
    pieces: &mut dyn Iterator<Item = Vec<u8>>,
    recycle: &mut dyn FnMut(Vec<u8>),
    options: &ReadOptions,
    builder: &mut TraceBuilder,
) -> Result<(), ReadFailure> {
    match stream::read(pieces, recycle, options, builder) {
        Err(ReadFailure::Parse(failure)) if options.allow_truncated => {
            mark_partial(builder, &failure);
            Ok(())
        }
        other => other,
    }
}

fn mark_partial(builder: &mut TraceBuilder, failure: &ParseFailure) {
    crate::common::mark_truncated(builder, failure.offset);
}

fn read_events(
    bytes: &[u8],
    array_start: usize,
    options: &ReadOptions,
    builder: &mut TraceBuilder,
) -> Result<usize, ParseFailure> {
    let (events, end, failure) = parse_array(
        bytes,
        array_start,
        options.thread_count(),
        options.progress.as_deref(),
    );
    builder.append(events);
    match failure {
        Some(failure) => Err(failure),
        None => Ok(end),
    }
}

/// Only whitespace may follow the document: a second document or stray bytes mean the file
/// is not what it claims to be.
fn expect_end(bytes: &[u8], end: usize) -> Result<(), ParseFailure> {
    let pos = skip_whitespace(bytes, end);
    if pos >= bytes.len() {
        return Ok(());
    }
    Err(ParseFailure {
        offset: pos as u64,
        message: "unexpected data after the end of the JSON document".to_owned(),
        at_end_of_input: false,
    })
}

/// Reads the top-level object's members from `pos` (after its `{`, or after its
/// `traceEvents` array when `saw_events`); returns the offset just past its `}`.
fn read_object(
    bytes: &[u8],
    mut pos: usize,
    options: &ReadOptions,
    builder: &mut TraceBuilder,
    mut saw_events: bool,
) -> Result<usize, ReadFailure> {
    loop {
        let (member, next) = next_member(bytes, pos)?;
        pos = match member {
            Member::Close if saw_events => return Ok(next),
            // Read to its closing `}`: a whole object, not a cut one, so not a truncated trace.
            Member::Close => {
                return Err(ReadFailure::NotATrace {
                    reason: "the JSON object has no `traceEvents` key".to_owned(),
                });
            }
            Member::Events => {
                saw_events = true;
                read_events(bytes, next, options, builder)?
            }
            Member::Header(key, value) => {
                apply_header(builder, &key, &value);
                next
            }
        };
    }
}

/// One member of the top-level object, or its end.
#[derive(Debug)]
enum Member {
    /// A header key and its value.
    Header(String, Value),
    /// `"traceEvents": [`: the offset returned is just past the `[`.
    Events,
    /// The closing `}`.
    Close,
}

/// The member at `pos` (after `{` or a previous member) and the offset just past it.
fn next_member(bytes: &[u8], mut pos: usize) -> Result<(Member, usize), ReadFailure> {
    loop {
        pos = skip_whitespace(bytes, pos);
        match bytes.get(pos) {
            Some(b'}') => return Ok((Member::Close, pos + 1)),
            Some(b',') => pos += 1,
            None => return Err(unexpected_end(bytes).into()),
            Some(_) => break,
        }
    }
    let (key, after_key) = parse_one::<String>(bytes, pos)?;
    let pos = expect_colon(bytes, after_key)?;
    if key != "traceEvents" {
        let (value, next) = parse_one::<Value>(bytes, pos)?;
        return Ok((Member::Header(key, value), next));
    }
    let pos = skip_whitespace(bytes, pos);
    match bytes.get(pos) {
        Some(b'[') => Ok((Member::Events, pos + 1)),
        None => Err(unexpected_end(bytes).into()),
        Some(_) => Err(ReadFailure::NotATrace {
            reason: format!("its `traceEvents` (at byte {pos}) is not an array"),
        }),
    }
}

fn apply_header(builder: &mut TraceBuilder, key: &str, value: &Value) {
    if !header::apply_header_key(builder.metadata_mut(), key, value) {
        *builder
            .stats_mut()
            .unknown_fields
            .entry(format!("header.{key}"))
            .or_default() += 1;
    }
}

fn expect_colon(bytes: &[u8], pos: usize) -> Result<usize, ParseFailure> {
    let pos = skip_whitespace(bytes, pos);
    match bytes.get(pos) {
        Some(b':') => Ok(pos + 1),
        None => Err(unexpected_end(bytes)),
        Some(_) => Err(ParseFailure {
            offset: pos as u64,
            message: "expected `:` after a key".to_owned(),
            at_end_of_input: false,
        }),
    }
}

fn unexpected_end(bytes: &[u8]) -> ParseFailure {
    ParseFailure {
        offset: bytes.len() as u64,
        message: "the JSON text ends before the top-level object closes".to_owned(),
        at_end_of_input: true,
    }
}
