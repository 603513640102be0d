//! A Kineto document read from pieces as they inflate: the whole text is never held.
//!
//! The header before `traceEvents` is gathered until it parses (it is small). The events
//! array is handed out in segments of about 4 MiB as the pieces come (an inflated piece
//! is a segment, not copied) and parsed by worker threads while the next pieces inflate;
//! a worker begins at the first guessed event start in its segment. Results are joined
//! in file order: the joiner finishes the event the segment before left open with a copy
//! of its tail and the bytes before the guessed start, and uses the worker's parse only
//! when that ends exactly between two events at the start; otherwise it reads on through
//! the segment itself. What follows the array (the rest of the header) is gathered and
//! read as in memory. Memory: the segments in flight, the pieces waiting, the model.

use super::lex;
use super::read_object;
use super::scan::{ParseFailure, skip_whitespace};
use super::{Member, ReadFailure, apply_header, expect_end, next_member};
use crate::ReadOptions;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex};
use stepscope_model::TraceBuilder;

/// About how many bytes of events one worker parses at a time, by default.
pub(crate) const SEGMENT: usize = 4 << 20;

/// Reads a document arriving in `pieces` (in order) into `builder`, handing each piece to
/// `recycle` once its bytes are copied out (the source can fill it again).
pub(crate) fn read(
    pieces: &mut dyn Iterator<Item = Vec<u8>>,
    recycle: &mut dyn FnMut(Vec<u8>),
    options: &ReadOptions,
    builder: &mut TraceBuilder,
) -> Result<(), ReadFailure> {
    let mut window = Window {
        bytes: Vec::new(),
        base: 0,
        pieces,
        recycle,
    };
    let mut prefix = Prefix::default();
    let read = read_prefix(&mut window, &mut prefix);
    // Header keys read before a break count, as in memory.
    for (key, value) in &prefix.header {
        apply_header(builder, key, value);
    }
    read?;
    window.consume(prefix.events_at);
    let (events, after) = read_events(&mut window, options);
    builder.append(events);
    let trailer = after?;
    read_trailer(&trailer.bytes, prefix.object, options, builder).map_err(|failure| match failure {
        ReadFailure::Parse(failure) => ReadFailure::Parse(shifted(failure, trailer.base)),
        other => other,
    })
}

/// The unread bytes of the stream, from offset `base`.
struct Window<'p> {
    bytes: Vec<u8>,
    base: u64,
    pieces: &'p mut dyn Iterator<Item = Vec<u8>>,
    recycle: &'p mut dyn FnMut(Vec<u8>),
}

impl Window<'_> {
    /// Appends the next piece (taking it as the buffer when the window is empty); `false`
    /// when the stream has ended.
    fn more(&mut self) -> bool {
        match self.pieces.next() {
            Some(piece) if self.bytes.is_empty() => {
                let spent = std::mem::replace(&mut self.bytes, piece);
                if spent.capacity() > 0 {
                    (self.recycle)(spent);
                }
                true
            }
            Some(piece) => {
                self.bytes.extend_from_slice(&piece);
                (self.recycle)(piece);
                true
            }
            None => false,
        }
    }

    fn consume(&mut self, count: usize) {
        self.bytes.drain(..count);
        self.base += count as u64;
    }

    /// The next `size` or so bytes of the stream, and their offset; `None` at its end. A
    /// piece of at least half that comes as it was inflated (an empty window takes it as
    /// its buffer, no copy); smaller ones are gathered.
    fn stretch(&mut self, size: usize) -> Option<(u64, Vec<u8>)> {
        if self.bytes.is_empty() {
            self.more();
        }
        if self.bytes.len() < (size / 2).max(1) {
            while self.bytes.len() < size && self.more() {}
        }
        if self.bytes.is_empty() {
            return None;
        }
        let base = self.base;
        self.base += self.bytes.len() as u64;
        Some((base, std::mem::take(&mut self.bytes)))
    }
}

/// What comes before the events.
#[derive(Debug, Default)]
struct Prefix {
    header: Vec<(String, Value)>,
    /// Offset just past the `[` of the events array.
    events_at: usize,
    /// Whether the document is an object (else a bare array).
    object: bool,
}

/// Gathers pieces until the header before `traceEvents` parses (or fails for good).
fn read_prefix(window: &mut Window<'_>, prefix: &mut Prefix) -> Result<(), ReadFailure> {
    loop {
        *prefix = Prefix::default();
        match scan_prefix(&window.bytes, prefix) {
            Err(ReadFailure::Parse(failure)) if failure.at_end_of_input && window.more() => {}
            Err(ReadFailure::Empty) if window.more() => {}
            other => return other,
        }
    }
}

fn scan_prefix(bytes: &[u8], prefix: &mut Prefix) -> Result<(), ReadFailure> {
    let start = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let start = skip_whitespace(bytes, start);
    prefix.object = match bytes.get(start) {
        Some(b'[') => false,
        Some(b'{') => true,
        Some(_) => {
            return Err(ReadFailure::Parse(ParseFailure {
                offset: start as u64,
                message: "expected `{` or `[` at the start of a Chrome-trace JSON document"
                    .to_owned(),
                at_end_of_input: false,
            }));
        }
        None => return Err(ReadFailure::Empty),
    };
    prefix.events_at = start + 1;
    if !prefix.object {
        return Ok(());
    }
    loop {
        let (member, next) = next_member(bytes, prefix.events_at)?;
        prefix.events_at = next;
        match member {
            Member::Header(key, value) => prefix.header.push((key, value)),
            Member::Events => return Ok(()),
            Member::Close => {
                return Err(ReadFailure::NotATrace {
                    reason: "the JSON object has no `traceEvents` key".to_owned(),
                });
            }
        }
    }
}

fn read_trailer(
    bytes: &[u8],
    object: bool,
    options: &ReadOptions,
    builder: &mut TraceBuilder,
) -> Result<(), ReadFailure> {
    let end = if object {
        read_object(bytes, 0, options, builder, true)?
    } else {
        0
    };
    Ok(expect_end(bytes, end)?)
}

fn shifted(mut failure: ParseFailure, base: u64) -> ParseFailure {
    failure.offset += base;
    failure
}

/// The bytes after the events array's `]`, from offset `base`.
struct Trailer {
    bytes: Vec<u8>,
    base: u64,
}

/// A stretch of the events array: its bytes, where they start in the stream, and where
/// its worker begins reading (the first byte for the first segment, else the first guessed
/// event start; the bytes before it end the event the segment before left open).
struct Segment {
    index: usize,
    base: u64,
    bytes: Vec<u8>,
    start: usize,
}

/// A segment back from a worker: its events, read from `start` as if it began between two
/// events.
struct Parsed {
    segment: Segment,
    builder: TraceBuilder,
    end: SegmentEnd,
}

/// How a parse of some bytes of the events array stopped.
#[derive(Debug)]
enum SegmentEnd {
    /// The bytes ran out; the events before `resume` were read, the rest needs what follows
    /// (`expect_value`: an event, or `]`, comes next; else `,` or `]`). `cut`: how the
    /// lexer worded the break when an event was cut (what a file ending there reports).
    Open {
        resume: usize,
        expect_value: bool,
        cut: Option<String>,
    },
    /// The array closed: `after` is just past its `]`.
    Closed { after: usize },
    /// The JSON is broken here (not merely cut).
    Failed(ParseFailure),
}

/// Parses events from `start` in `bytes`.
fn parse_segment(
    bytes: &[u8],
    start: usize,
    mut expect_value: bool,
    builder: &mut TraceBuilder,
) -> SegmentEnd {
    let mut reader = lex::Reader::default();
    let mut pos = start;
    loop {
        pos = skip_whitespace(bytes, pos);
        match bytes.get(pos) {
            None => {
                return SegmentEnd::Open {
                    resume: pos,
                    expect_value,
                    cut: None,
                };
            }
            Some(b']') => return SegmentEnd::Closed { after: pos + 1 },
            Some(b',') if !expect_value => {
                pos += 1;
                expect_value = true;
            }
            Some(_) if expect_value => match reader.event(bytes, pos) {
                Ok(next) => {
                    reader.add_current(builder);
                    pos = next;
                    expect_value = false;
                }
                Err(failure) if failure.at_end_of_input => {
                    return SegmentEnd::Open {
                        resume: pos,
                        expect_value,
                        cut: Some(failure.message),
                    };
                }
                Err(failure) => return SegmentEnd::Failed(failure),
            },
            Some(_) => {
                return SegmentEnd::Failed(ParseFailure {
                    offset: pos as u64,
                    message: "expected `,` or `]` after an event".to_owned(),
                    at_end_of_input: false,
                });
            }
        }
    }
}

/// Reads the events array from the start of `window` (just past its `[`): the events read
/// and, when the array closed, the bytes after it; else the failure (events before it are
/// in the builder).
fn read_events(
    window: &mut Window<'_>,
    options: &ReadOptions,
) -> (TraceBuilder, Result<Trailer, ReadFailure>) {
    let workers = options.thread_count().max(1);
    let progress = options.progress.clone();
    let (jobs, job_queue) = sync_channel::<Segment>(workers);
    let job_queue = Arc::new(Mutex::new(job_queue));
    let (results, parsed) = channel::<Parsed>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let job_queue = Arc::clone(&job_queue);
            let results = results.clone();
            let progress = progress.clone();
            scope.spawn(move || work(&job_queue, &results, progress.as_deref()));
        }
        drop(results);
        let mut run = Run {
            window,
            jobs: Some(jobs),
            parsed,
            next_index: 0,
            joined: 0,
            limit: workers * 2,
            segment: options.kineto.segment_size(),
            joiner: Joiner::default(),
        };
        let outcome = run.drive();
        // Closing the queue lets the workers end; results still coming are dropped.
        run.jobs = None;
        (std::mem::take(&mut run.joiner.builder), outcome)
    })
}

fn work(
    queue: &Mutex<Receiver<Segment>>,
    results: &std::sync::mpsc::Sender<Parsed>,
    progress: Option<&AtomicU64>,
) {
    crate::priority::give_way();
    loop {
        let next = queue.lock().map(|queue| queue.recv());
        let Ok(Ok(segment)) = next else {
            return;
        };
        let mut builder = TraceBuilder::new();
        let end = parse_segment(&segment.bytes, segment.start, true, &mut builder);
        if let Some(counter) = progress {
            counter.fetch_add(segment.bytes.len() as u64, Ordering::Relaxed);
        }
        if results
            .send(Parsed {
                segment,
                builder,
                end,
            })
            .is_err()
        {
            return;
        }
    }
}

/// The reading of one events array: cutting, handing out and joining segments.
struct Run<'w, 'p> {
    window: &'w mut Window<'p>,
    jobs: Option<SyncSender<Segment>>,
    parsed: Receiver<Parsed>,
    /// Segments handed out, and joined.
    next_index: usize,
    joined: usize,
    limit: usize,
    segment: usize,
    joiner: Joiner,
}

impl Run<'_, '_> {
    /// Hands out segments (at most `limit` not yet joined, so memory stays bounded however
    /// slow one segment is) and joins them in order.
    fn drive(&mut self) -> Result<Trailer, ReadFailure> {
        let mut waiting: BTreeMap<usize, Parsed> = BTreeMap::new();
        loop {
            while self.next_index - self.joined < self.limit {
                let Some(segment) = self.cut() else { break };
                let sent = self.jobs.as_ref().map(|jobs| jobs.send(segment));
                if !matches!(sent, Some(Ok(()))) {
                    return Err(worker_failure());
                }
            }
            if self.next_index == self.joined {
                return Err(self.joiner.cut_off(self.window.base));
            }
            let parsed = self.parsed.recv().map_err(|_| worker_failure())?;
            waiting.insert(parsed.segment.index, parsed);
            while let Some(parsed) = waiting.remove(&self.joined) {
                self.joined += 1;
                if let Some(closed) = self.joiner.join(parsed, &mut *self.window.recycle)? {
                    return Ok(self.trailer(closed, waiting));
                }
            }
        }
    }

    /// The next segment: the next stretch of the stream, as it comes. `None` when nothing
    /// is left. Segments are not cut at event boundaries, so no bytes are copied from one
    /// to the next: the event a segment leaves open is finished when joining, from a copy
    /// of its bytes and those before the next segment's start (copying every inflated byte
    /// into a window cost 6 % of the CPU time of a 1 GB `.json.gz`, measured).
    fn cut(&mut self) -> Option<Segment> {
        let (base, bytes) = self.window.stretch(self.segment)?;
        let index = self.next_index;
        self.next_index += 1;
        // The first segment begins just past `[`, between events by construction.
        let start = match index {
            0 => 0,
            _ => super::scan::find_event_boundary(&bytes, 0).unwrap_or(bytes.len()),
        };
        Some(Segment {
            index,
            base,
            bytes,
            start,
        })
    }

    /// Everything after the array's `]`: the rest of its segment, the segments still out,
    /// the window and the rest of the stream.
    fn trailer(&mut self, closed: Trailer, mut waiting: BTreeMap<usize, Parsed>) -> Trailer {
        let mut bytes = closed.bytes;
        while self.joined + waiting.len() < self.next_index {
            let Ok(parsed) = self.parsed.recv() else {
                break;
            };
            waiting.insert(parsed.segment.index, parsed);
        }
        for parsed in waiting.into_values() {
            bytes.extend_from_slice(&parsed.segment.bytes);
        }
        bytes.append(&mut self.window.bytes);
        while self.window.more() {
            bytes.append(&mut self.window.bytes);
        }
        Trailer {
            bytes,
            base: closed.base,
        }
    }
}

fn worker_failure() -> ReadFailure {
    ReadFailure::Parse(ParseFailure {
        offset: 0,
        message: "a parse worker stopped unexpectedly".to_owned(),
        at_end_of_input: false,
    })
}

/// Joins parsed segments in order, reading on itself where a cut was wrong.
#[derive(Default)]
struct Joiner {
    builder: TraceBuilder,
    /// What the next segment continues, when the segments so far did not end between two
    /// events.
    carry: Option<Carry>,
}

/// The bytes after the last event read, from offset `base`.
struct Carry {
    bytes: Vec<u8>,
    base: u64,
    expect_value: bool,
    /// How the lexer worded the cut of the event these bytes begin, if one was cut.
    cut: Option<String>,
}

impl Joiner {
    /// Takes the next segment in order (its buffer goes to `recycle` once read); the
    /// trailer when the array closed in it.
    fn join(
        &mut self,
        parsed: Parsed,
        recycle: &mut dyn FnMut(Vec<u8>),
    ) -> Result<Option<Trailer>, ReadFailure> {
        let Parsed {
            segment,
            builder,
            end,
        } = parsed;
        let carry = self.carry.take();
        if carry.is_none() && segment.start == 0 {
            // The segment before ended between two events exactly at this one's first byte.
            self.builder.append(builder);
            return self.settle(segment.bytes, segment.base, end, recycle);
        }
        let mut carry = carry.unwrap_or(Carry {
            bytes: Vec::new(),
            base: segment.base,
            expect_value: true,
            cut: None,
        });
        // Finish the open event with the bytes before the worker's start: when that ends
        // between two events, right at the start, the worker's events follow.
        carry
            .bytes
            .extend_from_slice(&segment.bytes[..segment.start]);
        let mut lead = TraceBuilder::new();
        let lead_end = parse_segment(&carry.bytes, 0, carry.expect_value, &mut lead);
        if segment.start == segment.bytes.len() {
            // No start was guessed (an event longer than the segment): the lead is all.
            self.builder.append(lead);
            recycle(segment.bytes);
            return self.settle(carry.bytes, carry.base, lead_end, recycle);
        }
        if matches!(lead_end, SegmentEnd::Open { resume, expect_value: true, .. } if resume == carry.bytes.len())
        {
            self.builder.append(lead);
            self.builder.append(builder);
            return self.settle(segment.bytes, segment.base, end, recycle);
        }
        // The guessed start was wrong: read on through the whole segment here.
        carry
            .bytes
            .extend_from_slice(&segment.bytes[segment.start..]);
        recycle(segment.bytes);
        let end = parse_segment(&carry.bytes, 0, carry.expect_value, &mut self.builder);
        self.settle(carry.bytes, carry.base, end, recycle)
    }

    /// Keeps what follows the last event read in `bytes` (from offset `base`), which
    /// ended as `end`; the trailer when the array closed.
    fn settle(
        &mut self,
        bytes: Vec<u8>,
        base: u64,
        end: SegmentEnd,
        recycle: &mut dyn FnMut(Vec<u8>),
    ) -> Result<Option<Trailer>, ReadFailure> {
        let settled = match end {
            SegmentEnd::Open {
                resume,
                expect_value,
                cut,
            } => {
                if resume < bytes.len() || !expect_value {
                    self.carry = Some(Carry {
                        bytes: bytes[resume..].to_vec(),
                        base: base + resume as u64,
                        expect_value,
                        cut,
                    });
                }
                Ok(None)
            }
            SegmentEnd::Closed { after } => Ok(Some(Trailer {
                bytes: bytes[after..].to_vec(),
                base: base + after as u64,
            })),
            SegmentEnd::Failed(failure) => Err(ReadFailure::Parse(shifted(failure, base))),
        };
        recycle(bytes);
        settled
    }

    /// The stream ended (at `end`) with the array still open: where it was cut, worded as
    /// a read of the whole text words it.
    fn cut_off(&self, end: u64) -> ReadFailure {
        let message = self.carry.as_ref().and_then(|carry| carry.cut.clone());
        ReadFailure::Parse(ParseFailure {
            offset: end,
            message: message.unwrap_or_else(|| {
                "the file ends inside `traceEvents` (no closing `]`)".to_owned()
            }),
            at_end_of_input: true,
        })
    }
}
