//! The `--range` section: per matching annotation name, its work by category and kernel.

use super::{TerminalOptions, micros_text, render_rows};
use crate::schema::{Range, Ranges, count};
use std::fmt::Write;

/// `RANGES matching /PATTERN/` and one block per matching annotation name.
pub(super) fn render_ranges(out: &mut String, found: &Ranges, options: &TerminalOptions) {
    if found.ranges.is_empty() {
        let names = if found.other_names.is_empty() {
            "the trace has no host annotations".to_owned()
        } else {
            let quoted: Vec<String> = found.other_names.iter().map(|n| format!("`{n}`")).collect();
            format!("its host annotations include {}", quoted.join(", "))
        };
        let _ = writeln!(
            out,
            "\nRANGES matching /{}/: no host annotation matches; {names}",
            found.pattern
        );
        return;
    }
    let _ = writeln!(
        out,
        "\nRANGES matching /{}/ — {}; GPU work launched inside each (by launch call)",
        found.pattern,
        count(found.ranges.len() as u32, "annotation name")
    );
    for range in &found.ranges {
        render_range(out, range, options);
    }
}

fn render_range(out: &mut String, range: &Range, options: &TerminalOptions) {
    let mirror = range
        .gpu_mirror_time_us
        .map(|us| format!(", GPU mirror {}", micros_text(us)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\n{} — {}, host {}{mirror}; {}, GPU time {}, busy {}",
        range.name,
        count(range.instances, "instance"),
        micros_text(range.cpu_time_us),
        count(range.events as u32, "GPU event"),
        micros_text(range.gpu_time_us),
        micros_text(range.busy_time_us),
    );
    if range.events > 0 {
        render_rows(
            out,
            &range.categorised_by,
            &range.categories,
            &range.kernels,
            options,
        );
    }
}
