//! Running an external program (`hipconfig`) behind a trait, so detection logic is tested
//! with supplied output and the real runner is tested on a real script.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why a program gave no output.
#[derive(Debug)]
#[non_exhaustive]
pub enum CommandFailure {
    /// The program does not exist.
    NotFound,
    /// It ran longer than the timeout and was killed.
    TimedOut(Duration),
    /// It exited unsuccessfully.
    Failed {
        /// The exit status, as the OS words it.
        status: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// Starting or reading it failed.
    Io(std::io::Error),
}

impl std::fmt::Display for CommandFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandFailure::NotFound => f.write_str("not found"),
            CommandFailure::TimedOut(limit) => {
                write!(f, "gave no answer within {} ms", limit.as_millis())
            }
            CommandFailure::Failed { status, stderr } if stderr.is_empty() => {
                write!(f, "failed ({status})")
            }
            CommandFailure::Failed { status, stderr } => write!(f, "failed ({status}): {stderr}"),
            CommandFailure::Io(error) => write!(f, "could not run: {error}"),
        }
    }
}

/// Runs a program and returns its standard output.
pub trait CommandRunner {
    /// Runs `program ARGS` with no input.
    fn run(&self, program: &Path, args: &[&str]) -> Result<String, CommandFailure>;
}

/// The real runner: a child process, killed after a timeout.
#[derive(Debug, Clone, Copy)]
pub struct SystemCommandRunner {
    timeout: Duration,
}

impl SystemCommandRunner {
    /// A runner that kills programs running longer than `timeout`.
    pub fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

impl Default for SystemCommandRunner {
    /// Five seconds: `hipconfig --version` answers in well under one.
    fn default() -> Self {
        Self::new(Duration::from_secs(5))
    }
}

impl CommandRunner for SystemCommandRunner {
    fn run(&self, program: &Path, args: &[&str]) -> Result<String, CommandFailure> {
        let mut child = match Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(child) => child,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(CommandFailure::NotFound);
            }
            Err(error) => return Err(CommandFailure::Io(error)),
        };
        // Read both pipes on threads so a chatty child cannot block on a full pipe.
        let stdout = child.stdout.take().map(read_on_thread);
        let stderr = child.stderr.take().map(read_on_thread);
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() >= self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(CommandFailure::TimedOut(self.timeout));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(error) => return Err(CommandFailure::Io(error)),
            }
        };
        let collect = |handle: Option<std::thread::JoinHandle<String>>| {
            handle
                .and_then(|handle| handle.join().ok())
                .unwrap_or_default()
        };
        let (stdout, stderr) = (collect(stdout), collect(stderr));
        if status.success() {
            Ok(stdout)
        } else {
            Err(CommandFailure::Failed {
                status: status.to_string(),
                stderr: stderr.trim().to_owned(),
            })
        }
    }
}

fn read_on_thread<R: Read + Send + 'static>(mut pipe: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
