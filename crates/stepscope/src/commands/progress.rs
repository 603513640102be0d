//! A progress bar for long reads, on stderr, only when it is a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

/// Shows parsed bytes while a file is read.
pub struct ReadProgress {
    bar: ProgressBar,
    done: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl ReadProgress {
    /// Starts a bar for `label` fed by `counter`; hidden unless `enabled` and stderr is a TTY.
    pub fn start(label: &str, counter: Arc<AtomicU64>, enabled: bool) -> Self {
        let visible = enabled && std::io::stderr().is_terminal();
        let bar = if visible {
            ProgressBar::new_spinner()
        } else {
            ProgressBar::hidden()
        };
        let style = ProgressStyle::with_template(
            "{spinner} {msg}: {bytes} parsed ({bytes_per_sec}, {elapsed})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_message(label.to_owned());
        let done = Arc::new(AtomicBool::new(false));
        let ticker = visible.then(|| {
            let (bar, done) = (bar.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    bar.set_position(counter.load(Ordering::Relaxed));
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            })
        });
        ReadProgress { bar, done, ticker }
    }

    /// Removes the bar.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
        self.bar.finish_and_clear();
    }
}

/// One bar for a run of several files read at once: files done of all, and the rate over
/// their sizes on disk.
pub struct RunProgress {
    bar: ProgressBar,
    started: std::time::Instant,
    bytes_done: AtomicU64,
}

impl RunProgress {
    /// Starts a bar for `files` files; hidden unless `enabled` and stderr is a TTY.
    pub fn start(files: usize, enabled: bool) -> Self {
        let bar = if enabled && std::io::stderr().is_terminal() {
            ProgressBar::new(files as u64)
        } else {
            ProgressBar::hidden()
        };
        let style = ProgressStyle::with_template(
            "{bar:30} {pos}/{len} files read and analysed ({msg}, {elapsed})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message("0 MB/s");
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        RunProgress {
            bar,
            started: std::time::Instant::now(),
            bytes_done: AtomicU64::new(0),
        }
    }

    /// Counts one file of `bytes` (on disk) as done.
    pub fn file_done(&self, bytes: u64) {
        let done = self.bytes_done.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        self.bar
            .set_message(format!("{:.0} MB/s", done as f64 / 1e6 / seconds));
        self.bar.inc(1);
    }

    /// Removes the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
