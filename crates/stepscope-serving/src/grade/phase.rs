//! A side's evidence as saved: its benchmark phases (`stepscope bench --json` documents) and
//! its output probes (`*.outputs.json`), read from a folder, with the workload each phase
//! ran, so that sides that did different work are never graded against each other.

use super::engage::{ENGAGE_KIND, EngageRecord, is_engage_file};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use stepscope_load::{PROBE_KIND, ProbeSet};
use stepscope_stats::rates::Counts;

/// The oldest bench document a grading reads: schema 2 counts output tokens from the stream.
const MIN_BENCH_SCHEMA: u64 = 2;

/// What a phase asked of the server: two phases are comparable only when these agree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// The `model` sent.
    pub model: String,
    /// What the server said the model is (vLLM's `root`: the weights' path), when listed.
    pub model_root: Option<String>,
    /// `completions` or `chat`.
    pub api: String,
    /// Requests in flight at most.
    pub concurrency: u64,
    /// Poisson arrivals a second (`null`: as fast as the concurrency allows).
    pub request_rate: Option<f64>,
    /// Measured requests.
    pub num_prompts: u64,
    /// Prompt tokens a request.
    pub input_len: u64,
    /// Output tokens a request (`max_tokens`).
    pub output_len: u64,
    /// Unmeasured requests first.
    pub warmup: u64,
    /// `token_ids` or `text`.
    pub prompt_format: String,
    /// The prompts' seed.
    pub seed: u64,
    /// `sha256:…` of the measured prompts as sent.
    pub prompts_sha256: Option<String>,
    /// `ignore_eos` as sent.
    pub ignore_eos: bool,
    /// The sampling temperature sent.
    pub temperature: f64,
}

impl Workload {
    fn of(settings: &Value) -> Result<Workload, String> {
        let text = |key: &str| settings[key].as_str().map(str::to_owned);
        let number = |key: &str| settings[key].as_u64();
        let missing = |key: &str| format!("has no `settings.{key}`");
        Ok(Workload {
            model: text("model").ok_or_else(|| missing("model"))?,
            model_root: settings["served_model"]["root"].as_str().map(str::to_owned),
            api: text("api").ok_or_else(|| missing("api"))?,
            concurrency: number("concurrency").ok_or_else(|| missing("concurrency"))?,
            request_rate: settings["request_rate"].as_f64(),
            num_prompts: number("num_prompts").ok_or_else(|| missing("num_prompts"))?,
            input_len: number("input_len").ok_or_else(|| missing("input_len"))?,
            output_len: number("output_len").ok_or_else(|| missing("output_len"))?,
            warmup: number("warmup").unwrap_or(0),
            prompt_format: text("prompt_format").ok_or_else(|| missing("prompt_format"))?,
            seed: number("seed").ok_or_else(|| missing("seed"))?,
            prompts_sha256: text("prompts_sha256"),
            ignore_eos: settings["ignore_eos"].as_bool().unwrap_or(true),
            temperature: settings["temperature"].as_f64().unwrap_or(0.0),
        })
    }

    /// The fields two workloads must share, shown as text: the model's first.
    fn fields(&self) -> Vec<(&'static str, String)> {
        let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not listed)".to_owned());
        let rate = |r: Option<f64>| r.map_or_else(|| "inf".to_owned(), |r| r.to_string());
        vec![
            ("model", self.model.clone()),
            ("model root", shown(&self.model_root)),
            ("api", self.api.clone()),
            ("concurrency", self.concurrency.to_string()),
            ("request rate", rate(self.request_rate)),
            ("num_prompts", self.num_prompts.to_string()),
            ("input_len", self.input_len.to_string()),
            ("output_len", self.output_len.to_string()),
            ("warmup", self.warmup.to_string()),
            ("prompt format", self.prompt_format.clone()),
            ("seed", self.seed.to_string()),
            ("ignore_eos", self.ignore_eos.to_string()),
            ("temperature", self.temperature.to_string()),
            ("prompts", shown(&self.prompts_sha256)),
        ]
    }

    /// How `other` differs from this, field by field (`input_len 16 vs 512`). The model and
    /// its root are left out when `allow_model_change`, the root where either does not list
    /// one, and the prompts' digest where a field that makes prompts already differs.
    pub fn differences(&self, other: &Workload, allow_model_change: bool) -> Vec<String> {
        let both_rooted = self.model_root.is_some() && other.model_root.is_some();
        let mut out = Vec::new();
        for ((name, a), (_, b)) in self.fields().into_iter().zip(other.fields()) {
            let skipped = match name {
                "model" => allow_model_change,
                "model root" => allow_model_change || !both_rooted,
                "prompts" => !out.is_empty(),
                _ => false,
            };
            if a != b && !skipped {
                out.push(format!("{name} {a} vs {b}"));
            }
        }
        out
    }

    /// One line: what every phase of the grading ran.
    pub fn describe(&self) -> String {
        let mut text = format!("model `{}`", self.model);
        if let Some(root) = &self.model_root {
            let _ = write!(text, " ({root})");
        }
        let _ = write!(
            text,
            ", {} {} prompts of {} → {} tokens, concurrency {}",
            self.num_prompts, self.prompt_format, self.input_len, self.output_len, self.concurrency
        );
        if let Some(rate) = self.request_rate {
            let _ = write!(text, " at {rate} req/s");
        }
        let _ = write!(
            text,
            ", seed {}, temperature {}",
            self.seed, self.temperature
        );
        text
    }
}

/// One benchmark phase, as its `bench --json` document states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// The document.
    pub path: String,
    /// `summary.throughput.output_tokens_per_s` (tokens counted from the stream).
    pub output_tokens_per_s: f64,
    /// `summary.throughput.requests_per_s`.
    pub requests_per_s: f64,
    /// Requests sent and failed (cancelled ones are neither).
    pub requests: Counts,
    /// Failed requests by kind (`http_status`, `connect`, `timeout`, `closed_stream`, …).
    pub failures: BTreeMap<String, u64>,
    /// Completed requests whose server usage claims more than `max_tokens`.
    pub usage_over_max_tokens: u64,
    /// Completed requests whose server usage disagrees with the streamed count.
    pub usage_disagreeing: u64,
    /// The first such request, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_example: Option<String>,
    /// What it ran.
    #[serde(skip)]
    pub workload: Option<Workload>,
    /// The whole document's `summary`, for objectives and metrics (`ttft_ms.p99`).
    #[serde(skip)]
    pub summary: Value,
}

impl Phase {
    /// A phase with only a throughput (the stand-ins of the error-rate measurements).
    pub fn of_throughput(output_tokens_per_s: f64) -> Phase {
        Phase {
            path: String::new(),
            output_tokens_per_s,
            requests_per_s: 1.0,
            requests: Counts::default(),
            failures: BTreeMap::new(),
            usage_over_max_tokens: 0,
            usage_disagreeing: 0,
            usage_example: None,
            workload: None,
            summary: Value::Null,
        }
    }
}

/// A side as saved: its phases and its output probes, in file-name order, and what an
/// engage check found on it.
#[derive(Debug, Clone, Default)]
pub struct SideEvidence {
    /// The phases.
    pub phases: Vec<Phase>,
    /// The probes, with their files.
    pub probes: Vec<(String, ProbeSet)>,
    /// The engage check (`engage.check.json`), when one was made.
    pub engage: Option<EngageRecord>,
}

/// Reads a side: a folder of `bench --json` documents (its `*.json` files, sorted by name)
/// and output probes (`*.outputs.json`), or one bench document.
///
/// # Errors
///
/// The path does not exist, is a `stepscope profile` run (never graded), holds no bench
/// document, or a document cannot be read, is not a complete bench run of schema 2 or later,
/// or its phases ran different workloads; each names the file and the fix.
pub fn read_side(path: &Path) -> Result<SideEvidence, String> {
    read_side_checked(path, true)
}

/// [`read_side`] of a live run's side, which may have probes and no phase yet.
pub(crate) fn read_side_partial(path: &Path) -> Result<SideEvidence, String> {
    read_side_checked(path, false)
}

fn read_side_checked(path: &Path, need_phases: bool) -> Result<SideEvidence, String> {
    if path.join("results.json").is_file() {
        return Err(format!(
            "`{}` is a stepscope profile run: profile runs are never graded (the switches that record every replay change replay speed)\nhint: grade baseline runs: folders of `stepscope bench --json` documents",
            path.display()
        ));
    }
    let files = json_files(path)?;
    let (checks, files): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|f| is_engage_file(f));
    let (probe_files, phase_files): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|f| is_probe_file(f));
    // A live run stopped by a changed answer or a change that did not engage leaves a side
    // with probes or a check and no phase: that evidence is graded too.
    let evidence = !probe_files.is_empty() || !checks.is_empty();
    if phase_files.is_empty() && need_phases && !evidence {
        return Err(format!(
            "`{}` holds no bench documents (*.json)\nhint: save each phase with `stepscope bench ... --json PHASE.json`",
            path.display()
        ));
    }
    let phases = phase_files
        .iter()
        .map(|file| read_phase(file))
        .collect::<Result<Vec<_>, _>>()?;
    same_workload_within(&phases)?;
    let probes = probe_files
        .iter()
        .map(|file| read_probe(file).map(|set| (file.display().to_string(), set)))
        .collect::<Result<Vec<_>, _>>()?;
    let engage = match checks.first() {
        Some(file) => Some(read_engage(file)?),
        None => None,
    };
    Ok(SideEvidence {
        phases,
        probes,
        engage,
    })
}

/// Reads a side's phases alone (see [`read_side`]).
///
/// # Errors
///
/// As [`read_side`].
pub fn read_phases(path: &Path) -> Result<Vec<Phase>, String> {
    read_side(path).map(|side| side.phases)
}

/// An output probe's file: `*.outputs.json`.
pub fn is_probe_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().ends_with(".outputs.json"))
}

fn json_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    if path.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let entries = fs_err::read_dir(path).map_err(|e| e.to_string())?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Every phase of one side ran the same workload (phase one's).
fn same_workload_within(phases: &[Phase]) -> Result<(), String> {
    let Some(first) = phases.first() else {
        return Ok(());
    };
    for phase in &phases[1..] {
        if let (Some(a), Some(b)) = (&first.workload, &phase.workload) {
            let differences = a.differences(b, false);
            if !differences.is_empty() {
                return Err(format!(
                    "`{}` and `{}` ran different workloads ({}): one side's phases must all run one\nhint: keep each workload's phases in a folder of their own",
                    first.path,
                    phase.path,
                    differences.join("; ")
                ));
            }
        }
    }
    Ok(())
}

fn read_document(file: &Path) -> Result<Value, String> {
    let bytes = fs_err::read(file).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "`{}` is not JSON ({e})\nhint: give the documents `stepscope bench --json` writes",
            file.display()
        )
    })
}

fn read_phase(file: &Path) -> Result<Phase, String> {
    let shown = file.display();
    let doc = read_document(file)?;
    if doc["partial"].as_bool() == Some(true) {
        return Err(format!(
            "`{shown}` is a partial bench run (stopped before every request ended)\nhint: leave it out, or run the phase again"
        ));
    }
    let summary = &doc["summary"];
    let throughput = &summary["throughput"];
    let (Some(tokens), Some(requests_per_s)) = (
        throughput["output_tokens_per_s"].as_f64(),
        throughput["requests_per_s"].as_f64(),
    ) else {
        return Err(format!(
            "`{shown}` has no summary.throughput.output_tokens_per_s: not a `stepscope bench --json` document"
        ));
    };
    let version = doc["schema_version"].as_u64().unwrap_or(0);
    if version < MIN_BENCH_SCHEMA {
        return Err(format!(
            "`{shown}` was written by an older stepscope bench (schema {version}): its output tokens are the server's own word and its workload is not recorded, so it cannot be graded\nhint: run the phase again with this stepscope"
        ));
    }
    let workload = Workload::of(&doc["settings"]).map_err(|problem| {
        format!("`{shown}` {problem}: not a whole `stepscope bench --json` document")
    })?;
    let count = |key: &str| summary[key].as_u64().unwrap_or(0);
    let failures = summary["failures"]
        .as_object()
        .map(|map| {
            map.iter()
                .filter_map(|(kind, n)| Some((kind.clone(), n.as_u64()?)))
                .collect()
        })
        .unwrap_or_default();
    Ok(Phase {
        path: shown.to_string(),
        output_tokens_per_s: tokens,
        requests_per_s,
        requests: Counts {
            sent: count("requests_completed") + count("requests_failed"),
            failed: count("requests_failed"),
        },
        failures,
        usage_over_max_tokens: count("usage_over_max_tokens"),
        usage_disagreeing: count("usage_disagreeing"),
        usage_example: summary["usage_example"].as_str().map(str::to_owned),
        workload: Some(workload),
        summary: summary.clone(),
    })
}

fn read_engage(file: &Path) -> Result<EngageRecord, String> {
    let doc = read_document(file)?;
    let record: EngageRecord = serde_json::from_value(doc).map_err(|e| {
        format!(
            "`{}` is not an engage check ({e})\nhint: `*.check.json` files in a side's folder are the checks `stepscope grade --expect-kernel/--expect-env` saves",
            file.display()
        )
    })?;
    if record.kind != ENGAGE_KIND {
        return Err(format!("`{}` is not an engage check", file.display()));
    }
    Ok(record)
}

fn read_probe(file: &Path) -> Result<ProbeSet, String> {
    let doc = read_document(file)?;
    let set: ProbeSet = serde_json::from_value(doc).map_err(|e| {
        format!(
            "`{}` is not an output probe ({e})\nhint: `*.outputs.json` files in a side's folder are the output probes `stepscope grade` saves",
            file.display()
        )
    })?;
    if set.kind != PROBE_KIND {
        return Err(format!(
            "`{}` is not an output probe (kind `{}`)",
            file.display(),
            set.kind
        ));
    }
    Ok(set)
}
