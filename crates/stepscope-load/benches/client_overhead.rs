//! Client overhead of the load generator: how many output tokens per second stepscope's
//! client sustains on one core, and how far its chunk times are from the server's send
//! times, against the in-process instant server (`stepscope-test-server`).
//!
//! ```text
//! cargo bench -p stepscope-load --bench client_overhead            # both measurements
//! cargo bench -p stepscope-load --bench client_overhead -- serve --port 18123 --seconds 600
//! ```
//!
//! The measurement pins the instant server's thread to core 0 and the client's (one
//! current-thread runtime: every request, connection and timestamp) to core 1.
//! `serve` only runs the instant server, for `scripts/bench-client-overhead.sh`, which drives
//! it with `stepscope bench` and with `vllm bench serve` side by side.
// A benchmark harness: its output is the result.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration as StdDuration, Instant};
use stepscope_load::prompts::token_id_prompts;
use stepscope_load::stats::{median_sorted, percentile_sorted};
use stepscope_load::{
    BenchOptions, BenchProgress, BenchReport, Clock, MonotonicClock, run_benchmark,
};
use stepscope_test_server::{InstantServer, InstantServerOptions, prompt_key};

const CONCURRENCY: usize = 256;
const SERVER_CORE: usize = 0;
const CLIENT_CORE: usize = 1;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("serve") {
        serve(&args[1..]);
        return;
    }
    pin(SERVER_CORE);
    throughput();
    timing_error();
    timestamp_cost();
}

/// The machine's cores, read before any pinning narrows what a thread may see.
static CORES: OnceLock<Vec<core_affinity::CoreId>> = OnceLock::new();

/// Pins the calling thread; threads it starts afterwards inherit the core.
fn pin(core: usize) {
    let cores = CORES.get_or_init(|| core_affinity::get_core_ids().unwrap_or_default());
    match cores.get(core) {
        Some(id) if core_affinity::set_for_current(*id) => {}
        _ => eprintln!("note: could not pin to core {core}; numbers include scheduling noise"),
    }
}

fn options(
    server: &InstantServer,
    num_prompts: usize,
    input_len: usize,
    output_len: usize,
) -> BenchOptions {
    let mut options = BenchOptions::default();
    options.base_url = server.base_url();
    options.model = "instant".to_owned();
    options.concurrency = CONCURRENCY;
    options.num_prompts = num_prompts;
    options.input_len = input_len;
    options.output_len = output_len;
    options.timeout = StdDuration::from_secs(120);
    options
}

/// Runs the client on its own thread, pinned to the client core, with `clock`.
fn run_client(options: BenchOptions, clock: MonotonicClock) -> BenchReport {
    std::thread::spawn(move || {
        pin(CLIENT_CORE);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let progress = BenchProgress::default();
        let run = run_benchmark(&options, &clock, &progress, std::future::pending());
        runtime.block_on(run).expect("valid options")
    })
    .join()
    .expect("the client thread ends")
}

/// The highest output-token rate: an instant server, 256 in flight, 1024-token answers.
fn throughput() {
    let server = InstantServer::start(InstantServerOptions::default()).expect("server");
    let mut rates = Vec::new();
    for _ in 0..5 {
        let report = run_client(options(&server, 2048, 1024, 1024), MonotonicClock::new());
        assert_eq!(
            report.summary.requests_completed, 2048,
            "{:?}",
            report.summary.failures
        );
        rates.push(report.summary.throughput.output_tokens_per_s);
    }
    rates.sort_unstable_by(f64::total_cmp);
    println!(
        "throughput: concurrency {CONCURRENCY}, 2048 requests x 1024 output tokens (input 1024 ids), 5 runs"
    );
    println!(
        "  output tokens/s on one client core: median {:.0}, min {:.0}, max {:.0}",
        median_sorted(&rates).unwrap_or(0.0),
        rates[0],
        rates[rates.len() - 1]
    );
}

/// The client's timing error: a server that sends one chunk per stream every 10 ms (a decode
/// step), 256 streams; each chunk's client time minus the server's send time.
fn timing_error() {
    let origin = Instant::now();
    let server_options = InstantServerOptions::default()
        .with_chunk_interval(StdDuration::from_millis(10))
        .with_send_log(origin);
    let server = InstantServer::start(server_options).expect("server");
    let (num_prompts, output_len) = (768, 100);
    let options = options(&server, num_prompts, 16, output_len);
    let report = run_client(options.clone(), MonotonicClock::with_origin(origin));
    let sent: HashMap<u64, Vec<i64>> = server
        .take_send_log()
        .into_iter()
        .map(|log| {
            (
                log.prompt_key,
                log.send_times.iter().map(|t| t.as_nanos()).collect(),
            )
        })
        .collect();
    let prompts = token_id_prompts(options.seed, num_prompts, 16, options.prompts.vocab_size());
    let (mut delays, mut gap_errors) = (Vec::new(), Vec::new());
    for record in &report.requests {
        let Some(send) = sent.get(&prompt_key(&prompts[record.index])) else {
            continue;
        };
        let Some(ttft) = record.ttft else { continue };
        let mut arrival = (record.start + ttft).as_nanos();
        let mut arrivals = vec![arrival];
        for gap in &record.itl {
            arrival += gap.as_nanos();
            arrivals.push(arrival);
        }
        for (k, (got, sent_at)) in arrivals.iter().zip(send).enumerate() {
            delays.push((got - sent_at) as f64 / 1e6);
            if k > 0 {
                let client_gap = got - arrivals[k - 1];
                let server_gap = sent_at - send[k - 1];
                gap_errors.push((client_gap - server_gap).abs() as f64 / 1e6);
            }
        }
    }
    delays.sort_unstable_by(f64::total_cmp);
    gap_errors.sort_unstable_by(f64::total_cmp);
    println!(
        "timing error: concurrency {CONCURRENCY}, {num_prompts} requests x {output_len} chunks, one chunk per stream every 10 ms ({} chunks matched)",
        delays.len()
    );
    for (name, values) in [("arrival − send", &delays), ("|ITL error|", &gap_errors)] {
        println!(
            "  {name:<15} ms: median {:.3}, p99 {:.3}, max {:.3}",
            median_sorted(values).unwrap_or(f64::NAN),
            percentile_sorted(values, 99.0).unwrap_or(f64::NAN),
            values.last().copied().unwrap_or(f64::NAN)
        );
    }
}

/// What one timestamp costs the client.
fn timestamp_cost() {
    let clock = MonotonicClock::new();
    let reads = 10_000_000;
    let began = Instant::now();
    let mut last = clock.now();
    for _ in 0..reads {
        last = last.max(clock.now());
    }
    let per_read_ns = began.elapsed().as_nanos() as f64 / f64::from(reads);
    println!("timestamp: {per_read_ns:.1} ns per clock read ({last:?} at the end)");
}

/// `serve --port P [--seconds S] [--interval-ms MS]`: the instant server alone, for S seconds
/// (default 600, at most 3600).
fn serve(args: &[String]) {
    let value = |flag: &str| -> Option<u64> {
        let position = args.iter().position(|arg| arg == flag)?;
        args.get(position + 1)?.parse().ok()
    };
    let port = value("--port").unwrap_or(18123) as u16;
    let seconds = value("--seconds").unwrap_or(600).min(3600);
    let mut options = InstantServerOptions::default();
    if let Some(interval) = value("--interval-ms") {
        options = options.with_chunk_interval(StdDuration::from_millis(interval));
    }
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let server = InstantServer::start_on(options, address).expect("the port is free");
    println!("instant server on {} for {seconds} s", server.base_url());
    std::thread::sleep(StdDuration::from_secs(seconds));
}
