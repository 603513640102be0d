//! The progress of a `profile` or live `grade` run on stderr: one updating line on a terminal,
//! else a line per change of phase (what a CI log, or a test waiting for a phase, reads).

use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Phase and wait messages, shown as the terminal allows.
pub struct PhaseLines {
    bar: Option<ProgressBar>,
    last: String,
    command: &'static str,
}

impl PhaseLines {
    /// A spinner when `enabled` and stderr is a terminal, else plain lines.
    pub fn new(enabled: bool) -> Self {
        Self::of("profile", enabled)
    }

    /// [`PhaseLines::new`] for another command (the lines' prefix).
    pub fn of(command: &'static str, enabled: bool) -> Self {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        PhaseLines {
            bar,
            last: String::new(),
            command,
        }
    }

    /// Shows `text`; as a line only when it says something new (its words, numbers aside).
    /// A closed stderr is ignored: the run goes on and its record says the rest.
    pub fn say(&mut self, text: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(text.to_owned());
            return;
        }
        let words: String = text.chars().filter(|c| !c.is_ascii_digit()).collect();
        if words != self.last {
            let _ = writeln!(std::io::stderr(), "stepscope {}: {text}", self.command);
            self.last = words;
        }
    }

    /// Shows `text` as a line of its own, always (a result, not a state).
    pub fn line(&mut self, text: &str) {
        let line = format!("stepscope {}: {text}", self.command);
        match &self.bar {
            Some(bar) => bar.println(line),
            None => {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        }
        self.last.clear();
    }

    /// Removes the spinner.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
