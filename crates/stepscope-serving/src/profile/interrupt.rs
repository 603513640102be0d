//! SIGINT, SIGTERM and SIGHUP during a profile run: no server is ever left behind.
//!
//! A signal thread (signal-hook) catches them. At the first one it raises a flag that every
//! wait of the run checks, and at once sends SIGTERM to the process group of every server
//! the run has started, then SIGKILL to what is left after a grace period: the main thread
//! may be blocked in a call that takes minutes (vLLM's `/stop_profile` while it writes a
//! trace), and the server must go now, not then. The main thread then ends the run as
//! interrupted; should it still be running `grace + 20 s` later, the signal thread ends the
//! process itself with `128 + signal`, as a shell reports it.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The run's view of signals: whether one came, and the servers to stop when it does.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    requested: AtomicBool,
    signal: AtomicI32,
    groups: Mutex<Vec<i32>>,
}

impl Interrupt {
    /// A flag no signal raises (for tests and library use without signal handling).
    pub fn never() -> Self {
        Interrupt::default()
    }

    /// Installs the signal thread. `on_signal` runs on it once, after the servers got
    /// SIGTERM (the binary marks the run interrupted there); `grace` is how long servers
    /// get before SIGKILL.
    pub fn install(
        grace: Duration,
        on_signal: impl Fn(i32) + Send + 'static,
    ) -> std::io::Result<Self> {
        let interrupt = Interrupt::default();
        let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        let state = Arc::clone(&interrupt.state);
        std::thread::Builder::new()
            .name("stepscope-signals".to_owned())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    state.signal.store(signal, Ordering::SeqCst);
                    state.requested.store(true, Ordering::SeqCst);
                    stop_groups(&state, grace);
                    on_signal(signal);
                    std::thread::sleep(Duration::from_secs(20));
                    force_exit(signal);
                }
            })?;
        Ok(interrupt)
    }

    /// Whether a signal came.
    pub fn requested(&self) -> bool {
        self.state.requested.load(Ordering::SeqCst)
    }

    /// The signal that came, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.requested()
            .then(|| self.state.signal.load(Ordering::SeqCst))
    }

    /// The shared flag, for a load generator's stop future.
    pub fn flag(&self) -> impl Fn() -> bool + Send + Sync + 'static {
        let state = Arc::clone(&self.state);
        move || state.requested.load(Ordering::SeqCst)
    }

    /// A server's process group to stop on a signal.
    pub fn guard(&self, group: i32) {
        self.groups().push(group);
    }

    /// A group already stopped.
    pub fn release(&self, group: i32) {
        self.groups().retain(|g| *g != group);
    }

    fn groups(&self) -> std::sync::MutexGuard<'_, Vec<i32>> {
        self.state
            .groups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// SIGTERM to every guarded group, then SIGKILL to what is left after `grace`.
fn stop_groups(state: &State, grace: Duration) {
    let groups: Vec<i32> = state
        .groups
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for group in &groups {
        let _ = killpg(Pid::from_raw(*group), Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    let alive = |g: &i32| crate::server::group_alive(*g);
    while Instant::now() < deadline && groups.iter().any(alive) {
        std::thread::sleep(Duration::from_millis(100));
    }
    for group in groups.iter().filter(|g| alive(g)) {
        let _ = killpg(Pid::from_raw(*group), Signal::SIGKILL);
    }
}

/// Ends the process when the main thread did not, `128 + signal` as a shell reports it.
#[allow(clippy::exit, reason = "the main thread did not end after a signal")]
fn force_exit(signal: i32) {
    std::process::exit(128 + signal);
}
