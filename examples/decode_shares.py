"""A worked example of the Python package on a real vLLM decode trace (full CUDA graphs)
that the repository carries: is every graph replay recorded, what share of decode's GPU
time each kernel category takes, and a plot of it.

    pip install stepscope pandas matplotlib
    python examples/decode_shares.py                 # the carried trace; writes decode_shares.png
    python examples/decode_shares.py TRACE --out shares.png
"""

import argparse
import pathlib

import stepscope

HERE = pathlib.Path(__file__).resolve().parent
TRACE = (
    HERE.parent
    / "testdata/traces/tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(TRACE))
    parser.add_argument("--out", default="decode_shares.png")
    args = parser.parse_args()

    # 1. The verdict: were all replays' kernels recorded? Shares are only trusted if so.
    result = stepscope.analyze(args.trace)
    counts = result.counts
    print(f"verdict: {result.verdict} ({counts['recorded_replays']} of {counts['replays']} replays recorded)")

    # 2. Decode's GPU time by kernel category, as a DataFrame.
    categories = result.tables.stage_category.to_pandas()
    decode = categories[categories["stage"] == "decode"].sort_values("share", ascending=False)
    if decode.empty:
        raise SystemExit("this trace has no decode steps")
    for row in decode.itertuples():
        print(f"  {row.category:<16} {row.share * 100:5.1f} %  {row.time_ns / 1e6:8.3f} ms")

    # 3. A plot of it.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 3.5))
    axes.barh(decode["category"], decode["share"] * 100)
    axes.invert_yaxis()
    axes.set_xlabel("share of decode GPU time (%)")
    axes.set_title(f"decode by kernel category — {result.verdict}")
    figure.tight_layout()
    figure.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
