//! `stepscope grade URL URL`: benchmark phases against two running servers, one at a time in
//! the order A B B A (repeated), so that drift over the run weighs on both sides alike;
//! after every pair, once each side has `--min-phases`, the phases are graded, and the run
//! stops at the first KEEP or REVERT or at `--max-phases` a side. Every phase's `bench
//! --json` document is saved in the run directory (`base/`, `candidate/`) and the grade in
//! `grade.json`, so `stepscope grade DIR/base DIR/candidate` grades the same phases offline.

use super::grade::{GradeArgs, finish};
use crate::Outcome;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use stepscope_load::{BenchOptions, BenchProgress, MonotonicClock, run_benchmark};
use stepscope_serving::grade::{Decision, Grade, grade, read_phases};

/// Whether a side is a running server's URL.
pub fn is_url(side: &Path) -> bool {
    let text = side.to_string_lossy();
    text.starts_with("http://") || text.starts_with("https://")
}

/// The load each phase runs.
fn options(args: &GradeArgs, url: &str) -> BenchOptions {
    let mut options = BenchOptions::default();
    options.base_url = url.to_owned();
    options.model = args.model.clone().unwrap_or_default();
    options.concurrency = args.concurrency as usize;
    options.num_prompts = args.num_prompts as usize;
    options.input_len = args.input_len as usize;
    options.output_len = args.output_len as usize;
    options.warmup = args.warmup as usize;
    options
}

/// Runs the alternating phases and grades them.
pub fn run(args: &GradeArgs) -> anyhow::Result<Outcome> {
    let out = args.out.clone().unwrap_or_else(default_dir);
    let sides = [("base", &args.base), ("candidate", &args.candidate)];
    for (name, _) in sides {
        fs_err::create_dir_all(out.join(name))?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to start the async runtime")?;
    let mut graded: Option<Grade> = None;
    let mut counts = [0usize; 2];
    for index in 0..2 * args.max_phases {
        // A B B A: pairs alternate which side goes first.
        let side = usize::from((index % 4 == 1) || (index % 4 == 2));
        let (name, url) = sides[side];
        let phase = out
            .join(name)
            .join(format!("phase{:02}.json", counts[side]));
        let tps = run_phase(&runtime, &options(args, &url.to_string_lossy()), &phase)?;
        counts[side] += 1;
        let line = format!("phase {} of {name}: {tps:.1} output tok/s\n", counts[side]);
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        let paired = index % 2 == 1;
        if paired && counts.iter().all(|&n| n >= args.min_phases as usize) {
            let current = grade_dir(&out, args)?;
            let decided = current.decision != Decision::Inconclusive;
            graded = Some(current);
            if decided {
                break;
            }
        }
    }
    let graded = match graded {
        Some(graded) => graded,
        None => grade_dir(&out, args)?,
    };
    let json = serde_json::to_string_pretty(&graded)? + "\n";
    stepscope_report::atomic::write_with(&out.join("grade.json"), |mut w| {
        std::io::Write::write_all(&mut w, json.as_bytes())
    })?;
    finish(&graded, args.json)
}

/// One phase, its document saved at `path`; its output tokens per second.
fn run_phase(
    runtime: &tokio::runtime::Runtime,
    options: &BenchOptions,
    path: &Path,
) -> anyhow::Result<f64> {
    let progress = BenchProgress::default();
    let clock = MonotonicClock::new();
    let report = runtime
        .block_on(run_benchmark(
            options,
            &clock,
            &progress,
            std::future::pending(),
        ))
        .with_context(|| format!("the phase against {} failed", options.base_url))?;
    stepscope_report::atomic::write_with(path, |writer| {
        report.write_json(writer).map_err(std::io::Error::from)
    })?;
    Ok(report.summary.throughput.output_tokens_per_s)
}

fn grade_dir(out: &Path, args: &GradeArgs) -> anyhow::Result<Grade> {
    let read = |name: &str| read_phases(&out.join(name)).map_err(anyhow::Error::msg);
    Ok(grade(
        read("base")?,
        read("candidate")?,
        args.min_effect,
        &args.slo,
    ))
}

/// `grade-<unix seconds>` in the current folder.
fn default_dir() -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("grade-{now}"))
}
