//! Command-line arguments. Doc comments are the help text.

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use stepscope_analysis::passes::ranges::RangePattern;

/// Check that every CUDA/HIP graph replay was recorded, and read LLM-serving profiles fast.
#[derive(Debug, Parser)]
#[command(name = "stepscope", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check graph-replay coverage and break GPU time down by stage and kernel category.
    ///
    /// EXAMPLES:
    ///   stepscope analyze trace.json.gz
    ///   stepscope analyze traces/                      # every trace file in a folder (ranks)
    ///   stepscope analyze t.json.gz --json > report.json
    ///   stepscope analyze t.json.gz --fail-on-incomplete   # exit 3 when replays are missing
    ///   stepscope analyze t.json.gz --strict               # also when a size is unverified
    ///   stepscope analyze t.json.gz --capture capture_traces/bs_32_rank0.json.gz
    #[command(verbatim_doc_comment)]
    Analyze(AnalyzeArgs),
    /// Run the built-in example: a realistic SGLang decode trace, once complete and once with
    /// the ROCm symptom (only the replay before each host sync keeps its kernels).
    ///
    /// EXAMPLES:
    ///   stepscope demo
    ///   stepscope demo --keep demo-traces/     # also keep the two generated traces
    #[command(verbatim_doc_comment)]
    Demo(DemoArgs),
    /// Print the runtime switches that make the profiler record every graph replay on a HIP
    /// runtime, and why.
    ///
    /// Standard output holds only KEY=VALUE lines (export lines with --shell), so
    /// `eval "$(stepscope env --rocm 7.2.0 --shell)"` works; the explanation, with whether
    /// each switch is measured, goes to standard error. A version outside the switch table,
    /// or AMD devices in a trace header without a runtime version, or a header that names no
    /// runtime, gets all three switches (a runtime ignores variables it does not define). A
    /// CUDA trace (by cuda_runtime_version or NVIDIA devices) gets none. Traces of different
    /// runtimes get the switches of all of them, and standard error says they differ.
    ///
    /// Exit codes: 0 done; 2 a --pid with no /proc/PID, a --root that is not a folder, or a
    /// trace that cannot be read (then no variable is printed; the other traces are still
    /// explained).
    ///
    /// EXAMPLES:
    ///   stepscope env --rocm 7.2.0                 # DEBUG_CLR_GRAPH_PACKET_CAPTURE=0
    ///   stepscope env --rocm 7.2 --shell           # no patch release: both 7.2 switches
    ///   eval "$(stepscope env --detect --shell)"   # the HIP runtime a running process maps
    ///   stepscope env --detect --pid 4242          # the runtime that process maps
    ///   stepscope env --detect --python-env /opt/venv   # the one PyTorch ships in torch/lib
    ///   stepscope env --trace t.json.gz            # from a trace's hip_runtime_version
    ///   stepscope env --trace traces/              # every trace in a folder: all their runtimes' switches
    ///   stepscope env --trace a.json.gz --trace b.json.gz
    ///   stepscope env --cuda                       # no switch; Nsight Systems note
    #[command(verbatim_doc_comment)]
    Env(EnvArgs),
    /// Check, render and fingerprint profile and baseline server configs (YAML).
    ///
    /// A profile config carries all three runtime switches; a baseline carries none. The
    /// schema is in configs/README.md.
    ///
    /// EXAMPLES:
    ///   stepscope config check configs/          # exit 3 when a profile lacks a switch or a baseline has one
    ///   stepscope config render configs/profile_sglang.yaml --target shell
    ///   stepscope config render configs/profile_vllm.yaml --target docker
    ///   stepscope config fingerprint configs/profile_sglang.yaml configs/baseline_sglang.yaml
    #[command(verbatim_doc_comment)]
    Config(ConfigArgs),
    /// Load an OpenAI-compatible server (vLLM, SGLang, ATOM) with streaming requests and
    /// measure TTFT, TPOT, ITL, E2E latency and throughput as `vllm bench serve` defines them.
    ///
    /// Sends --num-prompts requests to /v1/completions (/v1/chat/completions with --api chat)
    /// with stream, ignore_eos and max_tokens = --output-len, at a fixed concurrency (a
    /// request starts when one finishes) or at Poisson arrivals (--request-rate). Prompts are
    /// --input-len random token ids from --seed, or words of a local tokenizer.json. Output
    /// token counts come from the server's usage chunk. Percentiles: numpy's linear method.
    ///
    /// Prints a table on stdout; --json writes every request's timings and the summary.
    /// Failed requests are counted by reason (http_status, connect, closed_stream, timeout,
    /// bad_sse, server_error, no_tokens, bad_response) and never hang the run. Ctrl-C stops
    /// it: what was measured is printed and saved, marked partial, and the exit code is 130.
    ///
    /// EXAMPLES:
    ///   stepscope bench --url http://127.0.0.1:8000 --model Qwen/Qwen3-8B --concurrency 64 \
    ///       --input-len 1024 --output-len 1024 --num-prompts 512 --warmup 8 --json out.json
    ///   stepscope bench --model M --request-rate 4 --num-prompts 200     # Poisson arrivals
    ///   stepscope bench --model M --tokenizer tokenizer.json              # ids below its vocabulary
    ///   stepscope bench --model M --api chat --tokenizer tokenizer.json   # chat, text prompts
    ///   stepscope bench --model M --json - > run.json     # JSON on stdout, the table on stderr
    #[command(verbatim_doc_comment)]
    Bench(BenchArgs),
}

/// When to colour the terminal report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Arguments of `analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Trace files (`.json`, `.json.gz`, `.json.zst`) or folders of them; several files are
    /// taken as ranks of one run.
    #[arg(required = true, value_name = "TRACE_OR_DIR")]
    pub inputs: Vec<PathBuf>,
    /// Print the report as JSON (schema in docs/json-schema.md) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write one CSV per table into this folder.
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Gate a pipeline on the verdict: exit 3 when any replay is short, empty or damaged,
    /// or the analysis is partial (`--allow-truncated` hit a break); exit 2 when an input
    /// could not be read or holds no events. Sizes that rest on one replay alone
    /// (`unverified`, "complete as far as the trace shows") pass.
    #[arg(long)]
    pub fail_on_incomplete: bool,
    /// Like --fail-on-incomplete, and also exit 3 when some replay's size is unverified.
    #[arg(long)]
    pub strict: bool,
    /// A capture trace (launches under hipStreamBeginCapture) giving the expected node count.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Kernel category table (TOML) replacing the built-in one.
    #[arg(long, value_name = "FILE")]
    pub categories: Option<PathBuf>,
    /// Also break down the GPU work launched inside each host annotation
    /// (`record_function`, `user_annotation`) whose name matches this regex, per name:
    /// instances, host and GPU-mirror time, kernel time by category and by kernel.
    #[arg(long, value_name = "REGEX", value_parser = parse_range)]
    pub range: Option<RangePattern>,
    /// Analyse the events before a break in a truncated or corrupt file; results are marked partial.
    #[arg(long)]
    pub allow_truncated: bool,
    /// Parse threads (0 = all cores).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub threads: usize,
    /// Kernels listed per stage.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Colour the terminal report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// A `--range` pattern, or what is wrong with it.
fn parse_range(text: &str) -> Result<RangePattern, String> {
    RangePattern::new(text).map_err(|e| {
        format!("not a valid regex: {e}\nhint: Rust `regex` syntax; `(?i)` makes it case-insensitive, `^step` anchors it")
    })
}

/// Arguments of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Decode steps in the generated window.
    #[arg(long, default_value_t = 48, value_name = "N")]
    pub steps: usize,
    /// Keep the two generated traces in this folder.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Colour the terminal report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// Arguments of `env`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("runtime").required(true).args(["rocm", "cuda", "detect", "trace"])))]
pub struct EnvArgs {
    /// A HIP runtime or ROCm release: 7.2.0, 7.2.4, 7.2 (both 7.2 switches), 10.1, 7.11
    /// (therock), develop.
    #[arg(long, value_name = "VERSION")]
    pub rocm: Option<String>,
    /// A CUDA runtime: no switch is needed.
    #[arg(long)]
    pub cuda: bool,
    /// Find the HIP runtime actually loaded: process maps, then a Python environment's
    /// torch/lib, then /opt/rocm/.info/version, then hipconfig --version. Standard error also
    /// lists the libamdhip64 and libroctracer64 copies the process maps (or the environment
    /// ships), each against /opt/rocm's, and flags, with the fix: a copy older than
    /// /opt/rocm's (a PyTorch wheel loads its own from torch/lib, so upgrading /opt/rocm does
    /// not reach it), and a HIP runtime 7.2.0 or 7.2.1 (some kernels of graph replays missing
    /// from profiles; fixed in 7.2.2; reported in public issues, not measured here).
    #[arg(long)]
    pub detect: bool,
    /// Read the runtime from trace headers: files, or folders searched recursively for
    /// *.json, *.json.gz and *.json.zst (as `analyze` takes them); repeatable. HIP traces get
    /// the switches of their hip_runtime_version, CUDA traces none; traces of different
    /// runtimes get the switches of all of them.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub trace: Vec<PathBuf>,
    /// With --detect: the server's process id (default: every process). A pid with no
    /// /proc/PID is an error, not a fall-back to /opt/rocm.
    #[arg(long, value_name = "PID", conflicts_with_all = ["rocm", "cuda", "trace"])]
    pub pid: Option<u32>,
    /// With --detect: a Python environment (venv or conda prefix) whose torch/lib (or
    /// therock _rocm_sdk_core/lib) to read for the HIP runtime and roctracer copies no
    /// process maps; repeatable (default: $VIRTUAL_ENV and $CONDA_PREFIX).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["rocm", "cuda", "trace"])]
    pub python_env: Vec<PathBuf>,
    /// With --detect: read /proc and /opt/rocm below this folder (a container's root file
    /// system); it must be a folder.
    #[arg(long, value_name = "DIR", default_value = "/", conflicts_with_all = ["rocm", "cuda", "trace"])]
    pub root: PathBuf,
    /// Print `export KEY=VALUE` lines.
    #[arg(long)]
    pub shell: bool,
}

/// Arguments of `config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// What to do with the configs.
    #[command(subcommand)]
    pub command: ConfigCommand,
}

/// `config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check that every profile config carries the three switches and no baseline has one.
    ///
    /// Exit codes: 0 all good; 3 a problem was found (each names file, line and key); 2 a
    /// file cannot be read or parsed.
    ///
    /// EXAMPLES:
    ///   stepscope config check configs/
    ///   stepscope config check my_profile.yaml my_baseline.yaml
    #[command(verbatim_doc_comment)]
    Check(ConfigCheckArgs),
    /// Print the exact launch command of a config: export lines and the server command, or
    /// one `docker run`.
    ///
    /// EXAMPLES:
    ///   stepscope config render configs/profile_sglang.yaml > launch.sh && bash launch.sh
    ///   stepscope config render configs/baseline_vllm.yaml --target docker
    #[command(verbatim_doc_comment)]
    Render(ConfigRenderArgs),
    /// Print each config's reuse fingerprint: a hash over what reaches the server at boot
    /// (framework, model, image, launch arguments, environment), not load, windows or output.
    ///
    /// EXAMPLES:
    ///   stepscope config fingerprint configs/profile_sglang.yaml
    ///   stepscope config fingerprint configs/ --explain   # also the hashed document
    #[command(verbatim_doc_comment)]
    Fingerprint(ConfigFingerprintArgs),
}

/// Arguments of `config check`.
#[derive(Debug, Args)]
pub struct ConfigCheckArgs {
    /// Config files, or folders of `.yaml` / `.yml` files.
    #[arg(required = true, value_name = "CONFIG_OR_DIR")]
    pub inputs: Vec<PathBuf>,
}

/// Where a rendered launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LaunchTarget {
    /// A POSIX shell on the host.
    Shell,
    /// `docker run` with the config's image.
    Docker,
}

/// Arguments of `config render`.
#[derive(Debug, Args)]
pub struct ConfigRenderArgs {
    /// The config file.
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// Where the command runs.
    #[arg(long, value_enum, default_value_t = LaunchTarget::Shell)]
    pub target: LaunchTarget,
}

/// Arguments of `config fingerprint`.
#[derive(Debug, Args)]
pub struct ConfigFingerprintArgs {
    /// Config files, or folders of them.
    #[arg(required = true, value_name = "CONFIG_OR_DIR")]
    pub inputs: Vec<PathBuf>,
    /// Also print the canonical document that is hashed.
    #[arg(long)]
    pub explain: bool,
}

/// The API `bench` talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchApi {
    /// /v1/completions: token-id or text prompts.
    Completions,
    /// /v1/chat/completions: one user message (text prompts, needs --tokenizer).
    Chat,
}

/// What `bench` sends as prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PromptFormat {
    /// Token-id arrays of exactly --input-len ids (no tokenizer needed).
    Ids,
    /// Text of --input-len whole-word tokens of --tokenizer (the server re-tokenizes it).
    Text,
}

/// Arguments of `bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Base URL of the server (http only).
    #[arg(long, default_value = "http://127.0.0.1:8000", value_name = "URL")]
    pub url: String,
    /// The model the server serves: the `model` field of every request.
    #[arg(long, value_name = "NAME")]
    pub model: String,
    /// The API.
    #[arg(long, value_enum, default_value_t = BenchApi::Completions)]
    pub api: BenchApi,
    /// Requests in flight at most; a request starts when one finishes.
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// Prompt tokens per request.
    #[arg(long, default_value_t = 1024, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub input_len: u32,
    /// Output tokens per request (max_tokens, with ignore_eos).
    #[arg(long, default_value_t = 1024, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub output_len: u32,
    /// Measured requests.
    #[arg(long, default_value_t = 512, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub num_prompts: u32,
    /// Poisson arrivals at this many requests per second, still at most --concurrency in
    /// flight; `inf` (default): as fast as the concurrency allows.
    #[arg(long, value_name = "PER_SECOND")]
    pub request_rate: Option<f64>,
    /// Requests run before the measurement, with prompts of their own, not reported.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub warmup: u32,
    /// Seed of prompts and arrivals: the same seed sends the same prompts.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Token ids are drawn from [0, N) [default: 2048, or the size of --tokenizer].
    #[arg(long, value_name = "N", conflicts_with = "tokenizer", value_parser = clap::value_parser!(u32).range(1..))]
    pub vocab_size: Option<u32>,
    /// A local tokenizer.json: ids are drawn below its vocabulary size, and text prompts
    /// are made of its whole-word tokens.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// Prompts as token ids or text [default: ids; text with --api chat].
    #[arg(long, value_enum)]
    pub prompt_format: Option<PromptFormat>,
    /// Longest time one request may take, from sending to the end of its stream.
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    pub timeout_s: f64,
    /// Write the JSON document (settings, summary, every request) to FILE; `-`: to stdout,
    /// with the table on stderr.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}
