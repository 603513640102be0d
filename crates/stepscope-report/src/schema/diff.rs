//! The JSON document of `stepscope diff BASE NEW --json`, diff schema version 1
//! (docs/json-schema.md, "`stepscope diff --json`"). The terminal report renders the same
//! struct, and so may any other renderer (HTML): build it once with [`DiffDocument::new`].
//!
//! Times are microseconds (`*_us`), shares fractions in `[0, 1]`, `relative` the fraction
//! `(new − base) / base` (`null` when base is 0). A refused stage has no row in `stages`:
//! its numbers are left out on purpose, and `refused` says why.

use super::{CoverageNumbers, FailedFile, OverallVerdict, Tool, micros, share, text};
use serde::Serialize;
use stepscope_analysis::diff::{Amount, BreakdownDiff, RowDiff, Side, StageDiff};
use stepscope_analysis::{AssignmentMethod, StageKey};
use stepscope_analysis::{CoverageTotals, Verdict};
use stepscope_model::Duration;

/// Version of the diff document's layout (separate from `analyze`'s [`super::SCHEMA_VERSION`]).
pub const DIFF_SCHEMA_VERSION: u32 = 2;

/// The whole diff document.
#[derive(Debug, Clone, Serialize)]
pub struct DiffDocument {
    /// [`DIFF_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `stepscope` and its version.
    pub tool: Tool,
    /// The side before the change.
    pub base: DiffSide,
    /// The side after it.
    pub new: DiffSide,
    /// Kernel rows kept per stage in `kernels`, `appeared` and `vanished`.
    pub kernel_limit: usize,
    /// Compared stages, in stage order (refused ones left out).
    pub stages: Vec<StageDelta>,
    /// Stages not compared, with why and how to fix it; empty with `--force`.
    pub refused: Vec<RefusedStage>,
    /// Whether `--force` compared a stage that would have been refused.
    pub forced: bool,
    /// What to keep in mind reading the numbers (unverified sides, partial reads, sides
    /// assigned to stages differently).
    pub notes: Vec<String>,
    /// Sides that cannot be compared at all (a file that could not be read, a read cut
    /// short, no GPU events): without `--force` no stage is compared.
    pub unusable_sides: Vec<UnusableSide>,
    /// Achieved TFLOP/s and TB/s per op row both sides have (traces recorded with shapes).
    pub op_rates: super::diff_rates::OpRates,
    /// With `--fail-on-regression PCT`: the threshold and the stages slower beyond it and
    /// beyond noise; `null` without the flag.
    pub regression_gate: Option<RegressionGate>,
}

/// The `--fail-on-regression` gate.
#[derive(Debug, Clone, Serialize)]
pub struct RegressionGate {
    /// The minimum slowdown, in percent.
    pub threshold_pct: f64,
    /// Compared stages whose GPU time per step grew by more than the threshold across the
    /// whole confidence interval (exit 3 when any).
    pub slower: Vec<StageKey>,
}

/// A stage's GPU time per step on both sides, and its change beyond step-to-step noise.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PerStep {
    /// BASE steps of the stage that ran GPU work.
    pub base_steps: usize,
    /// NEW steps of the stage that ran GPU work.
    pub new_steps: usize,
    /// Median GPU time of a BASE step, µs.
    pub base_median_us: f64,
    /// Median GPU time of a NEW step, µs.
    pub new_median_us: f64,
    /// The typical ratio of a NEW step's time to a BASE step's, minus one (Hodges–Lehmann).
    pub relative: f64,
    /// Lower end of its interval (`null` with too few steps for the confidence).
    pub relative_low: f64,
    /// Upper end (`null` likewise).
    pub relative_high: f64,
    /// The interval's confidence (0.95).
    pub confidence: f64,
}

impl PerStep {
    fn new(step: &stepscope_analysis::diff::StepChange) -> Self {
        let change = step.change;
        PerStep {
            base_steps: change.base_samples,
            new_steps: change.new_samples,
            base_median_us: micros(step.base_median),
            new_median_us: micros(step.new_median),
            relative: change.estimate,
            relative_low: change.low,
            relative_high: change.high,
            confidence: change.confidence,
        }
    }
}

/// A side that cannot be compared, and why.
#[derive(Debug, Clone, Serialize)]
pub struct UnusableSide {
    /// `base` or `new`.
    pub side: &'static str,
    /// Why, as a sentence.
    pub reason: String,
    /// How to get a comparison.
    pub fix: String,
}

/// One side as given, and its replay coverage.
#[derive(Debug, Clone, Serialize)]
pub struct DiffSide {
    /// The path as given.
    pub path: String,
    /// `file`, `folder` (rank files) or `profile_run` (a `stepscope profile` run directory).
    pub kind: &'static str,
    /// For a profile run: the windows whose rank traces were taken (all of them, combined);
    /// else empty.
    pub windows: Vec<String>,
    /// The trace files analysed (combined as ranks of one run when several).
    pub files: Vec<String>,
    /// Worst verdict over its files; `unreadable` when one could not be read.
    pub verdict: OverallVerdict,
    /// Replay counts summed over its files (as `analyze`'s coverage numbers).
    pub replay_coverage: CoverageNumbers,
    /// Whether a file was read only up to a break (`--allow-truncated`).
    pub partial: bool,
    /// Files that could not be read.
    pub failed_files: Vec<FailedFile>,
    /// What its files repeat or disagree on (as `analyze`'s warnings).
    pub warnings: Vec<String>,
    /// How its events were assigned to stages: `step_annotations` or `replays_as_decode`.
    pub method: AssignmentMethod,
}

/// Where a side comes from.
#[derive(Debug, Clone)]
pub struct SideSource {
    /// The path as given.
    pub path: String,
    /// `file`, `folder` or `profile_run`.
    pub kind: &'static str,
    /// The profile run's windows taken.
    pub windows: Vec<String>,
}

/// A side's analysis, as the command gathered it.
#[derive(Debug, Clone, Copy)]
pub struct SideFacts<'a> {
    /// Worst verdict over its files (or `unreadable`).
    pub verdict: OverallVerdict,
    /// Summed replay counts.
    pub totals: &'a CoverageTotals,
    /// Its stage assignment.
    pub method: AssignmentMethod,
    /// Read only up to a break.
    pub partial: bool,
}

impl DiffSide {
    /// From where the side came from and its analysis.
    pub fn new(
        source: SideSource,
        files: Vec<String>,
        facts: SideFacts<'_>,
        (failed_files, warnings): (Vec<FailedFile>, Vec<String>),
    ) -> Self {
        DiffSide {
            path: text(&source.path),
            kind: source.kind,
            windows: source.windows.iter().map(|w| text(w)).collect(),
            files: files.iter().map(|f| text(f)).collect(),
            verdict: facts.verdict,
            replay_coverage: CoverageNumbers::new(facts.totals),
            partial: facts.partial,
            failed_files,
            warnings,
            method: facts.method,
        }
    }
}

/// One side's time of a stage or row.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SideAmount {
    /// Sum of GPU event durations.
    pub time_us: f64,
    /// Of a stage: share of the side's GPU time; of a category or kernel: share of the
    /// stage's GPU time on that side.
    pub share: f64,
    /// GPU events.
    pub events: u64,
}

impl SideAmount {
    fn new(amount: Amount, whole: Duration) -> Self {
        SideAmount {
            time_us: micros(amount.time),
            share: share(amount.time, whole),
            events: amount.events,
        }
    }
}

/// A category or kernel on both sides.
#[derive(Debug, Clone, Serialize)]
pub struct RowDelta {
    /// Category name, or full kernel name.
    pub name: String,
    /// A kernel row's short id ([`crate::kernel_id`]); absent on category rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_id: Option<String>,
    /// Category (equal to `name` for a category row).
    pub category: String,
    /// Before.
    pub base: SideAmount,
    /// After.
    pub new: SideAmount,
    /// `new.time_us − base.time_us`.
    pub delta_us: f64,
    /// `delta / base`; `null` when base is 0.
    pub relative: Option<f64>,
}

/// One compared stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageDelta {
    /// `prefill`, `decode`, `mixed`, `other`, `step` or `unassigned`.
    pub stage: StageKey,
    /// Compared only because of `--force`: a side's unrecorded replays make it untrustworthy.
    pub forced: bool,
    /// With `forced`: why it would have been refused; else `null`.
    pub forced_reason: Option<String>,
    /// Before.
    pub base: SideAmount,
    /// After.
    pub new: SideAmount,
    /// `new.time_us − base.time_us`.
    pub delta_us: f64,
    /// `delta / base`; `null` when base is 0.
    pub relative: Option<f64>,
    /// GPU time per step and its change beyond step-to-step noise; `null` when a side has
    /// fewer than 2 steps of this stage with GPU work.
    pub per_step: Option<PerStep>,
    /// Every category on either side, by |delta| descending.
    pub categories: Vec<RowDelta>,
    /// Kernels (by name and category) on either side, by |delta| descending: the first
    /// `kernel_limit`.
    pub kernels: Vec<RowDelta>,
    /// Kernels beyond `kernel_limit`.
    pub kernels_left_out: usize,
    /// Kernels only in NEW, most time first: the first `kernel_limit`.
    pub appeared: Vec<RowDelta>,
    /// Those beyond `kernel_limit`.
    pub appeared_left_out: usize,
    /// Kernels only in BASE, most time first: the first `kernel_limit`.
    pub vanished: Vec<RowDelta>,
    /// Those beyond `kernel_limit`.
    pub vanished_left_out: usize,
}

/// A stage left out of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedStage {
    /// The stage.
    pub stage: StageKey,
    /// The sides to blame.
    pub sides: Vec<RefusedSide>,
    /// Why, in one paragraph (each side's sentence).
    pub reason: String,
    /// How to get a comparison.
    pub fix: String,
}

/// A side whose unrecorded replays refuse a stage.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedSide {
    /// `base` or `new`.
    pub side: &'static str,
    /// Its verdict.
    pub verdict: OverallVerdict,
    /// Graph replays.
    pub replays: u64,
    /// Those with at least one kernel recorded.
    pub recorded_replays: u64,
    /// Those with none.
    pub empty_replays: u64,
    /// Those with some, not all.
    pub short_replays: u64,
    /// Those that lost events to bad data.
    pub damaged_replays: u64,
    /// The sentence on this side.
    pub explanation: String,
}

/// How to get a comparison of a refused stage.
pub const REFUSAL_FIX: &str = "record every replay, then profile again: for a HIP runtime `stepscope env --trace TRACE` prints the switches to start the server with, and `stepscope analyze TRACE` shows what was lost; or pass --force to compare anyway";

impl DiffDocument {
    /// The document of a comparison, keeping `kernel_limit` kernel rows per stage.
    pub fn new(base: DiffSide, new: DiffSide, diff: &BreakdownDiff, kernel_limit: usize) -> Self {
        let sides = (&base, &new);
        let stages: Vec<StageDelta> = diff
            .stages
            .iter()
            .map(|s| stage_delta(s, diff, sides, kernel_limit))
            .collect();
        let refused = diff
            .refused
            .iter()
            .map(|r| refused_stage(r.stage, &r.sides, sides))
            .collect();
        let forced = stages.iter().any(|s| s.forced);
        let notes = notes(sides, &stages);
        DiffDocument {
            schema_version: DIFF_SCHEMA_VERSION,
            tool: Tool::current(),
            base,
            new,
            kernel_limit,
            stages,
            refused,
            forced,
            notes,
            unusable_sides: Vec::new(),
            op_rates: super::diff_rates::OpRates::default(),
            regression_gate: None,
        }
    }

    /// Applies `--fail-on-regression PCT`: the compared stages whose GPU time per step grew
    /// by more than `threshold_pct` across the whole confidence interval.
    #[must_use]
    pub fn with_regression_gate(mut self, threshold_pct: f64) -> Self {
        let slower = self
            .stages
            .iter()
            .filter(|s| {
                s.per_step
                    .is_some_and(|p| p.relative_low * 100.0 > threshold_pct)
            })
            .map(|s| s.stage)
            .collect();
        self.regression_gate = Some(RegressionGate {
            threshold_pct,
            slower,
        });
        self
    }

    /// Records sides that cannot be compared. Without `force` no stage is compared; with
    /// it the stages stay, marked forced, and each side's reason becomes a note.
    #[must_use]
    pub fn with_unusable_sides(mut self, unusable: Vec<UnusableSide>, force: bool) -> Self {
        if unusable.is_empty() {
            return self;
        }
        if force {
            self.forced = true;
            for side in &unusable {
                self.notes.push(format!(
                    "{} compared because of --force: {}",
                    side.side.to_uppercase(),
                    side.reason
                ));
            }
        } else {
            self.stages.clear();
        }
        self.unusable_sides = unusable;
        self
    }
}

fn row_delta(row: &RowDiff, (base_whole, new_whole): (Duration, Duration)) -> RowDelta {
    RowDelta {
        name: text(&row.name),
        kernel_id: None,
        category: row.category.clone(),
        base: SideAmount::new(row.base, base_whole),
        new: SideAmount::new(row.new, new_whole),
        delta_us: micros(row.delta()),
        relative: stepscope_analysis::diff::relative(row.base.time, row.new.time),
    }
}

/// The first `limit` of `rows`, and how many were left out.
fn first(rows: Vec<RowDelta>, limit: usize) -> (Vec<RowDelta>, usize) {
    let left_out = rows.len().saturating_sub(limit);
    (rows.into_iter().take(limit).collect(), left_out)
}

fn stage_delta(
    stage: &StageDiff,
    diff: &BreakdownDiff,
    sides: (&DiffSide, &DiffSide),
    limit: usize,
) -> StageDelta {
    let wholes = (stage.base.time, stage.new.time);
    let rows =
        |rows: &[RowDiff]| -> Vec<RowDelta> { rows.iter().map(|r| row_delta(r, wholes)).collect() };
    let kernel = |r: &RowDiff| RowDelta {
        kernel_id: Some(crate::kernel_id::kernel_id(&r.name)),
        ..row_delta(r, wholes)
    };
    let one_side = |keep: fn(&RowDiff) -> bool, by_new: bool| -> Vec<RowDelta> {
        let mut found: Vec<&RowDiff> = stage.kernels.iter().filter(|r| keep(r)).collect();
        let time = |r: &RowDiff| if by_new { r.new.time } else { r.base.time };
        found.sort_by(|a, b| time(b).cmp(&time(a)).then_with(|| a.name.cmp(&b.name)));
        found.into_iter().map(kernel).collect()
    };
    let (kernels, kernels_left_out) = first(stage.kernels.iter().map(kernel).collect(), limit);
    let (appeared, appeared_left_out) = first(one_side(RowDiff::appeared, true), limit);
    let (vanished, vanished_left_out) = first(one_side(RowDiff::vanished, false), limit);
    let name = stage.stage;
    StageDelta {
        stage: name,
        forced: !stage.forced.is_empty(),
        forced_reason: (!stage.forced.is_empty())
            .then(|| refused_stage(name, &stage.forced, sides).reason),
        base: SideAmount::new(stage.base, diff.base_total),
        new: SideAmount::new(stage.new, diff.new_total),
        delta_us: micros(stage.new.time - stage.base.time),
        relative: stepscope_analysis::diff::relative(stage.base.time, stage.new.time),
        per_step: stage.per_step.as_ref().map(PerStep::new),
        categories: rows(&stage.categories),
        kernels,
        kernels_left_out,
        appeared,
        appeared_left_out,
        vanished,
        vanished_left_out,
    }
}

fn refused_stage(stage: StageKey, blamed: &[Side], sides: (&DiffSide, &DiffSide)) -> RefusedStage {
    let sides: Vec<RefusedSide> = blamed
        .iter()
        .map(|side| {
            let wire = match side {
                Side::Base => sides.0,
                Side::New => sides.1,
            };
            refused_side(*side, wire, stage)
        })
        .collect();
    let reason = sides
        .iter()
        .map(|s| s.explanation.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    RefusedStage {
        stage,
        sides,
        reason,
        fix: REFUSAL_FIX.to_owned(),
    }
}

fn refused_side(side: Side, wire: &DiffSide, stage: StageKey) -> RefusedSide {
    let t = &wire.replay_coverage.totals;
    RefusedSide {
        side: side.as_str(),
        verdict: wire.verdict,
        replays: u64::from(t.replays),
        recorded_replays: u64::from(t.recorded_replays),
        empty_replays: u64::from(t.empty_replays),
        short_replays: u64::from(t.short_replays),
        damaged_replays: u64::from(t.damaged_replays),
        explanation: explanation(side, wire, stage),
    }
}

/// `NEW: 12 of 48 graph replays recorded (36 empty): its decode time lacks …`.
fn explanation(side: Side, wire: &DiffSide, stage: StageKey) -> String {
    let label = side.as_str().to_uppercase();
    let reads_as = match side {
        Side::Base => "a slowdown",
        Side::New => "a speedup",
    };
    let lost = |what: &str| {
        format!(
            "its {stage} time lacks {what}, so a {stage} delta would show the profiler's loss as {reads_as}"
        )
    };
    let t = &wire.replay_coverage.totals;
    let replays = t.replays;
    let verdict = wire.verdict.as_str().to_uppercase();
    let what = match wire.verdict {
        OverallVerdict::Worst(Verdict::Incomplete) if t.empty_replays + t.short_replays > 0 => {
            format!(
                "{} of {replays} graph replays recorded ({}): {}",
                t.recorded_replays,
                unrecorded(t),
                lost("the unrecorded replays' kernels")
            )
        }
        OverallVerdict::Worst(Verdict::Incomplete) => {
            format!("the GPU recording lost work: {}", lost("it"))
        }
        OverallVerdict::Worst(Verdict::Damaged) => format!(
            "{} of {replays} graph replays lost events to bad data in the file: {}",
            t.damaged_replays,
            lost("those events")
        ),
        OverallVerdict::Worst(Verdict::Mistimed) => format!(
            "graph replays' kernels were recorded at the wrong time (after their step, or with other kernels' durations): its {stage} time is misplaced or mismeasured"
        ),
        OverallVerdict::Worst(Verdict::Unavailable) => format!(
            "the trace cannot link GPU work to graph launches, so whether its {stage} time holds every replay is unknown"
        ),
        OverallVerdict::Unreadable
        | OverallVerdict::Partial
        | OverallVerdict::Worst(
            Verdict::NoEvents | Verdict::NoReplays | Verdict::Complete | Verdict::Unverified,
        ) => format!(
            "{} could not be read: {}",
            plural(wire.failed_files.len() as u64, "input file"),
            lost("their work")
        ),
    };
    format!("{label} ({verdict}): {what}")
}

/// `36 empty`, `2 short`, `36 empty, 2 short`: the replays that lost kernels.
fn unrecorded(t: &CoverageTotals) -> String {
    let mut parts = Vec::new();
    if t.empty_replays > 0 {
        parts.push(format!("{} empty", t.empty_replays));
    }
    if t.short_replays > 0 {
        parts.push(format!("{} short", t.short_replays));
    }
    parts.join(", ")
}

fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn notes((base, new): (&DiffSide, &DiffSide), stages: &[StageDelta]) -> Vec<String> {
    let mut notes = Vec::new();
    for (label, side) in [("BASE", base), ("NEW", new)] {
        if side.verdict == OverallVerdict::Worst(Verdict::Unverified) {
            let sizes = match side.replay_coverage.totals.unverified_replays {
                1 => "1 replay's size rests on itself alone".to_owned(),
                n => format!("{n} replays' sizes rest on themselves alone"),
            };
            notes.push(format!(
                "{label} is complete as far as the trace shows: {sizes} (no capture, no other replay of its graph); compared, but a node lost there would go unseen (`stepscope analyze` says how to settle it)"
            ));
        }
        if side.partial {
            notes.push(format!(
                "{label} was read only up to a break (--allow-truncated): its numbers cover only the events before it"
            ));
        }
        if side.windows.len() > 1 {
            notes.push(format!(
                "{label} is a profile run with {} windows: their rank traces are combined ({})",
                side.windows.len(),
                side.windows.join(", ")
            ));
        }
    }
    if base.method != new.method {
        notes.push(format!(
            "the sides assign work to stages differently (BASE {}, NEW {}): without step annotations replayed kernels count as decode and the rest as unassigned",
            base.method, new.method
        ));
    }
    for stage in stages.iter().filter(|s| s.forced) {
        notes.push(format!(
            "{} compared because of --force: {}",
            stage.stage,
            stage.forced_reason.as_deref().unwrap_or_default()
        ));
    }
    notes
}
