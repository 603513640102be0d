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
