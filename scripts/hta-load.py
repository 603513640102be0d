#!/usr/bin/env python3
"""Loads trace files with HolisticTraceAnalysis, the reference the benchmark measures
stepscope against: `hta-load.py BACKEND FILE...` parses every file into HTA's
trace model (`Trace.load_traces`: the same step HTA's analyses start from) with the given
parser backend (json, ijson, ijson_batched, ijson_batch_and_compress) and prints the events.
"""
import os
import sys

from hta.common.trace import Trace
from hta.common.trace_parser import set_default_trace_parsing_backend
from hta.configs.parser_config import ParserBackend


def main():
    backend, files = ParserBackend(sys.argv[1]), [os.path.abspath(f) for f in sys.argv[2:]]
    set_default_trace_parsing_backend(backend)
    # Ranks by position: tiled copies of one trace all claim rank 0 in their metadata.
    trace = Trace(trace_files=dict(enumerate(files)), trace_dir="/")
    trace.load_traces(include_last_profiler_step=True)
    events = sum(len(df) for df in trace.traces.values())
    print(f"hta {backend.value}: {len(trace.traces)} ranks, {events} events")


if __name__ == "__main__":
    main()
