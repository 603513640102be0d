"""HolisticTraceAnalysis's own idle-time breakdown and kernel launch statistics for one
Kineto trace, as the reference stepscope's tests compare with.

Usage: HTA_DISABLE_NS_ROUNDING=1 python scripts/hta-reference.py TRACE OUT_PREFIX

Writes OUT_PREFIX.idle.csv (HTA's get_idle_time_breakdown: stream, idle_category,
idle_time in µs) and OUT_PREFIX.launch.csv (get_cuda_kernel_launch_stats: correlation,
cpu_duration, gpu_duration, launch_delay in µs). HTA_DISABLE_NS_ROUNDING=1 keeps the
trace's own sub-microsecond times (HTA otherwise rounds each event in to whole µs).
Needs HolisticTraceAnalysis with pandas<2.2
(crates/stepscope/tests/reference/hta/README.md says how).
"""

import os
import shutil
import sys
import tempfile

from hta.trace_analysis import TraceAnalysis


def main() -> None:
    trace, prefix = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(trace, os.path.join(folder, os.path.basename(trace)))
        analysis = TraceAnalysis(trace_dir=folder)
        # The trace's own rank (its distributedInfo), not always 0.
        rank = next(iter(analysis.t.traces))
        idle, _ = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)
        idle.to_csv(prefix + ".idle.csv", index=False, float_format="%.3f")
        launch = analysis.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
        launch.to_csv(prefix + ".launch.csv", index=False, float_format="%.3f")


if __name__ == "__main__":
    main()
