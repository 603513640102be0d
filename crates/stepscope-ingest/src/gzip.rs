//! gzip members (RFC 1952) over a mapped file: raw deflate through flate2's zlib-rs backend,
//! checked with crc32fast, the check apart from the inflating.
//!
//! flate2's own gzip decoder checks each member with zlib-rs's CRC-32, which folds 128 bits
//! at a time; crc32fast folds 256 bits with VPCLMULQDQ where the CPU has it (AMD Zen 3 and
//! later, Intel Ice Lake and later) and is twice as fast there: 50 ms instead of 105 ms
//! per GB on this project's machine. [`GzipReader`] inflates and checks each member's size;
//! the CRC-32 is left to a [`MemberCheck`] over the text as it passes, so that a compressed
//! read can run it on the reading thread, beside the inflating thread that bounds the read
//! (40 ms of its 750 on the benchmark `.json.gz`, measured), and not on it. Together they
//! frame members as flate2 does: the same checks, failing with the same errors at the same
//! input offsets after the same text, and several members read one after another (as
//! `MultiGzDecoder` does and `gzip -d` does).

use flate2::{Decompress, FlushDecompress, Status};
use std::io::{Error, ErrorKind};

/// Header flags (RFC 1952 §2.3.1).
const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
const FRESERVED: u8 = 0xe0;
/// The longest file name or comment accepted in a header, as in flate2.
const MAX_HEADER_FIELD: usize = 65535;

/// Inflates the text of every gzip member in `input`, one after another, leaving each
/// member's CRC-32 to be checked by whoever takes the text (see [`MemberCheck`]).
pub(crate) struct GzipReader<'a> {
    input: &'a [u8],
    /// Bytes of `input` taken so far: where a failure is reported.
    consumed: usize,
    part: Part,
    inflater: Decompress,
    /// Bytes inflated in this member, modulo 2^32 as the trailer counts them.
    size: u32,
}

/// What one step of a [`GzipReader`] gave.
#[derive(Debug)]
pub(crate) enum Step {
    /// This many bytes of text (0 only into an empty buffer).
    Text(usize),
    /// A member ended after the text before, its size as its trailer says.
    MemberEnd(MemberEnd),
    /// The input ended after a whole member.
    End,
}

/// A member's end: the CRC-32 its trailer gives for its text, and the input taken just past
/// the trailer, where a member whose text does not match fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemberEnd {
    pub(crate) stored_crc: u32,
    pub(crate) compressed_offset: u64,
}

/// The CRC-32 of the text of the member being read, checked against its trailer at its end.
#[derive(Debug, Default)]
pub(crate) struct MemberCheck {
    crc: crc32fast::Hasher,
}

impl MemberCheck {
    /// Takes the next bytes of the member's text.
    pub(crate) fn text(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
    }

    /// The member ended: the error it fails with when its text does not match its CRC-32
    /// (the next member starts afresh either way).
    pub(crate) fn member_end(&mut self, end: &MemberEnd) -> std::io::Result<()> {
        if std::mem::take(&mut self.crc).finalize() == end.stored_crc {
            Ok(())
        } else {
            Err(corrupt())
        }
    }
}

/// What the next bytes of the input are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Header,
    Body,
    Trailer,
    End,
}

impl<'a> GzipReader<'a> {
    pub(crate) fn new(input: &'a [u8]) -> Self {
        GzipReader {
            input,
            consumed: 0,
            part: Part::Header,
            inflater: Decompress::new(false),
            size: 0,
        }
    }

    /// Bytes of the compressed input taken so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed as u64
    }

    /// The next `n` bytes of input, taken; all that is left and an end-of-file error when
    /// fewer remain.
    fn take(&mut self, n: usize) -> std::io::Result<&'a [u8]> {
        let rest = &self.input[self.consumed..];
        if rest.len() < n {
            self.consumed = self.input.len();
            return Err(ErrorKind::UnexpectedEof.into());
        }
        self.consumed += n;
        Ok(&rest[..n])
    }

    /// A header field ended by a zero byte, taken with its zero.
    fn take_to_nul(&mut self) -> std::io::Result<&'a [u8]> {
        let rest = &self.input[self.consumed..];
        match memchr::memchr(0, rest) {
            Some(len) if len <= MAX_HEADER_FIELD => {
                self.consumed += len + 1;
                Ok(&rest[..=len])
            }
            Some(_) => Err(field_too_long(&mut self.consumed)),
            None if rest.len() > MAX_HEADER_FIELD => Err(field_too_long(&mut self.consumed)),
            None => {
                self.consumed = self.input.len();
                Err(ErrorKind::UnexpectedEof.into())
            }
        }
    }

    /// Reads a member's header, checking its own CRC when it has one.
    fn header(&mut self) -> std::io::Result<()> {
        let start = self.consumed;
        let fixed = self.take(10)?;
        if fixed[..3] != [0x1f, 0x8b, 8] || fixed[3] & FRESERVED != 0 {
            return Err(Error::new(ErrorKind::InvalidInput, "invalid gzip header"));
        }
        let flags = fixed[3];
        if flags & FEXTRA != 0 {
            let len = self.take(2)?;
            self.take(usize::from(u16::from_le_bytes([len[0], len[1]])))?;
        }
        if flags & FNAME != 0 {
            self.take_to_nul()?;
        }
        if flags & FCOMMENT != 0 {
            self.take_to_nul()?;
        }
        if flags & FHCRC != 0 {
            let header = &self.input[start..self.consumed];
            let stored = self.take(2)?;
            if u16::from_le_bytes([stored[0], stored[1]]) != crc32fast::hash(header) as u16 {
                return Err(corrupt());
            }
        }
        Ok(())
    }

    /// Inflates into `into`: how many bytes came (0 once the member's deflate stream ended).
    fn body(&mut self, into: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let input = &self.input[self.consumed..];
            let at_end = input.is_empty();
            let flush = if at_end {
                FlushDecompress::Finish
            } else {
                FlushDecompress::None
            };
            let (before_in, before_out) = (self.inflater.total_in(), self.inflater.total_out());
            let status = self.inflater.decompress(input, into, flush);
            self.consumed += (self.inflater.total_in() - before_in) as usize;
            let read = (self.inflater.total_out() - before_out) as usize;
            self.size = self.size.wrapping_add(read as u32);
            match status {
                Ok(Status::StreamEnd) => {
                    self.part = Part::Trailer;
                    return Ok(read);
                }
                Ok(_) if read > 0 || into.is_empty() => return Ok(read),
                Ok(_) if !at_end => {}
                Ok(_) => {
                    let message = "incomplete deflate stream";
                    return Err(Error::new(ErrorKind::UnexpectedEof, message));
                }
                Err(_) => {
                    let message = "corrupt deflate stream";
                    return Err(Error::new(ErrorKind::InvalidInput, message));
                }
            }
        }
    }

    /// Reads a member's trailer, checking the size of what it inflated to (its CRC-32 is
    /// handed on); makes ready for the next member when input remains.
    fn trailer(&mut self) -> std::io::Result<MemberEnd> {
        let trailer = self.take(8)?;
        let stored_crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let stored_size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        if self.size != stored_size {
            // The same error as a wrong CRC-32, at the same place, as flate2 words both.
            self.part = Part::End;
            return Err(corrupt());
        }
        self.size = 0;
        self.part = if self.consumed == self.input.len() {
            Part::End
        } else {
            self.inflater.reset(false);
            Part::Header
        };
        Ok(MemberEnd {
            stored_crc,
            compressed_offset: self.consumed as u64,
        })
    }

    /// Inflates the next text into `into`, or reads the next member's end.
    pub(crate) fn step(&mut self, into: &mut [u8]) -> std::io::Result<Step> {
        loop {
            match self.part {
                Part::Header => {
                    self.header()?;
                    self.part = Part::Body;
                }
                Part::Body => match self.body(into)? {
                    0 if !into.is_empty() => {}
                    read => return Ok(Step::Text(read)),
                },
                Part::Trailer => return self.trailer().map(Step::MemberEnd),
                Part::End => return Ok(Step::End),
            }
        }
    }
}

fn corrupt() -> Error {
    let message = "corrupt gzip stream does not have a matching checksum";
    Error::new(ErrorKind::InvalidInput, message)
}

/// A file name or comment longer than any real one: the header is taken as broken where
/// the byte past the longest one is.
fn field_too_long(consumed: &mut usize) -> Error {
    *consumed += MAX_HEADER_FIELD + 1;
    Error::new(ErrorKind::InvalidInput, "gzip header field too long")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::CountingReader;
    use std::io::{Read, Write};

    /// What came out, the error that stopped it (its message), and the input taken then.
    type Outcome = (Vec<u8>, Option<String>, u64);

    fn drain(reader: &mut dyn Read) -> (Vec<u8>, Option<String>) {
        let mut out = Vec::new();
        let mut buffer = vec![0; 1000];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buffer[..n]),
                Err(error) => return (out, Some(error.to_string())),
            }
        }
    }

    /// Our reader's text, checked member by member as a reading thread checks it; the
    /// input taken is where the failing member ended when its check failed.
    fn ours(input: &[u8]) -> Outcome {
        let mut reader = GzipReader::new(input);
        let mut check = MemberCheck::default();
        let mut out = Vec::new();
        let mut buffer = vec![0; 1000];
        loop {
            match reader.step(&mut buffer) {
                Ok(Step::Text(n)) => {
                    check.text(&buffer[..n]);
                    out.extend_from_slice(&buffer[..n]);
                }
                Ok(Step::MemberEnd(end)) => {
                    if let Err(error) = check.member_end(&end) {
                        return (out, Some(error.to_string()), end.compressed_offset);
                    }
                }
                Ok(Step::End) => return (out, None, reader.consumed()),
                Err(error) => return (out, Some(error.to_string()), reader.consumed()),
            }
        }
    }

    fn flate2s(input: &[u8]) -> Outcome {
        let mut counter = CountingReader::new(input);
        let (out, error) = drain(&mut flate2::bufread::MultiGzDecoder::new(&mut counter));
        (out, error, counter.consumed)
    }

    fn text(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                b"{}\"ab,: 0123\n"[(state >> 59) as usize % 13]
            })
            .collect()
    }

    /// A member with every optional header field, the header's own CRC included.
    fn full_member(data: &[u8]) -> Vec<u8> {
        let header = flate2::GzBuilder::new()
            .extra(b"XYZW".to_vec())
            .filename("trace.json")
            .comment("profile");
        let mut encoder = header.write(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).unwrap();
        let mut member = encoder.finish().unwrap();
        // flate2 writes no header CRC: set FHCRC and insert one.
        let header_len = 10 + 2 + 4 + "trace.json\0profile\0".len();
        member[3] |= FHCRC;
        let crc = crc32fast::hash(&member[..header_len]) as u16;
        member.splice(header_len..header_len, crc.to_le_bytes());
        member
    }

    fn plain_member(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn reads_and_fails_as_flate2_does_byte_for_byte() {
        let (a, b) = (text(1, 70_000), text(2, 5_000));
        let full = full_member(&a);
        let plain = plain_member(&b);
        let both = [full.clone(), plain.clone()].concat();
        let mut inputs = vec![
            full.clone(),
            both.clone(),
            [plain_member(b""), plain.clone()].concat(),
            [plain.clone(), b"garbage".to_vec()].concat(),
            [plain.clone(), vec![0; 9]].concat(),
            [plain.clone(), vec![0x1f]].concat(),
        ];
        // Every cut, in the header, the body and the trailer of either member.
        let cuts = (0..40)
            .chain((40..both.len()).step_by(97))
            .chain(both.len() - 12..both.len());
        inputs.extend(cuts.map(|cut| both[..cut].to_vec()));
        // A flipped bit in every header byte, and in the body and trailer now and then.
        for at in (0..40)
            .chain((40..both.len()).step_by(251))
            .chain(both.len() - 8..both.len())
        {
            let mut flipped = both.clone();
            flipped[at] ^= 1 << (at % 8);
            inputs.push(flipped);
        }
        let mut failures = 0;
        for input in &inputs {
            let outcome = ours(input);
            failures += usize::from(outcome.1.is_some());
            assert_eq!(outcome, flate2s(input), "input of {} bytes", input.len());
        }
        assert!(
            failures > inputs.len() / 2,
            "{failures} of {} failed",
            inputs.len()
        );
        assert_eq!(ours(&both).0, [a, b].concat());
    }

    #[test]
    fn header_fields_longer_than_flate2_accepts_fail_where_flate2_fails() {
        let member = plain_member(&text(3, 1_000));
        for name in [65_535, 65_536, 70_000] {
            let mut long = member[..10].to_vec();
            long[3] |= FNAME;
            long.extend(std::iter::repeat_n(b'a', name));
            let unended = long.clone();
            long.push(0);
            long.extend_from_slice(&member[10..]);
            assert_eq!(ours(&long), flate2s(&long), "a name of {name} bytes");
            assert_eq!(ours(&unended), flate2s(&unended), "{name} bytes, no end");
        }
    }
}
