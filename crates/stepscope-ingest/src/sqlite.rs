//! What the SQLite formats share: opening a database read-only (a file where there is one, a
//! temporary copy of the bytes where there is not), telling which format it is from its
//! tables, and streaming a query's rows with one error message for a damaged file.
//!
//! Rows are read one at a time from the statement, never collected: a 1 GB database is not
//! loaded into memory. A file cut short or corrupt fails in the middle of a query; with
//! `allow_truncated` the rows read before the failure are kept and the trace is marked
//! partial, otherwise the error names the file, the table and the row.

use crate::{IngestError, Input, TraceFormat};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};
use stepscope_model::{
    CorrelationId, DamageKind, DamagedEvent, DamagedTable, Duration, NameId, Severity, Timestamp,
    TraceBuilder,
};

/// The first bytes of every SQLite database file.
pub const MAGIC: &[u8] = b"SQLite format 3\0";

/// The sniff of every SQLite format: a database may be any of them (`None`), the tables
/// decide ([`detect`]); anything else is none of them.
pub fn sniff(head: &[u8]) -> Option<bool> {
    if head.starts_with(MAGIC) {
        None
    } else {
        Some(false)
    }
}

/// An open database, and the temporary copy it was opened from (removed on drop).
#[derive(Debug)]
pub struct Database {
    /// The connection (read-only).
    pub conn: Connection,
    /// The file, for messages.
    pub label: String,
    /// Opened to read what a cut left (`allow_truncated`).
    pub allow_truncated: bool,
    _copy: Option<tempfile::TempPath>,
}

/// Opens `input` read-only: its file when it has one on disk as it is, else a temporary copy
/// of its bytes (an inflated `.rpd.gz`, bytes given by a caller). With `allow_truncated`, a
/// file shorter than its header says is read as far as it goes.
pub fn open(input: &Input<'_>, allow_truncated: bool) -> Result<Database, IngestError> {
    let label = input.label.to_owned();
    let (path, copy) = match input.path {
        Some(path) => (path.to_owned(), None),
        None => {
            let copy = write_copy(input.bytes).map_err(|e| IngestError::Sqlite {
                path: label.clone(),
                place: "a temporary copy".to_owned(),
                message: e.to_string(),
                hint: "stepscope copies compressed databases to the temporary folder (TMPDIR) to read them; is there room?",
            })?;
            (copy.to_path_buf(), Some(copy))
        }
    };
    let conn = connect(&path, &label)?;
    if allow_truncated {
        // SQLite refuses a file shorter than the page count in its header unless the schema
        // is writable (the connection stays read-only): then it reads the pages there are.
        conn.pragma_update(None, "writable_schema", true)
            .map_err(|e| error(&label, "opening it", &e))?;
    }
    Ok(Database {
        conn,
        label,
        allow_truncated,
        _copy: copy,
    })
}

/// A connection to the file at `path`. A database in write-ahead-log mode keeps its newest
/// rows (inserts, deletes, updates not yet checkpointed) in `<file>-wal`: when one lies beside
/// it, the database is opened through the log, as `sqlite3` reads it; without one, it is opened
/// `immutable` (no locks, no journal: files in read-only folders and files being copied open).
fn connect(path: &std::path::Path, label: &str) -> Result<Connection, IngestError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let Some(wal) = wal_beside(path) else {
        let uri = format!("file:{}?mode=ro&immutable=1", uri_path(path));
        return Connection::open_with_flags(uri, flags).map_err(|e| error(label, "opening it", &e));
    };
    let uri = format!("file:{}?mode=ro", uri_path(path));
    let wal_error = |e: rusqlite::Error| IngestError::Sqlite {
        path: label.to_owned(),
        place: format!("its write-ahead log `{}`", wal.display()),
        message: e.to_string(),
        hint: "the database's newest rows are in its -wal file, which SQLite could not read here (a read-only folder without the -shm file?); fold the log into the database with `sqlite3 FILE 'PRAGMA wal_checkpoint(TRUNCATE)'` where it is writable, or copy FILE, FILE-wal and FILE-shm to a writable folder",
    };
    let conn = Connection::open_with_flags(uri, flags).map_err(wal_error)?;
    // Opening is lazy: the log is read by the first query.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(wal_error)?;
    Ok(conn)
}

/// `<path>-wal` when it exists and holds frames (an empty log adds nothing).
fn wal_beside(path: &std::path::Path) -> Option<std::path::PathBuf> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = std::path::PathBuf::from(wal);
    let len = std::fs::metadata(&wal).ok()?.len();
    (len > 0).then_some(wal)
}

fn write_copy(bytes: &[u8]) -> std::io::Result<tempfile::TempPath> {
    use std::io::Write;
    let mut file = tempfile::Builder::new()
        .prefix("stepscope-")
        .suffix(".sqlite")
        .tempfile()?;
    file.write_all(bytes)?;
    file.flush()?;
    Ok(file.into_temp_path())
}

/// A path as a `file:` URI path: `%`, `?` and `#` escaped.
fn uri_path(path: &std::path::Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// The error of a failed query or open: the file, where, what SQLite said, and what to do.
pub fn error(label: &str, place: &str, e: &rusqlite::Error) -> IngestError {
    let corrupt = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    );
    IngestError::Sqlite {
        path: label.to_owned(),
        place: place.to_owned(),
        message: e.to_string(),
        hint: if corrupt {
            "the database is cut short or corrupt (copied while the profiler was still writing it?); reading with allow-truncated (`--allow-truncated`; in Python `allow_truncated=True`) analyses the rows before the damage"
        } else {
            "is it a complete export of a profiler run? `sqlite3 FILE .tables` lists what it holds"
        },
    }
}

impl Database {
    /// Whether a table (or view) of this name exists (case-insensitive, as in SQL).
    pub(crate) fn has_table(&self, name: &str) -> bool {
        self.conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?1 COLLATE NOCASE",
                [name],
                |_| Ok(()),
            )
            .is_ok()
    }

    /// Every table and view.
    pub fn tables(&self) -> Result<Vec<String>, IngestError> {
        let failed = |e: rusqlite::Error| {
            let mut failure = error(&self.label, "its list of tables", &e);
            if let IngestError::Sqlite { hint, .. } = &mut failure
                && self.allow_truncated
            {
                // Without its schema no table can be found: nothing to keep.
                *hint = "the database is cut short or corrupt where it lists its tables, so no table can be read from it; copy it again once the profiler has finished writing it";
            }
            failure
        };
        let mut statement = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view')")
            .map_err(failed)?;
        let names = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(failed)?;
        names.collect::<Result<_, _>>().map_err(failed)
    }

    /// The columns of `table`, lower-cased.
    pub fn columns(&self, table: &str) -> Vec<String> {
        let Ok(mut statement) = self.conn.prepare("SELECT name FROM pragma_table_info(?1)") else {
            return Vec::new();
        };
        statement
            .query_map([table], |row| row.get::<_, String>(0))
            .map(|rows| rows.flatten().map(|c| c.to_ascii_lowercase()).collect())
            .unwrap_or_default()
    }

    /// Runs `sql` and hands each row to `each` (`None` from it: the row is skipped and
    /// counted). Returns the rows skipped. A query that breaks off is an error naming
    /// `table` and the row, or with `allow_truncated` marks the trace partial and keeps the
    /// rows read.
    pub(crate) fn for_each_row(
        &self,
        (table, sql): (&str, &str),
        builder: &mut TraceBuilder,
        mut each: impl FnMut(&Row<'_>, &mut TraceBuilder) -> Option<()>,
    ) -> Result<u64, IngestError> {
        let place = |row: u64| format!("table {table}, row {}", row + 1);
        let mut statement = self
            .conn
            .prepare(sql)
            .map_err(|e| error(&self.label, &format!("table {table}"), &e))?;
        let mut rows = statement
            .query([])
            .map_err(|e| error(&self.label, &place(0), &e))?;
        let (mut read, mut skipped) = (0_u64, 0_u64);
        loop {
            match rows.next() {
                Ok(Some(row)) => {
                    builder.counts_mut().events += 1;
                    if each(row, builder).is_none() {
                        skipped += 1;
                    }
                    read += 1;
                }
                Ok(None) => return Ok(skipped),
                Err(_) if self.allow_truncated => {
                    mark_partial(builder, &self.label);
                    return Ok(skipped);
                }
                Err(e) => return Err(error(&self.label, &place(read), &e)),
            }
        }
    }
}

/// Marks the trace partial; SQLite does not say at which byte, so the file's length stands
/// for where it was cut.
fn mark_partial(builder: &mut TraceBuilder, label: &str) {
    let size = std::fs::metadata(label).map_or(0, |m| m.len());
    let stats = builder.stats_mut();
    stats.truncated_at_byte.get_or_insert(size);
    stats.add(
        "sqlite_read_broke_off",
        Severity::Error,
        "The database is cut short or corrupt: reading a table broke off, and only the rows before the break were kept",
        1,
    );
}

/// Which SQLite trace format the database is, from its tables: `Ok(None)` for a database
/// of no format stepscope reads, an error when its schema cannot be read (cut or corrupt).
pub fn detect(db: &Database) -> Result<Option<TraceFormat>, IngestError> {
    let tables = db.tables()?;
    let has = |name: &str| tables.iter().any(|t| t.eq_ignore_ascii_case(name));
    Ok(if has("rocpd_op") && has("rocpd_api") {
        Some(TraceFormat::RpdSqlite)
    } else if has("StringIds")
        && (has("CUPTI_ACTIVITY_KIND_KERNEL") || has("CUPTI_ACTIVITY_KIND_RUNTIME"))
    {
        Some(TraceFormat::NsysSqlite)
    } else if is_rocpd(&tables) {
        Some(TraceFormat::Rocpd)
    } else {
        None
    })
}

/// Whether a database's tables are rocpd's (rocprofv3's database): a table or view of a
/// record table's name, with or without its UUID suffix.
pub(crate) fn is_rocpd(tables: &[String]) -> bool {
    tables.iter().any(|t| {
        ["rocpd_kernel_dispatch", "rocpd_region"]
            .iter()
            .any(|name| names_table(t, name))
    })
}

/// Whether `table` is the table `name`: that name, or (as rocprofv3 names a run's tables)
/// that name, `_` and a UUID.
pub(crate) fn names_table(table: &str, name: &str) -> bool {
    table.eq_ignore_ascii_case(name)
        || table
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(is_uuid)
}

/// A UUID as rocprofv3 writes it into table names: 32 hex digits, `_` between groups.
fn is_uuid(text: &str) -> bool {
    let hex = text.chars().filter(char::is_ascii_hexdigit).count();
    hex == 32 && text.chars().all(|c| c.is_ascii_hexdigit() || c == '_')
}

/// What a database is when it is no trace stepscope reads, for the error.
pub fn recognise(db: &Database) -> &'static str {
    if db.has_table("rocpd_info_agent") {
        "a rocprofv3 rocpd database with no kernel dispatch or region table (record with rocprofv3 --runtime-trace)"
    } else if db.has_table("StringIds") {
        "an Nsight Systems export without CUDA kernel or API tables (record with `nsys profile --trace=cuda`)"
    } else {
        "an SQLite database that is neither an RPD (rocmProfileData), a rocprofv3 rocpd database nor an Nsight Systems export"
    }
}

/// Start and duration of a row's `start`/`end` columns (integer ns), for every SQLite
/// reader: the damage when a column is no integer, else the model's one rule
/// ([`stepscope_model::span_from_nanos`]).
pub(crate) fn span(row: &Row<'_>, start: usize) -> Result<(Timestamp, Duration), DamageKind> {
    let invalid = DamageKind::InvalidTime;
    let integer = |column: usize| match row.get_ref(column) {
        Ok(ValueRef::Integer(value)) => Some(value),
        _ => None,
    };
    let begin = integer(start).ok_or(invalid)?;
    let end = integer(start + 1).ok_or(invalid)?;
    stepscope_model::span_from_nanos(begin, end)
}

/// Records a refused row as damage of `table`, linked to correlation `id`, with its name
/// when it has one.
pub(crate) fn refuse(
    builder: &mut TraceBuilder,
    (kind, table): (DamageKind, DamagedTable),
    id: Option<i64>,
    name: Option<NameId>,
) {
    let correlation = CorrelationId(id.and_then(|id| u64::try_from(id).ok()).unwrap_or(0));
    builder.add_damaged(DamagedEvent {
        kind,
        table,
        correlation,
        name,
    });
}
