//! Replays whose kernels started later after their launch than any eager launch of the same
//! file took to start, on a GPU that had nothing else to run: kernels stamped after the fact.
//!
//! What it computes. Each eager launch's delay is its first GPU event's start minus the
//! launch call's end. Those delays hold whatever this file's host and GPU do: an offset
//! between their clocks (the shared piecewise vLLM trace's GPU runs 146–282 ms "after" its
//! host), a GPU running behind its host, and waits on work the trace does not show (a real
//! SGLang trace has eager kernels that waited 463 ms on an idle GPU). Their maximum is the
//! longest this file shows work waiting to start. A replay is **late** when its first
//! kernel started more than [`MIN_LATE`] beyond that maximum after its own launch call
//! ended, while its device had run nothing for [`MIN_GAP`] before it (so it was queued
//! behind nothing the trace shows).
//!
//! Why it matters: on ROCm, SGLang traces have shown every kernel of a step's replays
//! arriving in one burst after the last step marker (sglang #31545). Where eager work
//! launched after the replay onto its stream ran first, [`super::timing`] flags the order;
//! a file with a single replay and nothing after it on its stream has no such witness, and
//! only the replay's delay after its launch, against the file's own eager launches, shows
//! it. Host step markers are not compared with GPU times: a GPU running behind its host puts
//! honest kernels after the last marker too (the shared vLLM decode trace's replay starts
//! 6 ms after its step ended).
//! Example (the shared vLLM decode trace without the work after its replay, the replay moved
//! after the end of the trace): eager launches start 7.3–7.8 ms after their calls return;
//! the single replay's first kernel 17.1 ms after its call, on an idle GPU → late.
//!
//! With fewer than [`MIN_SAMPLES`] eager launches there is no scale, and no replay is late.

use super::CoverageInputs;
use rustc_hash::FxHashMap as HashMap;
use stepscope_model::{Duration, RuntimeCallKind, Timestamp, Trace};

/// Eager launches needed to know how long work waits to start in this file.
pub(crate) const MIN_SAMPLES: usize = 5;
/// Beyond the longest eager delay, lateness under this is never proof (timer noise,
/// launch latencies of graphs).
pub(crate) const MIN_LATE: Duration = Duration::from_nanos(1_000_000);
/// A device idle this long before an event was not running work queued ahead of it.
pub(crate) const MIN_GAP: Duration = Duration::from_nanos(50_000);

/// Per device: GPU events by start, with the latest end of all events up to each.
struct Busy {
    devices: HashMap<u32, (Vec<Timestamp>, Vec<Timestamp>)>,
}

impl Busy {
    fn new(trace: &Trace) -> Self {
        let gpu = &trace.gpu;
        let mut by_device: HashMap<u32, Vec<(Timestamp, Timestamp)>> = HashMap::default();
        for g in 0..gpu.len() {
            by_device
                .entry(gpu.device[g])
                .or_default()
                .push((gpu.start[g], gpu.end(g)));
        }
        let devices = by_device
            .into_iter()
            .map(|(device, mut spans)| {
                spans.sort_unstable();
                let starts = spans.iter().map(|s| s.0).collect();
                let mut latest = Vec::with_capacity(spans.len());
                let mut end = Timestamp::from_nanos(i64::MIN);
                for span in &spans {
                    end = end.max(span.1);
                    latest.push(end);
                }
                (device, (starts, latest))
            })
            .collect();
        Busy { devices }
    }

    /// Whether the device ran nothing for [`MIN_GAP`] before `at`.
    fn idle_before(&self, device: u32, at: Timestamp) -> bool {
        let Some((starts, latest)) = self.devices.get(&device) else {
            return true;
        };
        let before = starts.partition_point(|&s| s < at);
        before
            .checked_sub(1)
            .is_none_or(|i| latest[i] + MIN_GAP <= at)
    }
}

/// A call's first GPU event: its start and device.
fn first_event(trace: &Trace, inputs: CoverageInputs<'_>, call: usize) -> Option<(Timestamp, u32)> {
    inputs
        .links
        .launched(call)
        .iter()
        .map(|&g| (trace.gpu.start[g as usize], trace.gpu.device[g as usize]))
        .min()
}

/// How long after its call's end a GPU event of call `call` started.
fn delay(trace: &Trace, inputs: CoverageInputs<'_>, call: usize) -> Option<Duration> {
    let (start, _) = first_event(trace, inputs, call)?;
    Some(start - trace.runtime.end(call))
}

/// The longest delay of this file's eager launches; `None` with too few of them.
fn longest_eager_delay(trace: &Trace, inputs: CoverageInputs<'_>) -> Option<Duration> {
    let runtime = &trace.runtime;
    let delays: Vec<Duration> = (0..runtime.len())
        .filter(|&call| runtime.kind[call] == RuntimeCallKind::EagerLaunch)
        .filter_map(|call| delay(trace, inputs, call))
        .collect();
    if delays.len() < MIN_SAMPLES {
        return None;
    }
    delays.into_iter().max()
}

/// Per replay: whether its first kernel started later after its launch than any eager
/// launch's did (by more than [`MIN_LATE`]), on a device idle before it.
pub(crate) fn late_replays(trace: &Trace, inputs: CoverageInputs<'_>) -> Vec<bool> {
    let replays = &inputs.launches.launches;
    let Some(longest) = longest_eager_delay(trace, inputs).filter(|_| !replays.is_empty()) else {
        return vec![false; replays.len()];
    };
    // Replays that waited too long: usually none, and then the device timelines are never
    // built.
    let waited: Vec<Option<(Timestamp, u32)>> = replays
        .iter()
        .map(|replay| {
            let call = replay.launch as usize;
            first_event(trace, inputs, call)
                .filter(|(first, _)| *first - trace.runtime.end(call) > longest + MIN_LATE)
        })
        .collect();
    if waited.iter().all(Option::is_none) {
        return vec![false; replays.len()];
    }
    let busy = Busy::new(trace);
    waited
        .into_iter()
        .map(|late| late.is_some_and(|(first, device)| busy.idle_before(device, first)))
        .collect()
}
