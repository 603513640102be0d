//! One profile window under the steady load: opened, closed after its steps (by the server,
//! or by stepscope after counting them), its files collected into `windows/N-SPEC/`.

use super::load::LoadRun;
use super::record::{IncompleteRecord, TraceRecord, WindowRecord};
use super::steps::StepCounter;
use super::{Interrupt, Timeouts};
use crate::collect::is_rank_trace;
use crate::collect::{Collected, Expected, TraceSnapshot, collect_traces};
use crate::config::{Framework, ProfileWindow};
use crate::windows::{ProfileEndpoint, WindowEnd, start_window, stop_window, window_steps};
use std::time::{Duration, Instant};

/// What a window needs from the run.
pub(crate) struct WindowContext<'a> {
    pub endpoint: &'a ProfileEndpoint,
    /// The run directory the window's files go under (`windows/N-SPEC/`).
    pub root: &'a std::path::Path,
    pub load: &'a LoadRun,
    pub concurrency: u32,
    pub interrupt: &'a Interrupt,
    pub timeouts: &'a Timeouts,
    pub ranks: u32,
}

/// Records window `index`; failures land in the record's `error`.
pub(crate) fn record_window(
    context: &WindowContext<'_>,
    index: usize,
    window: ProfileWindow,
    progress: &mut dyn FnMut(&str),
) -> WindowRecord {
    let spec = window.spec();
    let dir = format!("windows/{index}-{}", spec.replace(':', "-"));
    let mut record = WindowRecord {
        index,
        spec,
        dir: dir.clone(),
        requested_steps: window_steps(window),
        ended_by: String::new(),
        counted_steps: None,
        counted_by: None,
        open_s: 0.0,
        collect_s: 0.0,
        traces: Vec::new(),
        incomplete: Vec::new(),
        missing: None,
        error: None,
        analysis: None,
    };
    if let Err(error) = open_and_close(context, window, &mut record, progress) {
        record.error = Some(error);
    }
    record
}

fn open_and_close(
    context: &WindowContext<'_>,
    window: ProfileWindow,
    record: &mut WindowRecord,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let endpoint = context.endpoint;
    let before = TraceSnapshot::take(&endpoint.trace_dir);
    let counter = StepCounter::begin(
        endpoint.framework,
        &endpoint.base_url,
        context.load.progress(),
        context.concurrency,
    );
    let opened = Instant::now();
    let end = start_window(endpoint, window).map_err(|e| e.to_string())?;
    if end == WindowEnd::ByStop {
        let steps = u64::from(window_steps(window));
        let counted = wait_for_steps(context, &counter, steps, progress)?;
        record.counted_steps = Some(counted);
        record.counted_by = Some(counter.describe());
        progress(&format!(
            "closing the window after {counted} steps (the server writes its traces)"
        ));
        stop_window(endpoint, context.timeouts.window).map_err(|e| e.to_string())?;
    }
    record.ended_by = ended_by(endpoint.framework, window);
    record.open_s = opened.elapsed().as_secs_f64();
    let collecting = Instant::now();
    let options = context.timeouts.collect_options(Expected {
        ranks: context.ranks,
        by_stage: matches!(window, ProfileWindow::ByStage(_)),
    });
    let dest = context.root.join(&record.dir);
    let collected = collect_traces(
        endpoint.framework,
        &endpoint.trace_dir,
        &before,
        &dest,
        options,
        progress,
    )
    .map_err(|e| e.to_string())?;
    record.collect_s = collecting.elapsed().as_secs_f64();
    if end == WindowEnd::BySteps {
        let counted = counter.counted(context.load.progress()).ok();
        record.counted_steps = counted;
        record.counted_by = counted.map(|_| counter.describe());
    }
    fill_files(context.root, record, collected);
    Ok(())
}

/// Polls the counter until `steps`, a signal, the load's end or the timeout.
fn wait_for_steps(
    context: &WindowContext<'_>,
    counter: &StepCounter,
    steps: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<u64, String> {
    let started = Instant::now();
    loop {
        let counted = counter
            .counted(context.load.progress())
            .map_err(|e| e.to_string())?;
        if counted >= steps {
            return Ok(counted);
        }
        if context.interrupt.requested() {
            return Err("interrupted".to_owned());
        }
        if context.load.is_finished() {
            return Err(format!(
                "the load ended after {counted} of {steps} steps: no steady load to record"
            ));
        }
        if started.elapsed() >= context.timeouts.window {
            return Err(format!(
                "only {counted} of {steps} steps in {} s ({}): is the server stalled?",
                context.timeouts.window.as_secs(),
                counter.describe()
            ));
        }
        progress(&format!("recording: {counted} of {steps} steps"));
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ended_by(framework: Framework, window: ProfileWindow) -> String {
    let steps = window_steps(window);
    match framework {
        Framework::Sglang => format!("SGLang itself, after num_steps {steps}"),
        Framework::Vllm => format!(
            "/stop_profile after the steps were counted; vLLM was also given max_iterations {steps} (vLLM 0.32 stops its profiler there itself)"
        ),
        Framework::Atom => "/stop_profile after the steps were counted".to_owned(),
    }
}

fn fill_files(root: &std::path::Path, record: &mut WindowRecord, collected: Collected) {
    record.traces = collected
        .traces
        .iter()
        .map(|trace| TraceRecord {
            path: trace
                .path
                .strip_prefix(root)
                .unwrap_or(&trace.path)
                .display()
                .to_string(),
            source: trace.source.display().to_string(),
            bytes: trace.bytes,
            role: if is_rank_trace(&trace.path) {
                "rank"
            } else {
                "frontend"
            },
        })
        .collect();
    record.incomplete = collected
        .incomplete
        .into_iter()
        .map(|file| IncompleteRecord {
            path: file.path.display().to_string(),
            reason: file.reason,
        })
        .collect();
    record.missing = collected.missing;
}
