//! Trace readers for stepscope: one module per profiler format, all writing the
//! [`stepscope_model`] event model through a [`TraceBuilder`].
//!
//! Formats ([`TraceFormat`], one module each, detected from the content): Kineto (PyTorch
//! profiler) Chrome-trace JSON, rocprofv3 CSV tables, JSON and SQLite database (rocpd),
//! rocmProfileData SQLite and its
//! Chrome-trace export, and Nsight Systems SQLite exports; plain, gzip or zstd.
//!
//! ```no_run
//! use stepscope_ingest::{read_trace_file, ReadOptions};
//!
//! let trace = read_trace_file("trace.json.gz".as_ref(), &ReadOptions::default())?;
//! println!("{} GPU events", trace.gpu.len());
//! # Ok::<(), stepscope_ingest::IngestError>(())
//! ```
#![warn(missing_docs)]

mod error;
mod gzip;
pub mod kineto_json;
pub mod nsys_sqlite;
mod priority;
pub mod rocpd_sqlite;
pub mod rocprof_csv;
pub mod rocprof_json;
pub mod rpd_json;
pub mod rpd_sqlite;
mod source;
pub mod sqlite;
mod validate;

pub use error::IngestError;
pub use kineto_json::KinetoJsonOptions;
pub use source::Compression;

use std::path::Path;
use stepscope_model::{Severity, Trace, TraceBuilder};

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

    fn read(
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
pub trait TraceReader {
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
pub struct KinetoJsonReader;

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
            kineto_json::read(input.bytes, &options.kineto, builder)
                .map_err(IngestError::from_read_failure)?;
        }
        Ok(())
    }
}

/// [`rocprof_csv`] behind [`TraceReader`].
#[derive(Debug)]
pub struct RocprofCsvReader;

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
        rocprof_csv::read_tables(&tables, options.kineto.allow_truncated, builder)
    }
}

/// [`rpd_sqlite`] behind [`TraceReader`].
#[derive(Debug)]
pub struct RpdSqliteReader;

impl TraceReader for RpdSqliteReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        sqlite::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let db = sqlite::open(first_input(inputs)?, options.kineto.allow_truncated)?;
        rpd_sqlite::read(&db, builder)
    }
}

/// [`rpd_json`] behind [`TraceReader`].
#[derive(Debug)]
pub struct RpdJsonReader;

impl TraceReader for RpdJsonReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        rpd_json::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let allow_truncated = options.kineto.allow_truncated;
        let input = first_input(inputs)?;
        match input.path {
            Some(path) => rpd_json::read_file(path, input.bytes, allow_truncated, builder),
            None => rpd_json::read(input.bytes, allow_truncated, builder),
        }
    }
}

/// [`rocprof_json`] behind [`TraceReader`].
#[derive(Debug)]
pub struct RocprofJsonReader;

impl TraceReader for RocprofJsonReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        rocprof_json::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        _options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let input = first_input(inputs)?;
        match input.path {
            Some(path) => rocprof_json::read_file(path, input.bytes, builder),
            None => rocprof_json::read(input.bytes, builder),
        }
    }
}

/// [`nsys_sqlite`] behind [`TraceReader`].
#[derive(Debug)]
pub struct NsysSqliteReader;

impl TraceReader for NsysSqliteReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        sqlite::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let db = sqlite::open(first_input(inputs)?, options.kineto.allow_truncated)?;
        nsys_sqlite::read(&db, builder)
    }
}

/// [`rocpd_sqlite`] behind [`TraceReader`].
#[derive(Debug)]
pub struct RocpdReader;

impl TraceReader for RocpdReader {
    fn sniff(head: &[u8]) -> Option<bool> {
        sqlite::sniff(head)
    }

    fn read(
        inputs: &[Input<'_>],
        options: &ReadOptions,
        builder: &mut TraceBuilder,
    ) -> Result<(), IngestError> {
        let db = sqlite::open(first_input(inputs)?, options.kineto.allow_truncated)?;
        rocpd_sqlite::read(&db, builder)
    }
}

fn first_input<'i, 'a>(inputs: &'i [Input<'a>]) -> Result<&'i Input<'a>, IngestError> {
    inputs.first().ok_or(IngestError::Empty { path: None })
}

/// How to read a trace file.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Kineto JSON reader settings.
    pub kineto: KinetoJsonOptions,
    /// Read every file as this format instead of sniffing (`--format`). Default: sniff.
    pub format: Option<TraceFormat>,
}

impl ReadOptions {
    /// Options with the given Kineto settings.
    pub fn with_kineto(mut self, kineto: KinetoJsonOptions) -> Self {
        self.kineto = kineto;
        self
    }

    /// Options that read every file as `format` (`None`: sniff).
    pub fn with_format(mut self, format: Option<TraceFormat>) -> Self {
        self.format = format;
        self
    }
}

/// Reads one trace file, detecting compression and format from its content.
///
/// A compressed Kineto JSON file is parsed while it inflates (one thread inflating, the
/// others parsing), never held inflated in memory; other compressed formats are inflated
/// first.
pub fn read_trace_file(path: &Path, options: &ReadOptions) -> Result<Trace, IngestError> {
    let mapped = map_path(path)?;
    let compression = Compression::detect(&mapped);
    if compression == Compression::None {
        let read = read_decompressed(path, &mapped, true, None, options);
        unmap_beside(mapped);
        return read;
    }
    read_compressed(path, mapped, compression, options)
}

/// Mapped files from this size on are unmapped on a thread of their own.
const UNMAP_BESIDE: usize = 64 << 20;

/// Unmaps a large plain file on a thread of its own, so that what follows the read (the
/// analysis) does not wait for it: unmapping the 1.1 GB benchmark file was ~40 ms of
/// `unmap_page_range` at the end of the read (perf). Unmapped here when the thread cannot
/// be started.
fn unmap_beside(bytes: source::Bytes) {
    if bytes.len() < UNMAP_BESIDE {
        return;
    }
    let unmapping = std::thread::Builder::new().name("unmap".into());
    drop(unmapping.spawn(move || drop(bytes)));
}

/// A file's bytes as stored, mapped.
fn map_path(path: &Path) -> Result<source::Bytes, IngestError> {
    let io_error = |source| IngestError::Io {
        path: path.to_owned(),
        source,
    };
    // Looked at before opening: opening a FIFO waits for a writer, and a device such as
    // `/dev/zero` has no length to map (it would read as empty, or never end).
    let kind = std::fs::metadata(path).map_err(io_error)?.file_type();
    if !kind.is_file() {
        let what = std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket, device or folder); save the trace to a file and read that",
        );
        return Err(io_error(what));
    }
    let file = fs_err::File::open(path).map_err(io_error)?;
    source::map_file(file.file()).map_err(io_error)
}

/// Inflates a file as [`read_trace_file`] does (the same decoder, in pieces of the same
/// size, one buffer filled again and again) and drops the text: how many bytes came out.
/// What inflating alone costs, the floor under reading a compressed trace on two cores
/// (`scripts/bench-analyze.sh` times it beside HolisticTraceAnalysis). A plain file is
/// read through as it is.
pub fn inflate_only(path: &Path) -> Result<u64, IngestError> {
    let mapped = map_path(path)?;
    let compression = Compression::detect(&mapped);
    let spare = std::cell::Cell::new(None);
    let piece = KinetoJsonOptions::default().segment_size();
    // Each member is checked here, on the inflating thread, where a read checks it on its own.
    let mut check = source::TextCheck::default();
    let mut check_failure = None;
    let (produced, failure) = source::inflate_pieces(
        &mapped,
        compression,
        piece,
        || spare.take(),
        |inflated| match check.pass(inflated) {
            Ok(text) => {
                if let Some(buffer) = text {
                    spare.set(Some(buffer));
                }
                true
            }
            Err(failure) => {
                check_failure = Some(failure);
                false
            }
        },
    );
    match check_failure.or_else(|| failure.map(|failure| (produced, failure))) {
        None => Ok(produced),
        Some((produced, failure)) => Err(failure.into_error(path, produced)),
    }
}

/// How many inflated pieces may wait for the reader. A piece is as long as a segment the
/// threads parse (4 MiB by default), so that it is parsed where it was inflated to.
const PIECES_WAITING: usize = 4;
/// How much inflated text decides the format before the rest is read.
const HEAD: usize = 1 << 20;

/// `compressed` is unmapped by the inflating thread once inflated, beside the parsing of the
/// last pieces, not after the read (9 ms for the 149 MB benchmark `.json.gz`, measured).
fn read_compressed(
    path: &Path,
    compressed: source::Bytes,
    compression: Compression,
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel(PIECES_WAITING);
        // Pieces read go back to be filled again: fresh ones cost a page fault per 4 KiB
        // and zeroing, on the inflating thread that bounds the whole read. Room for every
        // piece there can be: waiting, inflating, gathered, and two a thread being parsed.
        let circulating = PIECES_WAITING + 2 + 2 * options.kineto.thread_count();
        let (returned, recycled) = std::sync::mpsc::sync_channel::<Vec<u8>>(circulating);
        let piece = options.kineto.segment_size();
        let inflater = scope.spawn(move || {
            let recycled = || recycled.try_recv().ok();
            let send = |piece| sender.send(piece).is_ok();
            let outcome = source::inflate_pieces(&compressed, compression, piece, recycled, send);
            // The reader hears that the stream ended before the file is unmapped.
            drop(sender);
            drop(compressed);
            outcome
        });
        let mut recycle = |piece: Vec<u8>| drop(returned.try_send(piece));
        let mut pieces = source::CheckedText::new(receiver.into_iter());
        let mut head = gather_head(&mut pieces, &mut recycle);
        if unknown_from_head(&head, options) {
            drop(pieces);
            drop(inflater.join());
            return refuse_from_head(path, &head, options);
        }
        let streamed = streams(&head, options).then(|| {
            stream_kineto(
                std::mem::take(&mut head),
                &mut pieces,
                &mut recycle,
                options,
            )
        });
        let mut inflated = head;
        if streamed.is_none() {
            (&mut pieces).for_each(|piece| inflated.extend_from_slice(&piece));
        } else {
            // A read that stopped early (broken JSON) still inflates the rest, unread: a
            // stream that is itself broken (a checksum, a cut) is then always what is
            // reported, as when the file is inflated whole first, not only when the
            // inflating thread happened to get there before the reader stopped.
            (&mut pieces).for_each(&mut recycle);
        }
        let (produced, failure) = inflater.join().unwrap_or_else(|_| inflater_panicked());
        // A member that failed its check comes before anything the inflater met after it.
        let (produced, failure) = match pieces.take_failure() {
            Some((produced, failure)) => (produced, Some(failure)),
            None => (produced, failure),
        };
        let partial = match failure {
            Some(failure) if !options.kineto.allow_truncated => {
                return Err(failure.into_error(path, produced));
            }
            failure => failure.map(|failure| failure.compressed_offset),
        };
        match streamed {
            Some(read) => {
                let mut trace = read.map_err(|failure| failure.with_path(path))?;
                if let Some(offset) = partial {
                    mark_inflate_partial(&mut trace, offset);
                }
                Ok(trace)
            }
            None => read_decompressed(path, &inflated, false, partial, options),
        }
    })
}

/// The first [`HEAD`] bytes or more of `pieces`, or all there is (the first piece is taken
/// as the buffer, the others go to `recycle` once copied).
fn gather_head(
    pieces: &mut dyn Iterator<Item = Vec<u8>>,
    recycle: &mut dyn FnMut(Vec<u8>),
) -> Vec<u8> {
    let mut head = Vec::new();
    while head.len() < HEAD {
        let Some(piece) = pieces.next() else { break };
        if head.is_empty() {
            head = piece;
        } else {
            head.extend_from_slice(&piece);
            recycle(piece);
        }
    }
    head
}

/// What an inflating thread that panicked is taken to have said.
fn inflater_panicked() -> (u64, Option<source::InflateFailure>) {
    let panic = std::io::Error::other("the inflating thread panicked");
    let failure = source::InflateFailure {
        compressed_offset: 0,
        source: panic,
    };
    (0, Some(failure))
}

/// Whether the first inflated bytes already show that no reader takes the file (no
/// `--format`, no sniffer says yes or maybe): then the rest is never inflated, so a small
/// file that inflates to gigabytes (a "gzip bomb", or a compressed disk image) is refused
/// after [`HEAD`] bytes, not after all of them. A whole [`HEAD`] of blanks is refused too
/// (no profiler indents a document by a megabyte); a database (read from a file, not text)
/// and a shorter blank start are inflated whole as before.
fn unknown_from_head(head: &[u8], options: &ReadOptions) -> bool {
    if options.format.is_some() || head.starts_with(sqlite::MAGIC) {
        return false;
    }
    if is_blank(head) {
        return head.len() >= HEAD;
    }
    TraceFormat::detect(head).is_none()
}

/// The error for a file [`unknown_from_head`] refuses (its inflater stopped once the reader
/// hung up: nothing more is inflated).
fn refuse_from_head(path: &Path, head: &[u8], options: &ReadOptions) -> Result<Trace, IngestError> {
    if is_blank(head) {
        let reason = format!(
            "its first {} inflated bytes are only whitespace",
            head.len()
        );
        let path = Some(path.to_owned());
        return Err(IngestError::NotATrace { path, reason });
    }
    read_decompressed(path, head, false, None, options)
}

/// Whether a compressed file whose inflated text begins with `head` is read while it
/// inflates: Kineto JSON (the format of `.json.gz` profiles), by `--format` or by content.
fn streams(head: &[u8], options: &ReadOptions) -> bool {
    if is_blank(head) {
        return false;
    }
    match options.format {
        Some(format) => format == TraceFormat::KinetoJson,
        None => {
            recognise_other(head).is_none()
                && TraceFormat::detect(head) == Some(TraceFormat::KinetoJson)
        }
    }
}

/// Reads a Kineto JSON document that arrives in pieces (decompressed text, in order), as
/// they come: what [`read_trace_bytes`] gives on the whole text, without holding it.
/// `.json.gz` and `.json.zst` files are read this way by [`read_trace_file`].
pub fn read_kineto_stream(
    pieces: impl IntoIterator<Item = Vec<u8>>,
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    let mut pieces = pieces.into_iter();
    let mut head = Vec::new();
    while head.len() < HEAD {
        let Some(piece) = pieces.next() else { break };
        head.extend_from_slice(&piece);
    }
    if is_blank(&head) {
        return Err(IngestError::Empty { path: None });
    }
    stream_kineto(head, &mut pieces, &mut drop, options)
}

/// Reads a Kineto document from `head` (its first inflated bytes) and the pieces after it.
fn stream_kineto(
    head: Vec<u8>,
    rest: &mut dyn Iterator<Item = Vec<u8>>,
    recycle: &mut dyn FnMut(Vec<u8>),
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    let mut builder = TraceBuilder::new();
    builder.metadata_mut().format = Some(TraceFormat::KinetoJson.name());
    let mut all = std::iter::once(head).chain(rest);
    kineto_json::read_pieces(&mut all, recycle, &options.kineto, &mut builder)
        .map_err(IngestError::from_read_failure)?;
    validate::validate(&mut builder);
    Ok(builder.finish())
}

/// Reads a file's decompressed `bytes` (`as_stored`: the file's own bytes, not inflated);
/// `partial_inflate` is where its compressed stream broke, if it did.
fn read_decompressed(
    path: &Path,
    bytes: &[u8],
    as_stored: bool,
    partial_inflate: Option<u64>,
    options: &ReadOptions,
) -> Result<Trace, IngestError> {
    if let Some(offset) = partial_inflate.filter(|_| is_blank(bytes)) {
        // The stream broke before any JSON came out: a cut file, not an empty one.
        let mut trace = Trace::default();
        trace.stats.truncated_at_byte = Some(0);
        mark_inflate_partial(&mut trace, offset);
        return Ok(trace);
    }
    let label = path.display().to_string();
    let companions = companion_tables(path, bytes, options);
    let mut inputs = vec![Input {
        label: &label,
        bytes,
        path: as_stored.then_some(path),
    }];
    inputs.extend(companions.iter().map(|(label, companion)| Input {
        label,
        bytes: &[],
        path: Some(companion),
    }));
    read_inputs(&inputs, options)
        .map(|mut trace| {
            if let Some(offset) = partial_inflate {
                mark_inflate_partial(&mut trace, offset);
            }
            trace
        })
        .map_err(|failure| failure.with_path(path))
}

/// The other tables of the rocprofv3 run `path` belongs to, when it is one of its CSV tables
/// (`<prefix>kernel_trace.csv` beside `<prefix>hip_api_trace.csv`…): labels and paths (the
/// CSV reader streams them from their files).
fn companion_tables(
    path: &Path,
    bytes: &[u8],
    options: &ReadOptions,
) -> Vec<(String, std::path::PathBuf)> {
    let format = options.format.or_else(|| TraceFormat::detect(bytes));
    if format != Some(TraceFormat::RocprofCsv) {
        return Vec::new();
    }
    rocprof_csv::companion_paths(path)
        .into_iter()
        .map(|companion| (companion.display().to_string(), companion))
        .collect()
}

/// A plain file opened for reading through a 1 MiB buffer (the streaming readers), or the
/// error naming it.
pub(crate) fn open_buffered(path: &Path) -> Result<std::io::BufReader<std::fs::File>, IngestError> {
    let file = std::fs::File::open(path).map_err(|source| IngestError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(std::io::BufReader::with_capacity(1 << 20, file))
}

/// Adds a ROCTx (or other user) range as a host annotation, where step markers are found;
/// a mark (no length) or a range with no message names no step. Whether it was added.
pub(crate) fn add_marker(
    builder: &mut TraceBuilder,
    message: &str,
    (process, thread): (stepscope_model::ProcessId, stepscope_model::ThreadId),
    (start, duration): (stepscope_model::Timestamp, stepscope_model::Duration),
) -> bool {
    if message.is_empty() || duration.as_nanos() <= 0 {
        return false;
    }
    let span = stepscope_model::AnnotationRecord {
        name: builder.intern(message),
        process,
        thread,
        start,
        duration,
    };
    builder.add_annotation(span);
    true
}

/// Marks an import partial at the byte of the decompressed text where its JSON broke: the
/// events before it were kept (`allow_truncated`). Every JSON reader reports a break so.
pub(crate) fn mark_truncated(builder: &mut TraceBuilder, offset: u64) {
    let stats = builder.stats_mut();
    stats.truncated_at_byte = Some(offset);
    stats.add(
        "input_truncated",
        Severity::Error,
        "The input broke off or was corrupt; only the events before the break were read",
        1,
    );
}

fn mark_inflate_partial(trace: &mut Trace, compressed_offset: u64) {
    trace
        .stats
        .truncated_at_byte
        .get_or_insert(compressed_offset);
    trace.stats.add(
        "compressed_input_truncated",
        Severity::Error,
        "The compressed stream broke off or was corrupt; only the events before the break were read",
        1,
    );
}

/// Reads a whole trace from decompressed bytes.
///
/// Whatever the format, the events read then go through the same checks: events whose time
/// lies orders of magnitude outside the span of the rest of the trace, or where no clock
/// writes one whatever the trace's size, are refused (kept in [`Trace::damaged`]) and exact copies of a GPU event are dropped (counted).
pub fn read_trace_bytes(bytes: &[u8], options: &ReadOptions) -> Result<Trace, IngestError> {
    read_inputs(&[Input::bytes("input", bytes)], options)
}

/// Reads the inputs of one trace (one file, or the CSV tables of one rocprofv3 run): the
/// format is `options.format`, or sniffed from the first input.
pub fn read_inputs(inputs: &[Input<'_>], options: &ReadOptions) -> Result<Trace, IngestError> {
    let first = first_input(inputs)?;
    if is_blank(first.bytes) {
        return Err(IngestError::Empty { path: None });
    }
    let format = match options.format {
        Some(format) => format,
        None if first.bytes.starts_with(sqlite::MAGIC) => {
            detect_database(first, options.kineto.allow_truncated)?
        }
        None => detect_format(first.bytes)?,
    };
    let mut builder = TraceBuilder::new();
    builder.metadata_mut().format = Some(format.name());
    format.read(inputs, options, &mut builder)?;
    validate::validate(&mut builder);
    Ok(builder.finish())
}

/// The format of an SQLite database, from its tables.
fn detect_database(input: &Input<'_>, allow_truncated: bool) -> Result<TraceFormat, IngestError> {
    let db = sqlite::open(input, allow_truncated)?;
    sqlite::detect(&db)?.ok_or_else(|| IngestError::UnknownFormat {
        path: None,
        recognised: Some(sqlite::recognise(&db)),
    })
}

/// The format of `head`, or what it is when stepscope does not read it.
fn detect_format(head: &[u8]) -> Result<TraceFormat, IngestError> {
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

/// Whether `bytes` hold nothing but JSON whitespace, after an optional byte-order mark.
fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(bytes)
        .iter()
        .all(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
}

/// Names profiler formats that stepscope recognises but does not read (rocprof counter
/// tables), so the error can say what the file is.
fn recognise_other(bytes: &[u8]) -> Option<&'static str> {
    // A CSV header line can be long (omniperf writes 50 kB of counter names).
    if rocprof_csv::sniff(bytes) != Some(true) {
        rocprof_csv::recognise(bytes)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
