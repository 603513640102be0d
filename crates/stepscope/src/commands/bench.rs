//! `stepscope bench`: load an OpenAI-compatible server and print TTFT, TPOT, ITL, E2E and
//! throughput; `--json` keeps every request. The work is in `stepscope_load`; this
//! module resolves flags, drives the runtime, draws the progress bar and renders the table.

use super::outputs::{Output, refuse_overwrites};
use crate::Outcome;
use crate::app::hinted;
use crate::output;
use anyhow::Context as _;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::thread::JoinHandle;
use std::time::Duration as StdDuration;
use stepscope_load::{
    Api, BenchOptions, BenchProgress, BenchReport, LatencyStats, MonotonicClock, PromptSource, Slo,
    WordVocabulary, run_benchmark,
};
use stepscope_model::text::escape_controls;
use stepscope_serving::LoadSettings;
use stepscope_serving::config::load_config;
use stepscope_serving::launch::default_port;

/// Everything `bench` needs, resolved from the arguments.
#[derive(Debug)]
pub struct BenchSettings {
    /// What the load generator does.
    pub options: BenchOptions,
    /// Where the JSON goes (`-`: stdout).
    pub json: Option<PathBuf>,
    /// Draw a progress bar (when stderr is a terminal).
    pub progress: bool,
}

impl BenchSettings {
    /// Resolves arguments; every field is destructured so a new flag cannot be ignored.
    pub fn resolve(args: BenchArgs) -> anyhow::Result<Self> {
        let BenchArgs {
            url,
            model,
            api,
            concurrency,
            input_len,
            output_len,
            num_prompts,
            config,
            request_rate,
            warmup,
            seed,
            vocab_size,
            tokenizer,
            prompt_format,
            timeout_s,
            slo,
            json,
            no_progress,
        } = args;
        if let Some(path) = &json {
            check_json_output(path, [tokenizer.as_deref(), config.as_deref()])?;
        }
        if !(timeout_s.is_finite() && timeout_s > 0.0) {
            anyhow::bail!("`--timeout-s {timeout_s}` must be a positive number of seconds");
        }
        let request_rate = match request_rate {
            Some(rate) if rate.is_infinite() && rate > 0.0 => None,
            Some(rate) if !(rate.is_finite() && rate > 0.0) => {
                anyhow::bail!("`--request-rate {rate}` must be a positive number or `inf`")
            }
            rate => rate,
        };
        let api = match api {
            BenchApi::Completions => Api::Completions,
            BenchApi::Chat => Api::Chat,
        };
        let base = LoadBase::from_config(config.as_deref())?;
        let mut options = BenchOptions::default();
        options.prompts = prompt_source(api, prompt_format, vocab_size, tokenizer.as_deref())?;
        options.base_url = url.unwrap_or(base.url);
        // Empty: the first model of the server's `GET /v1/models`.
        options.model = model.or(base.model).unwrap_or_default();
        options.api = api;
        options.concurrency = concurrency.unwrap_or(base.load.concurrency) as usize;
        options.input_len = input_len.unwrap_or(base.load.input_len) as usize;
        options.output_len = output_len.unwrap_or(base.load.output_len) as usize;
        options.num_prompts = num_prompts.unwrap_or(base.load.num_prompts) as usize;
        options.request_rate = request_rate;
        options.warmup = warmup as usize;
        options.seed = seed;
        options.timeout = StdDuration::from_secs_f64(timeout_s);
        options.slo = slo.unwrap_or_default();
        Ok(Self {
            options,
            json,
            progress: !no_progress,
        })
    }
}

/// What flags not given fall back to: a config's load, model and server, else the defaults.
struct LoadBase {
    url: String,
    model: Option<String>,
    load: LoadSettings,
}

impl LoadBase {
    fn from_config(path: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = path else {
            return Ok(LoadBase {
                url: "http://127.0.0.1:8000".to_owned(),
                model: None,
                load: LoadSettings {
                    concurrency: 64,
                    input_len: 1024,
                    output_len: 1024,
                    num_prompts: 512,
                },
            });
        };
        let file = load_config(path)?;
        let config = file.config;
        let port = config
            .server
            .port
            .unwrap_or_else(|| default_port(config.framework));
        // A server listening on every address is reached on loopback.
        let host = match config.server.host.as_deref() {
            None | Some("0.0.0.0") | Some("::") | Some("") => "127.0.0.1",
            Some(host) => host,
        };
        Ok(LoadBase {
            url: format!("http://{host}:{port}"),
            model: Some(config.model),
            load: config.load,
        })
    }
}

/// Refuses a `--json PATH` that is one of the files the run reads (the tokenizer, the
/// config), then checks that it can be written.
fn check_json_output(path: &Path, inputs: [Option<&Path>; 2]) -> anyhow::Result<()> {
    if path != Path::new("-") {
        let inputs: Vec<PathBuf> = inputs
            .into_iter()
            .flatten()
            .map(Path::to_path_buf)
            .collect();
        refuse_overwrites(&[Output::file("--json", path)], &inputs)?;
    }
    check_writable(path)
}

/// Fails unless `--json PATH` can be written, before any request is sent (`-`: stdout).
/// Opening does not truncate a file that exists; one made by the check is removed again.
fn check_writable(path: &Path) -> anyhow::Result<()> {
    if path == Path::new("-") {
        return Ok(());
    }
    let existed = path.exists();
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path);
    match opened {
        Ok(_) if !existed => {
            let _ = std::fs::remove_file(path);
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(error) => Err(hinted(
            format!("Cannot write the JSON to `{}`: {error}", path.display()),
            "give a file in an existing, writable folder, or `--json -` for stdout",
        )),
    }
}

fn prompt_source(
    api: Api,
    format: Option<PromptFormat>,
    vocab_size: Option<u32>,
    tokenizer: Option<&Path>,
) -> anyhow::Result<PromptSource> {
    let format = format.unwrap_or(match api {
        Api::Chat => PromptFormat::Text,
        _ => PromptFormat::Ids,
    });
    if api == Api::Chat && format == PromptFormat::Ids {
        return Err(hinted(
            "`--api chat` sends text, not token ids",
            "drop `--prompt-format ids`, and give `--tokenizer tokenizer.json`",
        ));
    }
    let words = tokenizer.map(WordVocabulary::load).transpose()?;
    Ok(match (format, words) {
        (PromptFormat::Text, Some(words)) => PromptSource::Text(Arc::new(words)),
        (PromptFormat::Text, None) => {
            return Err(hinted(
                "Text prompts need a tokenizer",
                "add `--tokenizer path/to/tokenizer.json` (the model's own, from its folder)",
            ));
        }
        (PromptFormat::Ids, words) => PromptSource::TokenIds {
            vocab_size: words.map_or(vocab_size.unwrap_or(2048), |w| w.vocab_size()),
        },
    })
}

/// `stepscope bench`.
pub fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    let settings = match BenchSettings::resolve(args) {
        Ok(settings) => settings,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to start the async runtime")?;
    let progress = Arc::new(BenchProgress::default());
    let display = ProgressDisplay::start(Arc::clone(&progress), settings.progress);
    let clock = MonotonicClock::new();
    let signal = Arc::new(AtomicI32::new(0));
    let result = runtime.block_on(async {
        let stop = stop_signal(Arc::clone(&signal));
        run_benchmark(&settings.options, &clock, &progress, stop).await
    });
    display.finish();
    let report = match result {
        Ok(report) => report,
        Err(error) => {
            output::print_error(&anyhow::Error::new(error));
            return Ok(Outcome::InputError);
        }
    };
    emit(&report, settings.json.as_deref())?;
    if report.partial {
        // 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP: 128 + the signal, as a shell
        // reports it.
        return Ok(match signal.load(Ordering::SeqCst) {
            0 | 2 => Outcome::Interrupted,
            other => Outcome::Signalled(other),
        });
    }
    if report.summary.requests_completed == 0 {
        output::print_error(&hinted(
            format!(
                "No measured request completed ({} failed)",
                report.summary.requests_failed
            ),
            "the failures above say why; the first of each reason is quoted",
        ));
        return Ok(Outcome::InputError);
    }
    Ok(Outcome::Success)
}

/// Resolves on the first SIGINT (Ctrl-C), SIGTERM or SIGHUP (the terminal closed), storing
/// its number in `which`. The handlers are installed at once (in the runtime), so a signal
/// that comes before the run polls this is not lost; a handler that cannot be installed
/// never fires.
fn stop_signal(which: Arc<AtomicI32>) -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        async fn recv(handler: &mut Option<Signal>) {
            match handler {
                Some(handler) => {
                    handler.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let mut interrupt = signal(SignalKind::interrupt()).ok();
        let mut terminate = signal(SignalKind::terminate()).ok();
        let mut hangup = signal(SignalKind::hangup()).ok();
        async move {
            let number = tokio::select! {
                () = recv(&mut interrupt) => 2,
                () = recv(&mut terminate) => 15,
                () = recv(&mut hangup) => 1,
            };
            which.store(number, Ordering::SeqCst);
        }
    }
    #[cfg(not(unix))]
    async move {
        let _ = &which;
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Prints the table (on stderr when the JSON goes to stdout) and writes the JSON.
fn emit(report: &BenchReport, json: Option<&Path>) -> anyhow::Result<()> {
    let table = render_table(report);
    match json {
        Some(path) if path == Path::new("-") => {
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(table.as_bytes())?;
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            report
                .write_json(&mut stdout)
                .map_err(std::io::Error::from)?;
            stdout.write_all(b"\n")?;
            stdout.flush()?;
        }
        Some(path) => {
            output::print(&table)?;
            // Whole or not at all: a stopped run or a full disk never leaves half a JSON.
            stepscope_report::atomic::write_with(path, |writer| {
                report.write_json(writer).map_err(std::io::Error::from)
            })?;
            let mut stderr = std::io::stderr().lock();
            writeln!(stderr, "wrote {}", path.display())?;
        }
        None => output::print(&table)?,
    }
    Ok(())
}

/// The end-of-run table, with the definitions of `vllm bench serve`.
pub fn render_table(report: &BenchReport) -> String {
    let mut out = heading(report);
    out.push_str(&totals(report));
    out.push_str(&latency_table(report));
    out
}

/// What was run, and whether it was stopped.
fn heading(report: &BenchReport) -> String {
    let (settings, summary) = (&report.settings, &report.summary);
    let rate = settings
        .request_rate
        .map_or_else(|| "inf".to_owned(), |rate| format!("{rate}/s"));
    let mut out = format!(
        "stepscope bench: {} (model {})\n  concurrency {}, request rate {rate}, input {} tokens ({}), output {} tokens, warmup {}, seed {}\n",
        escape_controls(&settings.url),
        escape_controls(&settings.model),
        settings.concurrency,
        settings.input_len,
        settings.prompt_format,
        settings.output_len,
        settings.warmup,
        settings.seed
    );
    if report.partial {
        let _ = writeln!(
            out,
            "PARTIAL: stopped after {:.2} s; {} requests in flight were cancelled (what they had streamed is in the JSON), {} not started",
            summary.duration_s,
            summary.requests_cancelled,
            (settings.num_prompts as u64).saturating_sub(summary.requests_started)
        );
    }
    out.push('\n');
    out
}

/// Counts, tokens and throughput.
fn totals(report: &BenchReport) -> String {
    let summary = &report.summary;
    let mut out = String::new();
    let mut line = |label: &str, value: String| {
        let _ = writeln!(out, "{label:<26}{value}");
    };
    let counts = (summary.requests_completed, summary.requests_failed);
    line(
        "requests ok / failed",
        format!("{} / {}", counts.0, counts.1),
    );
    for (kind, count) in &summary.failures {
        let example = summary
            .failure_examples
            .get(kind)
            .map_or_else(String::new, |detail| format!("  e.g. {}", shorten(detail)));
        line("", format!("{}: {count}{example}", kind.as_str()));
    }
    if summary.warmup_requests > 0 {
        let warmup = (summary.warmup_requests, summary.warmup_failed);
        line(
            "warmup requests",
            format!("{} ({} failed)", warmup.0, warmup.1),
        );
    }
    line("duration", format!("{:.3} s", summary.duration_s));
    line("input tokens", summary.input_tokens.to_string());
    line("output tokens", output_tokens(summary));
    if let Some(flagged) = usage_flag(summary) {
        line("server usage", flagged);
    }
    let throughput = &summary.throughput;
    line(
        "request throughput",
        format!("{:.2} req/s", throughput.requests_per_s),
    );
    if let Some(goodput) = &summary.goodput {
        line(
            "request goodput",
            format!(
                "{:.2} req/s  ({} of {} within {})",
                goodput.requests_per_s,
                goodput.good_requests,
                summary.requests_completed,
                goodput.slo
            ),
        );
    }
    line(
        "output token throughput",
        format!("{:.1} tok/s", throughput.output_tokens_per_s),
    );
    line(
        "total token throughput",
        format!("{:.1} tok/s", throughput.total_tokens_per_s),
    );
    out
}

/// The output tokens and how they were counted.
fn output_tokens(summary: &stepscope_load::BenchSummary) -> String {
    let source = match summary.output_tokens_from_chunks {
        0 => "streamed token ids".to_owned(),
        chunks => format!("{chunks} requests counted by chunks with text"),
    };
    format!("{}  ({source})", summary.output_tokens)
}

/// The server's own token counts, when they disagree with what streamed.
fn usage_flag(summary: &stepscope_load::BenchSummary) -> Option<String> {
    let flagged = summary.usage_over_max_tokens + summary.usage_disagreeing;
    if flagged == 0 {
        return None;
    }
    let total = summary.usage_output_tokens.unwrap_or(0);
    let example = summary
        .usage_example
        .as_deref()
        .map_or_else(String::new, |e| format!("; e.g. {}", shorten(e)));
    Some(format!(
        "DISAGREES: {total} tokens claimed, {flagged} requests flagged ({} over max_tokens){example}; the streamed count is used",
        summary.usage_over_max_tokens
    ))
}

/// A failure's detail on one line of the table: the first 100 characters, control
/// characters (a line break too) escaped.
fn shorten(detail: &str) -> String {
    let line = escape_controls(detail).into_owned();
    match line.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

fn latency_table(report: &BenchReport) -> String {
    let summary = &report.summary;
    let mut out = format!(
        "\n{:<14}{:>12}{:>12}{:>12}{:>12}{:>12}\n",
        "latency (ms)", "mean", "median", "p90", "p95", "p99"
    );
    let rows = [
        ("TTFT", summary.ttft_ms),
        ("TPOT", summary.tpot_ms),
        ("ITL", summary.itl_ms),
        ("E2E", summary.e2e_ms),
    ];
    for (name, stats) in rows {
        let cells = stats.map_or_else(
            || format!("{:>12}", "–").repeat(5),
            |LatencyStats {
                 mean,
                 median,
                 p90,
                 p95,
                 p99,
             }| {
                format!("{mean:>12.3}{median:>12.3}{p90:>12.3}{p95:>12.3}{p99:>12.3}")
            },
        );
        let _ = writeln!(out, "{name:<14}{cells}");
    }
    let _ = writeln!(out, "percentiles: {}", summary.percentile_method);
    out
}

/// A progress bar on stderr, fed from the run's counters by a ticker thread.
struct ProgressDisplay {
    bar: ProgressBar,
    done: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl ProgressDisplay {
    fn start(progress: Arc<BenchProgress>, enabled: bool) -> Self {
        let visible = enabled && std::io::stderr().is_terminal();
        let bar = if visible {
            ProgressBar::new(0)
        } else {
            ProgressBar::hidden()
        };
        let style = ProgressStyle::with_template(
            "{spinner} {prefix} [{bar:30}] {pos}/{len} requests {msg} ({elapsed})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style.progress_chars("=> "));
        let done = Arc::new(AtomicBool::new(false));
        let ticker = visible.then(|| {
            let (bar, done) = (bar.clone(), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    tick(&bar, &progress);
                    std::thread::sleep(StdDuration::from_millis(100));
                }
            })
        });
        Self { bar, done, ticker }
    }

    fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
        self.bar.finish_and_clear();
    }
}

fn tick(bar: &ProgressBar, progress: &BenchProgress) {
    bar.set_length(progress.total());
    bar.set_position(progress.completed() + progress.failed());
    bar.set_prefix(if progress.is_warming_up() {
        "warmup"
    } else {
        "bench"
    });
    let elapsed = bar.elapsed().as_secs_f64();
    let rate = if elapsed > 0.0 {
        progress.output_tokens() as f64 / elapsed
    } else {
        0.0
    };
    bar.set_message(format!(
        "· {} in flight · {} failed · {rate:.0} tok/s",
        progress
            .started()
            .saturating_sub(progress.completed() + progress.failed()),
        progress.failed()
    ));
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

/// `bench`'s line in its parent's command list.
const ABOUT: &str = "Load a server and measure TTFT, TPOT, ITL, E2E latency and throughput";

/// `bench --help`: each paragraph is one line, wrapped to the terminal's width.
const LONG_ABOUT: &str = "\
Load an OpenAI-compatible server (vLLM, SGLang, ATOM) with streaming requests and measure \
TTFT, TPOT, ITL, E2E latency and throughput as `vllm bench serve` defines them.

Sends --num-prompts requests to /v1/completions (/v1/chat/completions with --api chat) \
with stream, ignore_eos and max_tokens = --output-len, at a fixed concurrency (a request \
starts when one finishes) or at Poisson arrivals (--request-rate). Prompts are --input-len \
random token ids from --seed, or words of a local tokenizer.json. Output tokens are \
counted from the stream (the token ids vLLM lists with return_token_ids, else chunks with \
text); the server's usage is checked against the count, never used for it. Percentiles: \
numpy's linear method.

Prints a table on stdout; --json writes every request's timings and the summary. Failed \
requests are counted by reason (http_status, connect, closed_stream, timeout, bad_sse, \
server_error, no_tokens, bad_response) and never hang the run. Ctrl-C, SIGTERM or SIGHUP \
stops it: what was measured is printed and saved, marked partial.

Exit codes: 0 the run ended with at least one completed request (other failures \
included: read the table); 2 bad flags, a length beyond its bound, an unwritable or input \
--json path, an unreadable tokenizer, no model found, a failed first request, or no \
measured request completed (the table and JSON are written first); 130/143/129 stopped by \
SIGINT/SIGTERM/SIGHUP; 1 internal error.

EXAMPLES:
  stepscope bench --url http://127.0.0.1:8000 --model Qwen/Qwen3-8B \\
      --concurrency 64 --input-len 1024 --output-len 1024 --num-prompts 512 \\
      --warmup 8 --json out.json
  # Poisson arrivals
  stepscope bench --model M --request-rate 4 --num-prompts 200
  # ids below its vocabulary
  stepscope bench --model M --tokenizer tokenizer.json
  # chat, text prompts
  stepscope bench --model M --api chat --tokenizer tokenizer.json
  # JSON on stdout, the table on stderr
  stepscope bench --model M --json - > run.json";

/// Arguments of `bench`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct BenchArgs {
    /// Base URL of the server (http only); the OpenAI form ending in `/v1` works too
    /// [default: the --config server's port on 127.0.0.1, else http://127.0.0.1:8000].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The model the server serves: the `model` field of every request [default: the first
    /// model of the server's GET /v1/models].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The API.
    #[arg(long, value_enum, default_value_t = BenchApi::Completions)]
    pub api: BenchApi,
    /// Requests in flight at most; a request starts when one finishes [default: the
    /// --config load's, else 64].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: Option<u32>,
    /// Prompt tokens per request, at most 1048576; with --output-len, at most the model's
    /// max_model_len when GET /v1/models reports it [default: the --config load's, else 1024].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub input_len: Option<u32>,
    /// Output tokens per request (max_tokens, with ignore_eos), at most 1048576 [default:
    /// the --config load's, else 1024].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub output_len: Option<u32>,
    /// Measured requests [default: the --config load's, else 512].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub num_prompts: Option<u32>,
    /// A profile or baseline config (configs/*.yaml): its `load` (concurrency, input_len,
    /// output_len, num_prompts), its `model` and its server's port; flags given win.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
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
    /// Objectives for goodput, in ms: requests per second whose every given metric is within
    /// its objective (vllm bench serve --goodput), e.g. `ttft_ms=500,tpot_ms=50,e2el_ms=20000`.
    #[arg(long, value_name = "METRIC=MS,...", value_parser = parse_slo)]
    pub slo: Option<Slo>,
    /// Write the JSON document (settings, summary, every request) to FILE, checked before
    /// the run; `-`: to stdout, with the table on stderr.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// `--slo` text, with the parser's message for clap.
fn parse_slo(text: &str) -> Result<Slo, String> {
    text.parse()
}
