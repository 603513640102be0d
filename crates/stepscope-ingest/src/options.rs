//! How a trace is read: [`ReadOptions`], the settings every reader shares beside those of
//! one format ([`KinetoJsonOptions`]).

use crate::{KinetoJsonOptions, TraceFormat};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// How to read a trace file.
///
/// ```
/// use stepscope_ingest::{ReadOptions, TraceFormat};
///
/// let options = ReadOptions::default()
///     .with_format(Some(TraceFormat::RocprofCsv))
///     .with_allow_truncated(true)
///     .with_threads(2);
/// assert!(options.allow_truncated);
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Read every file as this format instead of sniffing (`--format`). Default: sniff.
    pub format: Option<TraceFormat>,
    /// Keep the events before a break in a truncated or corrupt file, and mark the import
    /// partial, instead of failing. Default: `false`. Every reader honours it but the
    /// rocprofv3 JSON one, which reads a document whole or not at all.
    pub allow_truncated: bool,
    /// Threads to parse with; `0` (the default) uses every available core. The Kineto JSON
    /// reader parses on this many; the other readers read on one.
    pub threads: usize,
    /// Bytes parsed so far, for a progress bar. Default: none. The Kineto JSON reader
    /// counts into it as it goes; the other readers do not (yet).
    pub progress: Option<Arc<AtomicU64>>,
    /// Settings of the Kineto JSON reader alone.
    pub kineto: KinetoJsonOptions,
}

impl ReadOptions {
    /// Options that read every file as `format` (`None`: sniff).
    pub fn with_format(mut self, format: Option<TraceFormat>) -> Self {
        self.format = format;
        self
    }

    /// Options that keep the events before a break.
    pub fn with_allow_truncated(mut self, allow: bool) -> Self {
        self.allow_truncated = allow;
        self
    }

    /// Options with `threads` threads (`0` = all cores).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Options that report parsed bytes into `counter`.
    pub fn with_progress(mut self, counter: Arc<AtomicU64>) -> Self {
        self.progress = Some(counter);
        self
    }

    /// Options with the given Kineto settings.
    pub fn with_kineto(mut self, kineto: KinetoJsonOptions) -> Self {
        self.kineto = kineto;
        self
    }

    /// The threads to read with: [`ReadOptions::threads`], or every available core.
    pub(crate) fn thread_count(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        }
    }
}
