#!/usr/bin/env bash
# The readers of the formats other than Kineto JSON, each beside a plain scan of the same
# data, on ~1 GB files. Prints per format: file size, events read, the reader's median wall
# time and peak RSS (the `read` example of stepscope-ingest: the reader alone, no analysis),
# the reference scan's median wall time, and their ratio.
#
#   scripts/bench-readers.sh                  # RUNS=3, files in bench-data/ (git-ignored)
#   FORMATS="rpd rocpd" scripts/bench-readers.sh
#
# Files: the real piecewise vLLM trace (25 graph replays) tiled in time and written as each
# profiler writes it (`tile-trace --as FORMAT`, over stepscope_synth), and the real Nsight
# Systems export h100_2gpu_1s.sqlite tiled with scripts/tile-nsys.py.
# Reference scans: for SQLite formats the sqlite3 command-line shell running `SELECT *` of
# every table the reader reads, output discarded; for CSV, DuckDB's multi-threaded CSV reader
# loading the same tables into memory; for JSON, orjson parsing the whole document (both from
# PyPI, in a venv this script makes: bench-data/scan-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
DATA=${DATA:-bench-data}
FORMATS=${FORMATS:-"rocprof-csv rocprof-json rpd-json rpd rocpd nsys-sqlite"}
TRACES=$(bash scripts/corpus-dir.sh)
PIECEWISE=$TRACES/tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz
NSYS=$TRACES/nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite
BIN=${CARGO_TARGET_DIR:-target}/release
mkdir -p "$DATA"
cargo build --release --locked -q -p stepscope-dev --bin tile-trace
cargo build --release --locked -q -p stepscope-ingest --example read
command -v sqlite3 >/dev/null || { echo "bench-readers: needs the sqlite3 shell (apt-get install sqlite3)" >&2; exit 2; }
if [ ! -x "$DATA/scan-venv/bin/python" ]; then
  python3 -m venv "$DATA/scan-venv"
  "$DATA/scan-venv/bin/pip" install -q duckdb orjson
fi
PY=$DATA/scan-venv/bin/python

# The file of a format (made once): its path.
file_of() {
  case $1 in
    rocprof-csv) echo "$DATA/csv_1g/run_kernel_trace.csv" ;;
    rocprof-json) echo "$DATA/piecewise_1g.rocprof.json" ;;
    rpd-json) echo "$DATA/piecewise_1g.rpd.json" ;;
    rpd) echo "$DATA/piecewise_1g.rpd" ;;
    rocpd) echo "$DATA/piecewise_1g_results.db" ;;
    nsys-sqlite) echo "$DATA/h100_1g.sqlite" ;;
  esac
}

make_file() { # format
  local out; out=$(file_of "$1")
  [ -f "$out" ] && return
  case $1 in
    rocprof-csv) mkdir -p "$DATA/csv_1g"; "$BIN/tile-trace" "$PIECEWISE" --target-bytes 1.25G --as rocprof-csv -o "$out" ;;
    rocprof-json) "$BIN/tile-trace" "$PIECEWISE" --target-bytes 1.1G --as rocprof-json -o "$out" ;;
    rpd-json) "$BIN/tile-trace" "$PIECEWISE" --target-bytes 1.1G --as rpd-json -o "$out" ;;
    rpd) "$BIN/tile-trace" "$PIECEWISE" --target-bytes 2.2G --as rpd -o "$out" ;;
    rocpd) "$BIN/tile-trace" "$PIECEWISE" --target-bytes 2G --as rocpd -o "$out" ;;
    nsys-sqlite) python3 scripts/tile-nsys.py "$NSYS" "$out" --target-bytes 1e9 ;;
  esac
}

# SQL of `SELECT *` over every table the reader of a SQLite format reads.
scan_sql() { # format file
  local tables
  case $1 in
    rpd) tables="rocpd_api rocpd_op rocpd_api_ops rocpd_string" ;;
    rocpd) tables=$(sqlite3 "$2" "SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE 'rocpd_region_%' OR name LIKE 'rocpd_event_%' OR name LIKE 'rocpd_kernel_dispatch_%' OR name LIKE 'rocpd_memory_copy_%' OR name LIKE 'rocpd_string_%' OR name LIKE 'rocpd_info_kernel_symbol_%') AND name NOT LIKE 'rocpd_event_operation%'") ;;
    nsys-sqlite) tables="CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET NVTX_EVENTS StringIds" ;;
  esac
  for t in $tables; do printf 'SELECT * FROM "%s";\n' "$t"; done
}

# The reference scan of a format's file.
scan() { # format file
  case $1 in
    rpd | rocpd | nsys-sqlite) sqlite3 "$2" "$(scan_sql "$1" "$2")" >/dev/null ;;
    rocprof-csv)
      "$PY" -c 'import duckdb, sys, glob
con = duckdb.connect()
for i, f in enumerate(sorted(glob.glob(sys.argv[1] + "/*.csv"))):
    con.execute(f"CREATE TABLE t{i} AS SELECT * FROM read_csv(?)", [f])' "$(dirname "$2")" ;;
    *) "$PY" -c 'import orjson, sys; orjson.loads(open(sys.argv[1], "rb").read())' "$2" ;;
  esac
}

# Median of numbers on stdin.
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

printf '%-13s %9s %11s %9s %9s %9s %7s\n' format MB events read_s rss_MB scan_s ratio
for format in $FORMATS; do
  make_file "$format"
  file=$(file_of "$format")
  size=$(du -mc "$file" $( [ "$format" = rocprof-csv ] && ls "$(dirname "$file")"/*.csv ) | tail -1 | cut -f1)
  reads=() rss=() scans=() events=0
  for _ in $(seq "$RUNS"); do
    out=$( { /usr/bin/time -f '%e %M' "$BIN/examples/read" "$file" >"$DATA/read.out"; } 2>&1 )
    reads+=("${out% *}") rss+=("${out#* }")
    events=$(sed -E 's/.*: ([0-9]+) events.*/\1/' "$DATA/read.out")
    start=$(date +%s.%N); scan "$format" "$file"; end=$(date +%s.%N)
    scans+=("$(echo "$end - $start" | bc)")
  done
  r=$(printf '%s\n' "${reads[@]}" | median)
  m=$(printf '%s\n' "${rss[@]}" | median)
  s=$(printf '%s\n' "${scans[@]}" | median)
  printf '%-13s %9s %11s %9.2f %9.0f %9.2f %7.2f\n' "$format" "$size" "$events" "$r" "$(echo "$m / 1024" | bc)" "$s" "$(echo "$r / $s" | bc -l)"
done
