//! The shapes of counted events, learned from the trace and matched before the general
//! reader runs.
//!
//! Most bytes of a `with_stack` trace are Python-function events that are only counted, and
//! one writer prints them all alike: the same keys in the same order, the same spacing,
//! only the strings and numbers differ. The general reader still dispatches on every key
//! and steps over every value by grammar. A [`Shape`] is such an event with its strings
//! and numbers cut out: literal bytes between the values (keys, `ph` and `cat` with their
//! values, punctuation, whitespace, `true`/`false`/`null`), and a string or a number in
//! each gap. An event that is those literal bytes with a well-formed string or number in
//! each gap reads exactly as the event the shape came from: for a counted event the general
//! reader keeps only `ph` and `cat` and checks the rest by grammar alone, so what it makes
//! of the event does not depend on what the strings and numbers say. A shape is learned
//! only from such an event (nothing read but `ph` and `cat`, no unknown key, no malformed
//! field, no escape but in the strings cut out) and kept only when it matches the event it came from; anything that
//! does not match a shape byte for byte, however it differs, goes to the general reader,
//! which reads it or reports where it breaks as it always did.

use super::{Lexer, load_word, mask};
use crate::kineto_json::raw::{RawEvent, Text};
use std::borrow::Cow;

/// Shapes kept at most; counted events looked at to learn them before one in sixteen;
/// misses after which shapes that read fewer than half as many events as they miss are
/// given up.
const MAX_SHAPES: usize = 4;
const FIRST_LEARNED: u64 = 64;
const TRIAL: u64 = 256;

/// The shapes of one buffer's counted events, with how well they serve.
#[derive(Debug, Default)]
pub(super) struct Shapes<'a> {
    /// The most used first: a shape that serves moves up one place per event it reads.
    shapes: Vec<Shape<'a>>,
    /// Counted events read by a shape, and read by the general reader after all.
    hits: u64,
    misses: u64,
    learned: u64,
}

impl<'a> Shapes<'a> {
    /// Reads the event at `pos` into `event` when a shape matches it; its end if so, and
    /// whether it is a Python function (else of a category that is ignored). `bare`:
    /// `event` holds nothing but a phase and a category.
    #[inline(always)]
    pub(super) fn read(
        &mut self,
        bytes: &'a [u8],
        pos: usize,
        event: &mut RawEvent<'a>,
        bare: bool,
    ) -> Option<(usize, bool)> {
        let (index, end) = self
            .shapes
            .iter()
            .enumerate()
            .find_map(|(index, shape)| Some((index, shape.matches(bytes, pos)?)))?;
        let python = self.shapes[index].python;
        self.shapes[index].fill(event, bare);
        self.hits += 1;
        if index > 0 {
            self.shapes.swap(index - 1, index);
        }
        Some((end, python))
    }

    /// Counted events read by a shape so far.
    #[cfg(test)]
    pub(super) fn hits(&self) -> u64 {
        self.hits
    }

    /// Notes a counted event the general reader read from `start` to `end` (nothing but
    /// `ph` and `cat` read), learning its shape at most once per sixteen counted events; a
    /// new shape takes the place of the least used one when all places are taken. Shapes
    /// are given up for the rest of the buffer when they miss more than twice as many
    /// counted events as they read: then the events vary too much for shapes to pay for
    /// their tries.
    pub(super) fn counted(
        &mut self,
        bytes: &'a [u8],
        start: usize,
        end: usize,
        event: &RawEvent<'a>,
    ) {
        self.misses += 1;
        if self.misses > TRIAL && self.misses > 2 * self.hits {
            self.shapes.clear();
            return;
        }
        if self.learned >= FIRST_LEARNED + (self.hits + self.misses) / 16 {
            return;
        }
        self.learned += 1;
        if let Some(shape) = Shape::of(&bytes[start..end], event) {
            if shape.matches(bytes, start) == Some(end) {
                if self.shapes.len() == MAX_SHAPES {
                    self.shapes.pop();
                }
                self.shapes.push(shape);
            }
        }
    }
}

/// A counted event with its strings and numbers cut out.
#[derive(Debug)]
struct Shape<'a> {
    /// Its pieces, each literal run with the gap after it.
    steps: Vec<ShapeStep<'a>>,
    phase: Text<'a>,
    category: Text<'a>,
    /// Whether its category is counted as Python functions.
    python: bool,
}

/// A literal run and the gap that follows it (none after the last): one step of a match
/// does both, so that a Python-function event is nine steps, not seventeen pieces, each
/// dispatched on what it is.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ShapeStep<'a> {
    literal: Literal<'a>,
    gap: Gap,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Gap {
    String,
    Number,
    None,
}

/// Pairs each literal run with the gap after it (an empty run before a gap that follows
/// another gap, which well-formed JSON never has, and none before the first if it is a gap).
fn steps<'a>(pieces: &[Piece<'a>]) -> Vec<ShapeStep<'a>> {
    let mut steps: Vec<ShapeStep<'a>> = Vec::with_capacity(pieces.len().div_ceil(2));
    for piece in pieces {
        let gap = match *piece {
            Piece::Literal(literal) => {
                steps.push(ShapeStep {
                    literal,
                    gap: Gap::None,
                });
                continue;
            }
            Piece::String => Gap::String,
            Piece::Number => Gap::Number,
        };
        match steps.last_mut() {
            Some(step) if step.gap == Gap::None => step.gap = gap,
            _ => steps.push(ShapeStep {
                literal: Literal::new(b""),
                gap,
            }),
        }
    }
    steps
}

/// Literal bytes, or a gap for a value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Piece<'a> {
    Literal(Literal<'a>),
    String,
    Number,
}

/// The longest literal compared in two loads; longer ones word by word.
const TWO_WORDS: usize = 16;

/// Literal bytes with the words they are compared by, worked out once per shape. Most runs
/// between values are 2 to 16 bytes (`, "pid": `): one or two loads each, with no loop whose
/// count changes from run to run, as the word loop every run went through before had
/// (single-threaded read of the 1.1 GB piecewise benchmark: 0.75 → 0.70 s of CPU, medians
/// of 7; cutting the longer runs into such pieces too was slower, 0.73 s).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Literal<'a> {
    text: &'a [u8],
    /// The first eight bytes (zero-padded when fewer) and the last eight (overlapping the
    /// first when fewer than 16; the first again when fewer than 8).
    first: u64,
    last: u64,
    /// The lanes that hold text: all of them from 8 bytes on.
    lanes: u64,
}

impl<'a> Literal<'a> {
    fn new(text: &'a [u8]) -> Self {
        let len = text.len();
        let mut head = [0; 8];
        head[..len.min(8)].copy_from_slice(&text[..len.min(8)]);
        let first = u64::from_le_bytes(head);
        let (last, lanes) = match len {
            0..8 => (first, mask(len as u32)),
            _ => (load_word(&text[len - 8..]), u64::MAX),
        };
        Literal {
            text,
            first,
            last,
            lanes,
        }
    }

    /// Whether `bytes` holds the text at `pos`.
    #[inline(always)]
    fn at(&self, bytes: &[u8], pos: usize) -> bool {
        let len = self.text.len();
        let loaded = len.max(8);
        match bytes.get(pos..pos + loaded) {
            Some(here) if len <= TWO_WORDS => {
                let first = load_word(&here[..8]) ^ self.first;
                let last = load_word(&here[loaded - 8..]) ^ self.last;
                (first | last) & self.lanes == 0
            }
            // Longer runs (an event's first, up to its name), and a short one in the last
            // bytes of a buffer.
            _ => same_at(bytes, pos, self.text),
        }
    }
}

impl<'a> Shape<'a> {
    /// The shape of `text`, a counted event read as `event`; `None` when it cannot have one
    /// (an escape in a key or in `ph` or `cat`, an unknown key, a malformed field).
    fn of(text: &'a [u8], event: &RawEvent<'a>) -> Option<Self> {
        let borrowed = |field: &Option<Text<'a>>| match field {
            Some(Text(Cow::Borrowed(text))) => Some(Text(Cow::Borrowed(*text))),
            _ => None,
        };
        if !event.unknown_keys.is_empty() || event.malformed_fields != 0 {
            return None;
        }
        let category = borrowed(&event.category)?;
        Some(Shape {
            steps: steps(&pieces(text)?),
            phase: borrowed(&event.phase)?,
            python: crate::kineto_json::events::is_python_function(&category.0),
            category,
        })
    }

    /// Where the event at `pos` ends, when it has this shape.
    #[inline(always)]
    fn matches(&self, bytes: &[u8], pos: usize) -> Option<usize> {
        let mut lexer = Lexer { bytes, pos };
        for step in &self.steps {
            if !step.literal.at(bytes, lexer.pos) {
                return None;
            }
            lexer.pos += step.literal.text.len();
            match step.gap {
                Gap::String => {
                    if bytes.get(lexer.pos) != Some(&b'"') {
                        return None;
                    }
                    lexer.skip_string().ok()?;
                }
                Gap::Number => {
                    lexer.number_grammar().ok()?;
                }
                Gap::None => {}
            }
        }
        Some(lexer.pos)
    }

    /// What the general reader makes of an event of this shape (`bare`: `event` holds
    /// nothing but a phase and a category, the two set here).
    #[inline(always)]
    fn fill(&self, event: &mut RawEvent<'a>, bare: bool) {
        if bare {
            event.phase = Some(self.phase.clone());
            event.category = Some(self.category.clone());
            return;
        }
        *event = RawEvent {
            phase: Some(self.phase.clone()),
            category: Some(self.category.clone()),
            ..RawEvent::default()
        };
    }
}

/// Cuts a well-formed event object without escapes into literal bytes and value gaps.
/// The values of the event's own `ph` and `cat` stay literal: they decide what the event is.
fn pieces(text: &[u8]) -> Option<Vec<Piece<'_>>> {
    let mut cut = Cutter::default();
    let mut pos = 0;
    while let Some(&byte) = text.get(pos) {
        pos = match byte {
            b'"' => cut.string(text, pos)?,
            b'-' | b'0'..=b'9' => {
                let len = text[pos..].iter().position(|byte| !is_number_byte(*byte))?;
                cut.gap(text, pos, pos + len, Piece::Number)
            }
            _ => {
                cut.punctuation(byte);
                pos + 1
            }
        };
    }
    cut.literal(text, text.len());
    Some(cut.pieces)
}

/// Just past the closing quote of the string whose text starts at `from`.
fn string_end(text: &[u8], mut from: usize) -> Option<usize> {
    loop {
        match text.get(from)? {
            b'"' => return Some(from + 1),
            b'\\' => from += 2,
            _ => from += 1,
        }
    }
}

fn is_number_byte(byte: u8) -> bool {
    matches!(byte, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
}

/// The state of [`pieces`]: where the literal being gathered starts, and what the next
/// string is.
#[derive(Default)]
struct Cutter<'a> {
    pieces: Vec<Piece<'a>>,
    literal_from: usize,
    /// Open containers (`{` or `[`), innermost last.
    open: Vec<u8>,
    /// The next string is a key.
    key_next: bool,
    /// The next value belongs to the event's own `ph` or `cat`.
    kind_value: bool,
}

impl<'a> Cutter<'a> {
    fn punctuation(&mut self, byte: u8) {
        match byte {
            b'{' | b'[' => {
                self.open.push(byte);
                self.key_next = byte == b'{';
                self.kind_value = false;
            }
            b'}' | b']' => {
                self.open.pop();
            }
            b',' => {
                self.key_next = self.open.last() == Some(&b'{');
                self.kind_value = false;
            }
            _ => {}
        }
    }

    /// A string starting at `pos` (on its quote); where it ends.
    /// Keys and the values of `ph` and `cat` stay literal, and must have no escape.
    fn string(&mut self, text: &'a [u8], pos: usize) -> Option<usize> {
        let end = string_end(text, pos + 1)?;
        let literal = self.key_next || self.kind_value;
        if literal && text[pos..end].contains(&b'\\') {
            return None;
        }
        if self.key_next {
            let key = &text[pos + 1..end - 1];
            self.kind_value = self.open.len() == 1 && (key == b"ph" || key == b"cat");
            self.key_next = false;
            return Some(end);
        }
        if self.kind_value {
            return Some(end);
        }
        Some(self.gap(text, pos, end, Piece::String))
    }

    /// A value from `start` to `end` cut out as `piece`; returns `end`.
    fn gap(&mut self, text: &'a [u8], start: usize, end: usize, piece: Piece<'a>) -> usize {
        self.literal(text, start);
        self.pieces.push(piece);
        self.literal_from = end;
        end
    }

    fn literal(&mut self, text: &'a [u8], end: usize) {
        if end > self.literal_from {
            let literal = Literal::new(&text[self.literal_from..end]);
            self.pieces.push(Piece::Literal(literal));
        }
    }
}

/// Whether `bytes` holds `text` at `pos`, compared a word at a time.
#[inline(always)]
fn same_at(bytes: &[u8], pos: usize, text: &[u8]) -> bool {
    let Some(here) = bytes.get(pos..pos + text.len()) else {
        return false;
    };
    let len = text.len();
    if len < 8 {
        return here == text;
    }
    let mut at = 0;
    while at + 8 < len {
        if load_word(&here[at..at + 8]) != load_word(&text[at..at + 8]) {
            return false;
        }
        at += 8;
    }
    // The last word, overlapping the one before when the length is not a multiple of 8.
    load_word(&here[len - 8..]) == load_word(&text[len - 8..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces as text: literals as they are, gaps as `<s>` and `<n>`.
    fn rendered(pieces: &[Piece<'_>]) -> Vec<String> {
        let text = |piece: &Piece<'_>| match piece {
            Piece::Literal(literal) => std::str::from_utf8(literal.text).unwrap().to_owned(),
            Piece::String => "<s>".to_owned(),
            Piece::Number => "<n>".to_owned(),
        };
        pieces.iter().map(text).collect()
    }

    #[test]
    fn cuts_strings_and_numbers_out_but_keeps_what_the_event_is() {
        let text = br#"{"ph": "X", "cat": "python_function", "name": "f", "ts": -1.5e3, "args": {"ok": true, "ph": "s", "ids": [1, "a"]}}"#;
        assert_eq!(
            rendered(&pieces(text).unwrap()),
            [
                r#"{"ph": "X", "cat": "python_function", "name": "#,
                "<s>",
                r#", "ts": "#,
                "<n>",
                r#", "args": {"ok": true, "ph": "#,
                "<s>",
                r#", "ids": ["#,
                "<n>",
                ", ",
                "<s>",
                "]}}",
            ]
        );
    }

    #[test]
    fn steps_pair_each_literal_with_the_gap_after_it() {
        let (a, b) = (Literal::new(b"{\"a\": "), Literal::new(b"}"));
        let pieces = [
            Piece::Literal(a),
            Piece::String,
            Piece::Number,
            Piece::Literal(b),
        ];
        let step = |literal, gap| ShapeStep { literal, gap };
        assert_eq!(
            steps(&pieces),
            [
                step(a, Gap::String),
                step(Literal::new(b""), Gap::Number),
                step(b, Gap::None)
            ]
        );
        assert_eq!(
            steps(&[Piece::Number]),
            [step(Literal::new(b""), Gap::Number)]
        );
        // An empty literal matches anywhere, even at the end of the bytes.
        assert!(Literal::new(b"").at(b"ab", 2) && Literal::new(b"").at(b"abcdefghij", 1));
    }

    #[test]
    fn compares_literals_of_every_length() {
        let bytes = b"0123456789abcdefghijklmnopqrstuvwxyz";
        let same = |pos: usize, text: &[u8]| {
            let by_words = Literal::new(text).at(bytes, pos);
            assert_eq!(by_words, same_at(bytes, pos, text), "{pos} {text:?}");
            assert_eq!(by_words, bytes.get(pos..pos + text.len()) == Some(text));
            by_words
        };
        for start in 0..bytes.len() {
            for end in start..=bytes.len() {
                let text = &bytes[start..end];
                assert!(same(start, text));
                assert!(!same(start + 1, text) || text.is_empty());
                // A change in any one byte is seen.
                for at in 0..text.len() {
                    let mut other = text.to_vec();
                    other[at] ^= 1 << (at % 8);
                    assert!(!same(start, &other), "{start}..{end} at {at}");
                }
            }
        }
        assert!(!same(31, b"fghijk"), "past the end");
    }
}
