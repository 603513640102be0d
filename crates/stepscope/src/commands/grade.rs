//! `stepscope grade BASE CANDIDATE`: KEEP, REVERT or INCONCLUSIVE for a change, from each
//! side's benchmark phases, beyond the noise between phases.

use crate::Outcome;
use crate::output;
use clap::Args;
use std::fmt::Write as _;
use std::path::PathBuf;
use stepscope_serving::grade::{Decision, Grade, GradeSettings, Slo, grade, read_phases};

/// Arguments of `stepscope grade`.
#[derive(Debug, Args)]
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
    /// METRIC.STAT=LIMIT over the median phase (ttft_ms.p99=500, tpot_ms.median=40).
    /// Repeatable.
    #[arg(long, value_name = "OBJECTIVE", value_parser = Slo::parse)]
    pub slo: Vec<Slo>,
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
    /// Live: the budget in time (`90s`, `30m`, `2h`): no pair of phases starts after it.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_time: Option<std::time::Duration>,
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

/// `90`, `90s`, `30m`, `2h`.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
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
        [false, false] => {}
        [true, true] => return super::grade_live::run(args),
        _ => {
            output::print_error(&anyhow::anyhow!(
                "grade takes two live sides (a URL or a baseline config each) or two folders of bench documents, not one of each\nhint: save the live side's phases with `stepscope bench --json` first"
            ));
            return Ok(Outcome::InputError);
        }
    }
    let read = |path: &PathBuf, label: &str| {
        read_phases(path).map_err(|error| anyhow::anyhow!("{label}: {error}"))
    };
    let sides = read(&args.base, "BASE").and_then(|b| Ok((b, read(&args.candidate, "CANDIDATE")?)));
    let (base, candidate) = match sides {
        Ok(sides) => sides,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let graded = grade(base, candidate, &settings(args, args.looks as usize));
    finish(&graded, args.json)
}

/// How the phases are graded, shared by `looks` gradings.
pub fn settings(args: &GradeArgs, looks: usize) -> GradeSettings {
    GradeSettings {
        min_effect_pct: args.min_effect,
        slos: args.slo.clone(),
        looks,
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

/// The terminal text: the decision, why, each objective, and each side's phases in order.
fn render(graded: &Grade) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", graded.decision.as_str(), graded.reason);
    if let Some(phases) = graded.phases_to_settle {
        let _ = writeln!(out, "about {phases} phases a side would likely settle it");
    }
    for slo in &graded.slos {
        let value = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.1}"));
        let _ = writeln!(
            out,
            "objective {} ≤ {}: base {}, candidate {}{}",
            slo.slo.metric,
            slo.slo.limit,
            value(slo.base),
            value(slo.candidate),
            if slo.broken { " (BROKEN)" } else { "" }
        );
    }
    for metric in &graded.metrics {
        let change = &metric.change;
        let interval = if change.is_bounded() {
            format!(
                "{:+.1} % to {:+.1} %",
                change.low * 100.0,
                change.high * 100.0
            )
        } else {
            "no interval with so few phases".to_owned()
        };
        let _ = writeln!(
            out,
            "{}: base {:.2}, candidate {:.2}, {:+.1} % ({interval})",
            metric.metric,
            metric.base_median,
            metric.candidate_median,
            change.estimate * 100.0
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
