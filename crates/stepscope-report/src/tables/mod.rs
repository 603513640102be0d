//! The results as tables: one model of named, typed columns that the CSV writer
//! (`analyze --csv`) and the Parquet writer (`analyze --parquet`, the Python package's
//! tables) both encode, so the two formats hold the same tables with the same columns, types
//! and units (docs/parquet-schema.md documents them once).
//!
//! The tables are made from the same [`Document`] the JSON is (and the replays from
//! [`FileReport::replays`](crate::schema::FileReport::replays)), so their numbers are the
//! JSON's: times as integer nanoseconds (`*_ns`; the JSON's `*_us` is `*_ns / 1000`), shares
//! and ratios as the same doubles. Every row carries `run_id`, `file` and `rank`, so tables
//! join.

mod breakdown;
mod coverage;
mod efficiency;
mod files;
mod ranges;
mod table;

pub(crate) use table::Values;
pub use table::{Column, Kind, Table, Value};

use crate::ReportError;
use crate::schema::Document;

/// The tables, in the order they are written.
pub const TABLES: [&str; 12] = [
    "runs",
    "files",
    "graphs",
    "replays",
    "findings",
    "stages",
    "stage_category",
    "kernels",
    "efficiency",
    "ranges",
    "range_category",
    "range_kernels",
];

/// A run's id: a folder-safe name, 1 to 64 of `A-Z a-z 0-9 . _ -`, starting with a letter
/// or digit (engines skip files whose name starts with `.` or `_`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunId(String);

impl RunId {
    /// `id` when it is a valid run id.
    ///
    /// # Errors
    ///
    /// [`ReportError::InvalidRunId`] naming what is wrong.
    pub fn new(id: &str) -> Result<Self, ReportError> {
        let reason = if id.is_empty() || id.len() > 64 {
            Some("it must be 1 to 64 characters long")
        } else if !id.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            Some("it must start with a letter or digit")
        } else if !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            Some("it may hold only letters, digits, `.`, `_` and `-`")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(ReportError::InvalidRunId {
                run_id: id.to_owned(),
                reason,
            }),
            None => Ok(RunId(id.to_owned())),
        }
    }

    /// A new id from the run's start (µs since the Unix epoch) and a random `salt`:
    /// `20250514T103000.123Z-3fa9c1`, so ids sort by time and two runs in the same
    /// millisecond still differ.
    pub fn generate(started_at_us: i64, salt: u64) -> Self {
        let time =
            jiff::Timestamp::from_microsecond(started_at_us).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        RunId(format!(
            "{}-{:06x}",
            time.strftime("%Y%m%dT%H%M%S%.3fZ"),
            salt & 0xff_ffff
        ))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the `runs` table says about a run.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The run's id.
    pub id: RunId,
    /// When it started, µs since the Unix epoch (UTC).
    pub started_at_us: i64,
    /// The command line.
    pub command: String,
    /// Input files, folders expanded.
    pub inputs: usize,
}

/// All tables of one run: [`TABLES`], in order.
pub fn tables(document: &Document, run: &RunInfo) -> Vec<Table> {
    let id = run.id.as_str();
    vec![
        files::runs(document, run),
        files::files(document, id),
        coverage::graphs(document, id),
        coverage::replays(document, id),
        coverage::findings(document, id),
        breakdown::stages(document, id),
        breakdown::stage_category(document, id),
        breakdown::kernels(document, id),
        efficiency::efficiency(document, id),
        ranges::ranges(document, id),
        ranges::range_category(document, id),
        ranges::range_kernels(document, id),
    ]
}

/// Nanoseconds from the JSON's microseconds: exact, since those are whole nanoseconds
/// divided by 1000 (`schema::micros`) and far below 2^53.
fn ns(us: f64) -> i64 {
    (us * 1e3).round() as i64
}
