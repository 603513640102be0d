#!/usr/bin/env python3
"""Writes a Kineto trace with many CUDA-graph replays, to measure the reports at scale.

    scripts/many-replays.py OUT.json.gz [--replays 100000] [--graphs 8] [--empty-every 97]

Each replay is one cudaGraphLaunch with the kernels of its graph (graph g has g + 2 kernels,
named after it); graphs take turns; every --empty-every-th replay records no kernel (the ROCm
symptom), so the verdict is `incomplete`. Not a real trace: the numbers it gives are the
reports' cost, not a server's.
"""
import argparse
import gzip
import json


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--replays", type=int, default=100_000)
    parser.add_argument("--graphs", type=int, default=8)
    parser.add_argument("--empty-every", type=int, default=97)
    args = parser.parse_args()
    with gzip.open(args.out, "wt", compresslevel=1) as out:
        out.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],\n')
        out.write('"cuda_runtime_version": 12040, "traceEvents": [\n')
        ts, first = 1_000.0, True
        for replay in range(args.replays):
            graph = replay % args.graphs
            correlation = replay + 1
            events = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1,
                       "tid": 1, "ts": ts, "dur": 4.0, "args": {"correlation": correlation}}]
            gpu = ts + 6.0
            if args.empty_every <= 0 or (replay + 1) % args.empty_every != 0:
                for k in range(graph + 2):
                    events.append({"ph": "X", "cat": "kernel", "name": f"graph{graph}_kernel{k}",
                                   "pid": 0, "tid": 7, "ts": gpu, "dur": 3.0,
                                   "args": {"correlation": correlation, "device": 0, "stream": 7}})
                    gpu += 3.5
            ts += 10.0 + 3.5 * (graph + 2)
            for event in events:
                out.write(("" if first else ",\n") + json.dumps(event))
                first = False
        out.write("\n]}\n")


if __name__ == "__main__":
    main()
