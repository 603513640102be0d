//! A load phase on its own thread: `stepscope-load`'s runner on a current-thread Tokio
//! runtime, stopped by a flag (the windows' steady load) or run to its end (a throughput
//! phase), and always by a signal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use stepscope_load::{BenchOptions, BenchProgress, BenchReport, MonotonicClock};

/// Why a load phase ended without a report: the load generator's error, in its words.
pub type LoadFailure = String;

/// A load running in the background.
#[derive(Debug)]
pub struct LoadRun {
    progress: Arc<BenchProgress>,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<BenchReport, LoadFailure>>,
}

impl LoadRun {
    /// Starts `options` on a thread of its own; `interrupted` also stops it.
    pub fn start(
        options: BenchOptions,
        interrupted: impl Fn() -> bool + Send + 'static,
    ) -> std::io::Result<Self> {
        let progress = Arc::new(BenchProgress::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_progress, thread_stop) = (Arc::clone(&progress), Arc::clone(&stop));
        let handle = std::thread::Builder::new()
            .name("stepscope-load".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("Could not start the load's runtime: {e}"))?;
                let stopped = async {
                    while !thread_stop.load(Ordering::SeqCst) && !interrupted() {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                };
                runtime
                    .block_on(stepscope_load::run_benchmark(
                        &options,
                        &MonotonicClock::new(),
                        &thread_progress,
                        stopped,
                    ))
                    .map_err(|e| e.to_string())
            })?;
        Ok(LoadRun {
            progress,
            stop,
            handle,
        })
    }

    /// Live counters.
    pub fn progress(&self) -> &BenchProgress {
        &self.progress
    }

    /// Whether the run ended (every request done, or the test request failed).
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Stops it (requests in flight end as cancelled) and returns its report.
    pub fn stop(self) -> Result<BenchReport, LoadFailure> {
        self.stop.store(true, Ordering::SeqCst);
        self.join()
    }

    /// Waits for it to end by itself.
    pub fn join(self) -> Result<BenchReport, LoadFailure> {
        self.handle
            .join()
            .unwrap_or_else(|_| Err("the load generator panicked".to_owned()))
    }
}
