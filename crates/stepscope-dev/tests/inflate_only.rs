//! `inflate_only`, the probe `inflate-only` times as the floor under a compressed read
//! (compiled into stepscope-ingest with its `bench-probes` feature, which this crate turns
//! on): every byte of a real gzip trace, or the break of a cut one.

use stepscope_ingest::{IngestError, inflate_only};

/// The real SGLang decode trace (`.json.gz`).
const SGLANG: &str =
    "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";

#[test]
fn inflate_only_gives_every_byte_or_the_break() {
    let path = stepscope_testdata::trace(SGLANG);
    assert_eq!(inflate_only(&path).unwrap(), 594_892);
    let gz = std::fs::read(&path).unwrap();
    let dir = tempfile::tempdir().expect("tempdir");
    let cut = dir.path().join("sglang_cut.json.gz");
    std::fs::write(&cut, &gz[..gz.len() / 2]).expect("write the cut file");
    let error = inflate_only(&cut).unwrap_err();
    assert!(
        matches!(error, IngestError::Decompress { ref path, .. } if *path == cut),
        "{error}"
    );
}
