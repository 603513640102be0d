#!/usr/bin/env bash
# Builds the `stepscope` wheel (maturin, abi3, manylinux2014: glibc 2.17 and later, linked
# with zig so that this machine's newer glibc does not leak in) and runs the Python package's tests
# (python/tests) against it, installed into a fresh venv: what `pip install stepscope` gives a
# user, never the source tree. Run by .ci/run; standalone: `bash scripts/python-wheel.sh`.
#
#   STEPSCOPE_PY_BUILD_VENV  where maturin is installed (default ~/.cache/stepscope/py-build-venv)
#   STEPSCOPE_WHEEL_DIR      keep the built wheel there (default: a temporary folder)
#   STEPSCOPE_TRACES         a trace corpus: its Kineto files join the comparison with the CLI
#   CARGO_TARGET_DIR         where the developer tool that writes the rocprofv3 files is built
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[python-wheel %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

build_venv=${STEPSCOPE_PY_BUILD_VENV:-$HOME/.cache/stepscope/py-build-venv}
if [ ! -x "$build_venv/bin/maturin" ] || ! "$build_venv/bin/python" -m ziglang version >/dev/null 2>&1; then
  log "installing maturin and zig (the ziglang wheel) into $build_venv"
  python3 -m venv "$build_venv"
  "$build_venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.9,<2" ziglang
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
wheels=${STEPSCOPE_WHEEL_DIR:-$scratch/wheels}
mkdir -p "$wheels"
log "building the wheel ($("$build_venv/bin/maturin" --version))"
if ! PATH="$build_venv/bin:$PATH" "$build_venv/bin/maturin" build --release --locked \
  --zig --compatibility manylinux2014 --out "$wheels" > "$scratch/build.log" 2>&1; then
  tail -n 60 "$scratch/build.log" >&2
  log "error: maturin build failed (the end of its log is above)"
  exit 1
fi
grep -vE '^\s+(Compiling|Checking|Downloaded|Downloading) ' "$scratch/build.log" | tail -n 8 >&2 || true
wheel=$(ls -t "$wheels"/stepscope-*.whl | head -1)
log "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"
case $(basename "$wheel") in
  *-cp39-abi3-manylinux2014_x86_64*) ;;
  *) log "error: expected an abi3 manylinux2014 wheel"; exit 1 ;;
esac

log "installing it into a fresh venv, with pytest, pandas and polars"
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install -q --disable-pip-version-check "$wheel" pytest pandas polars duckdb matplotlib ray \
  "ruff==0.17.6" "mypy==2.4.1"

# The package's own code: lint (ruff, its rules and target in pyproject.toml) and types
# (mypy --strict over the sources and the extension's stubs).
log "ruff check python/ and mypy --strict python/stepscope"
"$scratch/venv/bin/ruff" check --no-cache python/
"$scratch/venv/bin/mypy" --strict --no-incremental --cache-dir=/dev/null python/stepscope

# Formats the repository carries no file of (rocprofv3's SQLite database and JSON), written
# from a real SGLang decode trace by the developer tool the Rust tests use.
formats="$scratch/formats"
mkdir -p "$formats"
cargo build -q --locked -p stepscope-dev --bin tile-trace
tile=${CARGO_TARGET_DIR:-target}/debug/tile-trace
sglang=testdata/traces/tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz
"$tile" "$sglang" --target-bytes 1 --as rocpd -o "$formats/sglang_decode_results.db" >&2
"$tile" "$sglang" --target-bytes 1 --as rocprof-json -o "$formats/sglang_decode_results.json" >&2

log "pytest python/tests"
# From the tests' folder, with the venv's bin on PATH (its `stepscope` command), so that
# `import stepscope` can only find the installed package.
(cd python/tests && PATH="$scratch/venv/bin:$PATH" STEPSCOPE_PY_FORMATS="$formats" \
  "$scratch/venv/bin/python" -m pytest -q -p no:cacheprovider)
