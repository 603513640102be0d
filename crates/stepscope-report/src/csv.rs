//! CSV output (`analyze --csv DIR`): one file per table, `DIR/<table>.csv`, for
//! spreadsheets and pandas. The tables are [`crate::tables`]'s, the ones the Parquet writer
//! encodes: the same tables, columns, types and units (times in integer nanoseconds), so a
//! script moves from one format to the other without renaming a column.

use crate::ReportError;
use crate::tables::{RunInfo, Table, Value, tables};
use std::path::{Path, PathBuf};

/// Writes every table of `run` as `<table>.csv` into `dir` (created if missing), in
/// [`TABLES`](crate::tables::TABLES) order; returns the paths written.
///
/// # Errors
///
/// [`ReportError::Write`] naming the folder or the file that could not be written.
pub fn write_tables(
    document: &crate::schema::Document,
    run: &RunInfo,
    dir: &Path,
) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.to_owned(),
        source,
    })?;
    tables(document, run)
        .iter()
        .map(|table| write(dir, table))
        .collect()
}

fn write(dir: &Path, table: &Table) -> Result<PathBuf, ReportError> {
    let path = dir.join(format!("{}.csv", table.name));
    crate::atomic::write_with(&path, |out| {
        let mut writer = csv::Writer::from_writer(out);
        writer.write_record(table.columns.iter().map(|c| c.name))?;
        for row in 0..table.rows() {
            for column in &table.columns {
                writer.write_field(cell(column.value(row)).as_bytes())?;
            }
            writer.write_record(std::iter::empty::<&[u8]>())?;
        }
        writer.flush()
    })?;
    Ok(path)
}

/// A value as CSV text: integers and floats as Rust writes them (the shortest text that
/// reads back to the same value), booleans `true`/`false`, timestamps in RFC 3339 (UTC),
/// text guarded against spreadsheet formulas, null empty.
fn cell(value: Value<'_>) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    match value {
        Value::Null => Cow::Borrowed(""),
        Value::Int(v) => Cow::Owned(v.to_string()),
        Value::Double(v) => Cow::Owned(v.to_string()),
        Value::Bool(v) => Cow::Borrowed(if v { "true" } else { "false" }),
        Value::Text(v) => as_text(v),
        Value::Timestamp(us) => Cow::Owned(
            jiff::Timestamp::from_microsecond(us)
                .map(|t| t.to_string())
                .unwrap_or_default(),
        ),
    }
}

/// A cell as spreadsheets will show it: text that starts like a formula (`=`, `+`, `-`,
/// `@`, a tab or a carriage return — a kernel name such as `=cmd|' /C calc'!A0`) gets a
/// leading `'`, which Excel, LibreOffice and Google Sheets take as "this is text" and do not
/// show; numbers (`-1.5`, `+3`) are written as they are. This is the OWASP rule for CSV
/// injection; pandas and other programs reading the file see the `'`.
fn as_text(cell: &str) -> std::borrow::Cow<'_, str> {
    let formula_like = cell
        .chars()
        .next()
        .is_some_and(|c| matches!(c, '=' | '+' | '-' | '@' | '\t' | '\r'));
    if formula_like && cell.parse::<f64>().is_err() {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        std::borrow::Cow::Borrowed(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::as_text;

    #[test]
    fn formula_like_text_is_quoted_and_numbers_are_not() {
        for (cell, shown) in [
            ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
            ("+SUM(A1)", "'+SUM(A1)"),
            ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
            ("@SUM(1)", "'@SUM(1)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "'\r=1"),
            ("-1.5", "-1.5"),
            ("+3", "+3"),
            ("-0", "-0"),
            ("1e-3", "1e-3"),
            ("Cijk_Alik_Bljk", "Cijk_Alik_Bljk"),
            ("", ""),
        ] {
            assert_eq!(as_text(cell), shown, "{cell:?}");
        }
    }
}
