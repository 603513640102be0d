//! The verdict lines, the advice, the findings and the graph table.

use super::{TerminalOptions, count, new_table, percent, right_align, truncate_middle};
use crate::schema::{
    Advice, Coverage, CoverageNumbers, ExpectedSource, FileReport, Finding, Graph, HOW_TO_SETTLE,
    MAX_FINDINGS, OverallVerdict, PatternDetailWire, PatternWire, UnverifiedWire,
};
use comfy_table::Table;
use owo_colors::OwoColorize;
use std::fmt::Write;
use stepscope_analysis::{Counter, CoverageTotals, FindingKind, Verdict};

/// How a verdict reads: good news, bad news, or something to look at.
enum Tone {
    Good,
    Bad,
    Caution,
}

fn tone(verdict: OverallVerdict) -> Tone {
    match verdict {
        OverallVerdict::Worst(Verdict::Complete) => Tone::Good,
        OverallVerdict::Worst(
            Verdict::Incomplete | Verdict::Damaged | Verdict::Mistimed | Verdict::NoEvents,
        )
        | OverallVerdict::Unreadable
        | OverallVerdict::Partial => Tone::Bad,
        OverallVerdict::Worst(Verdict::Unverified | Verdict::Unavailable | Verdict::NoReplays) => {
            Tone::Caution
        }
    }
}

/// The verdict as a word (upper case, coloured when asked): a file's [`Verdict`], or the
/// [`OverallVerdict`] of several inputs.
pub fn verdict_word(verdict: impl Into<OverallVerdict>, options: &TerminalOptions) -> String {
    let verdict = verdict.into();
    let word = match verdict {
        OverallVerdict::Worst(Verdict::Unverified) => {
            "UNVERIFIED (complete as far as the trace shows)".to_owned()
        }
        OverallVerdict::Worst(
            Verdict::NoEvents
            | Verdict::NoReplays
            | Verdict::Complete
            | Verdict::Unavailable
            | Verdict::Mistimed
            | Verdict::Damaged
            | Verdict::Incomplete,
        )
        | OverallVerdict::Unreadable
        | OverallVerdict::Partial => verdict.as_str().to_uppercase(),
    };
    if !options.color {
        return word;
    }
    match tone(verdict) {
        Tone::Good => word.green().bold().to_string(),
        Tone::Bad => word.red().bold().to_string(),
        Tone::Caution => word.yellow().bold().to_string(),
    }
}

/// Whether the verdict means GPU work is missing from the trace (replays short, empty or
/// damaged), so the breakdown's numbers lack it.
pub fn misses_work(verdict: Verdict) -> bool {
    match verdict {
        Verdict::Incomplete | Verdict::Damaged => true,
        Verdict::NoEvents
        | Verdict::NoReplays
        | Verdict::Complete
        | Verdict::Unverified
        | Verdict::Unavailable
        | Verdict::Mistimed => false,
    }
}

/// `x`, or `between a and b`, or `between a and b (estimate e)`, for fractions.
pub fn share_range(low: f64, estimate: Option<f64>, high: f64) -> String {
    let (l, h) = (percent(low), percent(high));
    if l == h {
        return format!("≈ {l}");
    }
    match estimate.map(percent) {
        Some(e) if e != l && e != h => format!("between {l} and {h} (estimate {e})"),
        _ => format!("between {l} and {h}"),
    }
}

/// Completeness as a number where it is known, else a range (`≤ x` when nothing bounds
/// it from below: a size resting on one replay has no upper bound).
pub fn completeness_text(n: &CoverageNumbers) -> String {
    match n.completeness {
        Some(exact) => percent(exact),
        None if n.completeness_low <= 0.0 => format!("≤ {}", percent(n.completeness_high)),
        None => share_range(n.completeness_low, None, n.completeness_high),
    }
}

/// `kernels of 24 of 25 graph replays recorded (96%), completeness 98%`, or
/// `no graph replays` when there were none to record.
pub fn recorded_text(n: &CoverageNumbers) -> String {
    if n.totals.replays == 0 {
        return "no graph replays".to_owned();
    }
    format!(
        "kernels of {} of {} recorded ({}), completeness {}",
        n.totals.recorded_replays,
        count(n.totals.replays, "graph replay"),
        percent(n.coverage),
        completeness_text(n)
    )
}

/// The verdict line and what belongs right under it.
pub fn render_verdict(out: &mut String, file: &FileReport, options: &TerminalOptions) {
    let coverage = &file.replay_coverage;
    let word = verdict_word(coverage.verdict, options);
    let _ = writeln!(out, "{}", headline(coverage, &word));
    render_missing(out, coverage);
    render_patterns(out, coverage);
    if file.advice.applies {
        render_advice(out, &file.advice);
    }
    render_also(out, file);
}

/// The verdict line: `replay coverage: WORD — …`.
fn headline(coverage: &Coverage, word: &str) -> String {
    let n = &coverage.numbers;
    let t = &n.totals;
    match coverage.verdict {
        Verdict::NoEvents => format!(
            "replay coverage: {word} — the trace holds no events: nothing was recorded, or this is not the file you meant"
        ),
        Verdict::NoReplays => {
            format!("replay coverage: {word} — the trace has no graph launches; nothing to check")
        }
        Verdict::Unavailable => format!(
            "replay coverage: {word} — this file cannot show whether graph replays were recorded: {}",
            coverage
                .unavailable_reason
                .as_deref()
                .unwrap_or("no launch linkage")
        ),
        Verdict::Mistimed => format!(
            "replay coverage: {word} — kernels of {} recorded ({} nodes), but {} with wrong timings (after their step, or other kernels' durations): their per-step and per-op times cannot be trusted",
            all_replays(t.replays),
            t.recorded_nodes,
            count(t.deferred_replays + t.implausible_replays, "replay")
        ),
        Verdict::Complete => format!(
            "replay coverage: {word} — kernels of {} recorded ({} nodes){}; every graph's size corroborated",
            all_replays(t.replays),
            t.recorded_nodes,
            if t.order_mismatches == 0 {
                ", in capture order"
            } else {
                ""
            }
        ),
        Verdict::Unverified => format!(
            "replay coverage: {word} — kernels of {} recorded ({} nodes); {} unverified",
            all_replays(t.replays),
            t.recorded_nodes,
            sizes(t.unverified_replays)
        ),
        Verdict::Damaged => format!(
            "replay coverage: {word} — {} of {} replays lost GPU events to bad data in the file (see damage below): not a runtime symptom, and no switch repairs it",
            t.damaged_replays, t.replays
        ),
        Verdict::Incomplete => incomplete_headline(n, word),
    }
}

/// The verdict line of replays that lost kernels, or of GPU work lost beyond them.
fn incomplete_headline(n: &CoverageNumbers, word: &str) -> String {
    let t = &n.totals;
    if t.short_replays + t.empty_replays == 0 {
        return format!(
            "replay coverage: {word} — GPU events are missing beyond the replays (see the pattern below): per-op shares from this trace do not hold; {}",
            if t.replays == 0 {
                "no graph replays".to_owned()
            } else if t.recorded_replays == t.replays {
                format!("kernels of {} recorded", all_replays(t.replays))
            } else {
                format!(
                    "kernels of {} of {} recorded",
                    t.recorded_replays,
                    count(t.replays, "graph replay")
                )
            }
        );
    }
    format!(
        "replay coverage: {word} — kernels of {} of {} recorded ({}); {} short, {} empty{}; completeness {}",
        t.recorded_replays,
        count(t.replays, "graph replay"),
        percent(n.coverage),
        t.short_replays,
        t.empty_replays,
        damaged_suffix(t),
        completeness_text(n)
    )
}

fn render_patterns(out: &mut String, coverage: &Coverage) {
    for pattern in &coverage.patterns {
        let share = share_range(pattern.gpu_share_low, None, pattern.gpu_share_high);
        let _ = writeln!(
            out,
            "  pattern {}: {}; its replays: {share} of the GPU time",
            pattern.pattern.as_str(),
            pattern_seen(pattern)
        );
        for cure in &pattern.cures {
            let how = if cure.measured {
                "measured"
            } else {
                "reported"
            };
            let sources = if cure.sources.is_empty() {
                String::new()
            } else {
                format!(": {}", cure.sources)
            };
            let _ = writeln!(out, "    cure: {} [{how}{sources}]", cure.action);
        }
    }
}

/// What was seen of a pattern, in words.
fn pattern_seen(pattern: &PatternWire) -> String {
    match &pattern.detail {
        PatternDetailWire::Empty { empty } => {
            format!(
                "{} recorded no kernel while the eager work around them did",
                count(*empty, "replay")
            )
        }
        PatternDetailWire::Partial {
            kept_low,
            kept_high,
            in_partial_slots,
        } => {
            let slots = if *in_partial_slots > 0 {
                format!(
                    "; {in_partial_slots} of them at launch slots or in runs whose replays each kept a different part"
                )
            } else {
                String::new()
            };
            format!(
                "{} kept {} of their graph's likeliest size{slots}",
                count(pattern.replays, "replay"),
                share_range(*kept_low, None, *kept_high).trim_start_matches("≈ ")
            )
        }
        PatternDetailWire::Stopped {
            eager_after,
            graph_after,
            window_after,
            ..
        } => format!(
            "GPU events stop while the host goes on: {} without GPU work and {} that lost theirs, at the end of the window ({} of the launch span)",
            count(*eager_after, "eager launch"),
            count(*graph_after, "graph launch"),
            percent(*window_after)
        ),
        PatternDetailWire::NoGpu { launches } => {
            format!("{} and not a single GPU event", count(*launches, "launch"))
        }
        PatternDetailWire::AfterStep { after_last_step } => format!(
            "{} recorded after their step ended, later than their stream allows ({after_last_step} after the last step marker)",
            count(pattern.replays, "replay")
        ),
        PatternDetailWire::Implausible { graphs } => format!(
            "{} in {} hold kernels ten times longer and ten times shorter than the same kernels in the graph's other replays: durations paired with other kernels",
            count(pattern.replays, "replay"),
            count(*graphs, "graph")
        ),
    }
}

/// `all 25 graph replays`, `the one graph replay`.
fn all_replays(replays: u32) -> String {
    if replays == 1 {
        "the one graph replay".to_owned()
    } else {
        format!("all {replays} graph replays")
    }
}

fn sizes(unverified: u32) -> String {
    if unverified == 1 {
        "1 replay's size is".to_owned()
    } else {
        format!("{unverified} replays' sizes are")
    }
}

fn damaged_suffix(t: &CoverageTotals) -> String {
    match t.damaged_replays {
        0 => String::new(),
        d => format!(", {d} damaged"),
    }
}

fn render_missing(out: &mut String, coverage: &Coverage) {
    let range = share_range(
        coverage.missing_share_low,
        coverage.missing_share,
        coverage.missing_share_high,
    );
    let _ = match coverage.verdict {
        Verdict::Incomplete | Verdict::Damaged => writeln!(
            out,
            "  missing replay GPU time: {range} of the GPU time (recorded + missing); per-op shares below describe the work that was recorded, mostly prefill and eager ops"
        ),
        Verdict::Unverified if coverage.missing_share_high > 0.0 => writeln!(
            out,
            "  if the unverified replays lost nodes, at most {} of the GPU time is missing",
            percent(coverage.missing_share_high)
        ),
        Verdict::Unverified
        | Verdict::NoEvents
        | Verdict::NoReplays
        | Verdict::Complete
        | Verdict::Unavailable
        | Verdict::Mistimed => return,
    };
    for basis in &coverage.missing_basis {
        let _ = writeln!(out, "    {basis}");
    }
}

fn render_advice(out: &mut String, advice: &Advice) {
    if advice.switches.is_empty() {
        let _ = writeln!(
            out,
            "  trace recorded on {} → {}",
            advice.runtime, advice.reason
        );
        return;
    }
    let settings: Vec<String> = advice
        .switches
        .iter()
        .map(|s| format!("{}={}", s.variable, s.value))
        .collect();
    let _ = writeln!(
        out,
        "  trace recorded on {} → start the server with {}",
        advice.runtime,
        settings.join(" and ")
    );
    let _ = writeln!(out, "  ({})", advice.reason);
    for switch in &advice.switches {
        let measured = if switch.measured {
            "measured"
        } else {
            "not yet measured on a GPU"
        };
        let _ = writeln!(
            out,
            "    {}={}: {} [{}; {}]",
            switch.variable, switch.value, switch.effect, switch.runtime_line, measured
        );
    }
}

fn render_also(out: &mut String, file: &FileReport) {
    let t = &file.replay_coverage.numbers.totals;
    let (mismatches, deferred) = (t.order_mismatches, t.deferred_replays);
    if mismatches > 0 || deferred > 0 {
        let _ = writeln!(
            out,
            "  also: {} out of capture order, {} whose kernels were recorded after their step",
            count(mismatches, "replay"),
            count(deferred, "replay")
        );
    }
    let damage = &file.damage;
    let refused: u64 = damage.refused_events.values().sum();
    if refused > 0 || damage.shared_correlations > 0 {
        let kinds: Vec<String> = damage
            .refused_events
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        let _ = writeln!(
            out,
            "  damage: {} refused for bad data ({}), {} of them in replays; {} refused; {} sharing a correlation id",
            count(refused as u32, "event"),
            if kinds.is_empty() {
                "none".to_owned()
            } else {
                kinds.join(", ")
            },
            damage.refused_in_replays,
            count(damage.refused_launches, "graph launch"),
            count(damage.shared_correlations as u32, "host call")
        );
    }
    for reason in &damage.unchecked {
        let _ = writeln!(out, "  unchecked: {reason} (--strict fails on this)");
    }
    for limit in &file.replay_coverage.limits_hit {
        let _ = writeln!(out, "  limit: {limit}");
    }
}

/// The per-graph table: identity columns, then the counters that have a label.
pub fn graph_table(graphs: &[Graph], options: &TerminalOptions) -> Table {
    let mut header = vec!["graph", "first kernel", "expected nodes"];
    // Counters that are zero for every graph are left out (JSON and CSV keep them all);
    // replays, recorded and complete always show.
    let always = [
        Counter::Replays,
        Counter::RecordedReplays,
        Counter::CompleteReplays,
    ];
    let shown: Vec<Counter> = Counter::ALL
        .into_iter()
        .filter(|c| c.label().is_some())
        .filter(|c| always.contains(c) || graphs.iter().any(|g| c.value(&g.numbers.totals) > 0))
        .collect();
    header.extend(shown.iter().filter_map(|c| c.label()));
    header.push("completeness");
    let mut table = new_table(options, &header);
    for g in graphs {
        let n = &g.numbers;
        let expected = match (
            g.expected_nodes_per_replay_low,
            g.expected_nodes_per_replay_high,
        ) {
            (Some(low), Some(high)) if low == high => low.to_string(),
            (Some(low), Some(high)) => format!("{low}–{high}"),
            (Some(low), None) => format!("≥ {low}"),
            (None, _) => "unknown".to_owned(),
        };
        let expected = match g.expected_source {
            ExpectedSource::CaptureTrace => format!("{expected} (capture)"),
            ExpectedSource::Repeated
            | ExpectedSource::SingleReplay
            | ExpectedSource::LargestReplay
            | ExpectedSource::UnionOfParts
            | ExpectedSource::Unknown => expected,
        };
        let mut row = vec![
            g.graph.map_or("unknown".to_owned(), |g| g.to_string()),
            truncate_middle(g.first_kernel.as_deref().unwrap_or("—"), 48),
            expected,
        ];
        row.extend(shown.iter().map(|c| c.value(&n.totals).to_string()));
        row.push(completeness_text(n));
        table.add_row(row);
    }
    right_align(&mut table, 2);
    table
}

/// Findings grouped by kind, with a few examples each.
pub fn render_findings(out: &mut String, coverage: &Coverage, options: &TerminalOptions) {
    for kind in FindingKind::ALL {
        let found: Vec<&Finding> = coverage
            .findings
            .iter()
            .filter(|f| f.kind == kind)
            .collect();
        if found.is_empty() {
            continue;
        }
        let replays: Vec<usize> = found.iter().map(|f| f.replay).collect();
        let listed = if coverage.findings.len() >= MAX_FINDINGS {
            " (of the first 200 findings)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {kind}: {}{listed}: {}",
            count(found.len() as u32, "replay"),
            ranges(&replays)
        );
        let mut shown: Vec<String> = Vec::new();
        for finding in &found {
            let why = reason(finding);
            if shown.len() >= options.findings || shown.contains(&why) {
                continue;
            }
            let _ = writeln!(out, "    e.g. {} — {why}", describe(finding));
            shown.push(why);
        }
        if kind == FindingKind::UnverifiedReplay {
            let _ = writeln!(out, "    to settle: {HOW_TO_SETTLE}");
        }
    }
}

/// One finding as the terminal describes it: the replay, and why (its evidence).
pub fn finding_text(finding: &Finding) -> (String, String) {
    (describe(finding), reason(finding))
}

fn describe(finding: &Finding) -> String {
    let expected = match (finding.expected_nodes, finding.expected_nodes_high) {
        (Some(e), _) => e.to_string(),
        (None, Some(high)) => format!("{}–{high}", finding.expected_nodes_low),
        (None, None) => format!("at least {}", finding.expected_nodes_low),
    };
    let step = finding
        .step
        .as_deref()
        .map(|s| format!(" in {}", truncate_middle(s, 40)))
        .unwrap_or_default();
    format!(
        "#{} (graph {}){step}: {} of {expected} nodes",
        finding.replay,
        finding
            .graph
            .map_or("unknown".to_owned(), |g| g.to_string()),
        finding.recorded_nodes
    )
}

fn reason(finding: &Finding) -> String {
    if let Some(unverified) = &finding.unverified {
        return match unverified {
            UnverifiedWire::SoleReplay => {
                "the only replay that recorded this work; nothing else in the trace gives its graph's size".to_owned()
            }
            UnverifiedWire::PossiblyShortOf { graph, nodes } => format!(
                "its kernels are a strict part of graph {graph}'s {nodes}: a graph of its own, or a short replay of graph {graph}"
            ),
            UnverifiedWire::OthersRecordedLess { replays } => format!(
                "the largest its graph recorded, but {} of the graph recorded less: where nodes go missing, the largest may be short too",
                count(*replays, "other replay")
            ),
            UnverifiedWire::CaptureHoldsMore { nodes } => format!(
                "the capture of its graph holds {nodes} launches, one more than it recorded: it lost a node, or that launch never became one"
            ),
        };
    }
    if finding.kind == FindingKind::DamagedReplay {
        return match (finding.refused_events, finding.shared_correlation) {
            (0, _) => "another host call carries its correlation id, so its GPU events cannot be told apart".to_owned(),
            (n, _) => format!("{} with its correlation id refused for bad data", count(n, "GPU event")),
        };
    }
    match &finding.evidence {
        Some(evidence) => evidence.sentence(),
        None if finding.graph.is_none() => {
            "no kernels recorded, and nothing in the trace tells its graph".to_owned()
        }
        None => "no further evidence".to_owned(),
    }
}

/// `#0–14, #16–30, #47`.
pub fn ranges(sorted: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut index = 0;
    while index < sorted.len() {
        let start = sorted[index];
        let mut end = start;
        while index + 1 < sorted.len() && sorted[index + 1] == end + 1 {
            index += 1;
            end += 1;
        }
        parts.push(if end > start {
            format!("#{start}–{end}")
        } else {
            format!("#{start}")
        });
        index += 1;
    }
    if parts.len() > 8 {
        let more = parts.len() - 8;
        parts.truncate(8);
        parts.push(format!("… {more} more runs"));
    }
    parts.join(", ")
}
