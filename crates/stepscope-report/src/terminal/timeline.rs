//! "Where the GPU's time goes": a trace's or a stage's GPU timeline in one line, its biggest
//! part first.

use super::{micros_text, percent};
use crate::schema::GpuTimelineTimes;

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
