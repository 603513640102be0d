//! A live grading: benchmark phases against the two sides in the [`Schedule`]'s order,
//! graded at its looks, every phase saved so that the same grading can be made offline.
//!
//! A side is a running server's URL or a baseline config that stepscope boots, as `profile`
//! boots servers (the port must be free; the process group is stopped on every exit and on
//! a signal). Booted sides run one at a time: a side's server is booted when its turn comes
//! and stopped when the other side's turn comes, so the middle pair of A B B A shares one
//! boot. Phases of one boot share its warm state (caches, autotuned kernels), which is why
//! the order alternates rather than running one side's phases in a block.
//!
//! ```text
//! OUT/
//!   grade.json            the grade and the run (status, order, boots, fingerprints),
//!                         rewritten at every look, so an interrupted run keeps its evidence
//!   base/phaseNN.json     every base phase, as `stepscope bench --json` writes it
//!   candidate/phaseNN.json
//!   base.yaml, candidate.yaml   a config side, as given
//!   logs/SIDE-NN.log      each boot's server output
//! ```

use super::schedule::{SIDES, Schedule};
use super::{Decision, Grade, GradeSettings, grade, read_phases};
use crate::config::ConfigFile;
use crate::fingerprint::Fingerprint;
use crate::profile::rundir::{make_new_dir, now, write_atomic};
use crate::profile::server_phase::{await_ready, start_server, still_running_message, stop_server};
use crate::profile::{Interrupt, LoadRun, ProfileError, RunDirError};
use crate::server::ManagedServer;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use stepscope_load::BenchOptions;

/// Where a side's phases go.
#[derive(Debug, Clone)]
pub enum SideSource {
    /// A server already running.
    Url {
        /// Its base URL.
        url: String,
        /// The fingerprint it was booted with, when the caller knows it.
        fingerprint: Option<Fingerprint>,
    },
    /// A baseline config, booted for the side's turns.
    Config(Box<ConfigFile>),
}

/// One live grading.
#[derive(Debug, Clone)]
pub struct LivePlan {
    /// Base, then candidate.
    pub sources: [SideSource; 2],
    /// How phases are graded (`looks` is set from the schedule).
    pub settings: GradeSettings,
    /// Phases a side at the first look.
    pub min_phases: usize,
    /// Phases a side at the last.
    pub max_phases: usize,
    /// No new pair of phases starts after this long.
    pub max_time: Option<Duration>,
    /// Every phase's load (URL and model are set per side).
    pub bench: BenchOptions,
    /// From boot to the first completion.
    pub ready_timeout: Duration,
    /// SIGTERM to SIGKILL when a booted server stops.
    pub stop_grace: Duration,
}

/// What `grade.json` says about the run, beside the grade.
#[derive(Debug, Clone, Serialize)]
pub struct LiveRecord {
    /// `running`, `complete`, `interrupted` or `failed`.
    pub status: &'static str,
    /// Why it failed or was interrupted.
    pub error: Option<String>,
    /// Why it stopped adding phases: `decided`, `max-phases` or `max-time`.
    pub stopped_by: Option<&'static str>,
    /// When it started (UTC).
    pub started: String,
    /// The phases a side at which it grades.
    pub looks_at: Vec<usize>,
    /// Base, then candidate.
    pub sides: [SideRecord; 2],
    /// Every phase in the order it ran.
    pub order: Vec<PhaseRecord>,
    /// The command that grades the saved phases again, offline, as this run did.
    pub regrade: String,
}

/// One side of the run.
#[derive(Debug, Clone, Serialize)]
pub struct SideRecord {
    /// `base` or `candidate`.
    pub name: &'static str,
    /// `url` or `config`.
    pub source: &'static str,
    /// The server's URL (a config side: its local URL).
    pub url: Option<String>,
    /// A config side: the config as given, and its copy in the run directory.
    pub config: Option<String>,
    /// The config's copy.
    pub config_copy: Option<String>,
    /// The reuse fingerprint: a config's own, or the one given for a URL (`null`: not known).
    pub fingerprint: Option<String>,
    /// A config side's boots, in order.
    pub boots: Vec<BootRecord>,
}

/// One boot of a config side's server.
#[derive(Debug, Clone, Serialize)]
pub struct BootRecord {
    /// Its output, relative to the run directory.
    pub log: String,
    /// Its process group.
    pub process_group: i32,
    /// Seconds from start to the first completion (`null`: never ready).
    pub ready_s: Option<f64>,
    /// The model it serves.
    pub served_model: Option<String>,
    /// How it stopped: `stopped`, `killed`, `still-running`; `running` until then.
    pub stop: String,
}

/// One phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseRecord {
    /// `base` or `candidate`.
    pub side: &'static str,
    /// Its bench document, relative to the run directory.
    pub file: String,
    /// The boot it ran on (1-based, a config side's), `null` for a URL side.
    pub boot: Option<usize>,
    /// When it started (UTC).
    pub started: String,
    /// Its output tokens per second.
    pub output_tokens_per_s: f64,
}

/// A finished live run: its grade (of the phases saved) and its record.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// The grade of every phase saved.
    pub grade: Grade,
    /// The run.
    pub record: LiveRecord,
}

/// `grade.json`: the grade, and the run under `run`.
#[derive(Serialize)]
struct Document<'a> {
    #[serde(flatten)]
    grade: &'a Grade,
    run: &'a LiveRecord,
}

/// The server a side's phases go to now.
struct Active {
    side: usize,
    url: String,
    model: String,
    boot: Option<(usize, ManagedServer)>,
}

/// A live run in progress.
struct Runner<'a> {
    plan: &'a LivePlan,
    out: &'a Path,
    interrupt: &'a Interrupt,
    record: LiveRecord,
    schedule: Schedule,
    active: Option<Active>,
}

/// Runs `plan` into `out` (made; refused when it already holds files). A failed phase, a
/// refused boot or a signal ends the run with what was saved, graded, and the reason in the
/// record; only a run directory that cannot be written is an error.
///
/// # Errors
///
/// `out` cannot be made or written, or already holds files.
pub fn run_live(
    plan: &LivePlan,
    out: &Path,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<LiveRun, RunDirError> {
    prepare(out)?;
    let schedule = Schedule::new(plan.min_phases, plan.max_phases);
    let mut runner = Runner {
        plan,
        out,
        interrupt,
        record: start_record(plan, out, &schedule),
        schedule,
        active: None,
    };
    runner.copy_configs()?;
    let ended = runner.phases(progress);
    let stopped = runner.leave();
    let error = ended.err().or(stopped.err());
    runner.record.status = match &error {
        _ if interrupt.requested() => "interrupted",
        Some(_) => "failed",
        None => "complete",
    };
    runner.record.error = match (&error, interrupt.signal()) {
        (Some(ProfileError::Interrupted) | None, Some(signal)) => {
            Some(format!("stopped by signal {signal}"))
        }
        (error, _) => error.as_ref().map(|e| e.to_string()),
    };
    let graded = runner.grade()?;
    Ok(LiveRun {
        grade: graded,
        record: runner.record,
    })
}

/// Makes the run directory (refused when it holds files) and its sides' folders.
fn prepare(out: &Path) -> Result<(), RunDirError> {
    make_new_dir(out)?;
    for side in SIDES {
        let folder = out.join(side);
        std::fs::create_dir_all(&folder).map_err(|source| RunDirError {
            path: folder,
            source,
        })?;
    }
    Ok(())
}

fn start_record(plan: &LivePlan, out: &Path, schedule: &Schedule) -> LiveRecord {
    let side = |at: usize| match &plan.sources[at] {
        SideSource::Url { url, fingerprint } => SideRecord {
            name: SIDES[at],
            source: "url",
            url: Some(url.clone()),
            config: None,
            config_copy: None,
            fingerprint: fingerprint.as_ref().map(ToString::to_string),
            boots: Vec::new(),
        },
        SideSource::Config(file) => SideRecord {
            name: SIDES[at],
            source: "config",
            url: None,
            config: Some(file.path.display().to_string()),
            config_copy: Some(format!("{}.yaml", SIDES[at])),
            fingerprint: Some(Fingerprint::of(&file.config).to_string()),
            boots: Vec::new(),
        },
    };
    let mut regrade = format!(
        "stepscope grade {} {} --looks {} --min-effect {}",
        out.join("base").display(),
        out.join("candidate").display(),
        schedule.looks().len(),
        plan.settings.min_effect_pct
    );
    for slo in &plan.settings.slos {
        regrade.push_str(&format!(" --slo {}={}", slo.metric, slo.limit));
    }
    LiveRecord {
        status: "running",
        error: None,
        stopped_by: None,
        started: now(),
        looks_at: schedule.looks().to_vec(),
        sides: [side(0), side(1)],
        order: Vec::new(),
        regrade,
    }
}

impl Runner<'_> {
    /// Copies each config side's file into the run directory.
    fn copy_configs(&self) -> Result<(), RunDirError> {
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

    /// Runs phases until decided, or the budget is spent.
    fn phases(&mut self, progress: &mut dyn FnMut(&str)) -> Result<(), ProfileError> {
        let started = Instant::now();
        let mut stopped_by = "max-phases";
        while let Some(side) = self.schedule.next_side() {
            let [a, b] = self.schedule.counts();
            let out_of_time = self
                .plan
                .max_time
                .is_some_and(|limit| started.elapsed() >= limit);
            if a == b && out_of_time {
                stopped_by = "max-time";
                break;
            }
            if self.interrupt.requested() {
                return Err(ProfileError::Interrupted);
            }
            self.enter(side, progress)?;
            self.phase(side, progress)?;
            if self.schedule.at_look() && self.grade()?.decision != Decision::Inconclusive {
                stopped_by = "decided";
                break;
            }
        }
        self.record.stopped_by = Some(stopped_by);
        Ok(())
    }

    /// Makes `side`'s server the active one: the other side's booted server stopped, this
    /// side's booted when it is a config.
    fn enter(&mut self, side: usize, progress: &mut dyn FnMut(&str)) -> Result<(), ProfileError> {
        if self.active.as_ref().is_some_and(|a| a.side == side) {
            return Ok(());
        }
        self.leave()?;
        let active = match &self.plan.sources[side] {
            SideSource::Url { url, .. } => Active {
                side,
                url: url.clone(),
                model: self.plan.bench.model.clone(),
                boot: None,
            },
            SideSource::Config(file) => self.boot(side, file, progress)?,
        };
        self.active = Some(active);
        Ok(())
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
    fn leave(&mut self) -> Result<(), ProfileError> {
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

    /// One phase on the active server, saved (a phase a signal cut short is not).
    fn phase(&mut self, side: usize, progress: &mut dyn FnMut(&str)) -> Result<(), ProfileError> {
        let Some(active) = &self.active else {
            return Err(ProfileError::Refused("no server is up".to_owned()));
        };
        let mut options = self.plan.bench.clone();
        options.base_url.clone_from(&active.url);
        options.model.clone_from(&active.model);
        let boot = active.boot.as_ref().map(|(number, _)| *number);
        let started = now();
        let load = LoadRun::start(options, self.interrupt.flag())
            .map_err(|e| ProfileError::Load(e.to_string()))?;
        let report = load.join().map_err(ProfileError::Load)?;
        if report.partial || self.interrupt.requested() {
            return Err(ProfileError::Interrupted);
        }
        let count = self.schedule.counts()[side];
        let file = format!("{}/phase{count:02}.json", SIDES[side]);
        let mut bytes = Vec::new();
        report
            .write_json(&mut bytes)
            .map_err(|e| ProfileError::Load(e.to_string()))?;
        write_atomic(&self.out.join(&file), &bytes)?;
        self.schedule.done(side);
        let tps = report.summary.throughput.output_tokens_per_s;
        progress(&format!(
            "phase {} of {}: {tps:.1} output tok/s",
            count + 1,
            SIDES[side]
        ));
        self.record.order.push(PhaseRecord {
            side: SIDES[side],
            file,
            boot,
            started,
            output_tokens_per_s: tps,
        });
        Ok(())
    }

    /// Grades the saved phases (read back as an offline grading reads them) and writes
    /// `grade.json`.
    fn grade(&mut self) -> Result<Grade, RunDirError> {
        let read = |side: &str| read_phases(&self.out.join(side)).unwrap_or_default();
        let settings = GradeSettings {
            looks: self.schedule.looks().len(),
            ..self.plan.settings.clone()
        };
        let graded = grade(read("base"), read("candidate"), &settings);
        let document = Document {
            grade: &graded,
            run: &self.record,
        };
        let text = serde_json::to_string_pretty(&document).unwrap_or_default() + "\n";
        write_atomic(&self.out.join("grade.json"), text.as_bytes())?;
        Ok(graded)
    }
}

/// The run directory's default name: `grade-YYYYmmdd-HHMMSS`.
pub fn default_out() -> PathBuf {
    PathBuf::from(format!(
        "grade-{}",
        jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S")
    ))
}
