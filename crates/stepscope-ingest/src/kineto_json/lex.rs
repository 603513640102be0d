//! One trace event read straight from the bytes, without serde.
//!
//! A Chrome-trace event is a flat object whose few interesting keys are known; everything
//! else (most of `args`, every key of a CPU op) is skipped. A general deserializer spends
//! most of its time on what is then dropped: building each key as a `&str` (UTF-8 checked),
//! walking a visitor per value, moving a large event struct through `Result`s. This reader
//! compares keys as bytes, checks UTF-8 only on the strings it keeps, skips values by
//! grammar alone, and fills one [`RawEvent`] in place. It still checks the JSON grammar of
//! every byte it passes (a skipped value must be a well-formed value): a corrupt file fails
//! at the same place as before, and a cut one reports the end of its bytes.
//!
//! What it accepts is what serde_json accepted through the visitors now in
//! `raw/serde_reference.rs` (compiled for tests only, the lexer's reference), tested by
//! the ingest crate's property tests (generated, mutated and cut documents) against
//! serde_json's own reading: numbers as numbers or strings, unknown keys counted, an
//! `args` of `null` as no args, and nothing else but objects where objects belong.
//!
//! Before it, a [`Reader`] tries the shapes it learned from earlier counted events of the
//! same buffer ([`shape`]): most of a `with_stack` trace is Python functions printed alike,
//! and one byte compare per literal run and a grammar check per value read them exactly as
//! the general reader would, in 40 % fewer instructions over a whole trace.

use super::raw::{Args, IGNORED_KEYS, Number, RawEvent, Text};
use super::scan::ParseFailure;
use std::borrow::Cow;

mod grammar;
mod shape;
mod words;

use words::*;

/// Reads the events of one buffer, one after another, learning the shapes of its counted
/// events as it goes (see [`shape`]).
#[derive(Debug, Default)]
pub(crate) struct Reader<'a> {
    shapes: shape::Shapes<'a>,
    /// The event read last.
    event: RawEvent<'a>,
    /// Whether it holds nothing but a phase and a category (a shape read it), so that the
    /// next one a shape reads needs only those two set.
    bare: bool,
    /// When a shape read it, whether it is a Python function (else an ignored category).
    python: bool,
}

impl<'a> Reader<'a> {
    /// Reads the event object starting at `pos` (on its `{`), which [`Self::current`] then
    /// holds; returns the offset just past its `}`.
    #[inline]
    pub(crate) fn event(&mut self, bytes: &'a [u8], pos: usize) -> Result<usize, ParseFailure> {
        if let Some((end, python)) = self.shapes.read(bytes, pos, &mut self.event, self.bare) {
            (self.bare, self.python) = (true, python);
            return Ok(end);
        }
        self.bare = false;
        let event = &mut self.event;
        *event = RawEvent::default();
        let mut lexer = Lexer { bytes, pos };
        match lexer.event(event) {
            Ok(read_now) => {
                if !read_now && only_counted(event) {
                    self.shapes.counted(bytes, pos, lexer.pos, event);
                }
                Ok(lexer.pos)
            }
            Err(fail) => Err(fail.into_failure(bytes.len())),
        }
    }

    /// The event read last.
    #[cfg(test)]
    pub(crate) fn current(&self) -> &RawEvent<'a> {
        &self.event
    }

    /// Adds the event read last to `builder`: as [`add_event`] does, and in a few
    /// instructions when a shape read it (only counted: a complete event of a counted
    /// category, nothing else read; `add_event` matched its category by name each time,
    /// 1.8 % of the instructions of `analyze --threads 1` on a tiled `with_stack` trace).
    #[inline(always)]
    pub(crate) fn add_current(&self, builder: &mut stepscope_model::TraceBuilder) {
        if self.bare {
            super::events::add_counted(builder, self.python);
        } else {
            super::events::add_event(builder, &self.event);
        }
    }
}

/// Where reading failed and why (at or past the end: the bytes ran out).
#[derive(Debug)]
struct Fail {
    offset: usize,
    message: Message,
}

/// A failure's message: a thin pointer, so a `Result<(), Fail>` is two words and comes back
/// in registers.
type Message = &'static &'static str;

impl Fail {
    fn into_failure(self, len: usize) -> ParseFailure {
        // Past the end is where the bytes ran out; a break in the last byte is a truncation
        // whatever it looked like (`1.` at the end).
        let at_end = self.offset + 1 >= len;
        ParseFailure {
            offset: if at_end { len } else { self.offset } as u64,
            message: (*self.message).to_owned(),
            at_end_of_input: at_end,
        }
    }
}

type Step<T> = Result<T, Fail>;

/// Containers nested deeper than this are refused, as serde_json refuses them.
const MAX_DEPTH: u32 = 128;

struct Lexer<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    #[cold]
    fn fail(&self, message: Message) -> Fail {
        Fail {
            offset: self.pos,
            message,
        }
    }

    #[cold]
    fn end(&self) -> Fail {
        Fail {
            offset: self.bytes.len(),
            message: &"the JSON text ends inside an event",
        }
    }

    /// Steps over whitespace; one compare when there is none, two when it is one space (as
    /// Kineto and Python's `json` write after `:` and `,`).
    #[inline(always)]
    fn skip_whitespace(&mut self) {
        match self.bytes.get(self.pos) {
            Some(&byte) if byte > b' ' => return,
            Some(b' ')
                if self
                    .bytes
                    .get(self.pos + 1)
                    .is_some_and(|&byte| byte > b' ') =>
            {
                self.pos += 1;
                return;
            }
            _ => {}
        }
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    #[inline(always)]
    fn peek(&mut self) -> Step<u8> {
        self.skip_whitespace();
        self.bytes.get(self.pos).copied().ok_or_else(|| self.end())
    }

    #[inline(always)]
    fn expect(&mut self, byte: u8, message: Message) -> Step<()> {
        if self.peek()? == byte {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.fail(message))
        }
    }

    /// After a member: `true` at `,` (another follows), `false` at the closing `close`.
    #[inline(always)]
    fn next_member(&mut self, close: u8, message: Message) -> Step<bool> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Ok(true)
            }
            b if b == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(self.fail(message)),
        }
    }

    /// Steps past `{` and says whether the object has a first key (`false`: it was `{}`).
    fn open_object(&mut self, message: Message) -> Step<bool> {
        self.expect(b'{', message)?;
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// A key and its colon.
    #[inline(always)]
    fn key(&mut self) -> Step<Raw<'a>> {
        if self.peek()? != b'"' {
            return Err(self.fail(&"expected a key (a string) in an object"));
        }
        let key = self.string()?;
        self.expect(b':', &"expected `:` after a key")?;
        Ok(key)
    }

    /// The keys every event has, quoted and followed by `:`, taken in one compare of a word
    /// each; `None` for anything else (read the usual way), the position unmoved.
    #[inline(always)]
    fn event_key(&mut self) -> Option<Raw<'a>> {
        self.skip_whitespace();
        let word = load_word(self.bytes.get(self.pos..self.pos + 8)?);
        let key: &'static [u8] = match (word & mask(4), word & mask(5), word & mask(6)) {
            (QUOTED_PH, _, _) => b"ph",
            (QUOTED_TS, _, _) => b"ts",
            (_, QUOTED_CAT, _) => b"cat",
            (_, QUOTED_PID, _) => b"pid",
            (_, QUOTED_TID, _) => b"tid",
            (_, QUOTED_DUR, _) => b"dur",
            (_, _, QUOTED_NAME) => b"name",
            (_, _, QUOTED_ARGS) => b"args",
            _ => return None,
        };
        let at = self.pos;
        self.pos += key.len() + 2;
        if self.expect(b':', &"expected `:` after a key").is_err() {
            self.pos = at;
            return None;
        }
        Some(Raw::Borrowed(key))
    }

    /// Reads an event. Its phase and category are read at once. The fields that only a
    /// kept event needs (name, numbers, `args`) are read where they stand when `ph` and
    /// `cat` came before them and make it kept (Kineto writes them first); otherwise they are
    /// checked and stepped over, their places noted, and read only once the whole object
    /// says the event is kept: most of a `with_stack` trace is Python functions that are
    /// only counted, and tools that sort keys put `ph` and `cat` after the rest.
    /// Says whether a field besides `ph` and `cat` was read (not only stepped over).
    fn event(&mut self, event: &mut RawEvent<'a>) -> Step<bool> {
        if !self.open_object(&"expected a trace event object (`{`)")? {
            return Ok(false);
        }
        let mut later = Later::default();
        loop {
            let key = match self.event_key() {
                Some(key) => key,
                None => self.key()?,
            };
            self.event_member(event, &mut later, key)?;
            if !self.next_member(b'}', &"expected `,` or `}` after a value in an event")? {
                break;
            }
        }
        let end = self.pos;
        self.read_later(event, &later)?;
        self.pos = end;
        Ok(later.read_now)
    }

    fn event_member(
        &mut self,
        event: &mut RawEvent<'a>,
        later: &mut Later,
        key: Raw<'a>,
    ) -> Step<()> {
        let malformed = &mut event.malformed_fields;
        match key.bytes() {
            b"ph" => {
                event.phase = self.text_or_count(malformed)?;
                later.kept = known_kept(event);
            }
            b"cat" => {
                event.category = self.text_or_count(malformed)?;
                later.kept = known_kept(event);
            }
            b"name" | b"pid" | b"tid" | b"ts" | b"dur" | b"id" | b"args" if later.kept => {
                self.read_now(event, later, key.bytes())?;
            }
            b"name" => later.name = Some(self.step_over()?),
            b"pid" => later.pid = Some(self.step_over()?),
            b"tid" => later.tid = Some(self.step_over()?),
            b"ts" => later.ts = Some(self.step_over()?),
            b"dur" => later.dur = Some(self.step_over()?),
            b"id" => later.id = Some(self.step_over()?),
            b"args" => later.args = Some(self.step_over_args()?),
            other => {
                self.skip_value(0)?;
                if !IGNORED_KEYS
                    .iter()
                    .any(|ignored| ignored.as_bytes() == other)
                {
                    let at = self.pos;
                    let key = key.into_text().ok_or(Fail {
                        offset: at,
                        message: &"a key is not valid UTF-8",
                    })?;
                    event.unknown_keys.push(key);
                }
            }
        }
        Ok(())
    }

    /// Reads a field of an event already known to be kept (its `ph` and `cat` came first,
    /// as Kineto writes them) where it stands, instead of stepping over it and reading it
    /// again at the end.
    #[inline(never)]
    fn read_now(&mut self, event: &mut RawEvent<'a>, later: &mut Later, key: &[u8]) -> Step<()> {
        match key {
            b"name" => {
                later.name = None;
                event.name = self.text_or_count(&mut event.malformed_fields)?;
            }
            b"pid" => (later.pid, event.pid) = (None, Some(self.number()?)),
            b"tid" => (later.tid, event.tid) = (None, Some(self.number()?)),
            b"ts" => (later.ts, event.ts) = (None, Some(self.number()?)),
            b"dur" => (later.dur, event.dur) = (None, Some(self.number()?)),
            b"id" => (later.id, event.id) = (None, Some(self.number()?)),
            b"args" => {
                later.args = None;
                self.args(&mut event.args)?;
            }
            _ => {}
        }
        later.read_now = true;
        Ok(())
    }

    /// Steps over a value, returning where it starts.
    fn step_over(&mut self) -> Step<usize> {
        self.skip_whitespace();
        let at = self.pos;
        self.skip_value(1)?;
        Ok(at)
    }

    /// Steps over `args`, which must be an object or `null` in any event.
    fn step_over_args(&mut self) -> Step<usize> {
        let at = self.pos;
        match self.peek()? {
            b'n' => self.literal(b"null")?,
            b'{' => self.skip_object(1)?,
            _ => return Err(self.fail(&"expected an args object (`{` or `null`)")),
        }
        Ok(at)
    }

    /// Reads the noted fields of a kept event; of one that is only counted, only whether
    /// its name was a string.
    fn read_later(&mut self, event: &mut RawEvent<'a>, later: &Later) -> Step<()> {
        // `kept` was worked out when `ph` or `cat` was last read: with both there, the
        // event is counted exactly when it is not kept.
        let counted = event.phase.is_some() && event.category.is_some() && !later.kept;
        if counted {
            if later.name.is_some_and(|at| self.bytes[at] != b'"') {
                event.malformed_fields += 1;
            }
            if later.read_now {
                // Fields read before a later `ph` or `cat` made it a counted event.
                let kept = std::mem::take(event);
                (event.phase, event.category) = (kept.phase, kept.category);
                (event.unknown_keys, event.malformed_fields) =
                    (kept.unknown_keys, kept.malformed_fields);
            }
            return Ok(());
        }
        if let Some(at) = later.name {
            self.pos = at;
            event.name = self.text_or_count(&mut event.malformed_fields)?;
        }
        for (at, field) in [
            (later.pid, &mut event.pid),
            (later.tid, &mut event.tid),
            (later.ts, &mut event.ts),
            (later.dur, &mut event.dur),
            (later.id, &mut event.id),
        ] {
            if let Some(at) = at {
                self.pos = at;
                *field = Some(self.number()?);
            }
        }
        if let Some(at) = later.args {
            self.pos = at;
            self.args(&mut event.args)?;
        }
        Ok(())
    }

    /// Reads `args` into `args`, which it clears first (a later `args` key replaces an
    /// earlier one). Filled in place: returning the struct moved it, whole, for every event.
    fn args(&mut self, args: &mut Args<'a>) -> Step<()> {
        *args = Args::default();
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Ok(());
        }
        if !self.open_object(&"expected an args object (`{` or `null`)")? {
            return Ok(());
        }
        loop {
            let key = self.key()?;
            match key.bytes() {
                b"correlation" => args.correlation = Some(self.number()?),
                b"device" => args.device = Some(self.number()?),
                b"stream" => args.stream = Some(self.number()?),
                b"graph id" | b"graph_id" => args.graph_id = Some(self.number()?),
                b"kernel" => args.kernel = self.text_value()?,
                b"name" => args.name = self.text_value()?,
                b"External id" => args.external_id = self.raw_text()?,
                b"Input Dims" => args.input_dims = self.raw_text()?,
                b"Input type" => args.input_types = self.raw_text()?,
                b"Input Strides" => args.input_strides = self.raw_text()?,
                b"Concrete Inputs" => args.concrete_inputs = self.raw_text()?,
                _ => self.skip_value(1)?,
            }
            if !self.next_member(b'}', &"expected `,` or `}` after a value in `args`")? {
                return Ok(());
            }
        }
    }

    /// Any value, kept as its JSON text (not checked as UTF-8 here).
    fn raw_text(&mut self) -> Step<Option<&'a [u8]>> {
        let at = self.step_over()?;
        Ok(Some(&self.bytes[at..self.pos]))
    }

    /// A string kept as text, anything else skipped and counted as malformed.
    fn text_or_count(&mut self, malformed: &mut u32) -> Step<Option<Text<'a>>> {
        if let Some(text) = self.common_quoted() {
            return Ok(Some(text));
        }
        let text = self.text_value()?;
        if text.is_none() {
            *malformed += 1;
        }
        Ok(text)
    }

    /// The phases and categories most events carry, quoted and followed by nothing to
    /// check (no escape can be in them), taken in one compare each; `None` for anything else
    /// (read the usual way).
    #[inline(always)]
    fn common_quoted(&mut self) -> Option<Text<'static>> {
        self.skip_whitespace();
        let rest = self.bytes.get(self.pos..)?;
        let (len, text) = if rest.starts_with(b"\"X\"") {
            (3, "X")
        } else if rest.starts_with(b"\"python_function\"") {
            (17, "python_function")
        } else if rest.starts_with(b"\"cpu_op\"") {
            (8, "cpu_op")
        } else if rest.starts_with(b"\"kernel\"") {
            (8, "kernel")
        } else if rest.starts_with(b"\"cuda_runtime\"") {
            (14, "cuda_runtime")
        } else {
            return None;
        };
        self.pos += len;
        Some(Text(Cow::Borrowed(text)))
    }

    /// A string kept as text; any other value skipped.
    #[inline(always)]
    fn text_value(&mut self) -> Step<Option<Text<'a>>> {
        if self.peek()? != b'"' {
            self.skip_value(1)?;
            return Ok(None);
        }
        let at = self.pos;
        let raw = self.string()?;
        raw.into_text().map(Some).ok_or(Fail {
            offset: at,
            message: &"invalid UTF-8 in a string",
        })
    }
}

/// Where the values of a event's fields that are read only when it is kept start.
#[derive(Debug, Default)]
struct Later {
    name: Option<usize>,
    pid: Option<usize>,
    tid: Option<usize>,
    ts: Option<usize>,
    dur: Option<usize>,
    id: Option<usize>,
    args: Option<usize>,
    /// Whether `ph` and `cat`, read so far, make the event one that is kept.
    kept: bool,
    /// Whether a field was read where it stood (because `kept` was set then).
    read_now: bool,
}

/// Whether `event` has a phase and a category, and they make it one that is kept.
fn known_kept(event: &RawEvent<'_>) -> bool {
    event.phase.is_some() && event.category.is_some() && !only_counted(event)
}

/// Whether `event`'s phase and category make it one that is only counted.
fn only_counted(event: &RawEvent<'_>) -> bool {
    let phase = event.phase.as_ref().map(|p| &*p.0);
    let category = event.category.as_ref().map(|c| &*c.0);
    phase == Some("X") && category.is_some_and(super::events::only_counted)
}

/// A string's bytes as read: borrowed from the input, or decoded from escapes.
enum Raw<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl<'a> Raw<'a> {
    fn bytes(&self) -> &[u8] {
        match self {
            Raw::Borrowed(bytes) => bytes,
            Raw::Owned(bytes) => bytes,
        }
    }

    /// As text, when it is UTF-8.
    fn into_text(self) -> Option<Text<'a>> {
        let text = match self {
            Raw::Borrowed(bytes) => match common_text(bytes) {
                Some(text) => Cow::Borrowed(text),
                None => Cow::Borrowed(std::str::from_utf8(bytes).ok()?),
            },
            Raw::Owned(bytes) => Cow::Owned(String::from_utf8(bytes).ok()?),
        };
        Some(Text(text))
    }
}

/// The phases and categories every event carries, as text without a UTF-8 check (two of
/// them per event: a check per string costs more than this match).
fn common_text(bytes: &[u8]) -> Option<&'static str> {
    Some(match bytes {
        b"X" => "X",
        b"s" => "s",
        b"f" => "f",
        b"i" => "i",
        b"M" => "M",
        b"kernel" => "kernel",
        b"cpu_op" => "cpu_op",
        b"python_function" => "python_function",
        b"cuda_runtime" => "cuda_runtime",
        b"cuda_driver" => "cuda_driver",
        b"ac2g" => "ac2g",
        b"gpu_memcpy" => "gpu_memcpy",
        b"gpu_memset" => "gpu_memset",
        b"user_annotation" => "user_annotation",
        b"gpu_user_annotation" => "gpu_user_annotation",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
