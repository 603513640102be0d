//! Getting a file's bytes: mapped when plain, inflated when gzip or zstd.

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

/// Inflates `compressed` fully, or as far as it goes, returning what came out and, if it
/// stopped early, where.
pub(crate) fn inflate(
    compressed: &[u8],
    compression: Compression,
) -> (Vec<u8>, Option<InflateFailure>) {
    let mut counter = CountingReader {
        inner: compressed,
        consumed: 0,
    };
    let mut output = Vec::with_capacity(size_hint(compressed, compression));
    let result = match compression {
        Compression::Gzip => read_all(flate2::read::MultiGzDecoder::new(&mut counter), &mut output),
        Compression::Zstd => match zstd::stream::read::Decoder::with_buffer(&mut counter) {
            Ok(decoder) => read_all(decoder, &mut output),
            Err(error) => Err(error),
        },
        Compression::None => {
            output.extend_from_slice(compressed);
            Ok(())
        }
    };
    let failure = result.err().map(|source| InflateFailure {
        compressed_offset: counter.consumed,
        source,
    });
    (output, failure)
}

/// Reads to the end, keeping whatever was produced before an error.
fn read_all(mut reader: impl Read, output: &mut Vec<u8>) -> std::io::Result<()> {
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => output.extend_from_slice(&chunk[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// The gzip trailer holds the last member's size modulo 2³²; use it only as a hint, and
/// never beyond what deflate can produce (about 1032:1), since a cut or corrupt file's last
/// four bytes are arbitrary.
fn size_hint(compressed: &[u8], compression: Compression) -> usize {
    let ceiling = compressed.len().saturating_mul(1032).min(1 << 30);
    let fallback = compressed.len().saturating_mul(8).min(ceiling);
    if compression != Compression::Gzip || compressed.len() < 18 {
        return fallback;
    }
    let tail: [u8; 4] = compressed[compressed.len() - 4..]
        .try_into()
        .unwrap_or([0; 4]);
    let stated = u32::from_le_bytes(tail) as usize;
    if stated >= compressed.len() {
        stated.min(ceiling)
    } else {
        fallback
    }
}

struct CountingReader<'a> {
    inner: &'a [u8],
    consumed: u64,
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
        let (whole, failure) = inflate(&gz, Compression::Gzip);
        assert!(failure.is_none());
        assert_eq!(whole.len(), text.len());
        let cut = &gz[..gz.len() / 2];
        let (partial, failure) = inflate(cut, Compression::Gzip);
        assert!(failure.is_some());
        assert!(!partial.is_empty(), "the first half inflates to something");
        assert!(text.as_bytes().starts_with(&partial));
    }
}
