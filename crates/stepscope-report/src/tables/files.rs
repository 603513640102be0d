//! The `runs` table (one row per run) and the `files` table (one row per input file, read
//! or not).

use super::table::{Small, Table, UtcMicros};
use super::{RunInfo, ns};
use crate::schema::{Coverage, CoverageNumbers, Document, FailedFile, FileReport, OverallVerdict};
use stepscope_analysis::Counter;
use stepscope_analysis::Stage;
use stepscope_analysis::StageKey;

/// One row per run.
pub fn runs(document: &Document, run: &RunInfo) -> Table {
    let rows = [(document, run)];
    let mut table = Table::new("runs", 1);
    table
        .column("run_id", &rows, |(_, r)| r.id.as_str())
        .column("started_at", &rows, |(_, r)| UtcMicros(r.started_at_us))
        .column("stepscope_version", &rows, |(d, _)| d.tool.version)
        .column("json_schema_version", &rows, |(d, _)| d.schema_version)
        .column("command", &rows, |(_, r)| r.command.as_str())
        .column("inputs", &rows, |(_, r)| r.inputs)
        .column("files_read", &rows, |(d, _)| d.files.len())
        .column("files_failed", &rows, |(d, _)| d.failed_files.len())
        .column("verdict", &rows, |(d, _)| d.verdict.as_str())
        .column("partial", &rows, |(d, _)| d.partial)
        .column("warnings", &rows, |(d, _)| {
            (!d.warnings.is_empty()).then(|| d.warnings.join("\n"))
        });
    table
}

/// An input file: read, or not.
enum Input<'a> {
    Read(&'a FileReport),
    Failed(&'a FailedFile),
}

impl<'a> Input<'a> {
    fn read(&self) -> Option<&'a FileReport> {
        match self {
            Input::Read(file) => Some(file),
            Input::Failed(_) => None,
        }
    }

    fn path(&self) -> &'a str {
        match self {
            Input::Read(file) => &file.path,
            Input::Failed(failed) => &failed.path,
        }
    }

    /// GPU time of `stage` (0 when the file has none).
    fn stage_time_ns(&self, stage: Stage) -> Option<i64> {
        let breakdown = &self.read()?.breakdown;
        Some(
            breakdown
                .stages
                .iter()
                .find(|s| s.stage == StageKey::Stage(stage))
                .map_or(0, |s| ns(s.gpu_time_us)),
        )
    }
}

/// One row per input file: the files read in the JSON's order, then those that could not be
/// read (their columns null but `error`).
pub fn files(document: &Document, run_id: &str) -> Table {
    let rows: Vec<Input<'_>> = document
        .files
        .iter()
        .map(Input::Read)
        .chain(document.failed_files.iter().map(Input::Failed))
        .collect();
    let mut table = Table::new("files", rows.len());
    table
        .column("run_id", &rows, |_| run_id)
        .column("file", &rows, Input::path)
        .column("rank", &rows, |r| r.read().and_then(|f| f.rank).map(Small))
        .column("world_size", &rows, |r| {
            r.read().and_then(|f| f.world_size).map(Small)
        })
        .column("format", &rows, |r| r.read().and_then(|f| f.format))
        .column("error", &rows, |r| match r {
            Input::Read(_) => None,
            Input::Failed(failed) => Some(failed.error.as_str()),
        })
        .column("verdict", &rows, |r| {
            r.read().map_or(OverallVerdict::Unreadable.as_str(), |f| {
                f.replay_coverage.verdict.as_str()
            })
        })
        .column("unavailable_reason", &rows, |r| {
            r.read()
                .and_then(|f| f.replay_coverage.unavailable_reason.as_deref())
        });
    header(&mut table, &rows);
    events(&mut table, &rows);
    numbers(&mut table, &rows, |r| {
        r.read().map(|f| &f.replay_coverage.numbers)
    });
    coverage(&mut table, &rows);
    breakdown(&mut table, &rows);
    table
}

fn header(table: &mut Table, rows: &[Input<'_>]) {
    table
        .column("platform", rows, |r| r.read().map(|f| f.platform))
        .column("runtime", rows, |r| {
            r.read()
                .and_then(|f| f.runtime.as_ref())
                .map(|rt| format!("{} {}", rt.kind, rt.version))
        })
        .column("devices", rows, |r| r.read().map(|f| f.devices.join("; ")))
        .column("partial", rows, |r| r.read().map(|f| f.import.partial))
        .column("truncated_at_byte", rows, |r| {
            r.read().and_then(|f| f.import.truncated_at_byte)
        });
}

fn events(table: &mut Table, rows: &[Input<'_>]) {
    table
        .column("events", rows, |r| r.read().map(|f| f.events.total))
        .column("kernels", rows, |r| r.read().map(|f| f.events.kernels))
        .column("memcpys", rows, |r| r.read().map(|f| f.events.memcpys))
        .column("memsets", rows, |r| r.read().map(|f| f.events.memsets))
        .column("runtime_calls", rows, |r| {
            r.read().map(|f| f.events.runtime_calls)
        })
        .column("annotations", rows, |r| {
            r.read().map(|f| f.events.annotations)
        })
        .column("cpu_ops", rows, |r| r.read().map(|f| f.events.cpu_ops))
        .column("flows", rows, |r| r.read().map(|f| f.events.flows));
}

/// The replay counters (one list: [`Counter::ALL`]), coverage, completeness and missing
/// time, as in the JSON's `replay_coverage` (per file) and `graphs[]`.
pub fn numbers<R>(
    table: &mut Table,
    rows: &[R],
    get: impl Fn(&R) -> Option<&CoverageNumbers> + Copy,
) {
    for counter in Counter::ALL {
        table.column(counter.name(), rows, |r| {
            get(r).map(|n| counter.value(&n.totals))
        });
    }
    table
        .column("coverage", rows, |r| get(r).map(|n| n.coverage))
        .column("completeness", rows, |r| {
            get(r).and_then(|n| n.completeness)
        })
        .column("completeness_low", rows, |r| {
            get(r).map(|n| n.completeness_low)
        })
        .column("completeness_high", rows, |r| {
            get(r).map(|n| n.completeness_high)
        })
        .column("missing_gpu_time_ns", rows, |r| {
            get(r).and_then(|n| n.missing_gpu_time_us).map(ns)
        })
        .column("missing_gpu_time_low_ns", rows, |r| {
            get(r).map(|n| ns(n.missing_gpu_time_low_us))
        })
        .column("missing_gpu_time_high_ns", rows, |r| {
            get(r).and_then(|n| n.missing_gpu_time_high_us).map(ns)
        });
}

fn coverage(table: &mut Table, rows: &[Input<'_>]) {
    fn c<'a>(r: &Input<'a>) -> Option<&'a Coverage> {
        r.read().map(|f| &f.replay_coverage)
    }
    table
        .column("recorded_gpu_time_ns", rows, |r| {
            c(r).map(|c| ns(c.recorded_gpu_time_us))
        })
        .column("missing_share", rows, |r| {
            c(r).and_then(|c| c.missing_share)
        })
        .column("missing_share_low", rows, |r| {
            c(r).map(|c| c.missing_share_low)
        })
        .column("missing_share_high", rows, |r| {
            c(r).map(|c| c.missing_share_high)
        })
        .column("idle_bound_ns", rows, |r| {
            c(r).and_then(|c| c.idle_bound_us).map(ns)
        })
        .column("idle_unbounded", rows, |r| c(r).map(|c| c.idle_unbounded))
        .column("launches_under_capture", rows, |r| {
            c(r).map(|c| c.launches_under_capture)
        })
        .column("orphan_kernels", rows, |r| c(r).map(|c| c.orphan_kernels))
        .column("orphan_transfers", rows, |r| {
            c(r).map(|c| c.orphan_transfers)
        })
        .column("shared_correlations", rows, |r| {
            c(r).map(|c| c.shared_correlations)
        })
        .column("inconsistent_classes", rows, |r| {
            c(r).map(|c| c.inconsistent_classes)
        })
        .column("capture_matches", rows, |r| c(r).map(|c| c.capture_matches))
        .column("graphs", rows, |r| c(r).map(|c| c.graphs.len()))
        .column("patterns", rows, |r| {
            c(r).map(|c| {
                let names: Vec<&str> = c.patterns.iter().map(|p| p.pattern.as_str()).collect();
                names.join(", ")
            })
        })
        .column("refused_events", rows, |r| {
            r.read()
                .map(|f| f.damage.refused_events.values().sum::<u64>())
        });
}

fn breakdown(table: &mut Table, rows: &[Input<'_>]) {
    table
        .column("step_framework", rows, |r| {
            r.read().and_then(|f| f.steps.framework)
        })
        .column("steps", rows, |r| {
            r.read().map(|f| f.steps.counts.values().sum::<usize>())
        })
        .column("breakdown_method", rows, |r| {
            r.read().map(|f| f.breakdown.method.as_str())
        })
        .column("total_gpu_time_ns", rows, |r| {
            r.read().map(|f| ns(f.breakdown.total_gpu_time_us))
        })
        .column("unassigned_share", rows, |r| {
            r.read().map(|f| f.breakdown.unassigned_share)
        })
        .column("prefill_gpu_time_ns", rows, |r| {
            r.stage_time_ns(Stage::Prefill)
        })
        .column("decode_gpu_time_ns", rows, |r| {
            r.stage_time_ns(Stage::Decode)
        })
        .column("decode_share", rows, |r| {
            r.read().map(|f| {
                f.breakdown
                    .stages
                    .iter()
                    .find(|s| s.stage == StageKey::Stage(Stage::Decode))
                    .map_or(0.0, |s| s.share_of_total)
            })
        })
        .column("advice_applies", rows, |r| {
            r.read().map(|f| f.advice.applies)
        })
        .column("advice_switches", rows, |r| {
            r.read().map(|f| {
                let switches: Vec<String> = f
                    .advice
                    .switches
                    .iter()
                    .map(|s| format!("{}={}", s.variable, s.value))
                    .collect();
                switches.join(" ")
            })
        });
}
