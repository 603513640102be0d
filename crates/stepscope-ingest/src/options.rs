//! How a trace is read: [`ReadOptions`].

use crate::{KinetoJsonOptions, TraceFormat};

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
