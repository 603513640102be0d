//! The built-in example of `stepscope demo` (see [`demo`]): a realistic SGLang-style
//! PyTorch-profiler trace of an LLM server on ROCm, complete or with the ROCm replay-loss
//! symptom, together with the facts it was built from. Deterministic for a given seed.

#![warn(missing_docs)]

pub mod demo;
mod rng;
