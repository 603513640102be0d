//! Command-line arguments. Doc comments are the help text.

use crate::commands::{
    AnalyzeArgs, BenchArgs, ConfigArgs, DemoArgs, DiffArgs, EnvArgs, GradeArgs, ProfileArgs,
};
use clap::{Parser, Subcommand, ValueEnum};

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
    ///   # every trace file in a folder (ranks)
    ///   stepscope analyze traces/
    ///   # rocprofv3's database (also CSV, JSON)
    ///   stepscope analyze node-7/1234_results.db
    ///   # rocmProfileData, Nsight Systems export
    ///   stepscope analyze run.rpd run.sqlite
    ///   stepscope analyze t.json.gz --json > report.json
    ///   # exit 3 when replays are missing
    ///   stepscope analyze t.json.gz --fail-on-incomplete
    ///   # also when a size is unverified
    ///   stepscope analyze t.json.gz --strict
    ///   stepscope analyze t.json.gz --capture capture_traces/bs_32_rank0.json.gz
    #[command(verbatim_doc_comment)]
    Analyze(AnalyzeArgs),
    /// Compare two runs, before and after a change: replay coverage of each, then GPU time
    /// per stage, kernel category and kernel (largest changes first), and the kernels that
    /// appeared or vanished.
    ///
    /// Each side is a trace file, a folder of rank files (combined, as `analyze DIR`), or a
    /// `stepscope profile` run directory (the rank traces of all its windows, combined; the
    /// report names the windows). Both are analysed with exactly the code of `analyze`.
    ///
    /// A stage whose time lacks a side's unrecorded graph replays (verdict incomplete,
    /// damaged, mistimed, unavailable, or an unreadable file) is REFUSED: not compared, with
    /// the side, its verdict and counts, because its lost kernels would read as a speedup
    /// (lost in BASE: a slowdown).
    /// That is decode, and the stage of every replay that lost kernels (e.g. vLLM's mixed
    /// steps). Other stages are always compared; `unverified` sides are compared, with a
    /// note. --force compares refused stages anyway, marked forced.
    ///
    /// Each compared stage also gets its GPU time per step: the median step on each side and
    /// the typical ratio of a new step to a base step (Hodges-Lehmann) with the 95 %
    /// interval of the Mann-Whitney test, so a change can be told from step-to-step noise.
    ///
    /// Exit codes: 0 compared; 3 a stage was refused (so a pipeline notices; --force makes
    /// it 0), or, with --fail-on-regression PCT, a stage's GPU time per step grew by more
    /// than PCT % across its whole interval; 2 bad input (a missing path, an unreadable
    /// file, a profile run with no traces).
    ///
    /// EXAMPLES:
    ///   stepscope diff before.json.gz after.json.gz
    ///   # folders of rank files
    ///   stepscope diff runs/before/ runs/after/
    ///   # profile run directories
    ///   stepscope diff results/20260101-run1 results/20260102-run2
    ///   stepscope diff a.json.gz b.json.gz --json > diff.json
    ///   stepscope diff a.json.gz b.json.gz --top 25
    ///   # compare refused stages anyway
    ///   stepscope diff a.json.gz b.json.gz --force
    ///   # exit 3 when a stage is slower per step by more than 5 % beyond noise
    ///   stepscope diff a.json.gz b.json.gz --fail-on-regression 5
    #[command(verbatim_doc_comment)]
    Diff(DiffArgs),
    /// Run the built-in example: a realistic SGLang decode trace, once complete and once with
    /// the ROCm symptom (only the replay before each host sync keeps its kernels).
    ///
    /// EXAMPLES:
    ///   stepscope demo
    ///   # also keep the two generated traces
    ///   stepscope demo --keep demo-traces/
    ///   # also write stepscope-demo.html
    ///   stepscope demo --html
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
    ///   # DEBUG_CLR_GRAPH_PACKET_CAPTURE=0
    ///   stepscope env --rocm 7.2.0
    ///   # no patch release: both 7.2 switches
    ///   stepscope env --rocm 7.2 --shell
    ///   # the HIP runtime a running process maps
    ///   eval "$(stepscope env --detect --shell)"
    ///   # the runtime that process maps
    ///   stepscope env --detect --pid 4242
    ///   # the one PyTorch ships in torch/lib
    ///   stepscope env --detect --python-env /opt/venv
    ///   # from a trace's hip_runtime_version
    ///   stepscope env --trace t.json.gz
    ///   # every trace in a folder: all their runtimes' switches
    ///   stepscope env --trace traces/
    ///   stepscope env --trace a.json.gz --trace b.json.gz
    ///   # no switch; Nsight Systems note
    ///   stepscope env --cuda
    #[command(verbatim_doc_comment)]
    Env(EnvArgs),
    /// Check, render and fingerprint profile and baseline server configs (YAML).
    ///
    /// A profile config carries all three runtime switches; a baseline carries none. The
    /// schema is in configs/README.md.
    ///
    /// EXAMPLES:
    ///   # exit 3 when a profile lacks a switch or a baseline has one
    ///   stepscope config check configs/
    ///   stepscope config render configs/profile_sglang.yaml --target shell
    ///   stepscope config render configs/profile_vllm.yaml --target docker
    ///   stepscope config fingerprint configs/profile_sglang.yaml \
    ///       configs/baseline_sglang.yaml
    #[command(verbatim_doc_comment)]
    Config(ConfigArgs),
    /// Load an OpenAI-compatible server (vLLM, SGLang, ATOM) with streaming requests and
    /// measure TTFT, TPOT, ITL, E2E latency and throughput as `vllm bench serve` defines them.
    ///
    /// Sends --num-prompts requests to /v1/completions (/v1/chat/completions with --api chat)
    /// with stream, ignore_eos and max_tokens = --output-len, at a fixed concurrency (a
    /// request starts when one finishes) or at Poisson arrivals (--request-rate). Prompts are
    /// --input-len random token ids from --seed, or words of a local tokenizer.json. Output
    /// tokens are counted from the stream (the token ids vLLM lists with return_token_ids,
    /// else chunks with text); the server's usage is checked against the count, never used
    /// for it. Percentiles: numpy's linear method.
    ///
    /// Prints a table on stdout; --json writes every request's timings and the summary.
    /// Failed requests are counted by reason (http_status, connect, closed_stream, timeout,
    /// bad_sse, server_error, no_tokens, bad_response) and never hang the run. Ctrl-C or
    /// SIGTERM stops it: what was measured is printed and saved, marked partial, and the exit
    /// code is 130 (Ctrl-C) or 143 (SIGTERM).
    ///
    /// EXAMPLES:
    ///   stepscope bench --url http://127.0.0.1:8000 --model Qwen/Qwen3-8B \
    ///       --concurrency 64 --input-len 1024 --output-len 1024 --num-prompts 512 \
    ///       --warmup 8 --json out.json
    ///   # Poisson arrivals
    ///   stepscope bench --model M --request-rate 4 --num-prompts 200
    ///   # ids below its vocabulary
    ///   stepscope bench --model M --tokenizer tokenizer.json
    ///   # chat, text prompts
    ///   stepscope bench --model M --api chat --tokenizer tokenizer.json
    ///   # JSON on stdout, the table on stderr
    ///   stepscope bench --model M --json - > run.json
    #[command(verbatim_doc_comment)]
    Bench(BenchArgs),
    /// Grade a change: KEEP, REVERT or INCONCLUSIVE, beyond the noise between
    /// benchmark phases, for a candidate that did the same work, correctly.
    ///
    /// Sides: two running servers' URLs or two baseline configs (run live: the
    /// phases A B B A, graded where the phases a side double, stopped at the first
    /// KEEP or REVERT), or two folders of saved phases (`stepscope bench --json`
    /// documents and output probes), graded offline. Profile configs and
    /// `stepscope profile` runs are refused: their switches change replay speed.
    ///
    /// The speed is output tokens per second, counted from what streamed: the
    /// typical ratio of a candidate phase to a base phase (Hodges-Lehmann) with
    /// the interval of the Mann-Whitney test. KEEP needs the whole interval above
    /// +--min-effect and every check passed; REVERT when it lies below
    /// -(--min-effect) or a check fails beyond noise:
    ///   outputs    fixed prompts at temperature 0 answered otherwise than by the
    ///              base (--allow-output-change shows it only)
    ///   failures   more failed requests than the base beyond chance, or more
    ///              than --max-failure-rate (at 0.5 % by default, never KEEP)
    ///   --slo      an objective the base meets, broken beyond noise
    ///   latency    TTFT, TPOT, ITL or E2E (median, p99) slower beyond noise by
    ///              more than --max-regression (5 % median, 10 % p99)
    /// With --expect-kernel or --expect-env, a candidate that does not show the
    /// kernel in a profile window or the variable in its processes did not
    /// engage the change: INCONCLUSIVE, whatever its speed. Sides that ran
    /// different work (model, lengths, load, prompts, sampling) are never graded
    /// (exit 2, naming each difference).
    ///
    /// Exit codes: 0 KEEP; 3 REVERT; 5 INCONCLUSIVE; 2 bad input or sides that
    /// cannot be compared; 4 a live run failed (boot, server, load, a stall);
    /// 130 interrupted (143 SIGTERM); 1 internal error.
    ///
    /// EXAMPLES:
    ///   stepscope grade phases/base/ phases/candidate/
    ///   stepscope grade base/ cand/ --min-effect 5 --slo ttft_ms.p99=500
    ///   stepscope grade base/ cand/ --json > grade.json
    ///   # live: two running servers, at most 30 minutes
    ///   stepscope grade http://a:8000 http://b:8000 --concurrency 32 \
    ///       --max-time 30m --out run/
    ///   # live: two baseline configs, booted in turns
    ///   stepscope grade baseline_vllm.yaml candidate_vllm.yaml
    #[command(verbatim_doc_comment)]
    Grade(GradeArgs),
    /// Profile a live server end to end: boot it from a profile config (or attach with
    /// --url), load it steadily at the config's concurrency, record each profile window
    /// through the framework's HTTP API, collect the traces, check every replay and break
    /// them down per stage (as `analyze`), and measure throughput with the profiler off and
    /// on (and on a --baseline server). Every server it starts is stopped (SIGTERM, then
    /// SIGKILL of its process group) on success, error, Ctrl-C or SIGTERM.
    ///
    /// Writes a run directory (results.json, schema in docs/profile-results.md; report.txt;
    /// the config; server.log; windows/N-SPEC/ with the traces and their analysis; bench/
    /// with every load phase).
    ///
    /// Exit codes: 0 done; 2 a bad config or flag, or an attach refused (fingerprint
    /// unknown or different); 3 a window's verdict fails --fail-on-incomplete/--strict;
    /// 4 a phase failed (server, window, trace files, load: results.json says which);
    /// 130/143 stopped by SIGINT/SIGTERM (what was done is kept).
    ///
    /// EXAMPLES:
    ///   stepscope profile configs/profile_vllm.yaml
    ///   # attach
    ///   stepscope profile configs/profile_vllm.yaml --url http://HOST:8000
    ///   stepscope profile configs/profile_sglang.yaml \
    ///       --window steps:128 --window by-stage:4 --window single-step
    ///   stepscope profile configs/profile_vllm.yaml --baseline \
    ///       configs/baseline_vllm.yaml
    ///   stepscope profile configs/profile_vllm.yaml --fail-on-incomplete --phases 0
    #[command(verbatim_doc_comment)]
    Profile(ProfileArgs),
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
