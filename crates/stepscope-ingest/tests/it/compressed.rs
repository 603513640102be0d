//! Compressed files through `read_trace_file`: whole, split into gzip members, and cut.

use crate::alloc::largest_allocation;
use crate::common::{ScratchFile, gzip, options, read, shared, trace_difference};
use crate::generate::{Doc, Event, Kind, Layout, kernel_spans};
use stepscope_ingest::{IngestError, read_trace_file};
use stepscope_model::Trace;

const SGLANG: &str =
    "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";

fn assert_kernel_prefix(partial: &Trace, full: &Trace) {
    let (part, whole) = (kernel_spans(partial), kernel_spans(full));
    assert!(
        whole.starts_with(&part),
        "the {} partial kernels are not a prefix of the {} full ones",
        part.len(),
        whole.len()
    );
}

/// Checks a cut compressed file: strict gives `Decompress` naming it, lenient a partial
/// trace with fewer kernels than `full`, marked truncated. Returns the partial trace.
fn check_cut_file(file: &ScratchFile, cut_len: usize, full: &Trace, full_len: u64) -> Trace {
    let error = read_trace_file(file.path(), &options(1, false))
        .map(|t| t.counts.events)
        .unwrap_err();
    let message = error.to_string();
    match error {
        IngestError::Decompress {
            path,
            compressed_offset,
            decompressed_bytes,
            ..
        } => {
            assert_eq!(path, file.path());
            assert!(compressed_offset <= cut_len as u64, "{compressed_offset}");
            // zstd inflates whole blocks (128 KiB), so an early cut may give nothing.
            assert!(decompressed_bytes < full_len, "{decompressed_bytes}");
        }
        other => panic!("expected a decompression error, got {other:?}"),
    }
    assert!(
        message.contains(&file.path().display().to_string()),
        "{message}"
    );
    let partial = read_trace_file(file.path(), &options(1, true)).unwrap();
    assert!(partial.stats.truncated_at_byte.is_some());
    assert_eq!(partial.stats.get("compressed_input_truncated"), 1);
    assert!(partial.gpu.len() < full.gpu.len());
    assert!(partial.counts.events < full.counts.events);
    assert_kernel_prefix(&partial, full);
    let two_threads = read_trace_file(file.path(), &options(2, true)).unwrap();
    assert_eq!(trace_difference(&partial, &two_threads), None);
    partial
}

/// The first half of a real gzip trace: `Decompress` naming the file, or with
/// `allow_truncated` the kernels before the break.
#[test]
fn the_first_half_of_a_real_gzip_trace_is_an_error_or_a_partial_trace() {
    let path = shared(SGLANG);
    let full = read_trace_file(&path, &options(1, false)).unwrap();
    let gz = std::fs::read(&path).unwrap();
    let half = &gz[..gz.len() / 2];
    let file = ScratchFile::new("sglang_half.json.gz", half);
    let full_len = 594_892; // bytes of JSON inside
    let partial = check_cut_file(&file, half.len(), &full, full_len);
    // This trace lists its CPU events first: the first half holds no kernel.
    assert!(
        partial.counts.events > 100,
        "{} events",
        partial.counts.events
    );
}

fn generated_doc() -> Vec<u8> {
    let events = (0..3_000)
        .map(|i| Event {
            kind: if i % 3 == 0 {
                Kind::Runtime
            } else {
                Kind::Kernel
            },
            name: format!("kernel_{}", i % 17),
            pid: 0,
            tid: 7,
            ts: 1_000 * i,
            dur: 900,
            correlation: i,
            quoted: false,
            inner_objects: 1,
        })
        .collect();
    let doc = Doc {
        events,
        object_form: true,
        layout: Layout::Pretty,
        bom: false,
        seed: 1,
    };
    doc.render()
}

/// Generated documents, gzip and zstd, cut at several points.
#[test]
fn cut_gzip_and_zstd_files_are_errors_or_partial_traces() {
    let text = generated_doc();
    let full = read(&text, 1, false).unwrap();
    let zst = zstd::stream::encode_all(&text[..], 3).unwrap();
    for compressed in [gzip(&text), zst] {
        let whole = ScratchFile::new("whole.json.gz", &compressed);
        let read_whole = read_trace_file(whole.path(), &options(1, false)).unwrap();
        assert_eq!(trace_difference(&read_whole, &full), None);
        for fraction in [0.1, 0.5, 0.9] {
            let cut = &compressed[..(compressed.len() as f64 * fraction) as usize];
            let file = ScratchFile::new("cut.json.gz", cut);
            check_cut_file(&file, cut.len(), &full, text.len() as u64);
        }
    }
}

/// Several gzip members (as `cat a.gz b.gz` writes) read as one document.
#[test]
fn gzip_members_read_as_one_document() {
    let text = generated_doc();
    let full = read(&text, 1, false).unwrap();
    let mut members = Vec::new();
    for piece in text.chunks(text.len() / 3 + 1) {
        members.extend(gzip(piece));
    }
    let file = ScratchFile::new("members.json.gz", &members);
    let trace = read_trace_file(file.path(), &options(2, false)).unwrap();
    assert_eq!(trace_difference(&trace, &full), None);
}

/// A cut gzip file ends in arbitrary bytes where the trailer's size field would be; the
/// reader takes them as the inflated size and reserves that much up front (up to 4 GiB).
/// Harmless where memory is overcommitted; an abort where it is not (Windows, `ulimit -v`).
#[test]
fn a_cut_gzip_file_does_not_reserve_its_garbage_trailer_size() {
    let mut gz = gzip(&generated_doc());
    gz.truncate(gz.len() / 2);
    let len = gz.len();
    // 1.5 GiB: within what this test can survive if the bug is present.
    gz[len - 4..].copy_from_slice(&0x6000_0000u32.to_le_bytes());
    let file = ScratchFile::new("garbage_trailer.json.gz", &gz);
    let (result, largest) = largest_allocation(|| read_trace_file(file.path(), &options(1, true)));
    assert!(result.is_ok());
    assert!(
        largest < 256 << 20,
        "reading a {len}-byte file reserved {largest} bytes at once"
    );
}

/// A gzip file whose JSON breaks near its start and whose checksum is wrong: the broken
/// stream is what is reported, every time (as when a file is inflated whole first), not
/// the JSON error only when the reader stops before the inflating thread reaches the end.
#[test]
fn a_broken_checksum_is_reported_even_when_the_json_breaks_first() {
    let mut text = generated_doc();
    for _ in 0..3 {
        text.extend_from_within(..);
    }
    let brace = text.iter().position(|&b| b == b'{').unwrap();
    let second = brace + 1 + text[brace + 1..].iter().position(|&b| b == b'{').unwrap();
    text[second] = b'#';
    let mut gz = gzip(&text);
    let crc_at = gz.len() - 8;
    gz[crc_at] ^= 0x01;
    let file = ScratchFile::new("bad_json_bad_crc.json.gz", &gz);
    // Small pieces, so that the reader's early stop leaves most of the file uninflated.
    let small = |allow| {
        let kineto = options(2, allow).kineto.with_segment_bytes(16 << 10);
        options(2, allow).with_kineto(kineto)
    };
    for _ in 0..5 {
        let error = read_trace_file(file.path(), &small(false)).unwrap_err();
        assert!(
            matches!(error, IngestError::Decompress { .. }),
            "expected the broken checksum, got {error}"
        );
        let partial = read_trace_file(file.path(), &small(true)).unwrap();
        assert_eq!(partial.stats.get("compressed_input_truncated"), 1);
    }
}
