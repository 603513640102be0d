//! Kernel categories: which family of work each GPU event belongs to.
//!
//! What it computes: a category (GEMM, attention, MoE, ...) for every distinct GPU event
//! name, from an ordered rule table (`data/kernel_categories.toml`, embedded; a user file
//! replaces it with `--categories FILE`). Names are classified once each, not per event.
//! Why it matters: per-stage time shares by category are what engineers read first.
//! Example: `Cijk_Ailk_Bljk_BBS_BH_...` → `gemm`; `Memcpy DtoH` → `memcpy_memset`.
//!
//! The table is a list of `[[category]]` entries, each a category `name`, an optional
//! `description` and optional `patterns` (Rust `regex` syntax, searched anywhere in the
//! kernel name). Entries are tried in file order and the first one with a matching pattern
//! wins; a category may have several entries. Categories are reported in the order they
//! first appear, then `other`, which is always last and takes every unmatched kernel.
//! Memcpy and memset events always go to the top-level `memory_category` (default
//! `memcpy_memset`). All patterns compile into one [`RegexSet`], so a name is classified in
//! one pass.
//!
//! The table also holds `[[op]]` rules, each a `category` and `patterns` over CPU op names
//! ([`KernelCategories::classify_op`]): a kernel launched directly by an op one of them
//! matches takes its category (pass [`event_categories`](super::event_categories)).
//! The rules and how they compare with TraceLens are in `docs/categories.md`.
//!
//! ```
//! use stepscope_analysis::KernelCategories;
//! use stepscope_model::GpuEventKind;
//!
//! let table = KernelCategories::embedded();
//! let gemm = table.classify("nvjet_tst_128x64_64x8_1x2_h_bz_coopA_NTN", GpuEventKind::Kernel);
//! assert_eq!(table.name(gemm), "gemm");
//! let copy = table.classify("Memcpy DtoD (Device -> Device)", GpuEventKind::Memcpy);
//! assert_eq!(table.name(copy), "memcpy_memset");
//! assert_eq!(table.names().last().map(String::as_str), Some("other"));
//! ```

use regex::{Regex, RegexSet};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::sync::OnceLock;
use stepscope_model::{GpuEventKind, NameId, Trace};

/// The built-in rule table.
const EMBEDDED_TABLE: &str = include_str!("../../data/kernel_categories.toml");

/// The category of kernels no rule matches; always the last category.
pub(crate) const OTHER: &str = "other";

/// The category memcpy and memset events go to when a table does not name one.
pub(crate) const DEFAULT_MEMORY_CATEGORY: &str = "memcpy_memset";

/// A category, as an index into [`KernelCategories::names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CategoryId(pub u16);

impl CategoryId {
    /// The id as an index into [`KernelCategories::names`].
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

const BAD_PATTERN_HINT: &str =
    "patterns use Rust `regex` syntax; `(?i)` at the start makes one case-insensitive";
const UNKNOWN_OP_CATEGORY_HINT: &str =
    "op rules may only name categories of `[[category]]` entries, `memory_category` or `other`";

/// Why a category table could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CategoryError {
    /// The text is not TOML, or not the table's shape (unknown key, wrong type).
    #[error("The kernel category table is not valid")]
    Toml {
        /// What the TOML reader found, with line and column.
        #[source]
        source: toml::de::Error,
    },
    /// A `[[category]]` entry has an empty name.
    #[error("Kernel category rule #{rule} has an empty `name`")]
    EmptyName {
        /// The entry's position among the `[[category]]` entries, from 1.
        rule: usize,
    },
    /// A pattern is not a valid regular expression.
    #[error(
        "{rules} rule #{rule} (`{category}`), pattern #{pattern_number} `{pattern}` is not a valid regex\nhint: {BAD_PATTERN_HINT}"
    )]
    BadPattern {
        /// `Kernel category` (a `[[category]]` entry) or `Op category` (an `[[op]]` entry).
        rules: &'static str,
        /// The entry's position among the entries of its kind, from 1.
        rule: usize,
        /// The entry's category name.
        category: String,
        /// The pattern's position in the entry's `patterns`, from 1.
        pattern_number: usize,
        /// The pattern as written.
        pattern: String,
        /// The regex compiler's error.
        #[source]
        source: regex::Error,
    },
    /// The patterns are valid one by one but too large together.
    #[error("The kernel category patterns are too large to compile together")]
    PatternSet {
        /// The regex compiler's error.
        #[source]
        source: regex::Error,
    },
    /// An `[[op]]` entry names a category no `[[category]]` entry (nor `memory_category`)
    /// has.
    #[error(
        "Op category rule #{rule} names category `{category}`, which the table does not define\nhint: {UNKNOWN_OP_CATEGORY_HINT}"
    )]
    UnknownOpCategory {
        /// The entry's position among the `[[op]]` entries, from 1.
        rule: usize,
        /// The category as written.
        category: String,
    },
    /// The top-level `memory_category` is empty.
    #[error("The kernel category table's `memory_category` is empty")]
    EmptyMemoryCategory,
    /// More categories than a [`CategoryId`] can number.
    #[error("The kernel category table has {count} categories; at most 65535 are supported")]
    TooManyCategories {
        /// How many distinct category names the table has.
        count: usize,
    },
}

impl stepscope_model::Hint for CategoryError {
    fn hint(&self) -> Option<String> {
        match self {
            CategoryError::BadPattern { .. } => Some(BAD_PATTERN_HINT.to_owned()),
            CategoryError::UnknownOpCategory { .. } => Some(UNKNOWN_OP_CATEGORY_HINT.to_owned()),
            _ => None,
        }
    }
}

/// The table file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    memory_category: Option<String>,
    #[serde(default)]
    category: Vec<RuleFile>,
    #[serde(default)]
    op: Vec<OpRuleFile>,
}

/// One `[[op]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpRuleFile {
    category: String,
    #[serde(default)]
    patterns: Vec<String>,
}

/// One `[[category]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    name: String,
    description: Option<String>,
    #[serde(default)]
    patterns: Vec<String>,
}

/// The compiled rule table: category names in report order and one regex set.
#[derive(Debug, Clone)]
pub struct KernelCategories {
    names: Vec<String>,
    descriptions: Vec<String>,
    patterns: RegexSet,
    /// For each pattern of `patterns`, the category of its rule.
    pattern_category: Vec<CategoryId>,
    /// Patterns of the `[[op]]` rules, over CPU op names.
    op_patterns: RegexSet,
    /// For each pattern of `op_patterns`, the category of its rule.
    op_pattern_category: Vec<CategoryId>,
    memory: CategoryId,
    other: CategoryId,
}

impl Default for KernelCategories {
    fn default() -> Self {
        Self::embedded()
    }
}

impl KernelCategories {
    /// The built-in table (`data/kernel_categories.toml`), compiled once per process.
    ///
    /// # Panics
    ///
    /// Only if the embedded file is broken, which a unit test rules out.
    pub fn embedded() -> Self {
        static TABLE: OnceLock<KernelCategories> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                Self::from_toml(EMBEDDED_TABLE).unwrap_or_else(|e| {
                    panic!("the embedded kernel category table is broken: {e:?}")
                })
            })
            .clone()
    }

    /// Compiles a user table; errors name the rule and the pattern at fault.
    pub fn from_toml(text: &str) -> Result<Self, CategoryError> {
        let file: TableFile =
            toml::from_str(text).map_err(|source| CategoryError::Toml { source })?;
        let memory_name = file
            .memory_category
            .as_deref()
            .map_or(DEFAULT_MEMORY_CATEGORY, str::trim);
        let (names, descriptions) = category_names(&file.category, memory_name)?;
        let ids: FxHashMap<&str, CategoryId> = names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.as_str(), CategoryId(i as u16)))
            .collect();
        let mut patterns = Vec::new();
        let mut pattern_category = Vec::new();
        for rule in &file.category {
            let id = ids[rule.name.trim()];
            patterns.extend(rule.patterns.iter().map(String::as_str));
            pattern_category.extend(rule.patterns.iter().map(|_| id));
        }
        let patterns = compile_set(&patterns, &file.category)?;
        let (op_patterns, op_pattern_category) = compile_op_rules(&file.op, &ids)?;
        Ok(Self {
            memory: ids[memory_name],
            other: ids[OTHER],
            names,
            descriptions,
            patterns,
            pattern_category,
            op_patterns,
            op_pattern_category,
        })
    }

    /// Category names in report order; the last one is always `other`.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The name of a category.
    pub fn name(&self, id: CategoryId) -> &str {
        &self.names[id.index()]
    }

    /// The description of a category, or `""` when the table gives none.
    pub fn description(&self, id: CategoryId) -> &str {
        &self.descriptions[id.index()]
    }

    /// The category with this name, if the table has one.
    pub fn id(&self, name: &str) -> Option<CategoryId> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| CategoryId(i as u16))
    }

    /// The category of kernels no rule matches.
    pub fn other(&self) -> CategoryId {
        self.other
    }

    /// The category of memcpy and memset events.
    pub fn memory(&self) -> CategoryId {
        self.memory
    }

    /// The category of one GPU event name: memcpy and memset events go to the memory
    /// category whatever their name; kernels go to the first rule with a matching pattern.
    pub fn classify(&self, name: &str, kind: GpuEventKind) -> CategoryId {
        match kind {
            GpuEventKind::Memcpy | GpuEventKind::Memset => self.memory,
            GpuEventKind::Kernel => self
                .patterns
                .matches(name)
                .iter()
                .next()
                .map_or(self.other, |pattern| self.pattern_category[pattern]),
        }
    }
}

impl KernelCategories {
    /// The category a CPU op's name makes clear: the first `[[op]]` rule with a matching
    /// pattern, or `None` when no rule matches (the kernel's name decides then).
    pub fn classify_op(&self, op_name: &str) -> Option<CategoryId> {
        self.op_patterns
            .matches(op_name)
            .iter()
            .next()
            .map(|pattern| self.op_pattern_category[pattern])
    }

    /// Whether the table has any `[[op]]` rule.
    #[cfg(test)]
    pub(crate) fn has_op_rules(&self) -> bool {
        !self.op_pattern_category.is_empty()
    }
}

/// Compiles the `[[op]]` rules into one set, with the category of each pattern.
fn compile_op_rules(
    rules: &[OpRuleFile],
    ids: &FxHashMap<&str, CategoryId>,
) -> Result<(RegexSet, Vec<CategoryId>), CategoryError> {
    let mut patterns = Vec::new();
    let mut pattern_category = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let Some(&id) = ids.get(rule.category.trim()) else {
            return Err(CategoryError::UnknownOpCategory {
                rule: i + 1,
                category: rule.category.clone(),
            });
        };
        for (j, pattern) in rule.patterns.iter().enumerate() {
            Regex::new(pattern).map_err(|source| CategoryError::BadPattern {
                rules: "Op category",
                rule: i + 1,
                category: rule.category.trim().to_owned(),
                pattern_number: j + 1,
                pattern: pattern.clone(),
                source,
            })?;
            patterns.push(pattern.as_str());
            pattern_category.push(id);
        }
    }
    let set = RegexSet::new(patterns).map_err(|source| CategoryError::PatternSet { source })?;
    Ok((set, pattern_category))
}

/// Category names in report order (first appearance, then the memory category if no rule
/// names it, then `other`), with their descriptions (the first one given).
fn category_names(
    rules: &[RuleFile],
    memory_name: &str,
) -> Result<(Vec<String>, Vec<String>), CategoryError> {
    let mut names: Vec<String> = Vec::new();
    let mut descriptions: Vec<String> = Vec::new();
    let mut add = |name: &str, description: Option<&str>| {
        let slot = match names.iter().position(|n| n == name) {
            Some(slot) => slot,
            None => {
                names.push(name.to_owned());
                descriptions.push(String::new());
                names.len() - 1
            }
        };
        if descriptions[slot].is_empty() {
            descriptions[slot] = description.unwrap_or_default().trim().to_owned();
        }
    };
    for (i, rule) in rules.iter().enumerate() {
        let name = rule.name.trim();
        if name.is_empty() {
            return Err(CategoryError::EmptyName { rule: i + 1 });
        }
        if name != OTHER {
            add(name, rule.description.as_deref());
        }
    }
    if memory_name.is_empty() {
        return Err(CategoryError::EmptyMemoryCategory);
    }
    if memory_name != OTHER {
        add(memory_name, None);
    }
    let other_description = rules
        .iter()
        .find(|rule| rule.name.trim() == OTHER)
        .and_then(|rule| rule.description.as_deref());
    add(
        OTHER,
        other_description.or(Some("Kernels no rule matches.")),
    );
    if names.len() > usize::from(u16::MAX) {
        return Err(CategoryError::TooManyCategories { count: names.len() });
    }
    Ok((names, descriptions))
}

/// Compiles all patterns into one set; on failure, finds the pattern at fault.
fn compile_set(patterns: &[&str], rules: &[RuleFile]) -> Result<RegexSet, CategoryError> {
    RegexSet::new(patterns).map_err(|set_error| {
        for (i, rule) in rules.iter().enumerate() {
            for (j, pattern) in rule.patterns.iter().enumerate() {
                if let Err(source) = Regex::new(pattern) {
                    return CategoryError::BadPattern {
                        rules: "Kernel category",
                        rule: i + 1,
                        category: rule.name.trim().to_owned(),
                        pattern_number: j + 1,
                        pattern: pattern.clone(),
                        source,
                    };
                }
            }
        }
        CategoryError::PatternSet { source: set_error }
    })
}

/// The category of every interned name of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategorizedNames {
    /// Indexed by [`NameId::index`], one entry per interned name; names no GPU event
    /// uses are `other`.
    pub by_name: Vec<CategoryId>,
}

impl CategorizedNames {
    /// The category of a name.
    pub fn get(&self, name: NameId) -> CategoryId {
        self.by_name[name.index()]
    }
}

/// Classifies each distinct GPU event name of a trace once, with the kind of the first GPU
/// event that has it; names no GPU event uses get `other`.
pub fn categorize_names(trace: &Trace, table: &KernelCategories) -> CategorizedNames {
    let mut by_name: Vec<Option<CategoryId>> = vec![None; trace.names.len()];
    for (&name, &kind) in trace.gpu.name.iter().zip(&trace.gpu.kind) {
        let slot = &mut by_name[name.index()];
        if slot.is_none() {
            *slot = Some(table.classify(trace.name(name), kind));
        }
    }
    let other = table.other();
    CategorizedNames {
        by_name: by_name
            .into_iter()
            .map(|category| category.unwrap_or(other))
            .collect(),
    }
}

#[cfg(test)]
mod tests;
