#!/usr/bin/env bash
# Records a small real PyTorch-profiler trace of a vLLM server on this machine's CPUs (the
# tiny random-weight Llama of scripts/vllm-cpu.sh): /start_profile, COMPLETIONS completions
# of TOKENS tokens one after the other, /stop_profile. The repository carries one such
# recording in testdata/traces/stepscope/vllm-cpu/ for the core tests (vLLM's step
# annotations on a CPU-only trace); this is how it was made.
#
#   scripts/record-vllm-cpu-trace.sh OUT_DIR [COMPLETIONS] [TOKENS]   (defaults 2 and 8)
#
# Writes OUT_DIR/rank0.<ns>.pt.trace.json.gz (the engine's trace) and the front end's
# OUT_DIR/<host>_<pid>.async_llm.<ns>.pt.trace.json.gz, as vLLM names them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/record-vllm-cpu-trace.sh OUT_DIR [COMPLETIONS] [TOKENS]}
completions=${2:-2}
tokens=${3:-8}
script=scripts/vllm-cpu.sh
bash "$script" setup
run=$(mktemp -d "${TMPDIR:-/tmp}/stepscope-record.XXXXXX")
export STEPSCOPE_VLLM_RUN="$run"
trap 'bash "$script" stop || true; rm -rf "$run"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
bash "$script" start "$port"
url="http://127.0.0.1:$port"
model=$(bash "$script" model-name)
curl -fsS -X POST "$url/start_profile" > /dev/null
for i in $(seq 1 "$completions"); do
  curl -fsS "$url/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\": \"$model\", \"prompt\": \"Profile request $i:\", \"max_tokens\": $tokens, \"temperature\": 0, \"ignore_eos\": true}" > /dev/null
done
curl -fsS -X POST "$url/stop_profile" > /dev/null
# vLLM writes the traces after /stop_profile returns: wait until every file stops growing.
traces=$(bash "$script" trace-dir)
last=""
for _ in $(seq 1 120); do
  sleep 2
  now=$(find "$traces" -name '*.pt.trace.json.gz' -printf '%s %p\n' 2>/dev/null | sort)
  if [ -n "$now" ] && [ "$now" = "$last" ]; then break; fi
  last=$now
done
mkdir -p "$out"
find "$traces" -name '*.pt.trace.json.gz' -exec cp {} "$out/" \;
ls -l "$out"
