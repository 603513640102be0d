//! The server a run's phases go to: booted from a config (refused when its port already
//! answers, so an earlier run's server is never measured by mistake) or attached to by URL
//! (refused unless its fingerprint is known to equal the config's).

use super::record::ServerRecord;
use super::rundir::{BootedServer, RunDir, runs_serving};
use super::{Interrupt, ProfileError, ProfilePlan, ServerSource};
use crate::config::{ConfigFile, Framework, ServingConfig};
use crate::fingerprint::{Fingerprint, may_reuse};
use crate::launch::{LaunchPlan, default_port};
use crate::server::{ManagedServer, ReadyCheck, ServerLaunch, agent, group_alive};
use crate::windows::enable_hint;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A server the run uses.
#[derive(Debug)]
pub(super) struct Session {
    managed: Option<ManagedServer>,
    /// Base URL.
    pub url: String,
    /// The model it serves.
    pub model: String,
    /// What the record says about it.
    pub record: ServerRecord,
    fingerprint: Fingerprint,
    baseline: bool,
    grace: Duration,
}

impl Session {
    /// The windows' server: booted, or attached to.
    pub fn open(
        plan: &ProfilePlan,
        run: &RunDir,
        interrupt: &Interrupt,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Self, ProfileError> {
        let session = match &plan.server {
            ServerSource::Boot => {
                Session::boot(&plan.config, "server", plan, run, interrupt, progress)?
            }
            ServerSource::Attach { url, fingerprint } => {
                run.phase("attach")?;
                let wanted = Fingerprint::of(&plan.config.config);
                may_reuse(fingerprint, &wanted)
                    .map_err(|e| ProfileError::Refused(e.to_string()))?;
                progress(&format!("attaching to {url}"));
                let model = first_model(url)?;
                Session {
                    managed: None,
                    url: url.clone(),
                    model: model.clone(),
                    record: ServerRecord {
                        mode: "attached",
                        url: url.clone(),
                        fingerprint: fingerprint.to_string(),
                        served_model: Some(model),
                        log: None,
                        process_group: None,
                        ready_s: None,
                        stop: None,
                        still_running_pid: None,
                    },
                    fingerprint: fingerprint.clone(),
                    baseline: false,
                    grace: plan.timeouts.stop_grace,
                }
            }
        };
        let record = session.record.clone();
        run.update(|r| r.server = Some(record))?;
        Ok(session)
    }

    /// Boots `file`'s server, logging to `RUN/<name>.log`, and waits for a completion.
    pub fn boot(
        file: &ConfigFile,
        name: &str,
        plan: &ProfilePlan,
        run: &RunDir,
        interrupt: &Interrupt,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Self, ProfileError> {
        let config = &file.config;
        run.phase(&format!("boot {name}"))?;
        let log = run.path(&format!("{name}.log"));
        let (mut server, url) = start_server(file, &log, interrupt, progress)?;
        let group = server.group_id();
        let fingerprint = Fingerprint::of(config);
        let baseline = name != "server";
        if !baseline {
            write_server_json(run, &url, &fingerprint, group, false)?;
        }
        let mut record = ServerRecord {
            mode: "booted",
            url: url.clone(),
            fingerprint: fingerprint.to_string(),
            served_model: None,
            log: Some(run.relative(&log)),
            process_group: Some(group),
            ready_s: None,
            stop: Some("running".to_owned()),
            still_running_pid: None,
        };
        let ready = await_ready(&mut server, &url, plan.timeouts.ready, interrupt, progress)?;
        record.served_model = Some(ready.1.clone());
        record.ready_s = Some(ready.0.as_secs_f64());
        Ok(Session {
            managed: Some(server),
            url,
            model: ready.1,
            record,
            fingerprint,
            baseline,
            grace: plan.timeouts.stop_grace,
        })
    }

    /// Stops a booted server (or leaves it running with `keep`) and records how, as the
    /// run's `stop server` phase.
    pub fn close(
        &mut self,
        run: &RunDir,
        keep: bool,
        interrupt: &Interrupt,
    ) -> Result<(), ProfileError> {
        if self.managed.is_some() && !keep {
            run.phase("stop server")?;
        }
        self.finish(run, keep, interrupt)
    }

    /// Stops a booted server (or leaves it running with `keep`) and records how, without
    /// naming a phase (a run that failed keeps the phase it failed in). A server whose port
    /// still answers once its group is gone escaped the group: recorded `still-running`, with
    /// the process listening on the port, and an error.
    pub fn finish(
        &mut self,
        run: &RunDir,
        keep: bool,
        interrupt: &Interrupt,
    ) -> Result<(), ProfileError> {
        let Some(server) = self.managed.take() else {
            return Ok(());
        };
        let group = server.group_id();
        let mut escaped = None;
        let outcome = if keep {
            server.keep_running();
            write_server_json(run, &self.url, &self.fingerprint, group, true)?;
            "kept".to_owned()
        } else {
            let (outcome, still) = stop_server(server, &self.url, self.grace, interrupt);
            escaped = still;
            outcome
        };
        self.record.stop = Some(outcome);
        self.record.still_running_pid = escaped.and_then(|e| e.pid);
        let record = self.record.clone();
        let baseline = self.baseline;
        run.update(|r| {
            if baseline {
                r.baseline_server = Some(record);
            } else {
                r.server = Some(record);
            }
        })?;
        match escaped {
            Some(still) => Err(ProfileError::StillRunning(still_running_message(
                &self.url, still,
            ))),
            None => Ok(()),
        }
    }
}

/// Starts `file`'s server with its output in `log`: refused when something already answers
/// at its port (so an earlier run's server is never measured by mistake); the group is
/// guarded by `interrupt` from here on.
pub(crate) fn start_server(
    file: &ConfigFile,
    log: &Path,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<(ManagedServer, String), ProfileError> {
    let config = &file.config;
    let url = local_url(config);
    if let Some(answer) = answers(&url) {
        return Err(ProfileError::Refused(format!(
            "Something already answers at {url} ({answer}): stepscope boots its own server there\nhint: stop it first; if a run of this config left it running (--keep-server), attach with `stepscope profile {} --url {url}`",
            file.path.display()
        )));
    }
    let launch_plan = LaunchPlan::from_config(config);
    progress(&format!(
        "booting the {} server: {}",
        config.framework,
        launch_plan.argv.join(" ")
    ));
    let server = ManagedServer::start(&ServerLaunch::from_plan(&launch_plan, log))?;
    interrupt.guard(server.group_id());
    Ok((server, url))
}

/// Waits until the started server answers a completion: how long it took, and its model.
pub(crate) fn await_ready(
    server: &mut ManagedServer,
    url: &str,
    timeout: Duration,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<(Duration, String), ProfileError> {
    progress(&format!(
        "waiting for the server at {url} (log {})",
        server.log_path().display()
    ));
    let ready = wait_ready(server, url, timeout, interrupt).map_err(|e| escaped_at_boot(e, url))?;
    progress(&format!(
        "server ready in {:.1} s, serving {}",
        ready.0.as_secs_f64(),
        // The server names its model: shown with control characters escaped.
        stepscope_model::text::escape_controls(&ready.1)
    ));
    Ok(ready)
}

/// Stops a started server with everything it spawned: how (`stopped`, `killed`, …, or
/// `still-running` when its port still answers after its group is gone), and who still
/// listens there in that case.
pub(crate) fn stop_server(
    mut server: ManagedServer,
    url: &str,
    grace: Duration,
    interrupt: &Interrupt,
) -> (String, Option<super::escaped::StillRunning>) {
    let group = server.group_id();
    let outcome = server.stop(grace);
    interrupt.release(group);
    match super::escaped::still_running(url) {
        Some(still) => ("still-running".to_owned(), Some(still)),
        None => (outcome.as_str().to_owned(), None),
    }
}

/// A boot whose launcher exited before the server was ready: when a server answers on its
/// port soon after, the launcher daemonised it out of the group (`setsid … &` and exit), and
/// it runs on unmanaged: said, with the process on the port, rather than "exited".
fn escaped_at_boot(error: ProfileError, url: &str) -> ProfileError {
    let ProfileError::Server(crate::server::ServerError::ExitedEarly { .. }) = &error else {
        return error;
    };
    match super::escaped::answering_soon(url) {
        Some(still) => ProfileError::StillRunning(format!(
            "{}\nThe launcher exited before the server was ready ({error})",
            still_running_message(url, still)
        )),
        None => error,
    }
}

/// What to say about a server that outlived its stop.
pub(crate) fn still_running_message(url: &str, still: super::escaped::StillRunning) -> String {
    let who = match still.pid {
        Some(pid) => format!("process {pid} listens on port {}", still.port),
        None => format!(
            "no process this user can see listens on port {}",
            still.port
        ),
    };
    let stop = match still.pid {
        Some(pid) => format!("`kill {pid}`"),
        None => format!("`fuser -k {}/tcp` (as root)", still.port),
    };
    format!(
        "The server at {url} still answers after its process group was stopped ({who}): its launcher let it leave the group (it daemonised, e.g. `setsid … &`)\nhint: stop it with {stop}; launch the server in the foreground (no `&`, `setsid`, `nohup` or daemon mode) so stepscope can stop what it started"
    )
}

/// Health, then the served model, then one completion; a signal ends it as interrupted.
fn wait_ready(
    server: &mut ManagedServer,
    url: &str,
    timeout: Duration,
    interrupt: &Interrupt,
) -> Result<(Duration, String), ProfileError> {
    let interrupted = |error: crate::server::ServerError| {
        if interrupt.requested() {
            ProfileError::Interrupted
        } else {
            ProfileError::Server(error)
        }
    };
    let mut check = ReadyCheck {
        base_url: url.to_owned(),
        health_path: "/health".to_owned(),
        model: None,
        timeout,
        poll: Duration::from_millis(500),
    };
    let took = server.wait_ready(&check).map_err(interrupted)?;
    let model = first_model(url)?;
    check.model = Some(model.clone());
    let probe = server.wait_ready(&check).map_err(interrupted)?;
    Ok((took + probe, model))
}

/// `http://HOST:PORT` of a config's server, on loopback when it listens on every address.
fn local_url(config: &ServingConfig) -> String {
    let port = config
        .server
        .port
        .unwrap_or_else(|| default_port(config.framework));
    let host = match config.server.host.as_deref() {
        None | Some("0.0.0.0") | Some("::") | Some("[::]") => "127.0.0.1",
        Some(host) => host,
    };
    format!("http://{host}:{port}")
}

/// What answers at `url`, if anything does.
fn answers(url: &str) -> Option<String> {
    let health = format!("{url}/health");
    match agent(Duration::from_secs(3)).get(&health).call() {
        Ok(response) => Some(format!("{health} answered {}", response.status())),
        Err(ureq::Error::Io(_)) | Err(ureq::Error::ConnectionFailed) => None,
        Err(ureq::Error::HostNotFound) => None,
        Err(error) => Some(error.to_string()),
    }
}

/// The first model of `GET /v1/models`.
fn first_model(url: &str) -> Result<String, ProfileError> {
    let models = format!("{}/v1/models", url.trim_end_matches('/'));
    let failed = |why: String| {
        ProfileError::Refused(format!(
            "Could not learn the served model from {models}: {why}\nhint: is this an OpenAI-compatible server (vLLM, SGLang, ATOM)?"
        ))
    };
    let mut response = agent(Duration::from_secs(30))
        .get(&models)
        .call()
        .map_err(|e| failed(e.to_string()))?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    if status != 200 {
        return Err(failed(format!("answered {status}")));
    }
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["data"][0]["id"].as_str().map(str::to_owned))
        .ok_or_else(|| failed("no model in its answer".to_owned()))
}

fn write_server_json(
    run: &RunDir,
    url: &str,
    fingerprint: &Fingerprint,
    group: i32,
    kept_running: bool,
) -> Result<(), ProfileError> {
    let server = BootedServer {
        url: url.to_owned(),
        fingerprint: fingerprint.to_string(),
        process_group: group,
        kept_running,
    };
    run.write_json("server.json", &server)?;
    Ok(())
}

/// The fingerprint of the server at `url`: `given` (a fingerprint, a run directory, or a
/// file holding one), else the newest run under `output_dir` that booted a server there and
/// left it running. Without either, attaching is refused: nothing says how it was booted.
pub fn attach_fingerprint(
    url: &str,
    given: Option<&str>,
    output_dir: &Path,
    config_path: &Path,
) -> Result<Fingerprint, String> {
    if let Some(given) = given {
        if let Some(fingerprint) = Fingerprint::parse(given) {
            return Ok(fingerprint);
        }
        let path = PathBuf::from(given);
        let found = if path.is_dir() {
            BootedServer::read(&path).and_then(|s| s.fingerprint())
        } else {
            std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| Fingerprint::parse(&t))
        };
        return found.ok_or_else(|| {
            format!("`{given}` is neither a fingerprint (sha256:…), a run directory with a server.json, nor a file holding a fingerprint")
        });
    }
    let live = runs_serving(output_dir, url)
        .into_iter()
        .find(|(_, server)| group_alive(server.process_group));
    match live.and_then(|(_, server)| server.fingerprint()) {
        Some(fingerprint) => Ok(fingerprint),
        None => Err(format!(
            "Nothing says how the server at {url} was booted, so it may run without the profile switches (a baseline server records 1 replay in 127)\nhint: attach to a server a run of this config left running (--keep-server; its run directory is found under {}), or pass --fingerprint with its run directory or the value `stepscope config fingerprint {}` printed for the command that started it",
            output_dir.display(),
            config_path.display()
        )),
    }
}

/// Where the config's server writes profile traces; an error with the fix when its
/// profiler is not enabled.
pub fn profiler_dir(config: &ServingConfig) -> Result<PathBuf, String> {
    let from_arg = |flag: &str| -> Option<String> {
        let args = &config.server.args;
        args.iter().enumerate().find_map(|(at, arg)| {
            if arg == flag {
                args.get(at + 1).cloned()
            } else {
                arg.strip_prefix(&format!("{flag}=")).map(str::to_owned)
            }
        })
    };
    let env = |name: &str| config.envs.get(name).cloned();
    let found = match config.framework {
        Framework::Sglang => {
            Some(env("SGLANG_TORCH_PROFILER_DIR").unwrap_or_else(|| "/tmp".to_owned()))
        }
        Framework::Vllm => from_arg("--profiler-config")
            .and_then(|json| serde_json::from_str::<serde_json::Value>(&json).ok())
            .and_then(|v| v["torch_profiler_dir"].as_str().map(str::to_owned))
            .or_else(|| env("VLLM_TORCH_PROFILER_DIR")),
        Framework::Atom => {
            from_arg("--torch-profiler-dir").or_else(|| env("ATOM_TORCH_PROFILER_DIR"))
        }
    };
    found.map(PathBuf::from).ok_or_else(|| {
        format!(
            "The config does not enable {}'s profiler, so it has no profile windows\nhint: {}",
            config.framework,
            enable_hint(config.framework)
        )
    })
}
