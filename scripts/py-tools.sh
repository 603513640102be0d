#!/usr/bin/env bash
# The Python tools the tests use as independent readers of stepscope's output: DuckDB, which
# reads the Parquet tables of `analyze --parquet` (crates/stepscope/tests/cli/parquet.rs).
# Everything lives outside the checkout, and setup is a no-op when the venv is there.
#
#   scripts/py-tools.sh setup     # the venv with duckdb (from PyPI)
#   scripts/py-tools.sh python    # prints the venv's python (what the tests run)
#
# Environment:
#   STEPSCOPE_PY_TOOLS_VENV   the venv (default ~/.cache/stepscope/py-tools-venv); the tests
#                             read the same variable
set -euo pipefail

VENV=${STEPSCOPE_PY_TOOLS_VENV:-$HOME/.cache/stepscope/py-tools-venv}
# Bump with the packages below: a venv made for another list is remade.
DUCKDB_VERSION=1.5.6
MARK="$VENV/.stepscope-py-tools-duckdb-$DUCKDB_VERSION"
PY="$VENV/bin/python"

log() { printf '[py-tools %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

setup() {
  if [ -f "$MARK" ]; then
    return
  fi
  command -v python3 >/dev/null || { log "error: python3 is missing"; exit 1; }
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  log "creating $VENV"
  python3 -m venv "$VENV"
  PIP_PROGRESS_BAR=off "$PY" -m pip --disable-pip-version-check --no-input install -q \
    "duckdb==$DUCKDB_VERSION"
  "$PY" -c 'import duckdb; print("duckdb", duckdb.__version__)' >&2
  touch "$MARK"
}

case "${1:-}" in
  setup) setup ;;
  python) echo "$PY" ;;
  *) echo "usage: $0 setup|python" >&2; exit 2 ;;
esac
