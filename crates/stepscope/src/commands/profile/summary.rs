//! The run's report: what ran, each window's steps and verdict, the load, and what profiling
//! cost; written to `report.txt`, printed (or `results.json` with `--json`), and the exit
//! code.

use super::analysis::Analysed;
use super::{Ended, ProfileArgs};
use crate::Outcome;
use crate::output;
use std::fmt::Write as _;
use stepscope_model::text::escape_controls;
use stepscope_serving::profile::record::{Comparison, RunRecord, ThroughputRecord, WindowRecord};
use stepscope_serving::profile::{RunDir, RunStatus};

/// Ends the record, writes and prints the report, and decides the exit code.
pub fn finish(
    run: &RunDir,
    args: &ProfileArgs,
    analysed: &Analysed,
    ended: Ended,
) -> anyhow::Result<Outcome> {
    let windows_failed = run.record().windows.iter().any(window_failed);
    if ended == Ended::Complete {
        let (status, error) = if windows_failed {
            (
                RunStatus::Failed,
                Some("a window failed or left incomplete files (see windows[])".to_owned()),
            )
        } else {
            (RunStatus::Complete, None)
        };
        run.end(status, error)?;
    }
    let record = run.record();
    let text = render(&record, run);
    run.write("report.txt", text.as_bytes())?;
    if args.json {
        output::print(&std::fs::read_to_string(run.path("results.json"))?)?;
    } else {
        output::print(&text)?;
    }
    Ok(match ended {
        Ended::Interrupted(signal) => Outcome::Signalled(signal),
        Ended::Failed => Outcome::RunFailed,
        Ended::Complete if windows_failed || analysed.unreadable => Outcome::RunFailed,
        Ended::Complete if analysed.gate_failed => Outcome::VerdictFailed,
        Ended::Complete => Outcome::Success,
    })
}

fn window_failed(window: &WindowRecord) -> bool {
    window.error.is_some()
        || !window.incomplete.is_empty()
        || window.missing.is_some()
        || window.traces.iter().all(|t| t.role != "rank")
}

/// The report as text.
pub fn render(record: &RunRecord, run: &RunDir) -> String {
    let mut out = String::new();
    let config = &record.config;
    let _ = writeln!(
        out,
        "stepscope profile: {} ({}, {}) — {}",
        config.path,
        config.framework,
        config.model,
        status_line(record)
    );
    let _ = writeln!(out, "  run directory: {}", run.root().display());
    server_lines(&mut out, record);
    let verdict = record
        .verdict
        .as_deref()
        .unwrap_or("none (no window was analysed)");
    let _ = writeln!(
        out,
        "\nreplay coverage over {} window(s): {} (the worst window's verdict)",
        record.windows.len(),
        verdict.to_uppercase()
    );
    for window in &record.windows {
        window_lines(&mut out, window);
    }
    if let Some(load) = &record.windows_load {
        let _ = writeln!(
            out,
            "  steady load during the windows (concurrency {}): {} requests completed, {} failed, {:.1} output tok/s ({})",
            record.load.concurrency,
            load.requests_completed,
            load.requests_failed,
            load.output_tokens_per_s,
            load.file
        );
    }
    if let Some(throughput) = &record.throughput {
        throughput_lines(&mut out, throughput, record.load.concurrency);
    }
    out
}

fn status_line(record: &RunRecord) -> String {
    match (record.status, &record.error) {
        (RunStatus::Complete, _) => "complete".to_owned(),
        (status, Some(error)) => format!(
            "{} in phase `{}`: {}",
            match status {
                RunStatus::Interrupted => "INTERRUPTED",
                _ => "FAILED",
            },
            record.phase,
            error.lines().next().unwrap_or_default()
        ),
        (_, None) => format!("{:?} in phase `{}`", record.status, record.phase).to_lowercase(),
    }
}

fn server_lines(out: &mut String, record: &RunRecord) {
    for (label, server) in [
        ("server", &record.server),
        ("baseline server", &record.baseline_server),
    ] {
        let Some(server) = server else { continue };
        let ready = server
            .ready_s
            .map(|s| format!(", ready in {s:.1} s"))
            .unwrap_or_default();
        let stop = server
            .stop
            .as_deref()
            .map(|s| match s {
                "kept" => format!(
                    ", left running (process group {}; `kill -TERM -- -{}` stops it)",
                    server.process_group.unwrap_or(0),
                    server.process_group.unwrap_or(0)
                ),
                other => format!(", stopped ({other})"),
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {label}: {} {} serving {}{ready}{stop}; fingerprint {}",
            server.mode,
            server.url,
            // The server names its model: shown with control characters escaped.
            escape_controls(server.served_model.as_deref().unwrap_or("?")),
            server.fingerprint
        );
    }
}

fn window_lines(out: &mut String, window: &WindowRecord) {
    let counted = match (&window.counted_steps, &window.counted_by) {
        (Some(steps), Some(by)) => format!("; {steps} steps counted by {by}"),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  #{} {} ({} steps asked; closed by {}{counted}; open {:.1} s, files complete {:.1} s later)",
        window.index,
        window.spec,
        window.requested_steps,
        window.ended_by,
        window.open_s,
        window.collect_s
    );
    if let Some(error) = &window.error {
        let _ = writeln!(out, "    FAILED: {}", error.replace('\n', "\n      "));
    }
    for file in &window.incomplete {
        let _ = writeln!(out, "    incomplete file {}: {}", file.path, file.reason);
    }
    if let Some(missing) = &window.missing {
        let _ = writeln!(out, "    missing files: only {missing} appeared");
    }
    let Some(analysis) = &window.analysis else {
        if window.error.is_none() {
            let _ = writeln!(out, "    no rank trace to analyse");
        }
        return;
    };
    let _ = writeln!(
        out,
        "    verdict {}; the trace holds {} steps; report {}",
        analysis.verdict.to_uppercase(),
        analysis.steps_in_trace,
        analysis.report
    );
    for file in &analysis.files {
        let steps: Vec<String> = file.steps.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let completeness = file
            .completeness
            .map(|c| format!(", completeness {:.1}%", c * 100.0))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    {}: {}, {} replays{completeness}; steps: {}",
            file.path,
            file.verdict,
            file.replays,
            if steps.is_empty() {
                "none found".to_owned()
            } else {
                steps.join(", ")
            }
        );
    }
}

fn throughput_lines(out: &mut String, throughput: &ThroughputRecord, concurrency: u32) {
    let _ = writeln!(
        out,
        "\nthroughput (output tok/s, concurrency {concurrency}):"
    );
    for (kind, phases) in [
        ("profiler off", "unprofiled"),
        ("profiler on", "profiled"),
        ("baseline", "baseline"),
    ] {
        let values: Vec<String> = throughput
            .phases
            .iter()
            .chain(&throughput.baseline_phases)
            .filter(|p| p.kind == phases)
            .map(|p| format!("{:.1}", p.load.output_tokens_per_s))
            .collect();
        if !values.is_empty() {
            let _ = writeln!(out, "  {kind:<12} phases: {}", values.join("  "));
        }
    }
    for comparison in &throughput.comparisons {
        comparison_line(out, comparison);
    }
}

fn comparison_line(out: &mut String, c: &Comparison) {
    let _ = writeln!(
        out,
        "  {}: median {:.1} vs {:.1} tok/s, {:+.1}% (spread {:+.1}% to {:+.1}%, {} phases each)",
        c.what,
        c.subject_median,
        c.reference_median,
        c.difference_pct,
        c.spread_pct[0],
        c.spread_pct[1],
        c.phases
    );
}
