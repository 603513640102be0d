//! Integration tests of stepscope on the real traces of the trace corpus (`testdata/corpus.tsv`).

mod breakdown;
mod categories;
mod common;
mod coverage;
mod cycles;
mod damage;
mod efficiency;
mod hygiene;
mod idle_causes;
mod manifest;
mod parity;
mod patterns;
mod ranges;
mod removal;
mod timeline;
mod variants;
