//! Server lifecycle: a framework server run as a child process group, ready only once it
//! answers, and never left behind.
//!
//! [`ManagedServer::start`] spawns the launch command (a [`LaunchPlan`]'s argv and
//! environment, switches included) as the leader of a new process group, with its stdout
//! and stderr appended to a log file. [`ManagedServer::wait_ready`] polls the health
//! endpoint, then sends one real completion: a server is ready when it generates, not when
//! it listens (vLLM answers `/health` while its engine may still fail). If the child exits
//! meanwhile, or the timeout passes, the error quotes the log's last lines.
//! [`ManagedServer::stop`] sends SIGTERM to the whole group (vLLM and SGLang run their
//! engines in child processes), waits, then sends SIGKILL to whatever is left; dropping a
//! `ManagedServer` does the same, so an error or a panic never orphans a server.
//! Why it matters: an orphaned server holds the GPU and the port, and the next run either
//! fails or, worse, measures against the old server's configuration.

use crate::launch::LaunchPlan;
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Lines of the server log quoted in errors.
const LOG_TAIL_LINES: usize = 20;

/// What to start, and where its output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLaunch {
    /// The command, program first.
    pub argv: Vec<String>,
    /// Environment added to stepscope's own (switches included).
    pub envs: BTreeMap<String, String>,
    /// File the server's stdout and stderr are appended to.
    pub log_path: PathBuf,
}

impl ServerLaunch {
    /// The launch of a plan (shell target: no container), logging to `log_path`.
    pub fn from_plan(plan: &LaunchPlan, log_path: &Path) -> Self {
        ServerLaunch {
            argv: plan.argv.clone(),
            envs: plan.envs.clone(),
            log_path: log_path.to_owned(),
        }
    }
}

/// When a started server counts as ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyCheck {
    /// Base URL, e.g. `http://127.0.0.1:8000`.
    pub base_url: String,
    /// Health endpoint path (`/health` for vLLM, SGLang and ATOM).
    pub health_path: String,
    /// Model name for the one completion; `None` skips it.
    pub model: Option<String>,
    /// Give up after this long.
    pub timeout: Duration,
    /// Pause between health polls.
    pub poll: Duration,
}

/// Why a server could not be started, made ready or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The command was empty.
    #[error(
        "The server command is empty\nhint: the config's `server.launcher` or framework gives the program"
    )]
    EmptyCommand,
    /// The log file could not be created.
    #[error("Could not create the server log `{path}`")]
    Log {
        /// The log's path.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The program could not be started.
    #[error(
        "Could not start the server `{program}`\nhint: is it installed and on PATH in this environment?"
    )]
    Spawn {
        /// The program.
        program: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The server exited before it was ready.
    #[error("The server exited ({status}) before it was ready; last lines of {log}:\n{tail}")]
    ExitedEarly {
        /// How it exited.
        status: ExitStatus,
        /// The log's path.
        log: String,
        /// The log's last lines.
        tail: String,
    },
    /// The health endpoint did not answer 200 in time.
    #[error("The server was not ready after {seconds} s ({last}); last lines of {log}:\n{tail}")]
    NotReady {
        /// The timeout, in seconds.
        seconds: u64,
        /// The last health-check failure.
        last: String,
        /// The log's path.
        log: String,
        /// The log's last lines.
        tail: String,
    },
    /// The health endpoint answered, but a completion failed.
    #[error(
        "The server answers {health} but a completion failed: {answer}; last lines of {log}:\n{tail}"
    )]
    CompletionFailed {
        /// The health URL that answered.
        health: String,
        /// The server's answer, or the connection error.
        answer: String,
        /// The log's path.
        log: String,
        /// The log's last lines.
        tail: String,
    },
}

/// How a stop went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOutcome {
    /// The group had already exited.
    AlreadyGone,
    /// SIGTERM was enough.
    Terminated,
    /// SIGKILL was needed after the grace period.
    Killed,
}

impl StopOutcome {
    /// `already-gone`, `terminated` or `killed`.
    pub fn as_str(self) -> &'static str {
        match self {
            StopOutcome::AlreadyGone => "already-gone",
            StopOutcome::Terminated => "terminated",
            StopOutcome::Killed => "killed",
        }
    }
}

/// A running server: the leader of its own process group.
#[derive(Debug)]
pub struct ManagedServer {
    child: Child,
    group: Pid,
    log_path: PathBuf,
    stopped: bool,
}

impl ManagedServer {
    /// Starts `launch` as the leader of a new process group, output appended to its log.
    pub fn start(launch: &ServerLaunch) -> Result<Self, ServerError> {
        let (program, args) = launch.argv.split_first().ok_or(ServerError::EmptyCommand)?;
        let log_error = |source| ServerError::Log {
            path: launch.log_path.clone(),
            source,
        };
        if let Some(parent) = launch
            .log_path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent).map_err(log_error)?;
        }
        let log = File::options()
            .create(true)
            .append(true)
            .open(&launch.log_path)
            .map_err(log_error)?;
        let err = log.try_clone().map_err(log_error)?;
        let child = Command::new(program)
            .args(args)
            .envs(&launch.envs)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|source| ServerError::Spawn {
                program: program.clone(),
                source,
            })?;
        let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        Ok(ManagedServer {
            child,
            group,
            log_path: launch.log_path.clone(),
            stopped: false,
        })
    }

    /// The process group id (the leader's pid).
    pub fn group_id(&self) -> i32 {
        self.group.as_raw()
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Polls the health endpoint until it answers 200, then sends one completion when the
    /// check names a model; returns how long it took. Fails at once if the server exits.
    pub fn wait_ready(&mut self, check: &ReadyCheck) -> Result<Duration, ServerError> {
        let started = Instant::now();
        let health = format!(
            "{}{}",
            check.base_url.trim_end_matches('/'),
            check.health_path
        );
        let agent = agent(Duration::from_secs(5));
        loop {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Err(ServerError::ExitedEarly {
                    status,
                    log: self.log_path.display().to_string(),
                    tail: self.log_tail(LOG_TAIL_LINES),
                });
            }
            let last = match agent.get(&health).call() {
                Ok(response) if response.status() == 200 => break,
                Ok(response) => format!("{health} answered {}", response.status()),
                Err(error) => format!("{health}: {error}"),
            };
            if started.elapsed() >= check.timeout {
                return Err(ServerError::NotReady {
                    seconds: check.timeout.as_secs(),
                    last,
                    log: self.log_path.display().to_string(),
                    tail: self.log_tail(LOG_TAIL_LINES),
                });
            }
            std::thread::sleep(check.poll);
        }
        if let Some(model) = &check.model {
            self.probe_completion(check, model, &health)?;
        }
        Ok(started.elapsed())
    }

    /// One non-streaming completion of one token.
    fn probe_completion(
        &self,
        check: &ReadyCheck,
        model: &str,
        health: &str,
    ) -> Result<(), ServerError> {
        let url = format!("{}/v1/completions", check.base_url.trim_end_matches('/'));
        let body = serde_json::json!({"model": model, "prompt": "Hello", "max_tokens": 1});
        let agent = agent(check.timeout.max(Duration::from_secs(1)));
        let answer = match agent.post(&url).send_json(&body) {
            Ok(response) if response.status() == 200 => return Ok(()),
            Ok(mut response) => {
                let status = response.status();
                let text = response.body_mut().read_to_string().unwrap_or_default();
                format!(
                    "{url} answered {status}: {}",
                    text.chars().take(300).collect::<String>()
                )
            }
            Err(error) => format!("{url}: {error}"),
        };
        Err(ServerError::CompletionFailed {
            health: health.to_owned(),
            answer,
            log: self.log_path.display().to_string(),
            tail: self.log_tail(LOG_TAIL_LINES),
        })
    }

    /// Leaves the server running when this handle goes (`--keep-server`); returns its
    /// process group, which `kill -TERM -- -PGID` stops.
    pub fn keep_running(mut self) -> i32 {
        self.stopped = true;
        self.group.as_raw()
    }

    /// Whether any process of the group is still alive (zombies of the leader aside).
    pub fn group_alive(&mut self) -> bool {
        let _ = self.child.try_wait();
        group_alive(self.group.as_raw())
    }

    /// SIGTERM to the group, up to `grace` for it to exit, then SIGKILL to what is left;
    /// reaps the leader. Idempotent.
    pub fn stop(&mut self, grace: Duration) -> StopOutcome {
        if self.stopped {
            return StopOutcome::AlreadyGone;
        }
        self.stopped = true;
        if !self.group_alive() {
            let _ = self.child.wait();
            return StopOutcome::AlreadyGone;
        }
        let _ = killpg(self.group, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if !self.group_alive() {
                let _ = self.child.wait();
                return StopOutcome::Terminated;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = killpg(self.group, Signal::SIGKILL);
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(self.group.as_raw()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        StopOutcome::Killed
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(10));
    }
}

/// Whether a process group has any member left that is not a zombie.
pub fn group_alive(group: i32) -> bool {
    match group_members(group) {
        Some(members) => !members.is_empty(),
        None => !matches!(killpg(Pid::from_raw(group), None), Err(Errno::ESRCH)),
    }
}

/// The live (not zombie) processes of a group, from `/proc`; `None` without `/proc`. A
/// zombie whose parent does not reap it (PID 1 of a container often does not) still
/// answers signal 0, so signals alone cannot tell a stopped group from a live one.
pub fn group_members(group: i32) -> Option<Vec<i32>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let live = !matches!(fields.first(), Some(&"Z") | Some(&"X") | None);
        if live && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(group) {
            members.push(pid);
        }
    }
    Some(members)
}

/// A blocking HTTP agent that reports every status instead of failing on 4xx/5xx.
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into()
}
