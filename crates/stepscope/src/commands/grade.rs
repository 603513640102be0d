//! `stepscope grade BASE CANDIDATE`: KEEP, REVERT or INCONCLUSIVE for a change, from each
//! side's benchmark phases and output probes, beyond the noise between phases.

use crate::Outcome;
use crate::app::hinted;
use crate::output;
use clap::Args;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use stepscope_serving::grade::engage::{parse_expected_env, parse_kernel_id};
use stepscope_serving::grade::gates::parse_max_regression;
use stepscope_serving::grade::{
    CheckLine, Decision, Grade, GradeSettings, Slo, Verdict, grade, read_side,
};

/// `grade`'s line in its parent's command list.
const ABOUT: &str = "Grade a change: KEEP, REVERT or INCONCLUSIVE, beyond the noise";

/// `grade --help`: each paragraph is one line, wrapped to the terminal's width.
const LONG_ABOUT: &str = "\
Grade a change: KEEP, REVERT or INCONCLUSIVE, beyond the noise between benchmark phases, \
for a candidate that did the same work, correctly.

Sides: two running servers' URLs or two baseline configs (run live: the phases A B B A, \
graded where the phases a side double, stopped at the first KEEP or REVERT), or two \
folders of saved phases (`stepscope bench --json` documents and output probes), graded \
offline. Profile configs and `stepscope profile` runs are refused: their switches change \
replay speed.

The speed is output tokens per second, counted from what streamed: the typical ratio of a \
candidate phase to a base phase (Hodges-Lehmann) with the interval of the Mann-Whitney \
test. KEEP needs the whole interval above +--min-effect and every check passed; REVERT \
when it lies below -(--min-effect) or a check fails beyond noise:
  outputs    fixed prompts at temperature 0 answered otherwise than by the
             base (--allow-output-change shows it only)
  failures   more failed requests than the base beyond chance, or more
             than --max-failure-rate (at 0.5 % by default, never KEEP)
  --slo      an objective the base meets, broken beyond noise
  latency    TTFT, TPOT, ITL or E2E (median, p99) slower beyond noise by
             more than --max-regression (5 % median, 10 % p99), the gated
             latencies sharing one error rate (one slower only when judged alone
             holds KEEP back)

With --expect-kernel or --expect-env, a candidate that does not show the kernel in a \
profile window or the variable in its processes did not engage the change: INCONCLUSIVE, \
whatever its speed. Sides that ran different work (model, lengths, load, prompts, \
sampling) are never graded (exit 2, naming each difference).

Exit codes: 0 KEEP; 3 REVERT; 5 INCONCLUSIVE; 2 bad input or sides that cannot be \
compared; 4 a live run failed (boot, server, load, a stall); 130 interrupted (143 \
SIGTERM); 1 internal error.

EXAMPLES:
  stepscope grade phases/base/ phases/candidate/
  stepscope grade base/ cand/ --min-effect 5 --slo ttft_ms.p99=500
  stepscope grade base/ cand/ --json > grade.json
  # live: two running servers, at most 30 minutes
  stepscope grade http://a:8000 http://b:8000 --concurrency 32 \\
      --max-time 30m --out run/
  # live: two baseline configs, booted in turns
  stepscope grade baseline_vllm.yaml candidate_vllm.yaml";

/// Arguments of `stepscope grade`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct GradeArgs {
    /// The side before the change: a running server's URL, a baseline config (YAML, `kind:
    /// baseline`) that stepscope boots, or a folder of `stepscope bench --json` documents,
    /// one per phase (or one document), graded offline.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The side with the change, as BASE.
    #[arg(value_name = "CANDIDATE")]
    pub candidate: PathBuf,
    /// The smallest change of output tokens per second worth a decision, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = super::diff::parse_percent)]
    pub min_effect: f64,
    /// A service-level objective the candidate must keep where the base does:
    /// METRIC.STAT=LIMIT over the phases' values (ttft_ms.p99=500, tpot_ms.median=40),
    /// judged with the median phase's interval. Repeatable.
    #[arg(long, value_name = "OBJECTIVE", value_parser = Slo::parse)]
    pub slo: Vec<Slo>,
    /// The most failed requests either side may have, in percent of those sent.
    #[arg(long, value_name = "PCT", default_value_t = 0.5, value_parser = super::diff::parse_percent)]
    pub max_failure_rate: f64,
    /// The regression a latency may show beyond noise: METRIC=PCT (p50_ttft, p99_ttft,
    /// p50_tpot, p99_tpot, p50_itl, p99_itl, p50_e2e, p99_e2e; PCT or `off`). Defaults: 5 %
    /// for medians, 10 % for p99. Repeatable.
    #[arg(long, value_name = "METRIC=PCT", value_parser = parse_max_regression)]
    pub max_regression: Vec<(String, Option<f64>)>,
    /// The similarity (0 to 1: common prefix over the longer answer) below which an output
    /// probe's answer has changed; 1 asks for identical answers.
    #[arg(long, value_name = "X", default_value_t = 1.0, value_parser = parse_similarity)]
    pub output_similarity: f64,
    /// Show changed outputs without deciding on them.
    #[arg(long)]
    pub allow_output_change: bool,
    /// Grade sides that serve different models (a quantised copy of the base's, say).
    #[arg(long)]
    pub allow_model_change: bool,
    /// Offline: the gradings these phases were looked at (a live run's `grade.json` says, and
    /// prints the command), each at `1 − 5 % / LOOKS` confidence, to grade them as it did.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub looks: u32,
    /// Print the grade as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Live: the run directory for every phase's bench document, the servers' logs, the
    /// grade and its report (default `grade-<date>-<time>`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Live: phases a side at the first grading; later gradings come each time the phases
    /// a side double, and at --max-phases.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub min_phases: u32,
    /// Live: the budget, phases a side; the grade at the end of it is final.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub max_phases: u32,
    /// Live: the budget in time (`90s`, `30m`, `2h`): the phase or probe still running when
    /// it ends is cut (not saved) and the saved ones are graded.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_time: Option<std::time::Duration>,
    /// Live: the longest one request may take (`90s`, `10m`); a request past it fails as a
    /// timeout.
    #[arg(long, value_name = "DURATION", default_value = "600s", value_parser = parse_duration)]
    pub request_timeout: std::time::Duration,
    /// Live: prompts of each output probe (fixed prompts at temperature 0, sent at every
    /// turn and at the end); 0 checks no outputs.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub output_probes: u32,
    /// Live: `max_tokens` of each probe answer.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub probe_tokens: u32,
    /// Live: a kernel id (the six hex digits `stepscope analyze` shows beside a kernel) that
    /// the change adds: a short profile window on the candidate must record it, or the grade
    /// is INCONCLUSIVE, "the change did not engage". Repeatable.
    #[arg(long, value_name = "ID", value_parser = parse_kernel_id)]
    pub expect_kernel: Vec<String>,
    /// Live: NAME=VALUE that switches the change on: one of the candidate server's processes
    /// must run with it, or the grade is INCONCLUSIVE. Repeatable.
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_expected_env)]
    pub expect_env: Vec<(String, String)>,
    /// Live: where a CANDIDATE URL's torch profiler writes its traces (with
    /// --expect-kernel; a config candidate's come from its config).
    #[arg(long, value_name = "DIR")]
    pub candidate_trace_dir: Option<PathBuf>,
    /// Live: the framework of a CANDIDATE URL (with --expect-kernel: how to open its
    /// profile window).
    #[arg(long, value_name = "NAME", value_enum, default_value_t = FrameworkArg::Vllm)]
    pub candidate_framework: FrameworkArg,
    /// Live: engine steps of that profile window.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub engage_window_steps: u32,
    /// Live: the model (default: each server's first in `GET /v1/models`).
    #[arg(long)]
    pub model: Option<String>,
    /// Live: requests in flight in each phase (default: the configs' `load`, else 16).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u32>,
    /// Live: measured requests a phase (default: the configs' `load`, else 128).
    #[arg(long, value_name = "N")]
    pub num_prompts: Option<u32>,
    /// Live: prompt tokens a request (default: the configs' `load`, else 256).
    #[arg(long, value_name = "N")]
    pub input_len: Option<u32>,
    /// Live: output tokens a request (default: the configs' `load`, else 128).
    #[arg(long, value_name = "N")]
    pub output_len: Option<u32>,
    /// Live: unmeasured requests before each phase.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub warmup: u32,
    /// Live: the fingerprint of the server at a BASE URL (`sha256:…`, or a run directory
    /// or file that holds it), recorded with the run.
    #[arg(long, value_name = "FP|RUN_DIR")]
    pub base_fingerprint: Option<String>,
    /// Live: the same for a CANDIDATE URL.
    #[arg(long, value_name = "FP|RUN_DIR")]
    pub candidate_fingerprint: Option<String>,
    /// Live: seconds a booted server may take to answer its first completion.
    #[arg(long, default_value_t = 1800, value_name = "S")]
    pub ready_timeout: u64,
    /// Live: no progress line (phase lines still go to stderr).
    #[arg(long)]
    pub no_progress: bool,
}

/// A serving framework, as a flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FrameworkArg {
    /// SGLang.
    Sglang,
    /// vLLM.
    Vllm,
    /// AMD's ATOM.
    Atom,
}

impl FrameworkArg {
    /// The serving crate's framework.
    pub fn framework(self) -> stepscope_serving::config::Framework {
        use stepscope_serving::config::Framework;
        match self {
            FrameworkArg::Sglang => Framework::Sglang,
            FrameworkArg::Vllm => Framework::Vllm,
            FrameworkArg::Atom => Framework::Atom,
        }
    }
}

/// `0.9`: a similarity between 0 and 1.
fn parse_similarity(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if (0.0..=1.0).contains(&value) => Ok(value),
        _ => Err(format!(
            "`{text}` is not a similarity (a number from 0 to 1; 1 asks for identical answers)"
        )),
    }
}

/// `90`, `90s`, `30m`, `2h`.
pub(super) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let scale = match unit {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "`{text}`: give seconds, minutes or hours (90s, 30m, 2h)"
            ));
        }
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (90s, 30m, 2h)"))?;
    if !(value.is_finite() && value > 0.0) {
        return Err(format!("`{text}`: the budget must be positive"));
    }
    Ok(std::time::Duration::from_secs_f64(value * scale))
}

/// `stepscope grade`.
pub fn run(args: &GradeArgs) -> anyhow::Result<Outcome> {
    let live = [&args.base, &args.candidate].map(|side| super::grade_live::is_live(side));
    match live {
        [false, false] if !args.expect_kernel.is_empty() || !args.expect_env.is_empty() => {
            output::print_error(&hinted(
                "--expect-kernel and --expect-env check a live candidate; offline, the check a live run saved (`candidate/engage.check.json`) is graded",
                "give the candidate as a URL or a baseline config",
            ));
            return Ok(Outcome::InputError);
        }
        [false, false] => {}
        [true, true] => return super::grade_live::run(args),
        _ => {
            output::print_error(&hinted(
                "grade takes two live sides (a URL or a baseline config each) or two folders of bench documents, not one of each",
                "save the live side's phases with `stepscope bench --json` first",
            ));
            return Ok(Outcome::InputError);
        }
    }
    let read = |path: &PathBuf, label: &str| {
        read_side(path).map_err(|error| anyhow::anyhow!("{label}: {error}"))
    };
    let graded = read(&args.base, "BASE")
        .and_then(|b| Ok((b, read(&args.candidate, "CANDIDATE")?)))
        .and_then(|(base, candidate)| {
            grade(&base, &candidate, &settings(args, args.looks as usize))
                .map_err(|error| anyhow::anyhow!(error))
        });
    match graded {
        Ok(graded) => finish(&graded, args.json),
        Err(error) => {
            output::print_error(&error);
            Ok(Outcome::InputError)
        }
    }
}

/// How the phases are graded, shared by `looks` gradings.
pub fn settings(args: &GradeArgs, looks: usize) -> GradeSettings {
    GradeSettings {
        min_effect_pct: args.min_effect,
        slos: args.slo.clone(),
        looks,
        max_failure_rate: args.max_failure_rate / 100.0,
        max_regressions: args
            .max_regression
            .iter()
            .cloned()
            .collect::<BTreeMap<_, _>>(),
        min_output_similarity: args.output_similarity,
        allow_output_change: args.allow_output_change,
        allow_model_change: args.allow_model_change,
    }
}

/// Prints the grade (text or JSON) and gives its exit outcome.
pub fn finish(graded: &Grade, json: bool) -> anyhow::Result<Outcome> {
    if json {
        output::print(&(serde_json::to_string_pretty(graded)? + "\n"))?;
    } else {
        output::print(&render(graded))?;
    }
    Ok(match graded.decision {
        Decision::Keep => Outcome::Success,
        Decision::Revert => Outcome::VerdictFailed,
        Decision::Inconclusive => Outcome::Inconclusive,
    })
}

/// The terminal text: the decision and why, what was compared, every check, the metrics,
/// and each side's phases in order.
fn render(graded: &Grade) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", graded.decision.as_str(), graded.reason);
    if let Some(phases) = graded.phases_to_settle {
        let _ = writeln!(out, "about {phases} phases a side would likely settle it");
    }
    if let Some(workload) = &graded.workload {
        let _ = writeln!(
            out,
            "compared: {}; {} base and {} candidate phases",
            workload.describe(),
            graded.base.len(),
            graded.candidate.len()
        );
    }
    for check in &graded.checks {
        let _ = writeln!(out, "{}", check_line(check));
    }
    for metric in &graded.metrics {
        let change = &metric.change;
        let interval = change.interval_text().unwrap_or_else(|| {
            format!(
                "no {:.1} % interval with so few phases",
                change.confidence * 100.0
            )
        });
        let flag = if metric.regressed {
            " REGRESSED"
        } else if metric.regressed_alone {
            " HOLD"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{}: base {:.2}, candidate {:.2}, {:+.1} % ({interval}){}",
            metric.metric,
            metric.base_median,
            metric.candidate_median,
            change.estimate * 100.0,
            flag
        );
    }
    for (label, phases) in [("base", &graded.base), ("candidate", &graded.candidate)] {
        let tps: Vec<String> = phases
            .iter()
            .map(|p| format!("{:.1}", p.output_tokens_per_s))
            .collect();
        let _ = writeln!(out, "{label} output tok/s by phase: {}", tps.join(", "));
    }
    out
}

/// `  ok      outputs: …`, `  REVERT  failures: …`.
fn check_line(check: &CheckLine) -> String {
    let mark = match check.verdict {
        Verdict::Pass => "ok",
        Verdict::Warn => "NOTE",
        Verdict::BlocksKeep => "HOLD",
        Verdict::Revert => "REVERT",
        Verdict::NotChecked => "–",
        Verdict::Void => "VOID",
    };
    let detail = stepscope_model::text::escape_controls(&check.detail);
    format!("  {mark:<7} {}: {detail}", check.check)
}
