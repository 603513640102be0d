//! Parquet output (`analyze --parquet DIR`): the results as tables an engine reads
//! (docs/parquet-schema.md). One file per table per run, `DIR/<table>/<run_id>.parquet`, so a
//! run adds files and never rewrites one: `read_parquet('DIR/replays/*.parquet')` (DuckDB),
//! `spark.read.parquet("DIR/replays")` or `pl.scan_parquet("DIR/replays/*.parquet")` read
//! every run as one table. Every row carries `run_id`, `file` and `rank`, so tables join.
//!
//! The tables are made from the same [`Document`] the JSON is (and the replays from
//! [`FileReport::replays`](crate::schema::FileReport::replays)), so their numbers are the
//! JSON's: times as integer nanoseconds (`*_ns`; the JSON's `*_us` is `*_ns / 1000`), shares
//! and ratios as the same doubles.

mod encode;

pub use crate::tables::{Kind, RunId, RunInfo, TABLES, Table, tables};

use crate::ReportError;
use crate::schema::Document;
use parquet::file::metadata::KeyValue;
use std::path::{Path, PathBuf};

/// Version of the tables' layout (docs/parquet-schema.md); columns are only ever added
/// within a version.
pub const PARQUET_SCHEMA_VERSION: u32 = 1;

/// The key-value metadata of every table file: the table, the run, the schema version.
fn metadata(table: &str, run: &RunInfo) -> Vec<KeyValue> {
    vec![
        KeyValue::new("stepscope.table".to_owned(), table.to_owned()),
        KeyValue::new("stepscope.run_id".to_owned(), run.id.to_string()),
        KeyValue::new(
            "stepscope.parquet_schema_version".to_owned(),
            PARQUET_SCHEMA_VERSION.to_string(),
        ),
    ]
}

/// Every table of `run` as the bytes of the Parquet file [`write_dataset`] would write for
/// it, by table name, in [`TABLES`] order (for callers that keep them in memory).
///
/// # Errors
///
/// A table that cannot be encoded.
pub fn table_files(
    document: &Document,
    run: &RunInfo,
) -> Result<Vec<(&'static str, Vec<u8>)>, ::parquet::errors::ParquetError> {
    tables(document, run)
        .into_iter()
        .map(|table| {
            let mut bytes = Vec::new();
            encode::write_parquet(&table, metadata(table.name, run), &mut bytes)?;
            Ok((table.name, bytes))
        })
        .collect()
}

/// Where run `id`'s file of `table` goes in `dir`.
pub fn table_path(dir: &Path, table: &str, id: &RunId) -> PathBuf {
    dir.join(table).join(format!("{id}.parquet"))
}

/// Whether run `id` may be written to `dir`: none of its files is there yet.
///
/// # Errors
///
/// [`ReportError::RunExists`] naming the first of its files found.
pub fn check_new_run(dir: &Path, id: &RunId) -> Result<(), ReportError> {
    for table in TABLES {
        let path = table_path(dir, table, id);
        if path.exists() {
            return Err(ReportError::RunExists {
                run_id: id.to_string(),
                path,
            });
        }
    }
    Ok(())
}

/// Writes every table of `run` into `dir` (created if missing), one new file per table;
/// returns the paths written. The files are written under hidden names and moved into place
/// when all are complete, so an engine reading the folder never sees half a file, and a run
/// that fails leaves none. Each move refuses to replace a file (`rename` without replace):
/// of two writers of one run id at once, the first to place the `runs` table wins and the
/// other places none and fails with [`ReportError::RunExists`], so a run never mixes both.
///
/// # Errors
///
/// [`ReportError::RunExists`] when any table of this run id is already in `dir` (nothing is
/// written then); [`ReportError::Write`] or [`ReportError::Parquet`] when a file cannot be
/// written.
pub fn write_dataset(
    document: &Document,
    run: &RunInfo,
    dir: &Path,
) -> Result<Vec<PathBuf>, ReportError> {
    check_new_run(dir, &run.id)?;
    let mut partials = Vec::new();
    for table in tables(document, run) {
        let path = table_path(dir, table.name, &run.id);
        let partial = write_file(&table, metadata(table.name, run), &path)?;
        partials.push((partial, path));
    }
    let mut placed: Vec<PathBuf> = Vec::new();
    for (partial, path) in partials {
        if let Err(e) = partial.persist_noclobber(&path) {
            // What this run placed goes again: a run is in the dataset whole or not at all.
            for done in &placed {
                let _ = std::fs::remove_file(done);
            }
            return Err(if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                ReportError::RunExists {
                    run_id: run.id.to_string(),
                    path,
                }
            } else {
                ReportError::Write {
                    path,
                    source: e.error,
                }
            });
        }
        placed.push(path);
    }
    Ok(placed)
}

/// Writes `table` to a hidden temporary file in the folder of `path` (created if missing;
/// engines skip hidden files), removed when dropped unless persisted; errors name `path`.
fn write_file(
    table: &Table,
    metadata: Vec<KeyValue>,
    path: &Path,
) -> Result<tempfile::NamedTempFile, ReportError> {
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| ReportError::Write { path, source }
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(write_error(folder))?;
    let partial = tempfile::Builder::new()
        .prefix(".")
        .suffix(".parquet.partial")
        .permissions(file_mode())
        .tempfile_in(folder)
        .map_err(write_error(path))?;
    encode::write_parquet(table, metadata, partial.as_file()).map_err(|source| {
        ReportError::Parquet {
            path: path.to_owned(),
            source,
        }
    })?;
    Ok(partial)
}

/// A new file's mode: read-write for all, less the user's umask (as `File::create`).
#[cfg(unix)]
fn file_mode() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o666)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Tool;

    fn empty_document() -> Document {
        Document {
            schema_version: crate::schema::SCHEMA_VERSION,
            tool: Tool::current(),
            verdict: crate::schema::OverallVerdict::Worst(stepscope_analysis::Verdict::NoReplays),
            partial: false,
            failed_files: Vec::new(),
            warnings: Vec::new(),
            files: Vec::new(),
            combined: None,
        }
    }

    fn run() -> RunInfo {
        RunInfo {
            id: RunId::new("test-run").expect("valid"),
            started_at_us: 0,
            command: "stepscope analyze".to_owned(),
            inputs: 0,
        }
    }

    /// A table's name and its `(column, type, null)` in order.
    type Schema = (String, Vec<(String, String, bool)>);

    /// Each table as docs/parquet-schema.md lists it.
    fn documented() -> Vec<Schema> {
        let doc = include_str!("../../../../docs/parquet-schema.md");
        let mut tables: Vec<Schema> = Vec::new();
        for line in doc.lines() {
            if let Some(name) = line.strip_prefix("### `") {
                tables.push((name.trim_end_matches('`').to_owned(), Vec::new()));
            } else if let (Some(row), Some((_, columns))) =
                (line.strip_prefix("| `"), tables.last_mut())
            {
                let cells: Vec<&str> = row.split(" | ").collect();
                columns.push((
                    cells[0].trim_end_matches('`').to_owned(),
                    cells[1].to_owned(),
                    cells[2] == "yes",
                ));
            }
        }
        tables
    }

    #[test]
    fn the_schema_doc_lists_every_column_with_its_type() {
        let written: Vec<Schema> = tables(&empty_document(), &run())
            .iter()
            .map(|t| {
                let columns = t
                    .columns
                    .iter()
                    .map(|c| (c.name.to_owned(), c.kind.sql_name().to_owned(), c.nullable))
                    .collect();
                (t.name.to_owned(), columns)
            })
            .collect();
        let names: Vec<&str> = written.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, TABLES);
        assert_eq!(written, documented());
    }

    #[test]
    fn every_table_carries_the_keys() {
        for table in tables(&empty_document(), &run()) {
            let names: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
            let keys: &[&str] = if table.name == "runs" {
                &["run_id"]
            } else {
                &["run_id", "file", "rank"]
            };
            assert_eq!(&names[..keys.len()], keys, "{}", table.name);
        }
    }

    #[test]
    fn run_ids_are_folder_safe_and_generated_ones_sort_by_time() {
        for bad in ["", ".hidden", "_spark", "a/b", "..", "a b", &"x".repeat(65)] {
            assert!(RunId::new(bad).is_err(), "{bad:?}");
        }
        for good in ["run-a", "2025-05-14.node3", "A_1"] {
            assert!(RunId::new(good).is_ok(), "{good}");
        }
        let early = RunId::generate(1_747_218_600_123_000, 0xffff_ffff);
        let late = RunId::generate(1_747_218_600_124_000, 0);
        assert_eq!(early.as_str(), "20250514T103000.123Z-ffffff");
        assert!(early < late);
        assert!(RunId::new(early.as_str()).is_ok());
    }

    #[test]
    fn an_empty_table_is_a_file_with_its_columns() {
        let table = &tables(&empty_document(), &run())[3];
        assert_eq!(table.name, "replays");
        let mut bytes = Vec::new();
        encode::write_parquet(table, Vec::new(), &mut bytes).expect("written");
        assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    }
}
