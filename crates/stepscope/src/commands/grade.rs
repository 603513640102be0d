//! `stepscope grade BASE CANDIDATE`: KEEP, REVERT or INCONCLUSIVE for a change, from each
//! side's benchmark phases, beyond the noise between phases.

use crate::Outcome;
use crate::output;
use clap::Args;
use std::fmt::Write as _;
use std::path::PathBuf;
use stepscope_serving::grade::{Decision, Grade, Slo, grade, read_phases};

/// Arguments of `stepscope grade`.
#[derive(Debug, Args)]
pub struct GradeArgs {
    /// The run before the change: a folder of `stepscope bench --json` documents, one per
    /// phase (or one document).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The run with the change, as BASE.
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
    /// Print the grade as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Live (two URLs): the run directory for every phase's bench document and the grade
    /// (default `grade-<unix seconds>`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Live: phases a side before the first grading.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..))]
    pub min_phases: u32,
    /// Live: the budget, phases a side; the grade at the end of it is final.
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u32).range(2..))]
    pub max_phases: u32,
    /// Live: the model (default: each server's first in `GET /v1/models`).
    #[arg(long)]
    pub model: Option<String>,
    /// Live: requests in flight in each phase.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub concurrency: u32,
    /// Live: measured requests a phase.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub num_prompts: u32,
    /// Live: prompt tokens a request.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub input_len: u32,
    /// Live: output tokens a request.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub output_len: u32,
    /// Live: unmeasured requests before each phase.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub warmup: u32,
}

/// `stepscope grade`.
pub fn run(args: GradeArgs) -> anyhow::Result<Outcome> {
    let live = [&args.base, &args.candidate].map(|side| super::grade_live::is_url(side));
    match live {
        [true, true] => return super::grade_live::run(&args),
        [false, false] => {}
        _ => {
            output::print_error(&anyhow::anyhow!(
                "grade takes two URLs (live) or two folders of bench documents, not one of each\nhint: save the live side's phases with `stepscope bench --json` first"
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
    let graded = grade(base, candidate, args.min_effect, &args.slo);
    finish(&graded, args.json)
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
    let word = match graded.decision {
        Decision::Keep => "KEEP",
        Decision::Revert => "REVERT",
        Decision::Inconclusive => "INCONCLUSIVE",
    };
    let _ = writeln!(out, "{word} — {}", graded.reason);
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
    for (label, phases) in [("base", &graded.base), ("candidate", &graded.candidate)] {
        let tps: Vec<String> = phases
            .iter()
            .map(|p| format!("{:.1}", p.output_tokens_per_s))
            .collect();
        let _ = writeln!(out, "{label} output tok/s by phase: {}", tps.join(", "));
    }
    out
}
