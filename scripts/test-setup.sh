#!/usr/bin/env bash
# What the tests need beyond Rust, installed when missing (a no-op when all is there):
# python3 (the stand-in servers of the lifecycle tests, the real vLLM of the e2e suite),
# Chromium (the HTML report is tested in a real headless browser, tests/cli/html.rs; or set
# STEPSCOPE_CHROMIUM to a browser binary), and DuckDB in a venv in ~/.cache/stepscope (the
# Parquet tables are read back with it, tests/cli/parquet.rs). Debian packages need root.
#
#   bash scripts/test-setup.sh && cargo test --workspace
set -euo pipefail
cd "$(dirname "$0")/.."

# Installs Debian packages, or says what to install where apt-get cannot run.
install() {
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "$@" >/dev/null
  else
    echo "test-setup: please install $* (the tests need them), then run this again" >&2
    exit 1
  fi
}

if ! command -v python3 >/dev/null; then
  install python3 python3-venv
fi
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null \
  && ! command -v google-chrome >/dev/null && [ -z "${STEPSCOPE_CHROMIUM:-}" ]; then
  install chromium
fi
bash scripts/py-tools.sh setup
