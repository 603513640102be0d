//! The live run itself: turns, boots, probes, phases and looks, against the plan's budget.

use super::{
    BootRecord, LivePlan, LiveRecord, PhaseRecord, ProbeRecord, STALL_SECONDS, SideSource,
};
use super::{describe_model, different_models, served_model_at};
use crate::config::ConfigFile;
use crate::config::ProfileWindow;
use crate::grade::engage::{ENGAGE_KIND, EngageRecord, check_engage, read_envs, server_processes};
use crate::grade::phase::read_side_partial;
use crate::grade::schedule::{SIDES, Schedule};
use crate::grade::{Decision, Grade, GradeSettings, Verdict, grade};
use crate::profile::Timeouts;
use crate::profile::rundir::{now, write_atomic};
use crate::profile::server_phase::profiler_dir;
use crate::profile::server_phase::{await_ready, start_server, still_running_message, stop_server};
use crate::profile::window::{WindowContext, record_window};
use crate::profile::{Interrupt, LoadRun, ProfileError, RunDirError};
use crate::server::ManagedServer;
use crate::server::group_members;
use crate::windows::ProfileEndpoint;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use stepscope_load::{BenchOptions, ProbeSet, probe_outputs};

/// The server a side's phases go to now.
struct Active {
    side: usize,
    url: String,
    model: String,
    boot: Option<(usize, ManagedServer)>,
}

/// How a phase or probe ended.
enum Ended {
    /// It ran to its end and was saved.
    Done,
    /// The time budget cut it; nothing was saved.
    OutOfTime,
}

/// A live run in progress.
pub(super) struct Runner<'a> {
    plan: &'a LivePlan,
    out: &'a Path,
    interrupt: &'a Interrupt,
    record: LiveRecord,
    schedule: Schedule,
    active: Option<Active>,
    deadline: Option<Instant>,
    /// Why the sides cannot be graded against each other, once found.
    refusal: Option<String>,
}

impl<'a> Runner<'a> {
    pub(super) fn new(
        plan: &'a LivePlan,
        out: &'a Path,
        interrupt: &'a Interrupt,
        record: LiveRecord,
        schedule: Schedule,
        deadline: Option<Instant>,
    ) -> Self {
        Runner {
            plan,
            out,
            interrupt,
            record,
            schedule,
            active: None,
            deadline,
            refusal: None,
        }
    }

    pub(super) fn into_record(self) -> LiveRecord {
        self.record
    }

    /// Copies each config side's file into the run directory.
    pub(super) fn copy_configs(&self) -> Result<(), RunDirError> {
        for (at, source) in self.plan.sources.iter().enumerate() {
            if let SideSource::Config(file) = source {
                let bytes = std::fs::read(&file.path).map_err(|source| RunDirError {
                    path: file.path.clone(),
                    source,
                })?;
                write_atomic(&self.out.join(format!("{}.yaml", SIDES[at])), &bytes)?;
            }
        }
        Ok(())
    }

    fn out_of_time(&self) -> bool {
        self.deadline.is_some_and(|end| Instant::now() >= end)
    }

    /// Runs turns until decided, or the budget is spent; then the closing probes.
    pub(super) fn run(&mut self, progress: &mut dyn FnMut(&str)) -> Result<(), ProfileError> {
        let stopped_by = self.turns(progress)?;
        self.record.stopped_by = Some(stopped_by);
        if matches!(stopped_by, "decided" | "max-phases") {
            self.closing_probes(progress)?;
        }
        Ok(())
    }

    fn turns(&mut self, progress: &mut dyn FnMut(&str)) -> Result<&'static str, ProfileError> {
        while let Some(side) = self.schedule.next_side() {
            if self.interrupt.requested() {
                return Err(ProfileError::Interrupted);
            }
            if self.out_of_time() {
                return Ok("max-time");
            }
            if self.enter(side, progress)? {
                if let Some(stopped) = self.turn_checks(side, progress)? {
                    return Ok(stopped);
                }
            }
            if let Ended::OutOfTime = self.phase(side, progress)? {
                return Ok("max-time");
            }
            if self.schedule.at_look() && self.look()? {
                return Ok("decided");
            }
        }
        Ok("max-phases")
    }

    /// What a new turn checks before its phases: the answers, and once, whether the
    /// candidate engaged the change. `Some(why)` stops the run.
    fn turn_checks(
        &mut self,
        side: usize,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Option<&'static str>, ProfileError> {
        if self.plan.probe.is_some() {
            if let Ended::OutOfTime = self.probe(side, progress)? {
                return Ok(Some("max-time"));
            }
            if self.outputs_changed()? {
                return Ok(Some("outputs-changed"));
            }
        }
        let checked = self.out.join("candidate/engage.check.json").exists();
        if side == 1 && !self.plan.expect.is_empty() && !checked {
            let record = self.engage(progress)?;
            if check_engage(Some(&record)).verdict == Verdict::Void {
                return Ok(Some("not-engaged"));
            }
        }
        Ok(None)
    }

    /// Whether the grade at this look is decided.
    fn look(&mut self) -> Result<bool, ProfileError> {
        let graded = self.grade()?;
        Ok(graded.is_ok_and(|g| g.decision != Decision::Inconclusive))
    }

    /// Whether the candidate's answers changed (a grade that cannot be made stops the run).
    fn outputs_changed(&mut self) -> Result<bool, ProfileError> {
        match self.grade()? {
            Ok(graded) => Ok(graded.outputs.verdict == Verdict::Revert),
            Err(why) => self.refuse(why),
        }
    }

    /// One more probe of every server still up: the active one, and a URL side not active.
    fn closing_probes(&mut self, progress: &mut dyn FnMut(&str)) -> Result<(), ProfileError> {
        if self.plan.probe.is_none() {
            return Ok(());
        }
        let active = self.active.as_ref().map(|a| a.side);
        for side in 0..2 {
            let up =
                Some(side) == active || matches!(self.plan.sources[side], SideSource::Url { .. });
            if !up || self.record.sides[side].served_model.is_none() {
                continue;
            }
            if Some(side) != active {
                self.enter(side, progress)?;
            }
            if let Ended::OutOfTime = self.probe(side, progress)? {
                return Ok(());
            }
        }
        Ok(())
    }

    fn refuse<T>(&mut self, why: String) -> Result<T, ProfileError> {
        self.refusal = Some(why.clone());
        Err(ProfileError::Refused(why))
    }

    /// Makes `side`'s server the active one: the other side's booted server stopped, this
    /// side's booted when it is a config. `true` when a new turn began.
    fn enter(&mut self, side: usize, progress: &mut dyn FnMut(&str)) -> Result<bool, ProfileError> {
        if self.active.as_ref().is_some_and(|a| a.side == side) {
            return Ok(false);
        }
        let booted = matches!(self.plan.sources[side], SideSource::Config(_));
        if booted || matches!(self.plan.sources[1 - side], SideSource::Config(_)) {
            self.leave()?;
        }
        let active = match &self.plan.sources[side] {
            SideSource::Url { url, .. } => Active {
                side,
                url: url.clone(),
                model: self.plan.bench.model.clone(),
                boot: None,
            },
            SideSource::Config(file) => self.boot(side, file, progress)?,
        };
        let url = active.url.clone();
        self.active = Some(active);
        if self.record.sides[side].served_model.is_none() {
            self.learn_model(side, &url, progress)?;
        }
        Ok(true)
    }

    /// Reads the model `side` serves and refuses one that differs from the other side's.
    fn learn_model(
        &mut self,
        side: usize,
        url: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(), ProfileError> {
        let mut options = self.plan.bench.clone();
        options.base_url = url.to_owned();
        let served = match served_model_at(&options, SIDES[side]) {
            Ok(served) => served,
            Err(problem) => return self.refuse(problem),
        };
        progress(&format!(
            "{} serves {}",
            SIDES[side],
            describe_model(&served)
        ));
        if let Some(active) = self.active.as_mut() {
            active.model.clone_from(&served.id);
        }
        let other = self.record.sides[1 - side].served_model.clone();
        self.record.sides[side].served_model = Some(served.clone());
        let Some(other) = other.filter(|_| !self.plan.settings.allow_model_change) else {
            return Ok(());
        };
        let [base, candidate] = if side == 1 {
            [&other, &served]
        } else {
            [&served, &other]
        };
        match different_models(base, candidate) {
            Some(why) => self.refuse(why),
            None => Ok(()),
        }
    }

    fn boot(
        &mut self,
        side: usize,
        file: &ConfigFile,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Active, ProfileError> {
        let number = self.record.sides[side].boots.len() + 1;
        let log = format!("logs/{}-{number:02}.log", SIDES[side]);
        let path = self.out.join(&log);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| RunDirError {
                path: parent.to_owned(),
                source,
            })?;
        }
        progress(&format!("{}: boot {number}", SIDES[side]));
        let (mut server, url) = start_server(file, &path, self.interrupt, progress)?;
        self.record.sides[side].url = Some(url.clone());
        self.record.sides[side].boots.push(BootRecord {
            log,
            process_group: server.group_id(),
            ready_s: None,
            served_model: None,
            stop: "running".to_owned(),
        });
        let ready = await_ready(
            &mut server,
            &url,
            self.plan.ready_timeout,
            self.interrupt,
            progress,
        );
        let (took, model) = match ready {
            Ok(ready) => ready,
            Err(error) => {
                self.stopped(side, server, &url)?;
                return Err(error);
            }
        };
        if let Some(boot) = self.record.sides[side].boots.last_mut() {
            boot.ready_s = Some(took.as_secs_f64());
            boot.served_model = Some(model.clone());
        }
        Ok(Active {
            side,
            url,
            model,
            boot: Some((number, server)),
        })
    }

    /// Stops the active side's booted server, if any.
    pub(super) fn leave(&mut self) -> Result<(), ProfileError> {
        let Some(active) = self.active.take() else {
            return Ok(());
        };
        match active.boot {
            Some((_, server)) => self.stopped(active.side, server, &active.url),
            None => Ok(()),
        }
    }

    /// Stops `server` and records how; an error when it still answers afterwards.
    fn stopped(
        &mut self,
        side: usize,
        server: ManagedServer,
        url: &str,
    ) -> Result<(), ProfileError> {
        let (outcome, still) = stop_server(server, url, self.plan.stop_grace, self.interrupt);
        if let Some(boot) = self.record.sides[side].boots.last_mut() {
            boot.stop = outcome;
        }
        match still {
            Some(still) => Err(ProfileError::StillRunning(still_running_message(
                url, still,
            ))),
            None => Ok(()),
        }
    }

    /// The active server's load options.
    fn active_options(&self) -> Result<(BenchOptions, Option<usize>), ProfileError> {
        let Some(active) = &self.active else {
            return Err(ProfileError::Refused("no server is up".to_owned()));
        };
        let mut options = self.plan.bench.clone();
        options.base_url.clone_from(&active.url);
        options.model.clone_from(&active.model);
        Ok((options, active.boot.as_ref().map(|(number, _)| *number)))
    }

    /// One output probe on the active server, saved.
    fn probe(
        &mut self,
        side: usize,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Ended, ProfileError> {
        let Some(settings) = self.plan.probe else {
            return Ok(Ended::Done);
        };
        let (options, boot) = self.active_options()?;
        let started = now();
        let stop = self.stop_future();
        let set = block_on(probe_outputs(&options, settings, stop))
            .map_err(ProfileError::Load)?
            .map_err(|e| ProfileError::Load(e.to_string()))?;
        if self.interrupt.requested() {
            return Err(ProfileError::Interrupted);
        }
        if set.answers.len() < settings.prompts {
            return Ok(Ended::OutOfTime);
        }
        let count = self
            .record
            .probes
            .iter()
            .filter(|p| p.side == SIDES[side])
            .count();
        let file = format!("{}/probe{count:02}.outputs.json", SIDES[side]);
        let text = serde_json::to_string_pretty(&set).unwrap_or_default() + "\n";
        write_atomic(&self.out.join(&file), text.as_bytes())?;
        let failed = set.answers.iter().filter(|a| a.error.is_some()).count();
        progress(&format!(
            "probe of {}: {}",
            SIDES[side],
            probe_summary(&set, failed)
        ));
        self.record.probes.push(ProbeRecord {
            side: SIDES[side],
            file,
            boot,
            started,
            failed,
        });
        Ok(Ended::Done)
    }

    /// The engage check on the active (candidate) server, saved.
    fn engage(&mut self, progress: &mut dyn FnMut(&str)) -> Result<EngageRecord, ProfileError> {
        let Some(active) = &self.active else {
            return Err(ProfileError::Refused("no server is up".to_owned()));
        };
        let pids = match &active.boot {
            Some((_, server)) => group_members(server.group_id()).unwrap_or_default(),
            None => server_processes(port_of(&active.url)),
        };
        let envs = read_envs(&pids, &self.plan.expect.envs);
        let mut record = EngageRecord {
            kind: ENGAGE_KIND.to_owned(),
            envs,
            kernels: Vec::new(),
            traces: Vec::new(),
            error: None,
        };
        if !self.plan.expect.kernels.is_empty() {
            progress("candidate: a profile window, for the kernels the change adds");
            match self.kernel_window(progress) {
                Ok((ids, traces)) => {
                    record.traces = traces;
                    record.kernels = self
                        .plan
                        .expect
                        .kernels
                        .iter()
                        .map(|id| (id.clone(), ids.contains(id)))
                        .collect();
                }
                Err(error) => record.error = Some(error),
            }
        }
        let text = serde_json::to_string_pretty(&record).unwrap_or_default() + "\n";
        write_atomic(
            &self.out.join("candidate/engage.check.json"),
            text.as_bytes(),
        )?;
        progress(&check_engage(Some(&record)).detail);
        Ok(record)
    }

    /// A profile window on the active server under a steady load: the kernel ids of its
    /// traces, and the traces (relative to the run directory).
    fn kernel_window(
        &self,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(BTreeSet<String>, Vec<String>), String> {
        let (options, _) = self.active_options().map_err(|e| e.to_string())?;
        let (framework, trace_dir, ranks) = match &self.plan.sources[1] {
            SideSource::Config(file) => (
                file.config.framework,
                profiler_dir(&file.config)?,
                file.config.parallel_ranks(),
            ),
            SideSource::Url { .. } => {
                let (framework, dir) =
                    self.plan.candidate_profiler.clone().ok_or(
                        "a URL candidate's profiler is not known: give --candidate-trace-dir",
                    )?;
                (framework, dir, 1)
            }
        };
        let reader = self
            .plan
            .kernel_reader
            .clone()
            .ok_or("no trace reader was given")?;
        let endpoint = ProfileEndpoint {
            framework,
            base_url: options.base_url.clone(),
            trace_dir,
        };
        let concurrency = options.concurrency as u32;
        let mut steady = options;
        steady.num_prompts = 1 << 40;
        steady.warmup = 0;
        let load = LoadRun::start(steady, self.interrupt.flag()).map_err(|e| e.to_string())?;
        let timeouts = Timeouts::default();
        let context = WindowContext {
            endpoint: &endpoint,
            root: self.out,
            load: &load,
            concurrency,
            interrupt: self.interrupt,
            timeouts: &timeouts,
            ranks,
        };
        let steps = ProfileWindow::Steps(self.plan.expect.window_steps.max(1));
        let window = record_window(&context, 1, steps, progress);
        let _ = load.stop();
        if let Some(error) = window.error {
            return Err(format!("its profile window failed: {error}"));
        }
        let traces: Vec<String> = window.traces.iter().map(|t| t.path.clone()).collect();
        let files: Vec<PathBuf> = traces.iter().map(|t| self.out.join(t)).collect();
        if files.is_empty() {
            return Err("its profile window wrote no trace".to_owned());
        }
        let ids = (reader.0)(&files)?;
        Ok((ids, traces))
    }

    /// A future that ends on a signal or at the deadline.
    fn stop_future(&self) -> impl std::future::Future<Output = ()> + 'static {
        let (flag, deadline) = (self.interrupt.flag(), self.deadline);
        async move {
            while !flag() && deadline.is_none_or(|end| Instant::now() < end) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    /// One phase on the active server, saved (a phase a signal or the budget cut short is
    /// not).
    fn phase(
        &mut self,
        side: usize,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Ended, ProfileError> {
        let (options, boot) = self.active_options()?;
        let started = now();
        let (flag, deadline) = (self.interrupt.flag(), self.deadline);
        let load = LoadRun::start(options, move || {
            flag() || deadline.is_some_and(|end| Instant::now() >= end)
        })
        .map_err(|e| ProfileError::Load(e.to_string()))?;
        let quiet = watch(&load);
        let report = load.join().map_err(ProfileError::Load)?;
        if self.interrupt.requested() {
            return Err(ProfileError::Interrupted);
        }
        if report.partial {
            let in_flight = report.summary.requests_cancelled;
            if in_flight > 0 && quiet >= Duration::from_secs(STALL_SECONDS) {
                return Err(ProfileError::Load(format!(
                    "the {} stalled: {in_flight} requests in flight had streamed nothing for {:.0} s when the time budget ran out (phase {} cut short, not saved)",
                    SIDES[side],
                    quiet.as_secs_f64(),
                    self.schedule.counts()[side] + 1
                )));
            }
            return Ok(Ended::OutOfTime);
        }
        let count = self.schedule.counts()[side];
        let file = format!("{}/phase{count:02}.json", SIDES[side]);
        let mut bytes = Vec::new();
        report
            .write_json(&mut bytes)
            .map_err(|e| ProfileError::Load(e.to_string()))?;
        write_atomic(&self.out.join(&file), &bytes)?;
        self.schedule.done(side);
        let summary = &report.summary;
        let tps = summary.throughput.output_tokens_per_s;
        let failed = summary.requests_failed;
        let failures = if failed > 0 {
            format!(", {failed} of {} requests failed", summary.requests_started)
        } else {
            String::new()
        };
        progress(&format!(
            "phase {} of {}: {tps:.1} output tok/s{failures}",
            count + 1,
            SIDES[side]
        ));
        self.record.order.push(PhaseRecord {
            side: SIDES[side],
            file,
            boot,
            started,
            output_tokens_per_s: tps,
            requests_failed: failed,
        });
        Ok(Ended::Done)
    }

    /// The grade of what is saved, written into `grade.json`; the error when the saved
    /// evidence cannot be graded (the sides did different work).
    pub(super) fn grade(&mut self) -> Result<Result<Grade, String>, RunDirError> {
        let settings = GradeSettings {
            looks: self.schedule.looks().len(),
            ..self.plan.settings.clone()
        };
        let read = |side: &str| read_side_partial(&self.out.join(side));
        let graded = read("base")
            .and_then(|base| Ok((base, read("candidate")?)))
            .and_then(|(base, candidate)| grade(&base, &candidate, &settings));
        let mut document = match &graded {
            Ok(graded) => serde_json::to_value(graded).unwrap_or(Value::Null),
            Err(error) => json!({"decision": null, "error": error}),
        };
        document["run"] = serde_json::to_value(&self.record).unwrap_or(Value::Null);
        let text = serde_json::to_string_pretty(&document).unwrap_or_default() + "\n";
        write_atomic(&self.out.join("grade.json"), text.as_bytes())?;
        Ok(graded)
    }

    /// Records how the run ended and grades what it saved.
    pub(super) fn finish(
        &mut self,
        error: Option<ProfileError>,
    ) -> Result<Result<Grade, String>, RunDirError> {
        let interrupted = self.interrupt.requested();
        self.record.status = match &error {
            _ if interrupted => "interrupted",
            _ if self.refusal.is_some() => "refused",
            Some(_) => "failed",
            None => "complete",
        };
        self.record.error = match (&error, self.interrupt.signal()) {
            (Some(ProfileError::Interrupted) | None, Some(signal)) => {
                Some(format!("stopped by signal {signal}"))
            }
            (error, _) => error.as_ref().map(ToString::to_string),
        };
        let graded = self.grade()?;
        Ok(match (&self.refusal, graded) {
            (Some(why), _) => Err(why.clone()),
            (None, graded) => graded,
        })
    }
}

/// The port of a `http://host:port` URL (80 when none is given).
fn port_of(url: &str) -> u16 {
    stepscope_load::Endpoint::parse(url).map_or(80, |endpoint| endpoint.port)
}

/// Runs `future` on a current-thread runtime of its own.
pub(super) fn block_on<F: std::future::Future>(future: F) -> Result<F::Output, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("Could not start a runtime: {e}"))?;
    Ok(runtime.block_on(future))
}

/// Waits for `load` to end; returns how long it had streamed nothing when it ended.
fn watch(load: &LoadRun) -> Duration {
    let mut last = (load.progress().streamed_chunks(), Instant::now());
    while !load.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
        let chunks = load.progress().streamed_chunks();
        if chunks != last.0 {
            last = (chunks, Instant::now());
        }
    }
    last.1.elapsed()
}

/// `8 answers, 256 tokens` (`, 2 failed`).
fn probe_summary(set: &ProbeSet, failed: usize) -> String {
    let tokens: usize = set
        .answers
        .iter()
        .map(|a| a.token_ids.as_ref().map_or(0, Vec::len))
        .sum();
    let failed = if failed > 0 {
        format!(", {failed} failed")
    } else {
        String::new()
    };
    format!("{} answers, {tokens} tokens{failed}", set.answers.len())
}
