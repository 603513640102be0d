#!/usr/bin/env bash
# End-to-end benchmark of `stepscope analyze` on ~1 GB Kineto traces made by tiling real
# traces of the public corpus (scripts/fetch-traces.sh) in time (tile-trace keeps every graph replay with its kernels),
# beside HolisticTraceAnalysis loading the same files in the same run (the reference
# ratio). Prints, per case, the median wall time and peak RSS of RUNS runs of stepscope and
# of HTA_RUNS runs of HTA, and the ratio of the medians. The runs of the two alternate (an HTA
# run, then RUNS / HTA_RUNS stepscope runs, HTA_RUNS times), so that both are measured in the
# same phases of a shared host whose speed drifts by tens of percent over minutes; run one
# after the other, a ratio moved by ±15 % between runs of the script.
#
#   scripts/bench-analyze.sh                 # RUNS=6, HTA_RUNS=3, files in bench-data/ (git-ignored)
#   HTA=0 scripts/bench-analyze.sh           # stepscope only
#   HTA_BACKEND=json scripts/bench-analyze.sh
#   CASES="piecewise_1g.json ranks8" scripts/bench-analyze.sh   # some of the cases
#
# Cases: the piecewise vLLM trace ×~190 as plain JSON, .json.gz and .json.zst (after the
# .json.gz, `inflate-only` times inflating it alone, and HTA's time over that is the most the
# .gz ratio can be on this machine); 8 rank files
# of 115–150 MB (the same trace tiled to 8 sizes, so no two are the same file); the HTA
# CUDA-graph trace ×50. HTA runs in a venv this script makes (bench-data/hta-venv:
# HolisticTraceAnalysis and ijson from PyPI) through scripts/hta-load.py, with the backend
# HTA_BACKEND (default `ijson_batch_and_compress`, its fastest: 41 s / 674 MB on the 912 MB
# piecewise file here, keeping 0.32 M rows; `json` keeps every event, 4.09 M rows, and took
# 134 s / 6.4 GB). HTA reads no zstd: that case has no HTA column.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-6}
HTA=${HTA:-1}
HTA_RUNS=${HTA_RUNS:-3}
HTA_BACKEND=${HTA_BACKEND:-ijson_batch_and_compress}
DATA=${DATA:-bench-data}
TRACES=$(bash scripts/corpus-dir.sh)
PIECEWISE=tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz
BIN=${CARGO_TARGET_DIR:-target}/release
mkdir -p "$DATA"
cargo build --release --locked -q -p stepscope -p stepscope-dev

make() { # name source target-bytes [--gzip]
  local out="$DATA/$1"
  [ -f "$out" ] || "$BIN/tile-trace" "$TRACES/$2" --target-bytes "$3" ${4:-} -o "$out"
}
make piecewise_1g.json "$PIECEWISE" 1.12G
make piecewise_1g.json.gz "$PIECEWISE" 1.12G --gzip
[ -f "$DATA/piecewise_1g.json.zst" ] || zstd -q -3 "$DATA/piecewise_1g.json" -o "$DATA/piecewise_1g.json.zst"
mkdir -p "$DATA/ranks8"
for rank in 0 1 2 3 4 5 6 7; do
  make "ranks8/rank$rank.json" "$PIECEWISE" $((125000000 + rank * 5000000))
done
make hta_graphs_1g.json hta/tests/data/negative_queue_length_values_check/rank0.json.gz 1.27G

if [ "$HTA" = 1 ] && [ ! -x "$DATA/hta-venv/bin/python" ]; then
  python3 -m venv "$DATA/hta-venv"
  "$DATA/hta-venv/bin/pip" install -q HolisticTraceAnalysis ijson
fi

# Median seconds and MB of peak RSS over lines of `seconds kilobytes`.
medians() {
  python3 -c '
import sys, statistics
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
print(f"{statistics.median(r[0] for r in rows):.2f} {statistics.median(r[1] for r in rows) / 1024:.0f}")'
}

# Runs a command N times, printing `seconds kilobytes` per run.
timed() { # runs command...
  local runs=$1
  shift
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %M' "$@" 2>&1 >/dev/null | tail -1
  done
}

inputs() { # case -> the files it names
  case "$1" in
    ranks8) ls "$DATA"/ranks8/rank*.json ;;
    *) echo "$DATA/$1" ;;
  esac
}

printf '%-22s %8s | %9s %8s | %9s %8s | %7s\n' case json_MB stepscope rss_MB hta rss_MB ratio
CASES=${CASES:-piecewise_1g.json piecewise_1g.json.gz piecewise_1g.json.zst ranks8 hta_graphs_1g.json}
for name in $CASES; do
  mapfile -t files < <(inputs "$name")
  target=$([ "$name" = ranks8 ] && echo "$DATA/ranks8" || echo "${files[0]}")
  json_bytes=0
  for file in "${files[@]}"; do
    bytes=$(case "$file" in *.gz) zcat "$file" | wc -c ;; *.zst) zstdcat "$file" | wc -c ;; *) stat -c %s "$file" ;; esac)
    json_bytes=$((json_bytes + bytes))
  done
  ours_runs=$(mktemp) theirs_runs=$(mktemp)
  theirs="-" theirs_rss="-" ratio="-"
  if [ "$HTA" = 1 ] && [ "$name" != piecewise_1g.json.zst ]; then
    for _ in $(seq "$HTA_RUNS"); do
      timed 1 "$DATA/hta-venv/bin/python" scripts/hta-load.py "$HTA_BACKEND" "${files[@]}" >> "$theirs_runs"
      timed $(((RUNS + HTA_RUNS - 1) / HTA_RUNS)) "$BIN/stepscope" analyze "$target" --no-progress >> "$ours_runs"
    done
    read -r theirs theirs_rss < <(medians < "$theirs_runs")
  else
    timed "$RUNS" "$BIN/stepscope" analyze "$target" --no-progress >> "$ours_runs"
  fi
  read -r ours ours_rss < <(medians < "$ours_runs")
  rm -f "$ours_runs" "$theirs_runs"
  [ "$theirs" != "-" ] && ratio=$(python3 -c "print(f'{$theirs / $ours:.1f}x')")
  printf '%-22s %8.0f | %8ss %8s | %8ss %8s | %7s\n' "$name" "$(python3 -c "print($json_bytes / 1e6)")" "$ours" "$ours_rss" "$theirs" "$theirs_rss" "$ratio"
  if [ "$name" = piecewise_1g.json.gz ]; then
    # Inflating alone, as stepscope inflates (one core): the floor under the .gz case, so
    # HTA's time over it is the most the .gz ratio can be here, whatever the parser does.
    read -r inflate inflate_rss < <(timed "$RUNS" "$BIN/inflate-only" "${files[0]}" | medians)
    ceiling="-"
    [ "$theirs" != "-" ] && ceiling=$(python3 -c "print(f'{$theirs / $inflate:.1f}x')")
    printf '%-22s %8s | %8ss %8s | %8s %8s | %7s\n' "  .gz inflate only" "" "$inflate" "$inflate_rss" "" "" "$ceiling"
  fi
done
