#!/usr/bin/env bash
# Builds the (git-ignored) seed corpora of the fuzz targets from small real traces.
#
#   fuzz/seed-corpus.sh [TRACES_DIR]     (default: the corpus, found by scripts/corpus-dir.sh)
#
# Needs gzip, zstd, jq and sqlite3. Writes fuzz/corpus/<target>/ for every target.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
traces=${1:-$(bash "$here/../scripts/corpus-dir.sh")}
json=$here/corpus/kineto_json
gz=$here/corpus/kineto_gzip
split=$here/corpus/kineto_split
mkdir -p "$json" "$gz" "$split"

# Small real traces (gzip unless named .json).
sources=(
  hta/tests/data/triton_example/triton_example.json.gz
  hta/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz
  hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz
  tracelens/tests/traces/torch_compile_triton/trace.json.gz
  kineto/docs/traces/before_fix_trace.json
)

plain() { # plain text of a trace
  case $1 in
    *.gz) gzip -dc "$1" ;;
    *) cat "$1" ;;
  esac
}

for source in "${sources[@]}"; do
  path=$traces/$source
  [[ -f $path ]] || { echo "skip (missing): $source" >&2; continue; }
  name=$(basename "$source" | sed 's/\.json.*//; s/[^A-Za-z0-9_.-]/_/g')
  tmp=$(mktemp)
  plain "$path" > "$tmp"
  # kineto_json: the whole document, a short head of it, and small re-serialised slices.
  cp "$tmp" "$json/$name.json"
  head -c 4096 "$tmp" > "$json/$name.head4k.json"
  jq -c '{schemaVersion, deviceProperties: (.deviceProperties // [])[:1], traceEvents: .traceEvents[:40]}' "$tmp" > "$json/$name.slice.json"
  jq '.traceEvents[:25]' "$tmp" > "$json/$name.array.json"
  # kineto_gzip: the file as stored, zstd of the slice, and a gzip cut in half.
  case $source in
    *.gz) cp "$path" "$gz/$name.json.gz" ;;
    *) gzip -9c "$tmp" > "$gz/$name.json.gz" ;;
  esac
  zstd -q -3 -c "$json/$name.slice.json" > "$gz/$name.slice.json.zst"
  size=$(stat -c %s "$gz/$name.json.gz")
  head -c $((size / 2)) "$gz/$name.json.gz" > "$gz/$name.cut.json.gz"
  cp "$json/$name.slice.json" "$gz/$name.slice.json"
  # kineto_split: two bytes of shift, then events joined compact or pretty.
  for shift in 00 40 a0; do
    { printf "\\x00\\x$shift"; jq -c '.traceEvents[:20][]' "$tmp" | paste -sd, -; } > "$split/$name.compact.$shift"
    { printf "\\x00\\x$shift"; jq -c '.traceEvents[20:40][]' "$tmp" | sed '2,$s/^/  /' | paste -sd, - | sed 's/,  {/,\n  {/g'; } > "$split/$name.pretty.$shift"
  done
  rm -f "$tmp"
done

# Hand-written seeds for features the real traces above may lack.
printf '%s' '[{"ph":"X","cat":"Kernel","name":"k","pid":"0","tid":"stream 7","ts":"10.5","dur":"2","args":{"correlation":"77"}},{"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":9,"dur":1,"args":{"correlation":77}}]' > "$json/legacy_strings.json"
printf '\xef\xbb\xbf%s' '{"traceEvents":[{"ph":"X","cat":"kernel","name":"\u00e9\ud83d\ude80\"\\","ts":1.0005,"dur":2,"args":{"x":[{"a":1}, {"b":2}],"graph id":3}},{"ph":"s","id":5,"ts":1,"pid":1},{"ph":"f","id":5,"ts":2,"pid":1},{"ph":"M","name":"process_name","pid":1,"args":{"name":"GPU 0"}}],"distributedInfo":{"rank":1,"world_size":8},"hip_runtime_version":70253211}' > "$json/bom_escapes.json"
cat "$json/legacy_strings.json" "$json/bom_escapes.json" > "$gz/two_docs.json"
gzip -c "$json/legacy_strings.json" > "$gz/member1.gz"
gzip -c "$json/bom_escapes.json" > "$gz/member2.gz"
cat "$gz/member1.gz" "$gz/member2.gz" > "$gz/multi_member.json.gz"
rm -f "$gz/member1.gz" "$gz/member2.gz"
zstd -q -c "$json/legacy_strings.json" > "$gz/legacy_strings.json.zst"
printf '\x00\x05%s' '{"ph":"X","cat":"kernel","name":"a","ts":1,"dur":1,"args":{"x":[{"a":1}, {"b":2}]}},{"ph":"X","cat":"kernel","name":"},{}","ts":2,"dur":1}' > "$split/args_objects"

# efficiency: an op index byte, then Input Dims, Input type, Input Strides and Concrete
# Inputs, one per line (shapes from the real H100, MI300X and SGLang traces).
eff=$here/corpus/efficiency
mkdir -p "$eff"
seed() { printf "\\x$1"; printf '%s\n' "$2" "$3" "$4" "$5" | head -c -1; }
seed 00 '[[32,4096],[4096,6144]]' '["c10::BFloat16","c10::BFloat16"]' '[[4096,1],[6144,1]]' '["",""]' > "$eff/mm"
seed 01 '[[1024],[8944,1024],[1024,1024],[],[]]' '["c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar","Scalar"]' '[[1],[1024,1],[1,1024],[],[]]' '["","","","1","1"]' > "$eff/addmm"
seed 0b '[[32,7168],[1536,7168],[32,56],[12,56]]' '["c10::Float8_e4m3fnuz","c10::Float8_e4m3fnuz","float","float"]' '[]' '["","","",""]' > "$eff/a8w8"
seed 0d '[[64,2048],[4096,2048],[64,128],[4096,128]]' '["c10::Float4_e2m1fn_x2","c10::Float4_e2m1fn_x2","c10::Float8_e8m0fnu","c10::Float8_e8m0fnu"]' '[]' '[]' > "$eff/a4w4"
seed 0f '[[1,16,1024,64],[1,16,1024,64],[1,16,1024,64],[],[],[],[]]' '["c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar","Scalar","Scalar",""]' '[]' '["","","","0.0","True","False",""]' > "$eff/sdpa"
seed 12 '[[1,3,224,224],[64,3,7,7],[],[],[],[],[],[],[]]' '["float","float","","ScalarList","ScalarList","ScalarList","Scalar","ScalarList","Scalar"]' '[]' '["","","","[2, 2]","[3, 3]","[1, 1]","False","[0, 0]","1"]' > "$eff/conv"
seed 15 '[[32,4096],[4096]]' '["c10::BFloat16","c10::BFloat16"]' '[[4096,1],[1]]' '["",""]' > "$eff/add"
seed 19 '[[16,559,1024],[],[],[],[]]' '["float","ScalarList","float","float","Scalar"]' '[]' '["","[1024]","","","1e-05"]' > "$eff/layer_norm"
seed 1c '[[32,151936],[],[]]' '["float","Scalar","Scalar"]' '[]' '["","-1","False"]' > "$eff/softmax"
seed 1e '[[16,32,128],[16,8,128],[16,8,128],[16,32,128]]' '["c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16"]' '[]' '[]' > "$eff/unified_attention"

chmod -R u+w "$here/corpus"
echo "corpus: $(ls "$json" | wc -l) kineto_json, $(ls "$gz" | wc -l) kineto_gzip, $(ls "$split" | wc -l) kineto_split seeds under $here/corpus" >&2

# rocprof_csv: the real rocprofv3 and rocprof v2 tables, and their heads.
csv=$here/corpus/rocprof_csv
mkdir -p "$csv"
for source in rocprofiler-sdk/source/docs/data/kernel_trace.csv \
    rocprofiler-sdk/source/docs/data/hip_runtime_trace.csv \
    omniperf/tests/workloads/device_filter/MI300X_A1/timestamps.csv; do
  path=$traces/$source
  [[ -f $path ]] || { echo "skip (missing): $source" >&2; continue; }
  name=$(basename "$source" .csv)
  cp "$path" "$csv/$name.csv"
  head -c 300 "$path" > "$csv/$name.head300.csv"
done

# rpd_json, rpd_sqlite, rocprof_json: the real rocmProfileData and rocprofv3 files, cut
# and sliced (the rocprofv3 sample is 37 MB: a slice of its dispatches and symbols).
mkdir -p "$here/corpus/rpd_json" "$here/corpus/rpd_sqlite" "$here/corpus/rocprof_json"
rpd=$traces/rocmprofiledata/examples/rocm-profile-data/results
if [[ -f $rpd/matmul_result.json ]]; then
  cp "$rpd/matmul_result.json" "$here/corpus/rpd_json/matmul_result.json"
  head -c 4096 "$rpd/matmul_result.json" > "$here/corpus/rpd_json/head4k.json"
  jq -c '[.[] | select(.ph == "M" or .ph == "s" or .ph == "f")][:30]' "$rpd/matmul_result.json" > "$here/corpus/rpd_json/flows.json"
fi
if [[ -f $rpd/matmul_result.rpd ]]; then
  cp "$rpd/matmul_result.rpd" "$here/corpus/rpd_sqlite/matmul_result.rpd"
  head -c 65536 "$rpd/matmul_result.rpd" > "$here/corpus/rpd_sqlite/cut64k.rpd"
fi
rocprof=$traces/tracelens/tests/rocprof/908_results.json.gz
if [[ -f $rocprof ]]; then
  gzip -dc "$rocprof" | jq -c '{"rocprofiler-sdk-tool": [.["rocprofiler-sdk-tool"][0] | {metadata: {pid: .metadata.pid}, agents: .agents[:3], kernel_symbols: .kernel_symbols[:12], strings: {buffer_records: .strings.buffer_records}, buffer_records: {kernel_dispatch: .buffer_records.kernel_dispatch[:20], hip_api: [], memory_copy: []}}]}' > "$here/corpus/rocprof_json/slice.json"
  head -c 3000 "$here/corpus/rocprof_json/slice.json" > "$here/corpus/rocprof_json/cut.json"
fi
# rocpd_sqlite: no public rocpd database exists; the real piecewise vLLM trace written as
# rocprofv3 writes one (tile-trace --as rocpd, one copy), rewritten with 512-byte pages so
# mutations reach every table, and its first 16 KiB.
rocpd=$here/corpus/rocpd_sqlite
mkdir -p "$rocpd"
piecewise=$traces/tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz
if [[ -f $piecewise ]]; then
  (cd "$here/.." && cargo build --release -q -p stepscope-dev --bin tile-trace)
  rm -f "$rocpd/piecewise.db"
  "$here/../target/release/tile-trace" "$piecewise" --target-bytes 1K --as rocpd -o "$rocpd/piecewise.db" >&2
  sqlite3 "$rocpd/piecewise.db" "PRAGMA page_size = 512; VACUUM;"
  head -c 16384 "$rocpd/piecewise.db" > "$rocpd/cut16k.db"
fi
chmod -R u+w "$here/corpus"

# nsys_sqlite: small Nsight Systems exports cut from the real samples (the sources opened
# read-only): the tables the reader reads, a few rows each (all names), 512-byte pages; and a
# hand-written graph-mode file (a cudaGraphLaunch, its whole-graph record, MODE=Graph).
nsys=$here/corpus/nsys_sqlite
mkdir -p "$nsys"
tables="StringIds CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_MEMCPY
  CUPTI_ACTIVITY_KIND_MEMSET NVTX_EVENTS TARGET_INFO_GPU META_DATA_CAPTURE PROCESSES"
for source in nsys-ai/tests/fixtures/mock.sqlite \
    nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite \
    pipit/pipit/tests/data/saxpy-mpi-cuda_nsys_perlmutter0.sqlite; do
  path=$traces/$source
  [[ -f $path ]] || { echo "skip (missing): $source" >&2; continue; }
  out=$nsys/$(basename "$source" .sqlite).sqlite
  rm -f "$out"
  present=$(sqlite3 "file:$path?mode=ro" "SELECT name FROM sqlite_master WHERE type = 'table'")
  sql="PRAGMA page_size = 512; ATTACH 'file:$path?mode=ro' AS src;"
  for table in $tables; do
    if grep -qx "$table" <<< "$present"; then
      limit=40
      [[ $table == StringIds ]] && limit=-1 # every name, so the rows kept are named
      sql+=" CREATE TABLE $table AS SELECT * FROM src.$table LIMIT $limit;"
    fi
  done
  sqlite3 "$out" "$sql"
done
rm -f "$nsys/graph_mode.sqlite"
sqlite3 "$nsys/graph_mode.sqlite" "PRAGMA page_size = 512;
  CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
  INSERT INTO StringIds VALUES (1, 'cudaGraphLaunch_v10000'), (2, 'cudaLaunchKernel_v7000'), (3, 'gemm');
  CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, \"end\" INTEGER, eventClass INTEGER,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
  INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 200, 0, 281476838981743, 7, 1),
    (300, 400, 0, 281476838981743, 8, 2), (310, 390, 67, 281476838981743, 8, 2);
  CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER, deviceId INTEGER,
    streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,
    shortName INTEGER, graphNodeId INTEGER, graphId INTEGER);
  INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (500, 600, 0, 7, 8, 281476838981632, 3, 3, NULL, NULL);
  CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, \"end\" INTEGER, deviceId INTEGER,
    streamId INTEGER, correlationId INTEGER, globalPid INTEGER, graphId INTEGER, graphExecId INTEGER);
  INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (250, 450, 0, 7, 7, 281476838981632, 1, 1);
  CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT);
  INSERT INTO META_DATA_CAPTURE VALUES ('CUDA_GRAPH_TRACE_OPTIONS:MODE', 'Graph');"
echo "corpus: $(ls "$nsys" | wc -l) nsys_sqlite seeds under $nsys" >&2
