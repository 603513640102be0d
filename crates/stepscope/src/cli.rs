//! Command-line arguments. Doc comments are the help text.

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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
    ///   stepscope analyze t.json.gz --capture capture_traces/bs_32_rank0.json.gz
    Analyze(AnalyzeArgs),
    /// Run the built-in example: a realistic SGLang decode trace, once complete and once with
    /// the ROCm symptom (only the replay before each host sync keeps its kernels).
    ///
    /// EXAMPLES:
    ///   stepscope demo
    ///   stepscope demo --keep demo-traces/     # also keep the two generated traces
    Demo(DemoArgs),
    /// Print the runtime switches that make the profiler record every graph replay on a HIP
    /// runtime, and why.
    ///
    /// Standard output holds only KEY=VALUE lines (export lines with --shell), so
    /// `eval "$(stepscope env --rocm 7.2.0 --shell)"` works; the explanation, with whether
    /// each switch is measured, goes to standard error. A version outside the switch table
    /// gets all three switches (a runtime ignores variables it does not define).
    ///
    /// EXAMPLES:
    ///   stepscope env --rocm 7.2.0                 # DEBUG_CLR_GRAPH_PACKET_CAPTURE=0
    ///   stepscope env --rocm 7.2 --shell           # no patch release: both 7.2 switches
    ///   eval "$(stepscope env --detect --shell)"   # the HIP runtime a running process maps
    ///   stepscope env --detect --pid 4242          # the runtime that process maps
    ///   stepscope env --detect --python-env /opt/venv   # the one PyTorch ships in torch/lib
    ///   stepscope env --trace t.json.gz            # from a trace's hip_runtime_version
    ///   stepscope env --cuda                       # no switch; Nsight Systems note
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
    Config(ConfigArgs),
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
    /// Exit with code 3 when any replay is short or empty.
    #[arg(long)]
    pub fail_on_incomplete: bool,
    /// A capture trace (launches under hipStreamBeginCapture) giving the expected node count.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Kernel category table (TOML) replacing the built-in one.
    #[arg(long, value_name = "FILE")]
    pub categories: Option<PathBuf>,
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
    /// torch/lib, then /opt/rocm/.info/version, then hipconfig --version.
    #[arg(long)]
    pub detect: bool,
    /// Read the runtime from a trace header (hip_runtime_version).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// With --detect: the server's process id (default: every process).
    #[arg(long, value_name = "PID", conflicts_with_all = ["rocm", "cuda", "trace"])]
    pub pid: Option<u32>,
    /// With --detect: a Python environment (venv or conda prefix) whose torch/lib to read;
    /// repeatable (default: $VIRTUAL_ENV and $CONDA_PREFIX).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["rocm", "cuda", "trace"])]
    pub python_env: Vec<PathBuf>,
    /// With --detect: read /proc and /opt/rocm below this folder (a container's root file system).
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
    Check(ConfigCheckArgs),
    /// Print the exact launch command of a config: export lines and the server command, or
    /// one `docker run`.
    ///
    /// EXAMPLES:
    ///   stepscope config render configs/profile_sglang.yaml > launch.sh && bash launch.sh
    ///   stepscope config render configs/baseline_vllm.yaml --target docker
    Render(ConfigRenderArgs),
    /// Print each config's reuse fingerprint: a hash over what reaches the server at boot
    /// (framework, model, image, launch arguments, environment), not load, windows or output.
    ///
    /// EXAMPLES:
    ///   stepscope config fingerprint configs/profile_sglang.yaml
    ///   stepscope config fingerprint configs/ --explain   # also the hashed document
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
