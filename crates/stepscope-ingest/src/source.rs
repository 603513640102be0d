//! Getting a file's bytes: mapped when plain, inflated in pieces when gzip or zstd.

use crate::gzip::GzipReader;
use memmap2::Mmap;
use std::io::Read;
use std::ops::Deref;

/// How the file on disk is compressed, from its magic bytes (not its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
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

/// A file's decompressed bytes.
#[derive(Debug)]
pub(crate) enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Owned(vec) => vec,
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

/// Maps a plain file; the caller must not let it change while mapped (trace files are
/// written once and then only read).
pub(crate) fn map_file(file: &std::fs::File) -> std::io::Result<Bytes> {
    if file.metadata()?.len() == 0 {
        return Ok(Bytes::Owned(Vec::new()));
    }
    // SAFETY: the map is read-only; a trace being rewritten while read is outside the
    // contract, and would at worst yield a parse error, not undefined reads of our memory.
    #[allow(unsafe_code)]
    let map = unsafe { Mmap::map(file)? };
    Ok(Bytes::Mapped(map))
}

/// Inflates `compressed` in pieces of `piece` bytes, handing each to `send` as it comes out
/// (it returns `false` when the reader wants no more); returns how many bytes came out and,
/// if the stream stopped early, where. Pieces are filled in buffers from `recycled` while
/// it has any, else in new ones.
pub(crate) fn inflate_pieces(
    compressed: &[u8],
    compression: Compression,
    piece: usize,
    mut recycled: impl FnMut() -> Option<Vec<u8>>,
    mut send: impl FnMut(Vec<u8>) -> bool,
) -> (u64, Option<InflateFailure>) {
    let mut produced = 0;
    let mut forward = |reader: &mut dyn Read| -> std::io::Result<()> {
        loop {
            // A new buffer comes zeroed from the allocator (fresh pages, not written twice).
            let mut buffer = recycled().unwrap_or_else(|| vec![0; piece]);
            buffer.resize(piece, 0);
            let (filled, error) = fill(reader, &mut buffer);
            buffer.truncate(filled);
            produced += filled as u64;
            let wanted = filled == 0 || send(buffer);
            match error {
                Some(error) => return Err(error),
                None if filled == 0 || !wanted => return Ok(()),
                None => {}
            }
        }
    };
    let (result, consumed) = match compression {
        Compression::Gzip => {
            let mut reader = GzipReader::new(compressed);
            (forward(&mut reader), reader.consumed())
        }
        Compression::Zstd => {
            let mut counter = CountingReader::new(compressed);
            let result = match zstd::stream::read::Decoder::with_buffer(&mut counter) {
                Ok(mut decoder) => forward(&mut decoder),
                Err(error) => Err(error),
            };
            (result, counter.consumed)
        }
        Compression::None => {
            let mut counter = CountingReader::new(compressed);
            (forward(&mut counter), counter.consumed)
        }
    };
    let failure = result.err().map(|source| InflateFailure {
        compressed_offset: consumed,
        source,
    });
    (produced, failure)
}

/// Reads until `buffer` is full or the stream ends or fails: how many bytes came, and the
/// error that stopped it (the bytes before it are kept).
fn fill(reader: &mut dyn Read, buffer: &mut [u8]) -> (usize, Option<std::io::Error>) {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return (filled, Some(error)),
        }
    }
    (filled, None)
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
            let send = |piece: Vec<u8>| {
                out.extend_from_slice(&piece);
                spare.borrow_mut().push(piece);
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
}
