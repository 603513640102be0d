//! The config schema: one YAML file per server run, a profile or a baseline.
//!
//! ```yaml
//! kind: profile                 # profile | baseline, explicit: never guessed from the file name
//! framework: sglang             # sglang | vllm | atom
//! model: Qwen/Qwen3-14B-FP8
//! image: lmsysorg/sglang:v0.5.5-rocm700-mi30x   # optional: container image for --target docker
//! platform: rocm                # rocm (default) | cuda: GPU device flags for docker
//! container_args: [-v, /data:/data]              # optional: extra `docker run` arguments
//! server:
//!   port: 30000                 # optional: the framework's default port
//!   host: 127.0.0.1             # optional
//!   args: [--tp, "1"]           # launch arguments after the model and port, verbatim
//!   launcher: [python3, -m, sglang.launch_server]   # optional: replaces the framework's command
//! envs:                         # the server's environment; values are strings
//!   DEBUG_CLR_GRAPH_PACKET_CAPTURE: "0"
//! load: {concurrency: 64, input_len: 1024, output_len: 1024, num_prompts: 640}
//! windows: [{steps: 128}, {by_stage: 32}, single_step]   # profile windows
//! output_dir: results/sglang-profile
//! ```
//!
//! Unknown keys are errors (`deny_unknown_fields`), and every error names the file, the line
//! and the dotted key.

use crate::ServingError;
use crate::error::ConfigProblem;
use crate::yaml_keys::{key_path_at, top_level_line};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Whether a run is profiled (switches on) or measured as shipped (switches off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigKind {
    /// A profile run: records every graph replay; carries all three switches.
    Profile,
    /// A baseline (measured) run: replays as shipped; carries no switch.
    Baseline,
}

impl ConfigKind {
    /// `profile` or `baseline`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigKind::Profile => "profile",
            ConfigKind::Baseline => "baseline",
        }
    }
}

impl fmt::Display for ConfigKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The serving framework.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// SGLang (`python3 -m sglang.launch_server`).
    Sglang,
    /// vLLM (`vllm serve`).
    Vllm,
    /// AMD's ATOM (`python3 -m atom.entrypoints.openai_server`).
    Atom,
}

impl Framework {
    /// `sglang`, `vllm` or `atom`.
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::Sglang => "sglang",
            Framework::Vllm => "vllm",
            Framework::Atom => "atom",
        }
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The GPU stack a container needs devices for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// AMD ROCm: `/dev/kfd`, `/dev/dri`, group `video`.
    #[default]
    Rocm,
    /// NVIDIA CUDA: `--gpus all`.
    Cuda,
}

impl Platform {
    /// `rocm` or `cuda`.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Rocm => "rocm",
            Platform::Cuda => "cuda",
        }
    }
}

/// How the server is started.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// Port; the framework's default when absent (SGLang 30000, vLLM and ATOM 8000).
    #[serde(default)]
    pub port: Option<u16>,
    /// Address to listen on; the framework's default when absent.
    #[serde(default)]
    pub host: Option<String>,
    /// Launch arguments after the model and port, verbatim.
    #[serde(default)]
    pub args: Vec<String>,
    /// Words that start the server, replacing the framework's command (e.g. a wrapper script).
    #[serde(default)]
    pub launcher: Option<Vec<String>>,
}

/// The load a run drives the server with. Does not reach the server at boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSettings {
    /// Requests in flight.
    pub concurrency: u32,
    /// Prompt tokens per request (ISL).
    pub input_len: u32,
    /// Output tokens per request (OSL), generated with `ignore_eos`.
    pub output_len: u32,
    /// Requests in the run.
    pub num_prompts: u32,
}

/// One profile window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileWindow {
    /// N consecutive steps (`{steps: 128}`).
    Steps(u32),
    /// N steps of each stage, prefill and decode apart (`{by_stage: 32}`).
    ByStage(u32),
    /// One step (`single_step`).
    SingleStep,
}

impl ProfileWindow {
    /// The window as `--window` writes it: `steps:128`, `by-stage:4`, `single-step`.
    pub fn spec(self) -> String {
        match self {
            ProfileWindow::Steps(n) => format!("steps:{n}"),
            ProfileWindow::ByStage(n) => format!("by-stage:{n}"),
            ProfileWindow::SingleStep => "single-step".to_owned(),
        }
    }

    /// Reads a `--window` value (`steps:N`, `by-stage:N`, `single-step`; `_` for `-` too).
    pub fn from_spec(text: &str) -> Result<Self, String> {
        let text = text.trim().replace('_', "-");
        if text == "single-step" {
            return Ok(ProfileWindow::SingleStep);
        }
        let (kind, count) = text.split_once(':').ok_or_else(|| spec_error(&text))?;
        let steps = count
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| spec_error(&text))?;
        match kind.trim() {
            "steps" => Ok(ProfileWindow::Steps(steps)),
            "by-stage" => Ok(ProfileWindow::ByStage(steps)),
            _ => Err(spec_error(&text)),
        }
    }
}

fn spec_error(text: &str) -> String {
    format!(
        "`{text}` is not a window\nhint: steps:N (N consecutive steps), by-stage:N (N of each stage, SGLang), or single-step; N at least 1"
    )
}

/// One server run, as a config file describes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingConfig {
    /// Profile or baseline.
    pub kind: ConfigKind,
    /// Serving framework.
    pub framework: Framework,
    /// Model name or path, as the framework takes it.
    pub model: String,
    /// Container image, for `--target docker`.
    #[serde(default)]
    pub image: Option<String>,
    /// GPU stack, for the container's device flags.
    #[serde(default)]
    pub platform: Platform,
    /// Extra `docker run` arguments (volumes, shared memory).
    #[serde(default)]
    pub container_args: Vec<String>,
    /// How the server starts.
    #[serde(default)]
    pub server: ServerSettings,
    /// The server's environment, switches included.
    #[serde(default)]
    pub envs: BTreeMap<String, String>,
    /// The load.
    pub load: LoadSettings,
    /// Profile windows (profiles; a baseline has none).
    #[serde(default)]
    pub windows: Vec<ProfileWindow>,
    /// Where stepscope writes this run's results.
    pub output_dir: PathBuf,
}

impl ServingConfig {
    /// The server's ranks, each writing its own trace: tensor × pipeline × data parallel
    /// sizes from the launch arguments (`--tp-size 8`, `--tensor-parallel-size=8`, `-tp 8`,
    /// and the `pp`/`dp` forms of each framework); 1 when none is given.
    pub fn parallel_ranks(&self) -> u32 {
        const FLAGS: [&[&str]; 3] = [
            &["--tp-size", "--tp", "--tensor-parallel-size", "-tp"],
            &["--pp-size", "--pp", "--pipeline-parallel-size", "-pp"],
            &["--dp-size", "--dp", "--data-parallel-size", "-dp"],
        ];
        FLAGS
            .iter()
            .map(|names| flag_value(&self.server.args, names).unwrap_or(1).max(1))
            .product()
    }
}

/// The number after the last of `names` in `args` (`--name N` or `--name=N`).
fn flag_value(args: &[String], names: &[&str]) -> Option<u32> {
    let mut found = None;
    for (at, arg) in args.iter().enumerate() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (arg.as_str(), None),
        };
        if !names.contains(&name) {
            continue;
        }
        let value = inline.or_else(|| args.get(at + 1).map(String::as_str));
        if let Some(number) = value.and_then(|v| v.trim().parse::<u32>().ok()) {
            found = Some(number);
        }
    }
    found
}

/// A config read from a file, with the lines its keys sit on.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The file.
    pub path: PathBuf,
    /// The config.
    pub config: ServingConfig,
    /// Line of each `envs` entry, by variable.
    pub env_lines: BTreeMap<String, usize>,
    /// Line of the `envs:` key (0 when absent).
    pub envs_line: usize,
    /// Line of the `kind:` key.
    pub kind_line: usize,
    /// Lines of the keys a runtime switch can hide in besides `envs` (`container_args`,
    /// `server.launcher`, `server.args`; 0 when absent).
    pub key_lines: BTreeMap<&'static str, usize>,
}

/// Only the lines of `envs` entries; every other key is ignored here.
#[derive(Deserialize)]
struct EnvLocations {
    #[serde(default)]
    envs: BTreeMap<String, serde_saphyr::Spanned<serde::de::IgnoredAny>>,
}

/// Reads and validates one config file.
pub fn load_config(path: &Path) -> Result<ConfigFile, ServingError> {
    let text = fs_err::read_to_string(path).map_err(|source| ServingError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_config(&text, path)
}

/// Parses and validates config text; `path` names it in errors.
pub fn parse_config(text: &str, path: &Path) -> Result<ConfigFile, ServingError> {
    let config: ServingConfig =
        serde_saphyr::from_str(text).map_err(|error| yaml_error(text, path, &error))?;
    let locations: EnvLocations =
        serde_saphyr::from_str(text).map_err(|error| yaml_error(text, path, &error))?;
    let env_lines = locations
        .envs
        .iter()
        .map(|(key, value)| (key.clone(), value.referenced.line() as usize))
        .collect();
    let file = ConfigFile {
        path: path.to_owned(),
        config,
        env_lines,
        envs_line: top_level_line(text, "envs"),
        kind_line: top_level_line(text, "kind"),
        key_lines: ["container_args", "server.launcher", "server.args"]
            .into_iter()
            .map(|key| (key, key_line(text, key)))
            .collect(),
    };
    validate(&file, text)?;
    Ok(file)
}

fn yaml_error(text: &str, path: &Path, error: &serde_saphyr::Error) -> ServingError {
    let location = error.location();
    let (line, column) = location.map_or((0, 0), |l| (l.line() as usize, l.column() as usize));
    let key = (line > 0).then(|| key_path_at(text, line)).flatten();
    let message = error.without_snippet().to_string();
    let message = message
        .rsplit_once(" at line ")
        .map_or(message.as_str(), |(head, _)| head)
        .to_owned();
    config_error(path, (line, column), key, message, None)
}

/// A [`ServingError::Config`] at `(line, column)` (0 when unknown).
pub(crate) fn config_error(
    path: &Path,
    (line, column): (usize, usize),
    key: Option<String>,
    message: String,
    hint: Option<String>,
) -> ServingError {
    ServingError::Config(Box::new(ConfigProblem {
        path: path.to_owned(),
        line,
        column,
        key,
        message,
        hint,
    }))
}

/// Checks what the types cannot: names, emptiness, ranges.
fn validate(file: &ConfigFile, text: &str) -> Result<(), ServingError> {
    let config = &file.config;
    let error = |key: &str, message: String, hint: Option<&str>| {
        let line = key_line(text, key);
        config_error(
            &file.path,
            (line, 0),
            Some(key.to_owned()),
            message,
            hint.map(str::to_owned),
        )
    };
    for (name, line) in &file.env_lines {
        if !is_variable_name(name) {
            return Err(config_error(
                &file.path,
                (*line, 0),
                Some(format!("envs.{name}")),
                format!("`{name}` is not an environment variable name"),
                Some("names are letters, digits and `_`, not starting with a digit".to_owned()),
            ));
        }
    }
    validate_characters(file, text)?;
    if config.model.trim().is_empty() {
        return Err(error("model", "the model is empty".to_owned(), None));
    }
    if config.image.as_deref().is_some_and(|i| i.trim().is_empty()) {
        return Err(error(
            "image",
            "the image is empty".to_owned(),
            Some("remove the key or name an image"),
        ));
    }
    if let Some(launcher) = &config.server.launcher {
        if launcher.first().is_none_or(|word| word.trim().is_empty()) {
            return Err(error(
                "server.launcher",
                "the launcher has no program".to_owned(),
                None,
            ));
        }
    }
    validate_numbers(config, &error)
}

fn validate_numbers(
    config: &ServingConfig,
    error: &dyn Fn(&str, String, Option<&str>) -> ServingError,
) -> Result<(), ServingError> {
    if config.server.port == Some(0) {
        return Err(error(
            "server.port",
            "port 0 is not a port a server can be reached at: it asks the system for any free port, so stepscope would wait on a port nothing listens on".to_owned(),
            Some("give the port the server listens on (1 to 65535), or leave `port` out for the framework's default"),
        ));
    }
    let load = &config.load;
    for (key, value) in [
        ("load.concurrency", load.concurrency),
        ("load.input_len", load.input_len),
        ("load.output_len", load.output_len),
        ("load.num_prompts", load.num_prompts),
    ] {
        if value == 0 {
            return Err(error(key, "must be at least 1".to_owned(), None));
        }
    }
    validate_load(load, error)?;
    for window in &config.windows {
        if matches!(window, ProfileWindow::ByStage(_)) && config.framework != Framework::Sglang {
            return Err(error(
                "windows",
                format!(
                    "`by_stage` windows are an SGLang profiler feature, not {}'s",
                    config.framework
                ),
                Some("use `steps: N` or `single_step`"),
            ));
        }
        if matches!(window, ProfileWindow::Steps(0) | ProfileWindow::ByStage(0)) {
            return Err(error(
                "windows",
                "a window needs at least 1 step".to_owned(),
                None,
            ));
        }
    }
    Ok(())
}

/// Every word that reaches the server or its command line (model, image, host, launcher,
/// arguments, container arguments, environment values, output folder) holds no control
/// character but tab and line feed: a NUL ends an argument or environment value at the
/// system call, so the server would get another value than the config's, and the others
/// (escape, carriage return, backspace, ...) are typing accidents that rewrite a terminal
/// showing the command. Tab and line feed are whitespace a quoted word, a value and JSON
/// carry intact (a `|` block scalar ends with a line feed).
fn validate_characters(file: &ConfigFile, text: &str) -> Result<(), ServingError> {
    for (key, line, value) in words(file, text) {
        let Some((at, character)) = control_character(&value) else {
            continue;
        };
        let nul = if character == '\0' {
            ": the system ends an argument or environment value at a NUL, so the server would get a cut-off value"
        } else {
            ""
        };
        return Err(config_error(
            &file.path,
            (line, 0),
            Some(key),
            format!(
                "the value holds the control character {} at character {}{nul}",
                character_name(character),
                at + 1
            ),
            Some(
                "remove it (a YAML escape such as \"\\0\" or \"\\e\" puts one there); tabs and line feeds are allowed"
                    .to_owned(),
            ),
        ));
    }
    Ok(())
}

/// Each word that reaches the server or its command line: `(dotted key, line, value)`.
fn words(file: &ConfigFile, text: &str) -> Vec<(String, usize, String)> {
    let config = &file.config;
    let one = |key: &str, value: &str| (key.to_owned(), key_line(text, key), value.to_owned());
    let listed = |key: &str, values: &[String]| -> Vec<(String, usize, String)> {
        let line = key_line(text, key);
        values
            .iter()
            .enumerate()
            .map(|(at, value)| (format!("{key}[{at}]"), line, value.clone()))
            .collect()
    };
    let mut all = vec![
        one("model", &config.model),
        one("output_dir", &config.output_dir.to_string_lossy()),
    ];
    all.extend(config.image.iter().map(|image| one("image", image)));
    all.extend(
        config
            .server
            .host
            .iter()
            .map(|host| one("server.host", host)),
    );
    all.extend(listed(
        "server.launcher",
        config.server.launcher.as_deref().unwrap_or_default(),
    ));
    all.extend(listed("server.args", &config.server.args));
    all.extend(listed("container_args", &config.container_args));
    all.extend(config.envs.iter().map(|(name, value)| {
        let line = file.env_lines.get(name).copied().unwrap_or(file.envs_line);
        (format!("envs.{name}"), line, value.clone())
    }));
    all
}

/// The first control character of `value` other than tab and line feed, by character index.
pub fn control_character(value: &str) -> Option<(usize, char)> {
    value
        .chars()
        .enumerate()
        .find(|&(_, c)| c.is_control() && c != '\t' && c != '\n')
}

/// `U+0000 (NUL)`, `U+001B (ESC)`, ...
fn character_name(character: char) -> String {
    const C0: [&str; 32] = [
        "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "TAB", "LF", "VT", "FF",
        "CR", "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM",
        "SUB", "ESC", "FS", "GS", "RS", "US",
    ];
    let code = u32::from(character);
    let name = match code {
        0..=31 => C0.get(code as usize).copied(),
        127 => Some("DEL"),
        _ => None,
    };
    match name {
        Some(name) => format!("U+{code:04X} ({name})"),
        None => format!("U+{code:04X}"),
    }
}

/// Line of a dotted key such as `load.concurrency` (0 when not found).
fn key_line(text: &str, dotted: &str) -> usize {
    (1..=text.lines().count())
        .find(|&line| key_path_at(text, line).as_deref() == Some(dotted))
        .unwrap_or_else(|| top_level_line(text, dotted.split('.').next().unwrap_or(dotted)))
}

/// The load within the load generator's own limits (`stepscope bench` would refuse it).
fn validate_load(
    load: &LoadSettings,
    error: &dyn Fn(&str, String, Option<&str>) -> ServingError,
) -> Result<(), ServingError> {
    let cap = stepscope_load::MAX_REQUEST_TOKENS as u64;
    for (key, value) in [
        ("load.input_len", load.input_len),
        ("load.output_len", load.output_len),
    ] {
        if u64::from(value) > cap {
            return Err(error(
                key,
                format!(
                    "{value} tokens is more than {cap}, the load generator's cap on one request"
                ),
                Some("give a length a server can be run with"),
            ));
        }
    }
    let in_flight = u64::from(load.concurrency.min(load.num_prompts)) * u64::from(load.input_len);
    let limit = stepscope_load::MAX_TOKENS_IN_FLIGHT as u64;
    if in_flight > limit {
        return Err(error(
            "load.concurrency",
            format!(
                "{} requests of {} prompt tokens hold {in_flight} tokens at once, more than the load generator's {limit} (about 2 GB of requests in memory)",
                load.concurrency, load.input_len
            ),
            Some("lower `concurrency` or `input_len`"),
        ));
    }
    Ok(())
}

/// Whether `name` can be exported by a POSIX shell.
pub fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The files a list of paths names: files as given, folders expanded to their `.yaml` and
/// `.yml` files in name order.
pub fn config_paths(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, ServingError> {
    let mut paths = Vec::new();
    for input in inputs {
        if !input.is_dir() {
            paths.push(input.clone());
            continue;
        }
        let read_error = |source| ServingError::Read {
            path: input.clone(),
            source,
        };
        let mut found = Vec::new();
        for entry in fs_err::read_dir(input).map_err(read_error)? {
            let path = entry.map_err(read_error)?.path();
            let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
            if yaml && path.is_file() {
                found.push(path);
            }
        }
        if found.is_empty() {
            return Err(ServingError::NoConfigs {
                path: input.clone(),
            });
        }
        found.sort();
        paths.extend(found);
    }
    Ok(paths)
}
