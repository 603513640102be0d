#!/usr/bin/env bash
# End-to-end benchmark of `stepscope analyze` on ~1 GB Kineto traces made by tiling real
# traces from ../shared/traces in time (tile-trace keeps every graph replay with its kernels).
# Prints the median wall time and peak RSS of RUNS runs for each file.
#
#   scripts/bench-analyze.sh            # RUNS=5, files in bench-data/ (git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
DATA=${DATA:-bench-data}
TRACES=../shared/traces
mkdir -p "$DATA"
cargo build --release --locked -q -p stepscope

make() { # name source target-bytes [--gzip]
  local out="$DATA/$1"
  [ -f "$out" ] || ./target/release/tile-trace "$TRACES/$2" --target-bytes "$3" ${4:-} -o "$out"
}
make piecewise_1g.json tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz 1.12G
make piecewise_1g.json.gz tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz 1.12G --gzip
make hta_graphs_1g.json hta/tests/data/negative_queue_length_values_check/rank0.json.gz 1.27G

printf '%-24s %10s %10s %12s %12s\n' file json_MB runs median_s median_rss_MB
for file in piecewise_1g.json piecewise_1g.json.gz hta_graphs_1g.json; do
  path="$DATA/$file"
  json_bytes=$(case "$file" in *.gz) zcat "$path" | wc -c ;; *) stat -c %s "$path" ;; esac)
  results=()
  for _ in $(seq "$RUNS"); do
    results+=("$(/usr/bin/time -f '%e %M' ./target/release/stepscope analyze "$path" --no-progress 2>&1 >/dev/null | tail -1)")
  done
  printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
print(f"{sys.argv[1]:<24} {int(sys.argv[2])/1e6:10.0f} {len(rows):10d} {statistics.median(r[0] for r in rows):12.2f} {statistics.median(r[1] for r in rows)/1024:12.0f}")
' "$file" "$json_bytes"
done
