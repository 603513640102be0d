//! Errors of the serving crate.

use std::path::PathBuf;

/// Everything that can go wrong reading configs, rendering launches and detecting runtimes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServingError {
    /// A file could not be read.
    #[error("Failed to read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A config is not valid YAML or does not fit the schema.
    #[error("{0}")]
    Config(Box<ConfigProblem>),
    /// Rendering needs a key the config does not have.
    #[error("Config `{}` has no `{key}`, which {purpose}", path.display())]
    MissingKey {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
        /// What needs it.
        purpose: &'static str,
    },
    /// A running server was booted for something else.
    #[error(
        "Server booted with fingerprint `{running}` cannot be reused for a run that needs `{wanted}`\nhint: stop it and boot one from the wanted config; runtime switches are read once, at start"
    )]
    ReuseRefused {
        /// Fingerprint of the running server.
        running: String,
        /// Fingerprint the run needs.
        wanted: String,
    },
    /// A folder given as input holds no config.
    #[error("Folder `{}` holds no `.yaml` or `.yml` file", path.display())]
    NoConfigs {
        /// The folder.
        path: PathBuf,
    },
}

/// Where a config is wrong and what to do: file, line, column, dotted key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The file.
    pub path: PathBuf,
    /// Line (1-based; 0 when unknown).
    pub line: usize,
    /// Column (1-based; 0 when unknown).
    pub column: usize,
    /// The key, dotted from the top (`load.concurrency`), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut place = Vec::new();
        if self.line > 0 {
            place.push(format!("line {}", self.line));
        }
        if self.column > 0 {
            place.push(format!("column {}", self.column));
        }
        if let Some(key) = &self.key {
            place.push(format!("key `{key}`"));
        }
        write!(f, "Invalid config `{}`", self.path.display())?;
        if !place.is_empty() {
            write!(f, " at {}", place.join(", "))?;
        }
        write!(f, ": {}{}", self.message, hint_line(self.hint.as_deref()))
    }
}

fn hint_line(hint: Option<&str>) -> String {
    hint.map(|hint| format!("\nhint: {hint}"))
        .unwrap_or_default()
}
