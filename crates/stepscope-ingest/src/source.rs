//! Getting a file's bytes: mapped when plain (guarded: `mapped`), inflated in pieces when
//! gzip or zstd.

use crate::gzip::{GzipReader, MemberCheck, MemberEnd, Step};
use std::io::Read;

/// How the file on disk is compressed, from its magic bytes (not its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    /// Plain text.
    None,
    /// gzip (`1f 8b`), possibly several members.
    Gzip,
    /// Zstandard (`28 b5 2f fd`).
    Zstd,
}

impl Compression {
    /// Detects compression from the first bytes of a file.
    pub fn detect(head: &[u8]) -> Self {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// A decompression that stopped early: the compressed byte offset and why.
#[derive(Debug)]
pub(crate) struct InflateFailure {
    pub compressed_offset: u64,
    pub source: std::io::Error,
}

impl InflateFailure {
    /// The error naming `path`, after `produced` bytes came out.
    pub(crate) fn into_error(self, path: &std::path::Path, produced: u64) -> crate::IngestError {
        crate::IngestError::Decompress {
            path: path.to_owned(),
            compressed_offset: self.compressed_offset,
            decompressed_bytes: produced,
            source: self.source,
        }
    }
}

/// What an inflating thread hands on, in stream order.
#[derive(Debug)]
pub(crate) enum Inflated {
    /// The next bytes of text.
    Text(Vec<u8>),
    /// A gzip member ended after the text before: its CRC-32 is the taker's to check (see
    /// [`CheckedText`]).
    MemberEnd(MemberEnd),
}

/// Inflates `compressed` in pieces of `piece` bytes, handing each to `send` as it comes out
/// (it returns `false` when the reader wants no more), a gzip member's end after its last
/// piece; returns how many bytes came out and, if the stream stopped early, where. Pieces
/// are filled in buffers from `recycled` while it has any, else in new ones.
pub(crate) fn inflate_pieces(
    compressed: &[u8],
    compression: Compression,
    piece: usize,
    mut recycled: impl FnMut() -> Option<Vec<u8>>,
    mut send: impl FnMut(Inflated) -> bool,
) -> (u64, Option<InflateFailure>) {
    let mut produced = 0;
    let mut forward = |source: &mut dyn FnMut(&mut [u8]) -> std::io::Result<Step>| {
        loop {
            // A new buffer comes zeroed from the allocator (fresh pages, not written twice).
            let mut buffer = recycled().unwrap_or_else(|| vec![0; piece]);
            buffer.resize(piece, 0);
            let (filled, stop) = fill(source, &mut buffer);
            buffer.truncate(filled);
            produced += filled as u64;
            let wanted = filled == 0 || send(Inflated::Text(buffer));
            match stop {
                Stop::Failed(error) => return Err(error),
                _ if !wanted => return Ok(()),
                Stop::Full => {}
                Stop::MemberEnd(end) if send(Inflated::MemberEnd(end)) => {}
                Stop::MemberEnd(_) | Stop::End => return Ok(()),
            }
        }
    };
    let (result, consumed) = match compression {
        Compression::Gzip => {
            let mut reader = GzipReader::new(compressed);
            (forward(&mut |into| reader.step(into)), reader.consumed())
        }
        Compression::Zstd => {
            let mut counter = CountingReader::new(compressed);
            let result = match zstd::stream::read::Decoder::with_buffer(&mut counter) {
                Ok(mut decoder) => forward(&mut |into| read_step(&mut decoder, into)),
                Err(error) => Err(error),
            };
            (result, counter.consumed)
        }
        Compression::None => {
            let mut counter = CountingReader::new(compressed);
            (
                forward(&mut |into| read_step(&mut counter, into)),
                counter.consumed,
            )
        }
    };
    let failure = result.err().map(|source| InflateFailure {
        compressed_offset: consumed,
        source,
    });
    (produced, failure)
}

/// A plain reader's next text as a [`Step`]: none is the end.
fn read_step(reader: &mut dyn Read, into: &mut [u8]) -> std::io::Result<Step> {
    match reader.read(into)? {
        0 if !into.is_empty() => Ok(Step::End),
        read => Ok(Step::Text(read)),
    }
}

/// Why a buffer stopped filling.
enum Stop {
    Full,
    MemberEnd(MemberEnd),
    End,
    /// The stream failed (the bytes before it are kept).
    Failed(std::io::Error),
}

/// Fills `buffer` from `source` until it is full, a member or the stream ends, or the
/// stream fails: how many bytes came, and why it stopped.
fn fill(
    source: &mut dyn FnMut(&mut [u8]) -> std::io::Result<Step>,
    buffer: &mut [u8],
) -> (usize, Stop) {
    let mut filled = 0;
    while filled < buffer.len() {
        match source(&mut buffer[filled..]) {
            Ok(Step::Text(read)) => filled += read,
            Ok(Step::MemberEnd(end)) => return (filled, Stop::MemberEnd(end)),
            Ok(Step::End) => return (filled, Stop::End),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return (filled, Stop::Failed(error)),
        }
    }
    (filled, Stop::Full)
}

/// Checks the text an inflating thread hands on against each gzip member's CRC-32 as it
/// passes: on the reading thread, not on the inflating one that bounds a compressed read.
#[derive(Debug, Default)]
pub(crate) struct TextCheck {
    check: MemberCheck,
    /// Bytes of text passed.
    produced: u64,
}

impl TextCheck {
    /// The text in `inflated` (none at a member's end), or the failure of the member that
    /// ended there with text that does not match: where it is, and the bytes before it.
    pub(crate) fn pass(
        &mut self,
        inflated: Inflated,
    ) -> Result<Option<Vec<u8>>, (u64, InflateFailure)> {
        match inflated {
            Inflated::Text(text) => {
                self.check.text(&text);
                self.produced += text.len() as u64;
                Ok(Some(text))
            }
            Inflated::MemberEnd(end) => match self.check.member_end(&end) {
                Ok(()) => Ok(None),
                Err(source) => {
                    let failure = InflateFailure {
                        compressed_offset: end.compressed_offset,
                        source,
                    };
                    Err((self.produced, failure))
                }
            },
        }
    }
}

/// The text arriving from an inflating thread, checked (see [`TextCheck`]). It ends at a
/// member whose text does not match, after that text (as a decoder that checks as it
/// inflates ends there), keeping the failure, and lets the inflating thread go: its sends
/// fail from then on.
#[derive(Debug)]
pub(crate) struct CheckedText<I> {
    arriving: Option<I>,
    check: TextCheck,
    failure: Option<(u64, InflateFailure)>,
}

impl<I: Iterator<Item = Inflated>> CheckedText<I> {
    pub(crate) fn new(arriving: I) -> Self {
        CheckedText {
            arriving: Some(arriving),
            check: TextCheck::default(),
            failure: None,
        }
    }

    /// The member that failed its check, if one did: the bytes of text before the failure,
    /// and where in the input it is.
    pub(crate) fn take_failure(&mut self) -> Option<(u64, InflateFailure)> {
        self.failure.take()
    }
}

impl<I: Iterator<Item = Inflated>> Iterator for CheckedText<I> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            let inflated = self.arriving.as_mut()?.next()?;
            match self.check.pass(inflated) {
                Ok(Some(text)) => return Some(text),
                Ok(None) => {}
                Err(failure) => {
                    self.arriving = None;
                    self.failure = Some(failure);
                    return None;
                }
            }
        }
    }
}

/// A slice read through, counting what was taken.
pub(crate) struct CountingReader<'a> {
    inner: &'a [u8],
    pub(crate) consumed: u64,
}

impl<'a> CountingReader<'a> {
    pub(crate) fn new(inner: &'a [u8]) -> Self {
        CountingReader { inner, consumed: 0 }
    }
}

impl Read for CountingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed += n as u64;
        Ok(n)
    }
}

impl std::io::BufRead for CountingReader<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(self.inner)
    }
    fn consume(&mut self, amount: usize) {
        self.inner = &self.inner[amount..];
        self.consumed += amount as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn truncated_gzip_keeps_what_inflated() {
        let text = "x".repeat(100_000) + &"y".repeat(100_000);
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(text.as_bytes()).unwrap();
        let gz = encoder.finish().unwrap();
        let inflate = |compressed: &[u8]| {
            // Every piece comes back to be filled again, as the reader returns them.
            let spare = std::cell::RefCell::new(Vec::new());
            let recycled = || spare.borrow_mut().pop();
            let mut out = Vec::new();
            let send = |inflated| {
                if let Inflated::Text(piece) = inflated {
                    out.extend_from_slice(&piece);
                    spare.borrow_mut().push(piece);
                }
                true
            };
            let (count, failure) =
                inflate_pieces(compressed, Compression::Gzip, 4096, recycled, send);
            assert_eq!(count, out.len() as u64);
            (out, failure)
        };
        let (whole, failure) = inflate(&gz);
        assert!(failure.is_none());
        assert_eq!(whole, text.as_bytes());
        let cut = &gz[..gz.len() / 2];
        let (partial, failure) = inflate(cut);
        assert!(failure.is_some());
        assert!(!partial.is_empty(), "the first half inflates to something");
        assert!(text.as_bytes().starts_with(&partial));
    }

    fn gzip(text: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(text).unwrap();
        encoder.finish().unwrap()
    }

    /// Everything an inflating thread sends for `compressed`, in pieces of 1000 bytes.
    fn sent(compressed: &[u8]) -> (Vec<Inflated>, Option<InflateFailure>) {
        let mut sent = Vec::new();
        let send = |inflated| {
            sent.push(inflated);
            true
        };
        let (_, failure) = inflate_pieces(compressed, Compression::Gzip, 1000, || None, send);
        (sent, failure)
    }

    #[test]
    fn checked_text_ends_after_a_member_that_fails_its_check() {
        let (a, b) = ("a".repeat(2500), "b".repeat(700));
        let first = gzip(a.as_bytes());
        let both = [first.clone(), gzip(b.as_bytes())].concat();
        let (messages, failure) = sent(&both);
        assert!(failure.is_none());
        // A member's last piece is cut at its end, and its end follows it.
        let ends: Vec<_> = (messages.iter())
            .filter_map(|message| match message {
                Inflated::MemberEnd(end) => Some(end.compressed_offset),
                Inflated::Text(_) => None,
            })
            .collect();
        assert_eq!(ends, [first.len() as u64, both.len() as u64]);
        let mut checked = CheckedText::new(messages.into_iter());
        assert_eq!(
            checked.by_ref().collect::<Vec<_>>().concat(),
            [a.as_bytes(), b.as_bytes()].concat()
        );
        assert!(checked.take_failure().is_none());

        // The first member's CRC-32 broken: its text, then the end, though the second inflates.
        let mut broken = both.clone();
        broken[first.len() - 8] ^= 1;
        let (messages, failure) = sent(&broken);
        assert!(failure.is_none(), "the inflating side does not check CRCs");
        let mut checked = CheckedText::new(messages.into_iter());
        assert_eq!(checked.by_ref().collect::<Vec<_>>().concat(), a.as_bytes());
        let (produced, failure) = checked.take_failure().expect("the check failed");
        assert_eq!(produced, a.len() as u64);
        assert_eq!(failure.compressed_offset, first.len() as u64);
        assert!(
            failure.source.to_string().contains("checksum"),
            "{}",
            failure.source
        );

        // A wrong size fails on the inflating side, where flate2 fails, with the same error.
        let mut broken = both;
        broken[first.len() - 4] ^= 1;
        let (_, failure) = sent(&broken);
        let failure = failure.expect("the size check failed");
        assert_eq!(failure.compressed_offset, first.len() as u64);
        assert!(
            failure.source.to_string().contains("checksum"),
            "{}",
            failure.source
        );
    }
}
