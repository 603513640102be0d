//! The formats stepscope reads and how each is recognised: the closed [`TraceFormat`] enum
//! (its `--format` names, its sniffing order, sniffing from the content and from a
//! database's tables), the [`TraceReader`] trait, and the reader behind each format that
//! the dispatch in [`TraceFormat`] calls.

use crate::{IngestError, ReadOptions};
use crate::{kineto_json, nsys_sqlite, rocpd_sqlite, rocprof_csv, rocprof_json};
use crate::{rpd_json, rpd_sqlite, sqlite};
use std::path::Path;
use stepscope_model::TraceBuilder;

/// The formats stepscope reads: one reader each, chosen in one `match`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceFormat {
    /// PyTorch profiler (Kineto) Chrome-trace JSON.
    KinetoJson,
    /// rocprofv3 CSV tables (and rocprof v2 / omniperf kernel tables).
    RocprofCsv,
    /// rocmProfileData SQLite (`.rpd`).
    RpdSqlite,
    /// rocmProfileData's Chrome-trace export (`rpd2tracing.py`).
    RpdJson,
    /// rocprofv3 JSON (`rocprofiler-sdk-tool`).
    RocprofJson,
    /// Nsight Systems SQLite export (`nsys export --type sqlite`).
    NsysSqlite,
    /// rocprofv3's SQLite database (`--output-format rocpd`, its default since ROCm 7).
    Rocpd,
}

impl TraceFormat {
    /// Every format, in sniffing order.
    pub const ALL: [TraceFormat; 7] = [
        // Before Kineto: both are JSON arrays, and Kineto takes any array.
        TraceFormat::RpdJson,
        TraceFormat::RocprofJson,
        TraceFormat::KinetoJson,
        TraceFormat::RocprofCsv,
        TraceFormat::RpdSqlite,
        TraceFormat::NsysSqlite,
        TraceFormat::Rocpd,
    ];

    /// The name `--format` takes: `kineto-json`, `rocprof-csv`.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::KinetoJson => "kineto-json",
            TraceFormat::RocprofCsv => "rocprof-csv",
            TraceFormat::RpdSqlite => "rpd",
            TraceFormat::RpdJson => "rpd-json",
            TraceFormat::RocprofJson => "rocprof-json",
            TraceFormat::NsysSqlite => "nsys-sqlite",
            TraceFormat::Rocpd => "rocpd",
        }
    }

    /// The format a `--format` name means.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|format| format.name() == name)
    }

    /// Whether `head` (decompressed) looks like this format; `None` when unsure.
    pub fn sniff(self, head: &[u8]) -> Option<bool> {
        match self {
            TraceFormat::KinetoJson => KinetoJsonReader::sniff(head),
            TraceFormat::RocprofCsv => RocprofCsvReader::sniff(head),
            TraceFormat::RpdSqlite => RpdSqliteReader::sniff(head),
            TraceFormat::RpdJson => RpdJsonReader::sniff(head),
            TraceFormat::RocprofJson => RocprofJsonReader::sniff(head),
            TraceFormat::NsysSqlite => NsysSqliteReader::sniff(head),
            TraceFormat::Rocpd => RocpdReader::sniff(head),
        }
    }

    /// The first format whose sniffer accepts `head`: a definite yes first, then a maybe.
    /// SQLite databases are told apart by their tables, not their first bytes: see
    /// [`sqlite::detect`].
    pub fn detect(head: &[u8]) -> Option<TraceFormat> {
        if head.starts_with(sqlite::MAGIC) {
            return None;
        }
        Self::ALL
            .into_iter()
            .find(|format| format.sniff(head) == Some(true))
            .or_else(|| {
                Self::ALL
                    .into_iter()
                    .find(|format| format.sniff(head).is_none())
            })
    }

    pub(crate) fn read(
        self,
        tables: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        match self {
            TraceFormat::KinetoJson => KinetoJsonReader::read(tables, options, builder),
            TraceFormat::RocprofCsv => RocprofCsvReader::read(tables, options, builder),
            TraceFormat::RpdSqlite => RpdSqliteReader::read(tables, options, builder),
            TraceFormat::RpdJson => RpdJsonReader::read(tables, options, builder),
            TraceFormat::RocprofJson => RocprofJsonReader::read(tables, options, builder),
            TraceFormat::NsysSqlite => NsysSqliteReader::read(tables, options, builder),
            TraceFormat::Rocpd => RocpdReader::read(tables, options, builder),
        }
    }
}

/// One input of a reader: a file's decompressed bytes, labelled for messages. Most formats
/// read one; rocprof CSV reads the tables of one run together.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The file, or `input`.
    pub label: &'a str,
    /// Its bytes.
    pub bytes: &'a [u8],
    /// The file on disk when `bytes` are its content as stored (not inflated): SQLite
    /// readers open it instead of copying the bytes, the CSV reader streams it (a companion
    /// table of a rocprofv3 run comes with its path only, and no bytes).
    pub path: Option<&'a Path>,
}

impl<'a> Input<'a> {
    /// Bytes with no file behind them.
    pub fn bytes(label: &'a str, bytes: &'a [u8]) -> Self {
        Input {
            label,
            bytes,
            path: None,
        }
    }
}

/// A format's reader: how to recognise its bytes, and how to read them into the model.
pub(crate) trait TraceReader {
    /// Whether `head` looks like this format; `None` when more bytes are needed to tell.
    fn sniff(head: &[u8]) -> Option<bool>;
    /// Reads `inputs` (one file, or the tables of one run) into `builder`.
    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError>;
}

/// [`kineto_json`] behind [`TraceReader`].
#[derive(Debug)]
pub(crate) struct KinetoJsonReader;

impl TraceReader for KinetoJsonReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        kineto_json::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        for input in inputs {
            kineto_json::read(input.bytes, options, builder)
                .map_err(IngestError::from_read_failure)?;
        }
        Ok(())
    }
}

/// [`rocprof_csv`] behind [`TraceReader`].
#[derive(Debug)]
pub(crate) struct RocprofCsvReader;

impl TraceReader for RocprofCsvReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        rocprof_csv::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let tables: Vec<rocprof_csv::TableInput<'_>> = inputs
            .iter()
            .map(|input| rocprof_csv::TableInput {
                label: input.label,
                bytes: input.bytes,
                path: input.path,
            })
            .collect();
        rocprof_csv::read_tables(&tables, options.allow_truncated, builder)
    }
}

/// [`rpd_sqlite`] behind [`TraceReader`].
#[derive(Debug)]
pub(crate) struct RpdSqliteReader;

impl TraceReader for RpdSqliteReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        sqlite::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        read_database(inputs, options, builder, rpd_sqlite::read)
    }
}

/// [`rpd_json`] behind [`TraceReader`].
#[derive(Debug)]
pub(crate) struct RpdJsonReader;

impl TraceReader for RpdJsonReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        rpd_json::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let allow_truncated = options.allow_truncated;
        let input = first_input(inputs)?;
        match input.path {
            Some(path) => rpd_json::read_file(path, input.bytes, allow_truncated, builder),
            None => rpd_json::read(input.bytes, allow_truncated, builder),
        }
    }
}

/// [`rocprof_json`] behind [`TraceReader`].
#[derive(Debug)]
pub(crate) struct RocprofJsonReader;

impl TraceReader for RocprofJsonReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        rocprof_json::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let input = first_input(inputs)?;
        let allow_truncated = options.allow_truncated;
        match input.path {
            Some(path) => rocprof_json::read_file(path, (input.bytes, allow_truncated), builder),
            None => rocprof_json::read(input.bytes, allow_truncated, builder),
        }
    }
}

/// [`nsys_sqlite`] behind [`TraceReader`].
#[derive(Debug)]
pub(crate) struct NsysSqliteReader;

impl TraceReader for NsysSqliteReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        sqlite::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        read_database(inputs, options, builder, nsys_sqlite::read)
    }
}

/// [`rocpd_sqlite`] behind [`TraceReader`].
#[derive(Debug)]
pub(crate) struct RocpdReader;

impl TraceReader for RocpdReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        sqlite::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        read_database(inputs, options, builder, rocpd_sqlite::read)
    }
}

/// Opens the first input as an SQLite database and reads it with `read`.
fn read_database(
    inputs: &[Input<'_>],
    options: &ReadOptions,
    builder: &mut TraceBuilder,
    read: fn(&sqlite::Database, &mut TraceBuilder) -> Result<(), IngestError>,
) -> Result<(), IngestError> {
    let db = sqlite::open(first_input(inputs)?, options.allow_truncated)?;
    read(&db, builder)
}

pub(crate) fn first_input<'i, 'a>(inputs: &'i [Input<'a>]) -> Result<&'i Input<'a>, IngestError> {
    inputs.first().ok_or(IngestError::Empty { path: None })
}

/// The format of an SQLite database, from its tables.
pub(crate) fn detect_database(
    input: &Input<'_>,
    allow_truncated: bool,
) -> Result<TraceFormat, IngestError> {
    let db = sqlite::open(input, allow_truncated)?;
    sqlite::detect(&db)?.ok_or_else(|| IngestError::UnknownFormat {
        path: None,
        recognised: Some(sqlite::recognise(&db)),
    })
}

/// The format of `head`, or what it is when stepscope does not read it.
pub(crate) fn detect_format(head: &[u8]) -> Result<TraceFormat, IngestError> {
    if let Some(recognised) = recognise_other(head) {
        return Err(IngestError::UnknownFormat {
            path: None,
            recognised: Some(recognised),
        });
    }
    TraceFormat::detect(head).ok_or(IngestError::UnknownFormat {
        path: None,
        recognised: None,
    })
}

/// Names profiler formats that stepscope recognises but does not read (rocprof counter
/// tables), so the error can say what the file is.
pub(crate) fn recognise_other(bytes: &[u8]) -> Option<&'static str> {
    // A CSV header line can be long (omniperf writes 50 kB of counter names).
    if rocprof_csv::sniff(bytes) != Some(true) {
        rocprof_csv::recognise(bytes)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::{IngestError, ReadOptions, read_trace_bytes};

    #[test]
    fn other_profiler_formats_are_named_in_the_error() {
        let cases: [(&[u8], Option<&str>); 2] = [
            (
                b"Dispatch_ID,GPU_ID,Kernel_Name,Correlation_ID,SQ_WAVES\n1,2,k,0,5\n",
                Some(
                    "a rocprof counter table (pmc_perf.csv: counters per dispatch, no timestamps)",
                ),
            ),
            (b"plain text", None),
        ];
        for (bytes, expected) in cases {
            match read_trace_bytes(bytes, &ReadOptions::default()) {
                Err(IngestError::UnknownFormat { recognised, .. }) => {
                    assert_eq!(recognised, expected)
                }
                Err(IngestError::Json { .. }) if expected.is_none() => {}
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bytes)),
            }
        }
    }

    #[test]
    fn a_database_cut_inside_its_header_is_an_sqlite_error_not_an_unknown_format() {
        match read_trace_bytes(b"SQLite format 3\0rest", &ReadOptions::default()) {
            Err(IngestError::Sqlite { place, hint, .. }) => {
                assert_eq!(place, "its list of tables");
                assert!(hint.contains("cut short or corrupt"), "{hint}");
            }
            other => panic!("{other:?}"),
        }
    }
}
