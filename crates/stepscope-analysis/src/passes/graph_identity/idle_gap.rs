//! Idle-gap evidence for replays nothing else places: the only replay of its content, whose
//! work is a strict part of a bigger graph's.
//!
//! Such a replay is a short replay of the bigger graph when its stream sat idle in its window
//! long enough to hold the nodes it lacks (*needed*: half their shortest recorded
//! durations) beyond the idle time that follows the bigger graph's own replays (*typical*,
//! the median), and that typical idle time is small (at most half of needed): the missing
//! nodes ran, unrecorded, in that gap. It is not the bigger graph when its window has less
//! idle time than needed. Otherwise nothing is said.

use super::Context;
use crate::passes::content_groups::Relation;
use crate::passes::stream_idle::{StreamIdle, StreamKey};
use rustc_hash::{FxHashMap, FxHashSet};
use stepscope_model::{Duration, NameId, Trace};

// The window must close before any other graph launch: a replay launched in between may
// have lost nodes into the same gap.

/// What the idle time says about a replay that may be short of a bigger graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdleVerdict {
    /// Short of the graph: `idle` after it, `needed` for the missing nodes, `typical` after
    /// the graph's own replays.
    Short {
        /// The bigger graph's reference group.
        reference: usize,
        /// Idle time in its window.
        idle: Duration,
        /// Half the shortest recorded durations of the nodes it lacks, summed.
        needed: Duration,
        /// Median idle time in the windows of the graph's complete replays.
        typical: Duration,
    },
    /// Not that graph: its window has no room for the nodes it lacks.
    NoRoom,
}

/// Replays (by index) with a lone content that is a strict part of a reference group in
/// use, and what the idle time says of each.
pub(crate) fn idle_verdicts(
    trace: &Trace,
    context: &Context<'_>,
    graph_group: &[Option<usize>],
    evidence_given: &[bool],
) -> FxHashMap<usize, IdleVerdict> {
    let groups = context.groups();
    if groups.len() > super::MAX_GROUPS {
        return FxHashMap::default();
    }
    let references: FxHashSet<usize> = graph_group
        .iter()
        .flatten()
        .copied()
        .filter(|&g| g < groups.len())
        .collect();
    let candidates: Vec<(usize, usize)> = (0..graph_group.len())
        .filter(|&r| !evidence_given[r])
        .filter_map(|r| {
            let group = groups.group_of[r]?;
            if groups.groups[group].members.len() != 1 || graph_group[r] != Some(group) {
                return None;
            }
            let bigger = references
                .iter()
                .copied()
                .filter(|&h| groups.relation(group, h) == Relation::Inside)
                .max_by_key(|&h| (groups.groups[h].members.len(), groups.groups[h].size))?;
            Some((r, bigger))
        })
        .collect();
    if candidates.is_empty() {
        return FxHashMap::default();
    }
    let gaps = Gaps::new(trace, context, &candidates);
    candidates
        .into_iter()
        .filter_map(|(r, h)| gaps.verdict(r, h).map(|v| (r, v)))
        .collect()
}

struct Gaps<'a> {
    trace: &'a Trace,
    context: &'a Context<'a>,
    idle: StreamIdle,
}

impl<'a> Gaps<'a> {
    fn new(trace: &'a Trace, context: &'a Context<'a>, candidates: &[(usize, usize)]) -> Self {
        let groups = context.groups();
        let mut replays: Vec<usize> = candidates.iter().map(|(r, _)| *r).collect();
        for &(_, h) in candidates {
            replays.extend(&groups.groups[h].members);
        }
        let mut gaps = Gaps {
            trace,
            context,
            idle: StreamIdle::default(),
        };
        let streams: FxHashSet<StreamKey> = replays.iter().flat_map(|&r| gaps.streams(r)).collect();
        gaps.idle = StreamIdle::new(trace, context.inputs.links, &streams);
        gaps
    }

    fn rows(&self, r: usize) -> &[u32] {
        let launch = self.context.inputs.launches.launches[r].launch as usize;
        self.context.inputs.links.launched(launch)
    }

    fn streams(&self, r: usize) -> Vec<StreamKey> {
        let gpu = &self.trace.gpu;
        let mut keys: Vec<StreamKey> = self
            .rows(r)
            .iter()
            .map(|&row| (gpu.device[row as usize], gpu.stream[row as usize]))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Idle time on the replay's streams from its first recorded node to the start of the
    /// next work launched after it there: the gap before its first node may hold the work
    /// of replays launched before it that recorded nothing, so it is left out.
    fn window_idle(&self, r: usize) -> Option<Duration> {
        let call = self.context.inputs.launches.launches[r].launch as usize;
        let runtime = &self.trace.runtime;
        let first = self
            .rows(r)
            .iter()
            .map(|&row| self.trace.gpu.start[row as usize])
            .min()?;
        self.streams(r)
            .iter()
            .map(|&stream| {
                let (_, until) = self
                    .idle
                    .window(stream, runtime.start[call], runtime.end(call));
                Some(self.idle.idle(stream, vec![(first, until?.max(first))]))
            })
            .sum()
    }

    /// Half the shortest duration of each node `r` lacks, from `h`'s replays, summed.
    fn needed(&self, r: usize, h: usize) -> Duration {
        let groups = self.context.groups();
        let mut shortest: FxHashMap<NameId, i64> = FxHashMap::default();
        for &m in &groups.groups[h].members {
            for &row in self.rows(m) {
                let row = row as usize;
                let entry = shortest.entry(self.trace.gpu.name[row]).or_insert(i64::MAX);
                *entry = (*entry).min(self.trace.gpu.duration[row].as_nanos());
            }
        }
        let launches = &self.context.inputs.launches.launches;
        let reference = &launches[groups.groups[h].reference].sequence;
        let lacking =
            crate::passes::graph_launches::missing_names(reference, &launches[r].sequence);
        let total: i64 = lacking
            .iter()
            .filter_map(|name| shortest.get(name))
            .map(|d| d / 2)
            .sum();
        Duration::from_nanos(total)
    }

    /// Whether every stream's window of `r` is closed by work its own step (or, outside
    /// steps, its own thread) launched: idle time before the next step is the host's doing
    /// (scheduling, sampling) and says nothing about lost nodes.
    fn closed_within(&self, r: usize) -> bool {
        let launches = &self.context.inputs.launches.launches;
        let launch = &launches[r];
        let runtime = &self.trace.runtime;
        let call = launch.launch as usize;
        let steps = &self.context.inputs.steps.steps;
        // The next graph launch (any thread), whose own nodes may sit in the same gap.
        let next_graph = launches
            .get(r + 1)
            .map(|l| runtime.start[l.launch as usize]);
        let last_end = self
            .rows(r)
            .iter()
            .map(|&row| self.trace.gpu.end(row as usize))
            .max();
        self.streams(r).iter().all(|&stream| {
            let Some(next) = self.idle.closed_by(stream, runtime.end(call)) else {
                return false;
            };
            let next = next as usize;
            if next_graph.is_some_and(|g| g < runtime.start[next]) {
                return false;
            }
            // The next work was already queued when the replay's last recorded node ended:
            // the GPU sat idle with work waiting, so something unrecorded ran there. Had it
            // been launched later, the GPU may simply have waited for the host.
            if last_end.is_none_or(|end| runtime.start[next] > end) {
                return false;
            }
            match launch.step {
                Some(step) => {
                    let s = &steps[step];
                    runtime.process[next] == s.process && runtime.start[next] <= s.end
                }
                None => {
                    runtime.process[next] == runtime.process[call]
                        && runtime.thread[next] == runtime.thread[call]
                }
            }
        })
    }

    fn verdict(&self, r: usize, h: usize) -> Option<IdleVerdict> {
        let needed = self.needed(r, h);
        if needed <= Duration::ZERO {
            return None;
        }
        let idle = self.window_idle(r)?;
        if idle < needed {
            return Some(IdleVerdict::NoRoom);
        }
        if !self.closed_within(r) {
            return None;
        }
        let mut typical: Vec<Duration> = self.context.groups().groups[h]
            .members
            .iter()
            .filter_map(|&m| self.window_idle(m))
            .collect();
        typical.sort_unstable();
        let median = *typical.get(typical.len() / 2)?;
        let excess = idle.as_nanos() - median.as_nanos();
        let quiet = median.as_nanos() * 2 <= needed.as_nanos();
        (typical.len() >= 2 && quiet && excess >= needed.as_nanos()).then_some(IdleVerdict::Short {
            reference: h,
            idle,
            needed,
            typical: median,
        })
    }
}
