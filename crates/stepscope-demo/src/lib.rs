//! The built-in example of `stepscope demo` (see [`demo`]): a realistic SGLang-style
//! PyTorch-profiler trace of an LLM server on ROCm, complete or with the ROCm replay-loss
//! symptom, together with the facts it was built from. Deterministic for a given seed.
//!
//! ```
//! use stepscope_demo::demo::{DemoSpec, Symptom, facts, generate};
//!
//! let spec = DemoSpec::default();
//! let truth = facts(&spec);
//! assert_eq!(truth.replays, 48);
//! assert_eq!(truth.kernels_per_replay, 328);
//! let json = generate(&spec, Symptom::RocmReplayLoss);
//! assert!(json.starts_with(b"{"));
//! assert_eq!(json, generate(&spec, Symptom::RocmReplayLoss), "deterministic");
//! ```

#![warn(missing_docs)]

pub mod demo;
mod rng;
