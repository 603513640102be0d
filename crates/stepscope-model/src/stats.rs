//! Import statistics: what an importer skipped or did not understand, counted by name.
//! Modelled on Perfetto's import stats: nothing malformed aborts an import silently.

use std::collections::BTreeMap;

/// How much an import problem matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing; results are unaffected.
    Info,
    /// Some data was skipped; results may be less complete.
    DataLoss,
    /// The input is broken; results are partial.
    Error,
}

impl Severity {
    /// A short stable name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::DataLoss => "data_loss",
            Self::Error => "error",
        }
    }
}

/// One named counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatCounter {
    /// How much it matters.
    pub severity: Severity,
    /// One sentence on what was counted.
    pub description: &'static str,
    /// How often.
    pub count: u64,
}

/// Counters an importer fills while it reads.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportStats {
    /// Named counters.
    pub counters: BTreeMap<&'static str, StatCounter>,
    /// Event categories the importer does not know, by name, with counts.
    pub unknown_categories: BTreeMap<String, u64>,
    /// Event fields the importer does not know, by name, with counts.
    pub unknown_fields: BTreeMap<String, u64>,
    /// Set when the input ended early and only the events before the break were read.
    pub truncated_at_byte: Option<u64>,
}

impl ImportStats {
    /// Adds `count` to counter `name`.
    pub fn add(
        &mut self,
        name: &'static str,
        severity: Severity,
        description: &'static str,
        count: u64,
    ) {
        if count == 0 {
            return;
        }
        self.counters
            .entry(name)
            .or_insert(StatCounter {
                severity,
                description,
                count: 0,
            })
            .count += count;
    }

    /// The value of counter `name` (zero when never incremented).
    pub fn get(&self, name: &str) -> u64 {
        self.counters.get(name).map_or(0, |c| c.count)
    }

    /// Adds every counter of `other` into `self`.
    pub fn merge(&mut self, other: ImportStats) {
        for (name, counter) in other.counters {
            self.add(name, counter.severity, counter.description, counter.count);
        }
        for (name, count) in other.unknown_categories {
            *self.unknown_categories.entry(name).or_default() += count;
        }
        for (name, count) in other.unknown_fields {
            *self.unknown_fields.entry(name).or_default() += count;
        }
        self.truncated_at_byte = self.truncated_at_byte.or(other.truncated_at_byte);
    }

    /// Whether the results built on this import are partial.
    pub fn is_partial(&self) -> bool {
        self.truncated_at_byte.is_some()
    }
}
