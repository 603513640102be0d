//! "Where the GPU's time goes": a trace's or a stage's GPU timeline in one line, its biggest
//! part first; then what held the GPU back: its streams' idle time by cause, and the
//! launches.

use super::{micros_text, percent};
use crate::schema::{GpuTimelineTimes, IdleCausesReport, LaunchReport};
use std::fmt::Write as _;

/// `label: computation 10.67 ms (99%), exposed memcpy 43.2 µs (0.4%), idle 25.5 µs (0.2%) of
/// 10.74 ms` — the parts that sum to the span, biggest first, those of no time left out.
pub(super) fn timeline_line(label: &str, times: &GpuTimelineTimes) -> String {
    let mut parts = [
        ("computation", times.computation_us),
        ("exposed communication", times.exposed_comm_us),
        ("exposed memcpy", times.exposed_memcpy_us),
        ("idle", times.idle_us),
    ];
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    let shown: Vec<String> = parts
        .iter()
        .filter(|(_, us)| *us > 0.0)
        .map(|(name, us)| {
            let share = if times.total_us > 0.0 {
                us / times.total_us
            } else {
                0.0
            };
            format!("{name} {} ({})", micros_text(*us), percent(share))
        })
        .collect();
    if shown.is_empty() {
        return format!("{label}: no GPU time");
    }
    format!(
        "{label}: {} of {}",
        shown.join(", "),
        micros_text(times.total_us)
    )
}

/// The streams' idle time by cause, biggest first, and the launch statistics: a line each,
/// where the trace has them.
pub(super) fn render_host(out: &mut String, idle: &IdleCausesReport, launches: &LaunchReport) {
    let total = &idle.total;
    if total.idle_us > 0.0 || launches.eager + launches.replays > 0 {
        out.push('\n');
    }
    if total.idle_us > 0.0 {
        let parts = [
            (
                "host wait",
                total.host_wait_us,
                total.host_wait_after_sync_us,
            ),
            ("other", total.other_us, 0.0),
            ("kernel wait", total.kernel_wait_us, 0.0),
        ];
        let streams = idle.streams.len();
        let _ = writeln!(
            out,
            "stream idle by cause: {} over {streams} stream{}",
            causes_text(&parts, total.idle_us),
            if streams == 1 { "" } else { "s" }
        );
    }
    for stage in idle.stages.iter().filter(|s| s.idle_us > 0.0) {
        let parts = [
            ("between steps", stage.between_steps_us, 0.0),
            (
                "host wait",
                stage.host_wait_us,
                stage.host_wait_after_sync_us,
            ),
            ("other", stage.other_us, 0.0),
            ("kernel wait", stage.kernel_wait_us, 0.0),
        ];
        let _ = writeln!(
            out,
            "  {}: {}",
            stage.stage,
            causes_text(&parts, stage.idle_us)
        );
    }
    if let Some(line) = launch_line(launches) {
        let _ = writeln!(out, "{line}");
    }
}

/// `host wait 9.90 ms (70%, 361.5 µs of it after a sync), kernel wait 4.20 ms (30%)`: the
/// causes (name, µs, µs of it after a sync) with time, biggest first, each with its share of
/// `whole_us`.
fn causes_text(parts: &[(&str, f64, f64)], whole_us: f64) -> String {
    let mut parts = parts.to_vec();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    let shown: Vec<String> = parts
        .iter()
        .filter(|(_, us, _)| *us > 0.0)
        .map(|(name, us, after_sync)| {
            let sync = if *after_sync > 0.0 {
                format!(", {} of it after a sync", micros_text(*after_sync))
            } else {
                String::new()
            };
            let share = percent(us / whole_us);
            format!("{name} {} ({share}{sync})", micros_text(*us))
        })
        .collect();
    shown.join(", ")
}

/// `launches: 5224 eager, delay median 3.0 µs (p99 …), call median 4.0 µs; 1200
/// launch-bound (…); 70 graph replays, delay median …, spread median …`.
fn launch_line(launches: &LaunchReport) -> Option<String> {
    let mut parts = Vec::new();
    if launches.eager > 0 {
        parts.push(format!(
            "{} eager, delay median {} (p99 {}), call median {}",
            launches.eager,
            micros_text(launches.delay_us.median),
            micros_text(launches.delay_us.p99),
            micros_text(launches.cpu_us.median)
        ));
        let share = if launches.eager_gpu_time_us > 0.0 {
            launches.launch_bound_gpu_time_us / launches.eager_gpu_time_us
        } else {
            0.0
        };
        parts.push(format!(
            "{} launch-bound (shorter on the GPU than their launch call; {} of eager GPU time)",
            launches.launch_bound,
            percent(share)
        ));
    }
    if launches.replays > 0 {
        parts.push(format!(
            "{} graph replays, delay median {}, spread median {}",
            launches.replays,
            micros_text(launches.replay_delay_us.median),
            micros_text(launches.replay_spread_us.median)
        ));
    }
    (!parts.is_empty()).then(|| format!("launches: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_come_biggest_first_and_empty_ones_are_left_out() {
        let times = GpuTimelineTimes {
            computation_us: 10_674.5,
            exposed_comm_us: 0.0,
            exposed_memcpy_us: 43.2,
            busy_us: 10_717.7,
            idle_us: 25.5,
            total_us: 10_743.2,
            total_comm_us: 0.0,
            total_memcpy_us: 43.2,
        };
        assert_eq!(
            timeline_line("GPU timeline", &times),
            "GPU timeline: computation 10.67 ms (99%), exposed memcpy 43.2 µs (0.4%), idle 25.5 µs (0.2%) of 10.74 ms"
        );
    }
}
