//! The timing logic of one streamed response: split server-sent events into lines, read each
//! `data:` JSON without building a tree or copying text, and time every token chunk with the
//! arrival time of the bytes that carried it. Pure: times come in as arguments, so tests
//! check it with made-up times.
//!
//! A token chunk is an event whose `choices` array is not empty, as `vllm bench serve` counts
//! them: TTFT ends at the first, ITL is every gap between two, E2E ends at the last.
//!
//! Output tokens are **counted from the stream, never taken from the server's word**: the
//! length of each chunk's `token_ids` (vLLM sends them when a request asks with
//! `return_token_ids`), else one for each chunk that carries text. The server's
//! `usage.completion_tokens` is kept beside the count, to be checked against it
//! ([`crate::RequestRecord::usage_check`]), and never replaces it.

use crate::quote::{quote, quote_text};
use crate::record::{FailureKind, OutputTokenSource, RequestError, RequestRecord};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use std::fmt;
use stepscope_model::{Duration, Timestamp};

/// A line longer than this without a newline is not SSE.
const MAX_LINE_BYTES: usize = 4 << 20;
/// The most gaps reserved for one response before its first byte.
const MAX_ITL_RESERVE: usize = 1 << 16;
/// The most text one captured answer keeps (an output probe's answer is short).
const MAX_CAPTURE_BYTES: usize = 1 << 20;

/// What a captured answer said: its text and token ids, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Captured {
    pub(crate) text: String,
    pub(crate) token_ids: Vec<u32>,
    /// Whether every chunk with text also carried its token ids.
    pub(crate) ids_complete: bool,
    pub(crate) finish_reason: Option<String>,
}

/// Accumulates one response's events and their times.
#[derive(Debug)]
pub(crate) struct StreamRecorder {
    start: Timestamp,
    partial_line: Vec<u8>,
    first_token: Option<Timestamp>,
    last_token: Option<Timestamp>,
    itl: Vec<Duration>,
    token_chunks: u64,
    text_chunks: u64,
    /// Token ids the chunks carried.
    streamed_ids: u64,
    /// Chunks with text but without `token_ids`.
    chunks_without_ids: u64,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    done: bool,
    lines: u64,
    capture: Option<Captured>,
}

impl StreamRecorder {
    /// A response to a request sent at `start`, expecting about `output_len` chunks.
    pub(crate) fn new(start: Timestamp, output_len: usize) -> Self {
        Self {
            start,
            partial_line: Vec::new(),
            first_token: None,
            last_token: None,
            // Capped: the gaps grow as the server streams them, never ahead of it.
            itl: Vec::with_capacity(output_len.saturating_sub(1).min(MAX_ITL_RESERVE)),
            token_chunks: 0,
            text_chunks: 0,
            streamed_ids: 0,
            chunks_without_ids: 0,
            prompt_tokens: None,
            completion_tokens: None,
            done: false,
            lines: 0,
            capture: None,
        }
    }

    /// Also keeps the answer's text and token ids (for output probes; a benchmark's
    /// requests keep only counts and times).
    pub(crate) fn capturing(mut self) -> Self {
        self.capture = Some(Captured {
            ids_complete: true,
            ..Captured::default()
        });
        self
    }

    /// What a capturing recorder kept.
    pub(crate) fn take_captured(&mut self) -> Option<Captured> {
        self.capture.take()
    }

    /// Takes the bytes of one read, which arrived at `now`.
    pub(crate) fn feed(&mut self, bytes: &[u8], now: Timestamp) -> Result<(), RequestError> {
        let mut rest = bytes;
        while let Some(newline) = memchr::memchr(b'\n', rest) {
            let (line, tail) = rest.split_at(newline);
            rest = &tail[1..];
            if self.partial_line.is_empty() {
                self.line(line, now)?;
            } else {
                let mut joined = std::mem::take(&mut self.partial_line);
                joined.extend_from_slice(line);
                self.line(&joined, now)?;
                joined.clear();
                self.partial_line = joined;
            }
        }
        self.partial_line.extend_from_slice(rest);
        if self.partial_line.len() > MAX_LINE_BYTES {
            return Err(RequestError::new(
                FailureKind::BadSse,
                format!("a line runs past {MAX_LINE_BYTES} bytes without a newline"),
            ));
        }
        Ok(())
    }

    /// The stream ended at `now`: a last line without a newline still counts.
    pub(crate) fn finish(&mut self, now: Timestamp) -> Result<(), RequestError> {
        if self.partial_line.is_empty() {
            return Ok(());
        }
        let line = std::mem::take(&mut self.partial_line);
        self.line(&line, now)
    }

    /// `data: [DONE]` was seen.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Token chunks so far.
    pub(crate) fn token_chunks(&self) -> u64 {
        self.token_chunks
    }

    fn line(&mut self, line: &[u8], now: Timestamp) -> Result<(), RequestError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        self.lines += 1;
        if line.is_empty() || line[0] == b':' {
            // Event separator or SSE comment (keep-alive).
            return Ok(());
        }
        let Some(payload) = line.strip_prefix(b"data:") else {
            return Err(self.bad_line("is not `data: ...`", line));
        };
        let payload = payload.strip_prefix(b" ").unwrap_or(payload);
        if payload == b"[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: ChunkView = serde_json::from_slice(payload).map_err(|error| {
            let error = quote_text(&error.to_string());
            self.bad_line(&format!("holds no chunk object ({error})"), line)
        })?;
        if chunk.error.is_some() {
            return Err(RequestError::new(
                FailureKind::ServerError,
                format!("the server sent an error: {}", quote(payload)),
            ));
        }
        if let Some(usage) = chunk.usage {
            self.prompt_tokens = usage.prompt_tokens.or(self.prompt_tokens);
            self.completion_tokens = usage.completion_tokens.or(self.completion_tokens);
        }
        if chunk.choices.any {
            self.token_chunk(now, &chunk.choices);
            if self.capture.is_some() {
                self.capture_chunk(payload);
            }
        }
        Ok(())
    }

    fn token_chunk(&mut self, now: Timestamp, choices: &Choices) {
        match self.last_token {
            None => self.first_token = Some(now),
            Some(previous) => self.itl.push(now - previous),
        }
        self.last_token = Some(now);
        self.token_chunks += 1;
        self.text_chunks += u64::from(choices.text);
        match choices.token_ids {
            Some(ids) => self.streamed_ids += ids,
            None => self.chunks_without_ids += u64::from(choices.text),
        }
    }

    /// Keeps a token chunk's text and ids (parsed again, owned: probes are few and short).
    fn capture_chunk(&mut self, payload: &[u8]) {
        let Some(capture) = self.capture.as_mut() else {
            return;
        };
        let Ok(chunk) = serde_json::from_slice::<CaptureChunk>(payload) else {
            return;
        };
        let Some(choice) = chunk.choices.into_iter().next() else {
            return;
        };
        let text = choice
            .text
            .or_else(|| choice.delta.and_then(|delta| delta.content))
            .unwrap_or_default();
        match choice.token_ids {
            Some(ids) => capture.token_ids.extend(ids),
            None if !text.is_empty() => capture.ids_complete = false,
            None => {}
        }
        if capture.text.len() + text.len() <= MAX_CAPTURE_BYTES {
            capture.text.push_str(&text);
        }
        if choice.finish_reason.is_some() {
            capture.finish_reason = choice.finish_reason;
        }
    }

    fn bad_line(&self, problem: &str, line: &[u8]) -> RequestError {
        RequestError::new(
            FailureKind::BadSse,
            format!("line {} {problem}: `{}`", self.lines, quote(line)),
        )
    }

    /// The output tokens streamed, and how they were counted: the token ids the chunks
    /// carried when every chunk with text carried them, else the chunks with text.
    fn counted_output(&self) -> (u64, OutputTokenSource) {
        if self.streamed_ids > 0 && self.chunks_without_ids == 0 {
            (self.streamed_ids, OutputTokenSource::TokenIds)
        } else {
            (self.text_chunks, OutputTokenSource::Chunks)
        }
    }

    /// The record of request `index` whose prompt had `sent_prompt_tokens`, ended at `now`
    /// with `outcome`.
    pub(crate) fn into_record(
        self,
        index: usize,
        sent_prompt_tokens: u64,
        outcome: Result<(), RequestError>,
        now: Timestamp,
    ) -> RequestRecord {
        let (output_tokens, output_tokens_source) = self.counted_output();
        let end = match (&outcome, self.last_token) {
            (Ok(()), Some(last)) => last,
            _ => now,
        };
        RequestRecord {
            index,
            start: self.start,
            ttft: self.first_token.map(|first| first - self.start),
            latency: Some(end - self.start),
            itl: self.itl,
            input_tokens: self.prompt_tokens.unwrap_or(sent_prompt_tokens),
            output_tokens,
            output_tokens_source,
            usage_output_tokens: self.completion_tokens,
            error: outcome.err(),
        }
    }
}

/// A token chunk's first choice, owned, for capture.
#[derive(Deserialize)]
struct CaptureChunk {
    #[serde(default)]
    choices: Vec<CaptureChoice>,
}

#[derive(Deserialize)]
struct CaptureChoice {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    delta: Option<CaptureDelta>,
    #[serde(default)]
    token_ids: Option<Vec<u32>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct CaptureDelta {
    #[serde(default)]
    content: Option<String>,
}

/// The fields of a chunk that matter, read without allocating.
#[derive(Deserialize)]
struct ChunkView {
    #[serde(default)]
    choices: Choices,
    #[serde(default)]
    usage: Option<UsageView>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct UsageView {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// Whether `choices` holds a choice, whether the first carries text, and how many token ids
/// it carries (`None`: no `token_ids` field).
#[derive(Default)]
struct Choices {
    any: bool,
    text: bool,
    token_ids: Option<u64>,
}

#[derive(Deserialize)]
struct ChoiceView {
    #[serde(default)]
    text: NonEmpty,
    #[serde(default)]
    delta: Option<DeltaView>,
    #[serde(default)]
    token_ids: Option<CountedIds>,
}

#[derive(Deserialize)]
struct DeltaView {
    #[serde(default)]
    content: NonEmpty,
}

impl<'de> Deserialize<'de> for Choices {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChoicesVisitor;
        impl<'de> Visitor<'de> for ChoicesVisitor {
            type Value = Choices;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Choices, E> {
                Ok(Choices::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Choices, E> {
                Ok(Choices::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, inner: D) -> Result<Choices, D::Error> {
                inner.deserialize_seq(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Choices, A::Error> {
                let mut choices = Choices::default();
                if let Some(first) = seq.next_element::<ChoiceView>()? {
                    let delta = first.delta.is_some_and(|delta| delta.content.0);
                    choices = Choices {
                        any: true,
                        text: first.text.0 || delta,
                        token_ids: first.token_ids.map(|ids| ids.0),
                    };
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(choices)
            }
        }
        deserializer.deserialize_option(ChoicesVisitor)
    }
}

/// The length of a `token_ids` array, counted without keeping it (`null` counts 0).
struct CountedIds(u64);

impl<'de> Deserialize<'de> for CountedIds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = CountedIds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of token ids or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<CountedIds, E> {
                Ok(CountedIds(0))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CountedIds, A::Error> {
                let mut count = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    count += 1;
                }
                Ok(CountedIds(count))
            }
        }
        deserializer.deserialize_any(CountVisitor)
    }
}

/// Whether an optional string field is present and not empty.
#[derive(Default)]
struct NonEmpty(bool);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NonEmptyVisitor;
        impl<'de> Visitor<'de> for NonEmptyVisitor {
            type Value = NonEmpty;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<NonEmpty, E> {
                Ok(NonEmpty(false))
            }
            fn visit_none<E: de::Error>(self) -> Result<NonEmpty, E> {
                Ok(NonEmpty(false))
            }
            fn visit_some<D: Deserializer<'de>>(self, inner: D) -> Result<NonEmpty, D::Error> {
                inner.deserialize_str(self)
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<NonEmpty, E> {
                Ok(NonEmpty(!text.is_empty()))
            }
        }
        deserializer.deserialize_option(NonEmptyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_nanos(ms * 1_000_000)
    }

    fn token(text: &str) -> String {
        format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":null}}]}}\n\n"
        )
    }

    const USAGE: &str = "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}\n\n";

    #[test]
    fn times_each_token_chunk_by_the_arrival_of_its_bytes() {
        let mut recorder = StreamRecorder::new(at(100), 3);
        recorder.feed(token(" a").as_bytes(), at(130)).unwrap();
        // Two chunks in one read share its arrival time; the third is split across reads.
        let both = token(" b") + &token(" c");
        let (head, tail) = both.split_at(both.len() - 10);
        recorder.feed(head.as_bytes(), at(150)).unwrap();
        recorder.feed(tail.as_bytes(), at(175)).unwrap();
        recorder
            .feed(format!("{USAGE}data: [DONE]\n\n").as_bytes(), at(180))
            .unwrap();
        assert!(recorder.is_done());
        let record = recorder.into_record(4, 99, Ok(()), at(181));
        assert_eq!(record.ttft, Some(Duration::from_nanos(30_000_000)));
        assert_eq!(
            record.itl,
            vec![
                Duration::from_nanos(20_000_000),
                Duration::from_nanos(25_000_000)
            ]
        );
        // E2E ends at the last token chunk, as `vllm bench serve` measures it.
        assert_eq!(record.latency, Some(Duration::from_nanos(75_000_000)));
        assert_eq!((record.input_tokens, record.output_tokens), (7, 3));
        assert_eq!(record.output_tokens_source, OutputTokenSource::Chunks);
        assert_eq!(record.usage_output_tokens, Some(3));
    }

    /// The count is what streamed: usage that claims ten times as much is kept beside it,
    /// and token ids count as many tokens as they list (a chunk may carry several).
    #[test]
    fn counts_streamed_token_ids_and_keeps_the_usage_apart() {
        let ids = |text: &str, ids: &str| {
            format!(
                "data: {{\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"token_ids\":[{ids}]}}]}}\n\n"
            )
        };
        let lying =
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":40}}\n\n";
        let stream =
            ids(" a", "5") + &ids(" bc", "6, 7") + &ids("", "8") + lying + "data: [DONE]\n\n";
        let mut recorder = StreamRecorder::new(at(0), 4).capturing();
        recorder.feed(stream.as_bytes(), at(1)).unwrap();
        let captured = recorder.take_captured().unwrap();
        assert_eq!(captured.text, " a bc");
        assert_eq!(captured.token_ids, [5, 6, 7, 8]);
        assert!(captured.ids_complete);
        let record = recorder.into_record(0, 2, Ok(()), at(2));
        assert_eq!(record.output_tokens, 4);
        assert_eq!(record.output_tokens_source, OutputTokenSource::TokenIds);
        assert_eq!(record.usage_output_tokens, Some(40));
        // A chunk with text but no ids makes the count the chunks with text.
        let mixed = ids(" a", "5, 6") + &token(" b") + "data: [DONE]\n\n";
        let mut recorder = StreamRecorder::new(at(0), 4);
        recorder.feed(mixed.as_bytes(), at(1)).unwrap();
        let record = recorder.into_record(0, 2, Ok(()), at(2));
        assert_eq!(record.output_tokens, 2);
        assert_eq!(record.output_tokens_source, OutputTokenSource::Chunks);
    }

    #[test]
    fn counts_text_chunks_without_usage() {
        let mut recorder = StreamRecorder::new(at(0), 4);
        let stream = token(" a") + &token("") + &token(" b") + "data: [DONE]\r\n\r\n";
        recorder.feed(stream.as_bytes(), at(1)).unwrap();
        let record = recorder.into_record(0, 12, Ok(()), at(2));
        assert_eq!(record.output_tokens, 2);
        assert_eq!(record.output_tokens_source, OutputTokenSource::Chunks);
        assert_eq!(record.itl.len(), 2, "every chunk with a choice is timed");
        assert_eq!(record.input_tokens, 12);
    }

    #[test]
    fn chat_deltas_count_as_text() {
        let mut recorder = StreamRecorder::new(at(0), 2);
        let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
        let word = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hi\\n\"}}]}\n\n";
        recorder
            .feed(format!("{role}{word}").as_bytes(), at(3))
            .unwrap();
        let record = recorder.into_record(0, 1, Ok(()), at(4));
        assert_eq!(record.output_tokens, 1);
        assert_eq!(record.ttft, Some(Duration::from_nanos(3_000_000)));
    }

    #[test]
    fn comments_and_blank_lines_pass_other_lines_fail() {
        let mut recorder = StreamRecorder::new(at(0), 1);
        recorder.feed(b": keep-alive\n\n", at(1)).unwrap();
        let error = recorder.feed(b"event: message\n", at(2)).unwrap_err();
        assert_eq!(error.kind, FailureKind::BadSse);
        assert!(error.detail.contains("line 3"), "{}", error.detail);
        let mut recorder = StreamRecorder::new(at(0), 1);
        let error = recorder.feed(b"data: {not json\n", at(1)).unwrap_err();
        assert_eq!(error.kind, FailureKind::BadSse);
        let mut recorder = StreamRecorder::new(at(0), 1);
        let error = recorder
            .feed(b"data: {\"error\":{\"message\":\"boom\"}}\n", at(1))
            .unwrap_err();
        assert_eq!(error.kind, FailureKind::ServerError);
        assert!(error.detail.contains("boom"));
    }

    #[test]
    fn a_last_line_without_newline_counts() {
        let mut recorder = StreamRecorder::new(at(0), 1);
        recorder.feed(token(" a").as_bytes(), at(1)).unwrap();
        recorder.feed(b"data: [DONE]", at(2)).unwrap();
        assert!(!recorder.is_done());
        recorder.finish(at(2)).unwrap();
        assert!(recorder.is_done());
    }
}
