//! Steps and stages: which scheduler step each piece of work belongs to.
//!
//! What it computes: the server's step annotations (SGLang `step[DECODE bs=32]`, vLLM
//! `execute_context_N(T)_generation_M(T)`, ATOM `decode[bs=…]`), each with its stage
//! (prefill, decode, mixed, other), and a lookup from a host call to its step.
//! Why it matters: decode and prefill have different bottlenecks; a per-op share over
//! both answers neither question.
//! Example: `step[EXTEND bs=4 toks=2048]` → prefill, batch 4, 2048 tokens.
//!
//! One framework's annotations per file: SGLang traces also carry a vLLM-style
//! `execute_…` span around each step, so SGLang wins over ATOM, which wins over vLLM, which
//! wins over PyTorch's own `ProfilerStep#N` (stage `step`: a loop iteration, not decode).

use regex::Regex;
use serde::Serialize;
use std::sync::LazyLock;
use stepscope_model::{NameId, ProcessId, Timestamp, Trace};

/// The serving framework whose annotations delimit steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Framework {
    /// SGLang.
    Sglang,
    /// AMD's ATOM.
    Atom,
    /// vLLM.
    Vllm,
    /// PyTorch's own profiler steps (`ProfilerStep#N`, `Iteration#N`): training loops and
    /// offline inference. Used only when no serving framework's annotations are present.
    Pytorch,
}

impl Framework {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::Sglang => "sglang",
            Framework::Atom => "atom",
            Framework::Vllm => "vllm",
            Framework::Pytorch => "pytorch",
        }
    }
}

/// What kind of work a step does; serialised as its name ([`Stage::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Prompt processing.
    Prefill,
    /// Token generation.
    Decode,
    /// Both in one step (vLLM chunked prefill).
    Mixed,
    /// Anything else: speculative verify, idle, dummy runs.
    Other,
    /// A PyTorch profiler step (`ProfilerStep#N`): a loop iteration of unknown kind, never
    /// called decode (training traces have no decode).
    Step,
}

impl Stage {
    /// Every stage, in report order.
    pub const ALL: [Stage; 5] = [
        Stage::Prefill,
        Stage::Decode,
        Stage::Mixed,
        Stage::Other,
        Stage::Step,
    ];

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Prefill => "prefill",
            Stage::Decode => "decode",
            Stage::Mixed => "mixed",
            Stage::Other => "other",
            Stage::Step => "step",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed step label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepLabel {
    /// Framework that wrote it.
    pub framework: Framework,
    /// Stage.
    pub stage: Stage,
    /// The framework's own mode word (`DECODE`, `EXTEND`, `decode`, …).
    pub mode: String,
    /// Batch size, where the label says.
    pub batch_size: Option<u32>,
    /// Tokens, where the label says.
    pub tokens: Option<u32>,
}

impl StepLabel {
    /// `framework:mode`, e.g. `sglang:DECODE`.
    pub fn key(&self) -> String {
        format!("{}:{}", self.framework.as_str(), self.mode)
    }

    /// The key that steps running the same graphs share: `framework:mode` with the batch
    /// size and token count where the label gives them (`sglang:DECODE bs=32`,
    /// `vllm:mixed bs=46 toks=8192`). Servers capture one graph per padded batch or token
    /// count, so steps that differ in either may replay different graphs.
    pub(crate) fn slot_key(&self) -> String {
        let mut key = self.key();
        if let Some(batch) = self.batch_size {
            key.push_str(&format!(" bs={batch}"));
        }
        if let Some(tokens) = self.tokens {
            key.push_str(&format!(" toks={tokens}"));
        }
        key
    }
}

static SGLANG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^step\[([A-Z_]+)(?:\s+bs=(\d+))?(?:\s+toks=(\d+))?[^\]]*\]$").expect("valid regex")
});
static VLLM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^execute_(?:(\d+)_)?context_(\d+)\((\d+)?[^)]*\)_generation_(\d+)\((\d+)?[^)]*\)$")
        .expect("valid regex")
});
static PYTORCH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(ProfilerStep\s*#\s*\d+|Iteration(?:\s*#\s*\d+)?|iteration(?:\s*#?\s*\d+)?)$")
        .expect("valid regex")
});
static ATOM: LazyLock<Regex> = LazyLock::new(|| {
    // The body may hold bracketed lists (`ctx=[7803, 6918]`), and `bs=117/128` is the real
    // batch over CUDA-graph padding.
    Regex::new(r"^(prefill|decode|eager_decode|dummy_[a-z_]+)\[(?:.*?\bbs=(\d+))?.*\]$")
        .expect("valid regex")
});

/// Parses a step annotation, or `None` if it is not one.
pub(crate) fn parse_step_label(name: &str) -> Option<StepLabel> {
    parse_sglang(name)
        .or_else(|| parse_atom(name))
        .or_else(|| parse_vllm(name))
        .or_else(|| parse_pytorch(name))
}

fn parse_pytorch(name: &str) -> Option<StepLabel> {
    let caps = PYTORCH.captures(name)?;
    let mode = if caps[1].starts_with("ProfilerStep") {
        "ProfilerStep"
    } else {
        "Iteration"
    };
    Some(StepLabel {
        framework: Framework::Pytorch,
        stage: Stage::Step,
        mode: mode.to_owned(),
        batch_size: None,
        tokens: None,
    })
}

fn number(m: Option<regex::Match<'_>>) -> Option<u32> {
    m.and_then(|m| m.as_str().parse().ok())
}

fn parse_sglang(name: &str) -> Option<StepLabel> {
    if name == "prefill" || name == "decode" {
        let stage = if name == "prefill" {
            Stage::Prefill
        } else {
            Stage::Decode
        };
        let mode = name.to_owned();
        return Some(StepLabel {
            framework: Framework::Sglang,
            stage,
            mode,
            batch_size: None,
            tokens: None,
        });
    }
    let caps = SGLANG.captures(name)?;
    let mode = caps[1].to_owned();
    let stage = match mode.as_str() {
        "EXTEND" | "PREFILL" | "DRAFT_EXTEND" => Stage::Prefill,
        "DECODE" => Stage::Decode,
        "MIXED" => Stage::Mixed,
        _ => Stage::Other,
    };
    Some(StepLabel {
        framework: Framework::Sglang,
        stage,
        mode,
        batch_size: number(caps.get(2)),
        tokens: number(caps.get(3)),
    })
}

fn parse_vllm(name: &str) -> Option<StepLabel> {
    let caps = VLLM.captures(name)?;
    let context: u32 = caps[2].parse().ok()?;
    let generation: u32 = caps[4].parse().ok()?;
    let stage = match (context, generation) {
        (0, _) => Stage::Decode,
        (_, 0) => Stage::Prefill,
        _ => Stage::Mixed,
    };
    let context_tokens = number(caps.get(3)).unwrap_or(0);
    let generation_tokens = number(caps.get(5)).unwrap_or(0);
    let tokens = number(caps.get(1)).or(Some(context_tokens + generation_tokens));
    Some(StepLabel {
        framework: Framework::Vllm,
        stage,
        mode: stage.as_str().to_owned(),
        batch_size: Some(context + generation),
        tokens,
    })
}

fn parse_atom(name: &str) -> Option<StepLabel> {
    let caps = ATOM.captures(name)?;
    let mode = caps[1].to_owned();
    let stage = match mode.as_str() {
        "prefill" => Stage::Prefill,
        "decode" | "eager_decode" => Stage::Decode,
        _ => Stage::Other,
    };
    Some(StepLabel {
        framework: Framework::Atom,
        stage,
        mode,
        batch_size: number(caps.get(2)),
        tokens: None,
    })
}

/// One step of the server's scheduler loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Row in `trace.annotations`.
    pub annotation: u32,
    /// Interned label.
    pub name: NameId,
    /// Parsed label.
    pub label: StepLabel,
    /// Process it ran in.
    pub process: ProcessId,
    /// Host start.
    pub start: Timestamp,
    /// Host end.
    pub end: Timestamp,
}

/// The steps of one trace, sorted by process then start.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    /// Framework whose annotations were used, if any.
    pub framework: Option<Framework>,
    /// The steps.
    pub steps: Vec<Step>,
}

impl Steps {
    /// The step whose host span contains time `at` in `process`, if any.
    pub(crate) fn containing(&self, process: ProcessId, at: Timestamp) -> Option<usize> {
        let after = self
            .steps
            .partition_point(|s| (s.process, s.start) <= (process, at));
        let index = after.checked_sub(1)?;
        let step = &self.steps[index];
        (step.process == process && step.end >= at).then_some(index)
    }

    /// Steps per `framework:mode` key, sorted by key.
    pub fn counts_by_key(&self) -> Vec<(String, usize)> {
        let mut counts = std::collections::BTreeMap::new();
        for step in &self.steps {
            *counts.entry(step.label.key()).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }
}

/// Finds the step annotations of one trace.
pub fn find_steps(trace: &Trace) -> Steps {
    let annotations = &trace.annotations;
    let labels: Vec<Option<StepLabel>> = parse_names(trace);
    let mut candidates: Vec<Step> = (0..annotations.len())
        .filter_map(|row| {
            let label = labels[annotations.name[row].index()].clone()?;
            Some(Step {
                annotation: row as u32,
                name: annotations.name[row],
                label,
                process: annotations.process[row],
                start: annotations.start[row],
                end: annotations.end(row),
            })
        })
        .collect();
    let framework = candidates.iter().map(|s| s.label.framework).min();
    candidates.retain(|s| Some(s.label.framework) == framework);
    candidates.sort_by_key(|s| (s.process, s.start, s.annotation));
    Steps {
        framework,
        steps: candidates,
    }
}

/// Parses each distinct annotation name once.
fn parse_names(trace: &Trace) -> Vec<Option<StepLabel>> {
    let mut labels = vec![None; trace.names.len()];
    let mut seen = vec![false; trace.names.len()];
    for name in &trace.annotations.name {
        if !std::mem::replace(&mut seen[name.index()], true) {
            labels[name.index()] = parse_step_label(trace.name(*name));
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sglang_labels() {
        let l = parse_step_label("step[DECODE bs=32]").unwrap();
        assert_eq!(
            (l.framework, l.stage, l.batch_size),
            (Framework::Sglang, Stage::Decode, Some(32))
        );
        let l = parse_step_label("step[EXTEND bs=4 toks=2048]").unwrap();
        assert_eq!((l.stage, l.tokens), (Stage::Prefill, Some(2048)));
        assert_eq!(
            parse_step_label("step[TARGET_VERIFY bs=8]").unwrap().stage,
            Stage::Other
        );
        assert_eq!(parse_step_label("decode").unwrap().stage, Stage::Decode);
    }

    #[test]
    fn vllm_labels_old_and_new() {
        let l = parse_step_label("execute_context_1(8)_generation_0(0)").unwrap();
        assert_eq!(
            (l.framework, l.stage, l.tokens),
            (Framework::Vllm, Stage::Prefill, Some(8))
        );
        assert_eq!(
            parse_step_label("execute_context_0(0)_generation_1(1)")
                .unwrap()
                .stage,
            Stage::Decode
        );
        assert_eq!(
            parse_step_label("execute_context_0(0)_generation_0(0)")
                .unwrap()
                .stage,
            Stage::Decode
        );
        let l = parse_step_label("execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)").unwrap();
        assert_eq!(
            (l.stage, l.batch_size, l.tokens),
            (Stage::Mixed, Some(46), Some(8192))
        );
    }

    #[test]
    fn atom_labels() {
        assert_eq!(
            parse_step_label("decode[bs=64]").unwrap().batch_size,
            Some(64)
        );
        assert_eq!(
            parse_step_label("prefill[bs=2 tokens=1024]").unwrap().stage,
            Stage::Prefill
        );
        assert_eq!(
            parse_step_label("dummy_run[bs=1]").unwrap().stage,
            Stage::Other
        );
        assert!(parse_step_label("decode_layer").is_none());
        // ATOM's prefill names its sequences' context lengths in a list, and its detailed
        // annotations add token sums after it.
        for name in [
            "prefill[bs=2 tok=14721 ctx=[7803, 6918]]",
            "prefill[bs=6 tok=17408 ctx=[4096, 4096, 4096]...+3]",
            "prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=108745533 sqsk=108745533 sk=14721]",
        ] {
            let label = parse_step_label(name).unwrap();
            assert_eq!(
                (label.stage, label.batch_size),
                (Stage::Prefill, Some(bs(name)))
            );
        }
        let padded = parse_step_label("decode[bs=117/128 tok=117 d=117]").unwrap();
        assert_eq!(
            (padded.stage, padded.batch_size),
            (Stage::Decode, Some(117))
        );
    }

    /// The `bs=` of a test name.
    fn bs(name: &str) -> u32 {
        let after = &name[name.find("bs=").unwrap() + 3..];
        after[..after.find(' ').unwrap()].parse().unwrap()
    }

    #[test]
    fn pytorch_profiler_steps_are_steps_not_decode() {
        for name in [
            "ProfilerStep#3",
            "ProfilerStep#550",
            "Iteration#12",
            "iteration#0",
        ] {
            let l = parse_step_label(name).unwrap();
            assert_eq!(
                (l.framework, l.stage),
                (Framework::Pytorch, Stage::Step),
                "{name}"
            );
        }
        assert_eq!(
            parse_step_label("ProfilerStep#3").unwrap().slot_key(),
            "pytorch:ProfilerStep"
        );
        assert!(parse_step_label("ProfilerStep").is_none());
        assert!(parse_step_label("ProfilerStep#3 extra").is_none());
    }

    #[test]
    fn slot_keys_carry_batch_and_tokens() {
        assert_eq!(
            parse_step_label("step[DECODE bs=32]").unwrap().slot_key(),
            "sglang:DECODE bs=32"
        );
        assert_eq!(
            parse_step_label("execute_8192_context_9(x)_generation_37(y)")
                .unwrap()
                .slot_key(),
            "vllm:mixed bs=46 toks=8192"
        );
    }
}
