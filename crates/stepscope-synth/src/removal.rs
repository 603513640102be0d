//! Deleting graph replays' GPU events from a real trace, to reproduce the ROCm replay-loss
//! symptom from real files in tests (no public trace shows it).
//!
//! A graph launch is a runtime event (`cat` `cuda_runtime`, legacy `Runtime`, or
//! `cuda_driver`) whose name contains `GraphLaunch`; its replay is every GPU event (`kernel`,
//! `gpu_memcpy`, `gpu_memset`, any case) whose `args.correlation` equals the launch's.
//! Correlations are matched across the whole file (the real files hold one process each).
//! Removing a GPU event also removes the `ac2g` flow end (`ph: "f"`) that points at it.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::SynthError;
use crate::json_util::{correlation, events, events_mut, is_gpu_work, is_runtime, lenient_f64};

/// One graph launch of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchInfo {
    /// Position among the document's graph launches in timestamp order (the `launch_index`
    /// of [`remove_replay_kernels`] and [`keep_only`]).
    pub index: usize,
    /// Position of the launch event in the event list.
    pub event_index: usize,
    /// Runtime API name (`hipGraphLaunch`, `cudaGraphLaunch`, ...).
    pub name: String,
    /// Start of the launch call, µs.
    pub ts: f64,
    /// The launch's correlation id.
    pub correlation: u64,
    /// GPU events (kernels, memcpys, memsets) recorded under that correlation.
    pub gpu_events: usize,
}

/// Which GPU events of one replay to remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    /// All of them.
    AllKernels,
    /// The first `n` in GPU start order.
    FirstN(usize),
    /// The last `n` in GPU start order.
    LastN(usize),
    /// These positions within the replay, in GPU start order (out-of-range ones are ignored).
    Nth(Vec<usize>),
}

/// Graph launches with an integer correlation id, in timestamp order (ties keep file order).
pub fn graph_launches(doc: &Value) -> Vec<LaunchInfo> {
    let Some(list) = events(doc) else {
        return Vec::new();
    };
    let replays = replay_events(list);
    let mut launches: Vec<LaunchInfo> = list
        .iter()
        .enumerate()
        .filter(|(_, e)| is_runtime(e))
        .filter_map(|(event_index, e)| {
            let name = e.get("name").and_then(Value::as_str)?;
            if !name.contains("GraphLaunch") {
                return None;
            }
            let correlation = correlation(e)?;
            Some(LaunchInfo {
                index: 0,
                event_index,
                name: name.to_owned(),
                ts: e.get("ts").and_then(lenient_f64).unwrap_or(f64::NAN),
                correlation,
                gpu_events: replays.get(&correlation).map_or(0, Vec::len),
            })
        })
        .collect();
    launches.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    for (i, launch) in launches.iter_mut().enumerate() {
        launch.index = i;
    }
    launches
}

/// Event indices of GPU work per correlation, each list in GPU start order.
fn replay_events(list: &[Value]) -> HashMap<u64, Vec<usize>> {
    let mut by_corr: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, event) in list.iter().enumerate() {
        if is_gpu_work(event) {
            if let Some(c) = correlation(event) {
                by_corr.entry(c).or_default().push(i);
            }
        }
    }
    let ts = |i: usize| list[i].get("ts").and_then(lenient_f64).unwrap_or(f64::NAN);
    for indices in by_corr.values_mut() {
        indices.sort_by(|a, b| ts(*a).total_cmp(&ts(*b)).then(a.cmp(b)));
    }
    by_corr
}

/// Removes GPU events of the replay of graph launch `launch_index` (see [`graph_launches`])
/// and the flow ends pointing at them; returns how many GPU events were removed (0 when there
/// is no such launch).
pub fn remove_replay_kernels(doc: &mut Value, launch_index: usize, removal: &Removal) -> usize {
    let Some(launch) = graph_launches(doc).into_iter().nth(launch_index) else {
        return 0;
    };
    let Some(list) = events(doc) else {
        return 0;
    };
    let replay = replay_events(list)
        .remove(&launch.correlation)
        .unwrap_or_default();
    let chosen: HashSet<usize> = match removal {
        Removal::AllKernels => replay.into_iter().collect(),
        Removal::FirstN(n) => replay.into_iter().take(*n).collect(),
        Removal::LastN(n) => {
            let skip = replay.len().saturating_sub(*n);
            replay.into_iter().skip(skip).collect()
        }
        Removal::Nth(positions) => positions
            .iter()
            .filter_map(|p| replay.get(*p).copied())
            .collect(),
    };
    drop_events(doc, &chosen)
}

/// Removes every GPU event of each replay whose launch index (see [`graph_launches`]) `keep`
/// rejects; returns how many GPU events were removed. Keep only the last of `n`: `|i| i == n - 1`;
/// every k-th: `|i| i % k == 0`.
pub fn keep_only(doc: &mut Value, keep: impl Fn(usize) -> bool) -> usize {
    let launches = graph_launches(doc);
    let Some(list) = events(doc) else {
        return 0;
    };
    let mut replays = replay_events(list);
    let chosen: HashSet<usize> = launches
        .iter()
        .filter(|l| !keep(l.index))
        .filter_map(|l| replays.remove(&l.correlation))
        .flatten()
        .collect();
    drop_events(doc, &chosen)
}

/// Identity of a flow end bound to a GPU event: (id, pid, tid, ts bits).
type FlowKey = (u64, String, String, u64);

fn flow_key(event: &Value, id: u64) -> FlowKey {
    let text = |key| event.get(key).map(Value::to_string).unwrap_or_default();
    let ts = event.get("ts").and_then(lenient_f64).unwrap_or(f64::NAN);
    (id, text("pid"), text("tid"), ts.to_bits())
}

/// Removes the events at `indices` (GPU events) and one `ph: "f"` flow per removed event that
/// has its correlation as id and sits on its lane at its start; returns `indices.len()`.
fn drop_events(doc: &mut Value, indices: &HashSet<usize>) -> usize {
    let Some(list) = events_mut(doc) else {
        return 0;
    };
    let mut flows: HashMap<FlowKey, usize> = HashMap::new();
    for &i in indices {
        if let Some(c) = list.get(i).and_then(correlation) {
            *flows.entry(flow_key(&list[i], c)).or_default() += 1;
        }
    }
    let mut position = 0;
    list.retain(|event| {
        let here = position;
        position += 1;
        if indices.contains(&here) {
            return false;
        }
        if event.get("ph").and_then(Value::as_str) != Some("f") {
            return true;
        }
        let Some(id) = event.get("id").and_then(crate::json_util::lenient_u64) else {
            return true;
        };
        match flows.get_mut(&flow_key(event, id)) {
            Some(left) if *left > 0 => {
                *left -= 1;
                false
            }
            _ => true,
        }
    });
    indices.len()
}

/// Reads a JSON trace file, gzip-compressed or plain (detected by magic bytes).
///
/// # Errors
/// [`SynthError::ReadFile`] when the file cannot be read, [`SynthError::Json`] for invalid JSON.
pub fn read_json(path: &Path) -> Result<Value, SynthError> {
    let bytes = crate::read_trace_bytes(path)?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// Compact JSON text of a document.
pub fn to_json_bytes(doc: &Value) -> Vec<u8> {
    serde_json::to_vec(doc).expect("a serde_json::Value always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real piecewise vLLM trace: 25 launches of 4, 23 × 15 and 12 kernels.
    fn piecewise() -> Value {
        let path = stepscope_testdata::trace(
            "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
        );
        read_json(&path).expect("real trace")
    }

    fn counts(doc: &Value) -> Vec<usize> {
        graph_launches(doc).iter().map(|l| l.gpu_events).collect()
    }

    fn flows_with_id(doc: &Value, id: u64) -> usize {
        events(doc)
            .map(|l| l.iter().filter(|e| e["ph"] == "f" && e["id"] == id).count())
            .unwrap_or(0)
    }

    #[test]
    fn piecewise_launches_in_time_order() {
        let doc = piecewise();
        let launches = graph_launches(&doc);
        assert_eq!(launches.len(), 25);
        let mut expected = vec![4];
        expected.extend([15; 23]);
        expected.push(12);
        assert_eq!(counts(&doc), expected);
        assert!(launches.iter().all(|l| l.name == "hipGraphLaunch"));
        assert!(launches.windows(2).all(|w| w[0].ts < w[1].ts));
    }

    #[test]
    fn removing_five_of_fifteen_leaves_ten() {
        // Made from a real file: no public trace has a replay without its kernels.
        let mut doc = piecewise();
        let before = events(&doc).map(Vec::len).unwrap_or(0);
        let launch = graph_launches(&doc)[3].clone();
        // A flow end on the host for the launch itself, one per kernel on the GPU.
        assert_eq!(flows_with_id(&doc, launch.correlation), 16);
        assert_eq!(remove_replay_kernels(&mut doc, 3, &Removal::FirstN(5)), 5);
        let after = counts(&doc);
        assert_eq!(after[3], 10);
        assert_eq!(after.iter().sum::<usize>(), 4 + 23 * 15 + 12 - 5);
        assert_eq!(flows_with_id(&doc, launch.correlation), 11);
        assert_eq!(events(&doc).map(Vec::len).unwrap_or(0), before - 10);
    }

    #[test]
    fn other_removals() {
        let mut doc = piecewise();
        assert_eq!(
            remove_replay_kernels(&mut doc, 5, &Removal::Nth(vec![0, 14, 99])),
            2
        );
        assert_eq!(remove_replay_kernels(&mut doc, 24, &Removal::LastN(3)), 3);
        assert_eq!(remove_replay_kernels(&mut doc, 0, &Removal::AllKernels), 4);
        assert_eq!(remove_replay_kernels(&mut doc, 25, &Removal::AllKernels), 0);
        let after = counts(&doc);
        assert_eq!((after[0], after[5], after[24], after[6]), (0, 13, 9, 15));
    }

    #[test]
    fn keep_only_last_or_every_fifth() {
        let mut doc = piecewise();
        let n = graph_launches(&doc).len();
        assert_eq!(keep_only(&mut doc, |i| i == n - 1), 4 + 23 * 15);
        let after = counts(&doc);
        assert_eq!(after.iter().filter(|c| **c > 0).count(), 1);
        assert_eq!(after[n - 1], 12);

        let mut doc = piecewise();
        keep_only(&mut doc, |i| i % 5 == 0);
        let kept: Vec<usize> = counts(&doc)
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(kept, vec![0, 5, 10, 15, 20]);
    }

    #[test]
    fn plain_array_and_round_trip() {
        let array = read_json(&stepscope_testdata::trace(
            "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.json",
        ))
        .expect("plain array trace");
        assert!(array.is_array());
        assert!(graph_launches(&array).is_empty());
        let mut doc = piecewise();
        keep_only(&mut doc, |i| i == 0);
        let back: Value = serde_json::from_slice(&to_json_bytes(&doc)).expect("json");
        assert_eq!(counts(&back)[0], 4);
        assert!(matches!(
            read_json(Path::new("/nonexistent/trace.json")),
            Err(SynthError::ReadFile { .. })
        ));
    }
}
