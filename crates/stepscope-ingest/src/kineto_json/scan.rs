//! Walking the `traceEvents` array one event at a time, optionally in parallel chunks.
//!
//! Each event is deserialized on its own (`StreamDeserializer` gives the byte offset where
//! it ended), so a chunk can start at any event boundary. Cut points are guessed, then
//! verified: the chunk before a cut must end exactly on it, else the next chunk's work is
//! thrown away and the range is read again in order. Output never depends on the number of
//! threads: chunks are joined in file order.

use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};
use stepscope_model::TraceBuilder;

/// Where and why parsing stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseFailure {
    /// Byte offset into the (decompressed) JSON text.
    pub offset: u64,
    /// What was wrong there.
    pub message: String,
    /// Whether the text simply ended (a truncated file) rather than being malformed.
    pub at_end_of_input: bool,
}

/// What one chunk of the array produced.
pub(crate) struct ChunkOutcome {
    pub builder: TraceBuilder,
    pub start: usize,
    /// Where the chunk stopped: the start of the first event at or past its limit, or just
    /// past the closing `]`.
    pub end: usize,
    pub reached_array_end: bool,
    pub failure: Option<ParseFailure>,
}

pub(crate) fn skip_whitespace(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(pos) {
        pos += 1;
    }
    pos
}

/// Deserializes one JSON value at `pos`; returns it and the offset just past it.
pub(crate) fn parse_one<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
    pos: usize,
) -> Result<(T, usize), ParseFailure> {
    let mut stream = serde_json::Deserializer::from_slice(&bytes[pos..]).into_iter::<T>();
    match stream.next() {
        Some(Ok(value)) => Ok((value, pos + stream.byte_offset())),
        Some(Err(error)) => Err(failure_from_serde(bytes, pos, &error)),
        None => Err(ParseFailure {
            offset: bytes.len() as u64,
            message: "the JSON text ends here".to_owned(),
            at_end_of_input: true,
        }),
    }
}

fn failure_from_serde(bytes: &[u8], base: usize, error: &serde_json::Error) -> ParseFailure {
    let offset = if error.is_eof() {
        bytes.len()
    } else {
        base + offset_of_line_column(&bytes[base..], error.line(), error.column())
    };
    // serde_json reports a number cut at the very end (`0.`, `1e`) while skipping a value as
    // malformed, not as EOF; a break in the last byte is a truncation either way.
    let at_end_of_input = error.is_eof() || offset + 1 >= bytes.len();
    let offset = if at_end_of_input { bytes.len() } else { offset };
    let message = error.to_string();
    // serde_json appends " at line L column C", which is relative to our slice: drop it.
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or(&message)
        .to_owned();
    ParseFailure {
        offset: offset as u64,
        message,
        at_end_of_input,
    }
}

fn offset_of_line_column(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut line_start = 0;
    for _ in 1..line {
        match memchr_newline(&bytes[line_start..]) {
            Some(i) => line_start += i + 1,
            None => break,
        }
    }
    (line_start + column.saturating_sub(1)).min(bytes.len())
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// Reads events from `start` (just after `[`, or at a verified event boundary) until the
/// array closes or the next event starts at or past `limit`.
pub(crate) fn parse_chunk(
    bytes: &[u8],
    start: usize,
    limit: usize,
    progress: Option<&AtomicU64>,
) -> ChunkOutcome {
    let mut builder = TraceBuilder::new();
    let mut reader = super::lex::Reader::default();
    let mut pos = start;
    let mut expect_value = true;
    let mut reported = start;
    let outcome = |builder, end, reached_array_end, failure| ChunkOutcome {
        builder,
        start,
        end,
        reached_array_end,
        failure,
    };
    loop {
        pos = skip_whitespace(bytes, pos);
        if let Some(counter) = progress.filter(|_| pos - reported > (1 << 20)) {
            counter.fetch_add((pos - reported) as u64, Ordering::Relaxed);
            reported = pos;
        }
        match bytes.get(pos) {
            None => {
                let failure = ParseFailure {
                    offset: pos as u64,
                    message: "the file ends inside `traceEvents` (no closing `]`)".to_owned(),
                    at_end_of_input: true,
                };
                return outcome(builder, pos, false, Some(failure));
            }
            Some(b']') => return outcome(builder, pos + 1, true, None),
            Some(b',') if !expect_value => {
                pos += 1;
                expect_value = true;
            }
            Some(_) if expect_value => {
                if pos >= limit {
                    return outcome(builder, pos, false, None);
                }
                match reader.event(bytes, pos) {
                    Ok(next) => {
                        reader.add_current(&mut builder);
                        pos = next;
                        expect_value = false;
                    }
                    Err(failure) => return outcome(builder, pos, false, Some(failure)),
                }
            }
            Some(_) => {
                let failure = ParseFailure {
                    offset: pos as u64,
                    message: "expected `,` or `]` after an event".to_owned(),
                    at_end_of_input: false,
                };
                return outcome(builder, pos, false, Some(failure));
            }
        }
    }
}

/// The first plausible event start at or after `guess`: a `{` after `}` `,` (whitespace
/// allowed) and before `"` or `}`. Only a guess: the caller verifies it.
pub(crate) fn find_event_boundary(bytes: &[u8], guess: usize) -> Option<usize> {
    let window_end = bytes.len().min(guess.saturating_add(4 << 20));
    let mut pos = guess;
    while pos < window_end {
        let offset = bytes[pos..window_end].iter().position(|&b| b == b'{')?;
        let brace = pos + offset;
        if looks_like_event_start(bytes, brace) {
            return Some(brace);
        }
        pos = brace + 1;
    }
    None
}

fn looks_like_event_start(bytes: &[u8], brace: usize) -> bool {
    let before = previous_non_whitespace(bytes, brace);
    let Some(comma) = before.filter(|&i| bytes[i] == b',') else {
        return false;
    };
    let closing = previous_non_whitespace(bytes, comma);
    let after = skip_whitespace(bytes, brace + 1);
    closing.is_some_and(|i| bytes[i] == b'}') && matches!(bytes.get(after), Some(b'"' | b'}'))
}

fn previous_non_whitespace(bytes: &[u8], pos: usize) -> Option<usize> {
    bytes[..pos]
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
}

/// Reads the whole array starting just after `[` at `array_start`, with up to `threads`
/// threads. Returns the joined builder, where parsing stopped, and the failure if any.
pub(crate) fn parse_array(
    bytes: &[u8],
    array_start: usize,
    threads: usize,
    progress: Option<&AtomicU64>,
) -> (TraceBuilder, usize, Option<ParseFailure>) {
    let cuts = guess_cuts(bytes, array_start, threads);
    let mut limits: Vec<usize> = cuts.iter().skip(1).copied().collect();
    limits.push(usize::MAX);
    let starts: Vec<usize> = std::iter::once(array_start)
        .chain(cuts.iter().skip(1).copied())
        .collect();
    let outcomes: Vec<ChunkOutcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = starts
            .iter()
            .zip(&limits)
            .skip(1)
            .map(|(&start, &limit)| scope.spawn(move || parse_chunk(bytes, start, limit, progress)))
            .collect();
        let first = parse_chunk(bytes, starts[0], limits[0], progress);
        std::iter::once(first)
            .chain(
                handles
                    .into_iter()
                    .map(|h| h.join().expect("chunk parser panicked")),
            )
            .collect()
    });
    join_chunks(bytes, outcomes, progress)
}

fn guess_cuts(bytes: &[u8], array_start: usize, threads: usize) -> Vec<usize> {
    let mut cuts = vec![array_start];
    let span = bytes.len().saturating_sub(array_start);
    if threads < 2 || span < MIN_PARALLEL_BYTES {
        return cuts;
    }
    for i in 1..threads {
        let guess = array_start + span / threads * i;
        if let Some(cut) = find_event_boundary(bytes, guess) {
            if cut > *cuts.last().unwrap_or(&0) {
                cuts.push(cut);
            }
        }
    }
    cuts
}

/// Below this, one thread is faster than starting another.
const MIN_PARALLEL_BYTES: usize = 4 << 20;

fn join_chunks(
    bytes: &[u8],
    outcomes: Vec<ChunkOutcome>,
    progress: Option<&AtomicU64>,
) -> (TraceBuilder, usize, Option<ParseFailure>) {
    let mut outcomes = outcomes.into_iter();
    let first = outcomes.next().expect("at least one chunk");
    let mut joined = first.builder;
    let (mut cursor, mut done, mut failure) = (first.end, first.reached_array_end, first.failure);
    for chunk in outcomes {
        if done || failure.is_some() {
            break;
        }
        if chunk.start != cursor {
            // The cut was wrong, or the chunk before it stopped short: read the gap in order.
            let gap = parse_chunk(bytes, cursor, chunk.start, progress);
            joined.append(gap.builder);
            (cursor, done, failure) = (gap.end, gap.reached_array_end, gap.failure);
            if done || failure.is_some() || cursor != chunk.start {
                continue;
            }
        }
        joined.append(chunk.builder);
        (cursor, done, failure) = (chunk.end, chunk.reached_array_end, chunk.failure);
    }
    if !done && failure.is_none() {
        let rest = parse_chunk(bytes, cursor, usize::MAX, progress);
        joined.append(rest.builder);
        (cursor, failure) = (rest.end, rest.failure);
    }
    (joined, cursor, failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_needs_brace_comma_brace() {
        let text = br#"[{"a":1}, {"b":{"c":2}},{"d":3}]"#;
        let first = find_event_boundary(text, 2).unwrap();
        assert_eq!(&text[first..first + 4], br#"{"b""#);
        let second = find_event_boundary(text, first + 1).unwrap();
        assert_eq!(&text[second..second + 4], br#"{"d""#);
    }

    #[test]
    fn wrong_cut_falls_back_to_order() {
        // An args array of objects looks like an event boundary; the join must notice.
        let mut text = String::from("[");
        for i in 0..200 {
            text.push_str(&format!(
                r#"{{"ph":"X","cat":"kernel","name":"k{i}","ts":{i},"dur":1,"args":{{"x":[{{"a":1}}, {{"b":2}}]}}}},"#
            ));
        }
        text.pop();
        text.push(']');
        let bytes = text.as_bytes();
        let bad_cut = text.find(r#"{"b""#).unwrap();
        let first = parse_chunk(bytes, 1, bad_cut, None);
        let second = parse_chunk(bytes, bad_cut, usize::MAX, None);
        let (joined, _, failure) = join_chunks(bytes, vec![first, second], None);
        assert!(failure.is_none());
        assert_eq!(joined.finish().gpu.len(), 200);
    }
}
